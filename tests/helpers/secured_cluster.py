"""What the tests of secured lab clusters share (test_cluster_listeners, test_cluster_inter_broker_security,
test_cluster_controller_security): keyed records produced with acks=all and read back, a partition table's ISR
whole, and each node's authentications on one listener from Kafka's ``socket-server-metrics``."""
from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer


def client(bootstrap_or_conf) -> dict:
    """A client config: a bootstrap string becomes ``{"bootstrap.servers": ...}`` (the lab's PLAINTEXT listener)."""
    return {"bootstrap.servers": bootstrap_or_conf} if isinstance(bootstrap_or_conf, str) else dict(bootstrap_or_conf)


def produce(bootstrap_or_conf, topic: str, n: int, start: int = 0, timeout_s: float = 60,
            idempotent: bool = False) -> None:
    """Records ``k<i>`` / ``v<i>`` for i in [start, start + n), acks=all; every one delivered."""
    conf = {**client(bootstrap_or_conf), "acks": "all", "linger.ms": 0}
    if idempotent:
        conf["enable.idempotence"] = True
    p = Producer(conf)
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}", value=f"v{i}")
    assert p.flush(timeout_s) == 0


def consume_all(bootstrap_or_conf, topic: str, n: int, timeout_s: float = 60) -> list[str]:
    """Up to ``n`` values of ``topic`` read from the beginning in a new group, as text."""
    c = Consumer({**client(bootstrap_or_conf), "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got, deadline = [], time.time() + timeout_s
    try:
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value().decode())
    finally:
        c.close()
    return got


def whole_isr(cluster, topic: str, partitions: int, replicas: int = 3) -> bool:
    """Every partition of ``topic`` with ``replicas`` in-sync replicas (False while a broker cannot answer)."""
    try:
        table = cluster.describe(topic)
    except Exception:   # noqa: BLE001 - a broker just killed or restarting
        return False
    return len(table) == partitions and all(len(isr) == replicas for isr in table["isr"])


def authentications(cluster, listener: str) -> dict[int, tuple[int, int]]:
    """Each node's (successful, failed) authentications on ``listener``, summed over its network processors."""
    frame = cluster.metrics("kafka_server_socket_server_metrics_")
    out: dict[int, list[int]] = {}
    for row in frame.to_dict("records"):
        if row["labels"].get("listener") != listener:
            continue
        counts = out.setdefault(int(row["broker"]), [0, 0])
        if row["metric"] == "kafka_server_socket_server_metrics_successful_authentication_total":
            counts[0] += int(row["value"])
        elif row["metric"] == "kafka_server_socket_server_metrics_failed_authentication_total":
            counts[1] += int(row["value"])
    return {b: (ok, failed) for b, (ok, failed) in sorted(out.items())}
