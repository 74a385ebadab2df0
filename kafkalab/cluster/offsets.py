"""Ask a broker for offsets with ListOffsets, from outside the cluster (what ``Cluster.describe`` shows).

Two questions, one request (ListOffsets, v2), as Kafka's tools ask them:

* the **high watermark** — timestamp LATEST (-1) with ``replica_id = -1``
  (a consumer), sent to the partition's leader: the end of what consumers may read;
* a replica's **log end offset** — timestamp LATEST with ``replica_id = -2``,
  Kafka's ``DEBUGGING_REPLICA_ID``: Kafka's ``ReplicaManager.fetchOffset``
  then answers from any replica, leader or follower (``fetchOnlyFromLeader``
  is false) and, having no isolation level (not a consumer), with the log
  end offset instead of the high watermark.

The request is sent on a plain blocking socket with a short timeout: a paused
(SIGSTOPped) broker accepts the connection but never answers, and its row then
shows a missing value instead of hanging the notebook.
"""
from __future__ import annotations

import itertools
import socket
import struct

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from ..broker.common.message.codec import build

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
LATEST_TIMESTAMP = -1
_VERSION = 2
_SIZE = struct.Struct(">i")
_correlation = itertools.count(1)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def list_offsets(host: str, port: int, topic: str, partitions: list[int], replica_id: int = CONSUMER_REPLICA_ID,
                 timestamp: int = LATEST_TIMESTAMP, timeout_s: float = 1.0) -> dict[int, int | None]:
    """partition -> offset (None where the broker answered an error); raises OSError if it did not answer."""
    request = build(ListOffsetsRequest, _VERSION, {
        "replica_id": replica_id, "isolation_level": 0,
        "topics": [{"name": topic, "partitions": [{"partition_index": p, "timestamp": timestamp}
                                                  for p in partitions]}]})
    correlation_id = next(_correlation) & 0x7FFFFFFF
    request.with_header(correlation_id=correlation_id, client_id="kafkalab-cluster-describe")
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(request.encode(header=True, framed=True))
        (size,) = _SIZE.unpack(recv_exactly(sock, 4))
        frame = recv_exactly(sock, size)
    response = ResponseClassRegistry.get_response_class(request.header).decode(frame, version=_VERSION, header=True)
    out: dict[int, int | None] = {p: None for p in partitions}
    for t in response.topics:
        if t.name != topic:
            continue
        for p in t.partitions:
            out[p.partition_index] = p.offset if p.error_code == 0 else None
    return out


def zookeeper_partition_rows(zk_read, topic: str) -> list[dict]:
    """A topic's partitions as ZooKeeper holds them, one row each: partition, leader, replicas, isr,
    leader_epoch — from ``/brokers/topics/<topic>`` (the assignment) and each partition's
    ``.../partitions/<p>/state`` znode. ``zk_read(method, path)`` calls a kazoo method ("get") on a
    path. A partition with no state znode yet (being created) has no leader and an empty ISR.
    Raises KeyError for an unknown topic."""
    from kazoo.exceptions import NoNodeError

    from ..broker.zk import zk_data
    try:
        data, _ = zk_read("get", zk_data.topic_path(topic))
    except NoNodeError:
        raise KeyError(f"no topic {topic!r} in ZooKeeper ({zk_data.topic_path(topic)})") from None
    rows = []
    for p, replicas in sorted(zk_data.decode_topic_assignment(data).partitions.items()):
        row = {"partition": p, "leader": None, "replicas": list(replicas), "isr": [], "leader_epoch": None}
        try:
            state_data, stat = zk_read("get", zk_data.partition_state_path(topic, p))
        except NoNodeError:
            rows.append(row)
            continue
        state = zk_data.decode_partition_state(state_data, stat.version)
        row.update(leader=state.leader if state.leader >= 0 else None, isr=list(state.isr),
                   leader_epoch=state.leader_epoch)
        rows.append(row)
    return rows


def describe_rows(rows: list[dict], address_of, topic: str, timeout_s: float = 1.0):
    """Fill ``rows`` (partition, leader, replicas, isr, leader_epoch) with each partition's high
    watermark and every replica's log end offset, and return them as ``describe()`` shows them.

    One pair of ListOffsets per broker, all brokers at once: as a consumer (``replica_id`` -1) to the
    leader for the high watermarks of what it leads, and with ``DEBUGGING_REPLICA_ID`` (-2) for the log
    end offsets of what it hosts. ``address_of(broker_id)`` gives ``(host, port)``, or None for a
    broker not to ask (down); a broker that does not answer leaves missing values. A pandas DataFrame
    with nullable integer columns (the rows themselves without pandas).
    """
    from concurrent.futures import ThreadPoolExecutor

    replica_ids = sorted({r for row in rows for r in row["replicas"]})
    asks = []
    for broker_id in replica_ids:
        led = [row["partition"] for row in rows if row["leader"] == broker_id]
        hosted = [row["partition"] for row in rows if broker_id in row["replicas"]]
        if led:
            asks.append((broker_id, CONSUMER_REPLICA_ID, led))
        asks.append((broker_id, DEBUGGING_REPLICA_ID, hosted))

    def ask(item):
        broker_id, replica_id, partitions = item
        address = address_of(broker_id)
        if address is None:
            return item, {}
        try:
            return item, list_offsets(*address, topic, partitions, replica_id, timeout_s=timeout_s)
        except (OSError, ValueError, EOFError):
            return item, {}

    with ThreadPoolExecutor(max_workers=max(1, len(asks))) as pool:
        answers = list(pool.map(ask, asks))
    by_partition = {row["partition"]: row for row in rows}
    for row in rows:
        row["high_watermark"] = None
        for broker_id in replica_ids:
            row[f"leo_{broker_id}"] = None
    for (broker_id, replica_id, _), offsets in answers:
        for p, offset in offsets.items():
            if p in by_partition:
                by_partition[p]["high_watermark" if replica_id == CONSUMER_REPLICA_ID else f"leo_{broker_id}"] = offset
    try:
        import pandas as pd
    except ImportError:
        return rows
    numeric = ["leader", "leader_epoch", "high_watermark"] + [f"leo_{i}" for i in replica_ids]
    df = pd.DataFrame(rows, columns=["partition", "leader", "replicas", "isr", "leader_epoch",
                                     "high_watermark"] + [f"leo_{i}" for i in replica_ids])
    for column in numeric:
        df[column] = df[column].astype("Int64")   # integers with missing values (<NA>)
    return df
