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

from ..broker.apis.messages import build

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
LATEST_TIMESTAMP = -1
_VERSION = 2
_SIZE = struct.Struct(">i")
_correlation = itertools.count(1)


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
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
        (size,) = _SIZE.unpack(_recv_exactly(sock, 4))
        frame = _recv_exactly(sock, size)
    response = ResponseClassRegistry.get_response_class(request.header).decode(frame, version=_VERSION, header=True)
    out: dict[int, int | None] = {p: None for p in partitions}
    for t in response.topics:
        if t.name != topic:
            continue
        for p in t.partitions:
            out[p.partition_index] = p.offset if p.error_code == 0 else None
    return out
