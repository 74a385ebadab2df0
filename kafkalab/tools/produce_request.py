"""One Produce request sent by hand, and the partition's error code exactly as the broker answered it.

confluent-kafka's producer retries, times requests out on its own side and folds some broker errors into
its own; a lesson that asks *which* error a broker returns (REQUEST_TIMED_OUT from the produce purgatory
against NOT_ENOUGH_REPLICAS_AFTER_APPEND, lesson 03) sends one Produce itself, with the ``acks`` and the
``timeout_ms`` it chooses, to the partition's leader, and reads the answer::

    from kafkalab.tools.produce_request import produce_once
    produce_once("127.0.0.1:9092", "orders", 0, ["v1"], acks=-1, timeout_ms=10_000)
    # {'error': 'NONE', 'error_code': 0, 'base_offset': 6}

The requests and responses are kafka-python's ``kafka.protocol`` classes (Produce v9), the records one
batch (magic 2) built by :func:`kafkalab.broker.common.records.build_batch`; it speaks to any Kafka broker.
"""
from __future__ import annotations

import socket
import struct
import time

from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from ..broker.common.errors import ErrorCode
from ..broker.common.records import Record, build_batch
from .client_quotas import recv_exactly

VERSION = 9


def produce_once(address: str, topic: str, partition: int, values: list[str], acks: int = -1,
                 timeout_ms: int = 30_000) -> dict:
    """Send one Produce of ``values`` (one batch) to the broker at ``address`` (``host:port``, the partition's
    leader) and wait for its answer (up to ``timeout_ms`` plus 30 s). Returns the partition's ``error`` (its
    Kafka name), ``error_code`` and ``base_offset`` (-1 when refused)."""
    now = int(time.time() * 1000)
    records = build_batch([Record(i, now, None, v.encode(), []) for i, v in enumerate(values)])
    request = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
    request.API_VERSION = VERSION
    request.with_header(correlation_id=1, client_id="kafkalab-produce-once")
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_ms / 1000 + 30) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        response = ProduceResponse.decode(recv_exactly(sock, size), version=VERSION, header=True)
    answer = response.responses[0].partition_responses[0]
    return {"error": ErrorCode(answer.error_code).name, "error_code": answer.error_code,
            "base_offset": answer.base_offset}
