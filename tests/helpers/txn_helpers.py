"""What the transaction tests share: reading a topic as a ``read_committed`` consumer does."""
from __future__ import annotations

import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition


def read_committed(bootstrap: str, topic: str, expected: int, timeout_s: float = 30.0,
                   settle_s: float = 1.0) -> list[bytes]:
    """Every value a ``read_committed`` consumer gets from every partition of ``topic``: until ``expected``
    values came (or ``timeout_s``), then ``settle_s`` more, so that a duplicate or an aborted record would
    show. Assigned, not subscribed: no dependence on a group coordinator (which a test may have killed)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    values: list[bytes] = []
    try:
        partitions = c.list_topics(topic, timeout=10).topics[topic].partitions
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and len(values) < expected:
            m = c.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
        end = time.monotonic() + settle_s
        while time.monotonic() < end:
            m = c.poll(0.1)
            if m is not None and not m.error():
                values.append(m.value())
    finally:
        c.close()
    return values


def wait_stable(bootstrap: str, topic: str, timeout_s: float = 30.0) -> dict[int, int]:
    """Wait until the last stable offset of every partition of ``topic`` is its high watermark -- no
    transaction open on it, and the markers of the ones ended written -- and return the ends.

    As in Kafka, ``commit_transaction()`` / ``abort_transaction()`` return once the coordinator has
    written PrepareCommit / PrepareAbort; the markers follow. A reader that must see the outcome waits
    for the LSO (ListOffsets at ``read_committed``) to pass the transaction, never for a fixed time."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    tps = [TopicPartition(topic, p) for p in sorted(partitions)]

    def ends(level) -> dict[int, int]:
        futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps}, isolation_level=level)
        return {tp.partition: f.result(10).offset for tp, f in futures.items()}
    deadline = time.monotonic() + timeout_s
    while True:
        high, stable = ends(IsolationLevel.READ_UNCOMMITTED), ends(IsolationLevel.READ_COMMITTED)
        if stable == high:
            return high
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: last stable offsets {stable} still behind the high watermarks {high} "
                               f"after {timeout_s:.0f} s")
        time.sleep(0.05)
