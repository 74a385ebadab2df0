"""Produce (key 0), versions 3-11: append record batches to partition logs.

v3   message format v2 record batches only (older formats are not served), transactional id
v4   KAFKA_STORAGE_ERROR may be returned
v5   + log_start_offset in the response
v7   ZStandard compression allowed (KIP-110)
v8   + record_errors and error_message per partition (KIP-467)
v9   flexible
v10  + current leader hint on NOT_LEADER_OR_FOLLOWER (KIP-951)
v11  same as v10
Not implemented: v12+ (transactions V2, topic ids) and transactions: a
request carrying a ``transactional_id`` is refused per partition with
TRANSACTIONAL_ID_NOT_FOUND.

``acks`` is 0 (no response at all), 1 (the leader wrote it) or -1/all (every
in-sync replica has it, and at least ``min.insync.replicas`` are in sync).
Each partition succeeds or fails alone, with Kafka's error code:
CORRUPT_MESSAGE for a bad CRC, MESSAGE_TOO_LARGE over ``max.message.bytes``,
OUT_OF_ORDER_SEQUENCE_NUMBER for an idempotent producer's gap, ...
"""
import logging

from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from ..errors import ErrorCode, KafkaError
from . import api

log = logging.getLogger("kafkalab.broker.produce")


def _partition_error(index, code, message=None):
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "error_message": message}


@api(ProduceRequest, ProduceResponse, versions=(3, 11))
async def handle_produce(ctx, request):
    broker = ctx.broker
    acks = request.acks
    responses = []
    for topic_data in request.topic_data:
        name = topic_data.name
        parts = []
        topic = broker.metadata_cache.get(name)
        for pdata in topic_data.partition_data:
            if acks not in (0, 1, -1):
                parts.append(_partition_error(pdata.index, ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks}"))
                continue
            if topic is None or not 0 <= pdata.index < topic.num_partitions:
                parts.append(_partition_error(pdata.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                              f"unknown topic-partition {name}-{pdata.index}"))
                continue
            if request.transactional_id is not None:
                parts.append(_partition_error(pdata.index, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                                              "transactions are not implemented by the mini broker"))
                continue
            try:
                info = broker.replica_manager.append_records(name, pdata.index, bytes(pdata.records or b""), acks)
            except KafkaError as exc:
                parts.append(_partition_error(pdata.index, exc.code, exc.message))
                continue
            parts.append({"index": pdata.index, "error_code": 0, "base_offset": info.first_offset,
                          "log_append_time_ms": info.log_append_time, "log_start_offset": info.log_start_offset})
        responses.append({"name": name, "partition_responses": parts})
    if acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}
