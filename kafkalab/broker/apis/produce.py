"""Produce (key 0), versions 3-11: append record batches to partition logs.

v3   message format v2 record batches only (older formats are not served), transactional id
v4   KAFKA_STORAGE_ERROR may be returned
v5   + log_start_offset in the response
v7   ZStandard compression allowed (KIP-110)
v8   + record_errors and error_message per partition (KIP-467)
v9   flexible
v10  + current leader hint on NOT_LEADER_OR_FOLLOWER (KIP-951)
v11  same as v10
Not implemented: v12+ (transactions V2, topic ids); in cluster mode a leader
that is not the transactional id's coordinator does not verify the partition
(Kafka asks the coordinator with AddPartitionsToTxn v4 ``verify_only``).

Transactions (KIP-98): a request with a ``transactional_id`` carries
transactional batches (attribute bit 4). As Kafka 3.9's leader does
(KIP-890 verification), each partition must have been added to the producer's
ongoing transaction (AddPartitionsToTxn): INVALID_TXN_STATE if it was not,
INVALID_PRODUCER_EPOCH for a fenced producer. A transactional batch without a
transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka.

``acks`` is 0 (no response at all), 1 (the leader wrote it) or -1/all (every
in-sync replica has it, and at least ``min.insync.replicas`` are in sync).
Each partition succeeds or fails alone, with Kafka's error code:
INVALID_RECORD unless the partition's data is exactly one magic-2 batch
(Kafka's ``ProduceRequest.validateRecords``), CORRUPT_MESSAGE for a bad CRC,
MESSAGE_TOO_LARGE over ``max.message.bytes``, UNKNOWN_TOPIC_OR_PARTITION for
a topic that does not exist, INVALID_TOPIC_EXCEPTION for an internal topic,
OUT_OF_ORDER_SEQUENCE_NUMBER for an idempotent producer's gap, ...
With ``acks=0`` nothing is answered; if a partition failed, the connection is
closed (as Kafka does), which is the only way such a producer can notice.

With ``acks=all`` every partition is appended first; then the request waits
in the produce purgatory (``DelayedProduce``) until the high watermark of each
partition passed its records, at most ``timeout_ms``: REQUEST_TIMED_OUT for a
partition still short then, NOT_ENOUGH_REPLICAS_AFTER_APPEND if its ISR shrank
below ``min.insync.replicas`` meanwhile. A standalone broker is its own ISR:
its high watermark passes the records as they are appended, nothing waits.
A broker that does not lead the partition answers NOT_LEADER_OR_FOLLOWER, from
v10 with the leader it knows of (``current_leader``, ``node_endpoints``, KIP-951).
"""
import logging

from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from ..common.errors import ErrorCode, KafkaError
from ..common.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from ..network.request_channel import CloseConnection
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorizer_of, filter_by_authorized
from . import api

log = logging.getLogger(__name__)

ZSTD = 4
MIN_ZSTD_VERSION = 7  # KIP-110


def _partition_error(index, code, message=None):
    return {"index": index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
            "log_start_offset": -1, "error_message": message}


def validate_records(api_version: int, records) -> BatchHeader:
    """Kafka's ``ProduceRequest.validateRecords``: exactly one magic-2 batch per partition; returns its header.

    (The batch itself, CRC included, is checked by the log before it is appended.)
    """
    if not records or len(records) < HEADER_SIZE:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce v{api_version} must carry exactly one record batch, got {len(records or b'')} bytes")
    header = BatchHeader.parse(records)
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                         f"record batch length {header.batch_length} is less than the batch header")
    if header.size > len(records):
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"truncated record batch: its header says {header.size} bytes, the request has "
                         f"{len(records)}")
    if header.magic != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce v{api_version} only allows record batches with magic 2, got magic {header.magic}")
    if header.size < len(records):
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Produce v{api_version} must carry exactly one record batch per partition")
    if header.is_control:
        raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"producer id {header.producer_id} with invalid sequence number {header.base_sequence}")
    if (header.attributes & 0x07) == ZSTD and api_version < MIN_ZSTD_VERSION:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"zstd needs Produce v{MIN_ZSTD_VERSION} or later, the request is v{api_version}")
    return header


@api(ProduceRequest, ProduceResponse, versions=(3, 11))
async def handle_produce(ctx, request):
    broker = ctx.broker
    acks = request.acks
    # Kafka reads the request into a map by topic-partition: a partition named twice keeps its last entry
    latest = {(t.name, p.index): p for t in request.topic_data for p in t.partition_data}
    by_topic: dict[str, list[dict]] = {}
    failed = []
    waiting = None   # acks=all: (topic, partition) -> (HW to reach, its result)
    txn_denied, denied_topics = _authorize(ctx, request, latest.values())
    for (name, index), pdata in latest.items():
        if txn_denied:
            result = _partition_error(index, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
        elif name in denied_topics:
            result = _partition_error(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        else:
            result = _append(ctx, request, broker.metadata_cache.get(name), name, pdata)
        if result["error_code"]:
            failed.append(f"{name}-{index}: {ErrorCode(result['error_code']).name}")
        elif acks == -1:
            required = result.pop("_required_offset")
            if required is not None:
                if waiting is None:
                    waiting = {}
                waiting[(name, index)] = (required, result)
        by_topic.setdefault(name, []).append(result)
    if waiting:   # the produce purgatory: wait for the ISR
        errors = await broker.replica_manager.wait_for_acks(
            {key: required for key, (required, _) in waiting.items()}, request.timeout_ms)
        for key, (_, result) in waiting.items():
            code = errors.get(key, ErrorCode.NONE)
            if code:
                result.update(_partition_error(key[1], code, ErrorCode(code).name))
    responses = [{"name": name, "partition_responses": parts} for name, parts in by_topic.items()]
    if acks == 0:
        if failed:  # Kafka closes the connection so that the producer refreshes its metadata
            raise CloseConnection(f"acks=0 Produce failed ({', '.join(failed)})")
        return None
    answer = {"responses": responses, "throttle_time_ms": 0}
    if ctx.api_version >= 10 and failed:
        _add_leader_hints(broker, answer)
    return answer


def _authorize(ctx, request, partitions) -> tuple[bool, set[str]]:
    """Kafka 3.9's checks (``handleProduceRequest``): transactional records need WRITE on the request's
    transactional id (else the whole request is TRANSACTIONAL_ID_AUTHORIZATION_FAILED), each topic WRITE (else
    its partitions are TOPIC_AUTHORIZATION_FAILED, before any other check). Without an authorizer: none."""
    if authorizer_of(ctx) is None:
        return False, set()
    if any(_is_transactional(p.records) for p in partitions):
        if request.transactional_id is None or not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                                              request.transactional_id):
            return True, set()
    names = [t.name for t in request.topic_data]
    return False, set(names) - filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, names)


def _is_transactional(records) -> bool:
    """``RequestUtils.hasTransactionalRecords``: the partition's first batch has the transactional bit."""
    if not records or len(records) < HEADER_SIZE:
        return False
    try:
        return BatchHeader.parse(bytes(records[:HEADER_SIZE])).is_transactional
    except Exception:   # noqa: BLE001 - a malformed batch is refused later, by validate_records
        return False


def _add_leader_hints(broker, answer) -> None:
    """KIP-951: with NOT_LEADER_OR_FOLLOWER, the leader this broker knows of and how to reach it."""
    endpoints = {}
    for topic in answer["responses"]:
        for result in topic["partition_responses"]:
            if result["error_code"] != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                continue
            partition = broker.replica_manager.partitions.get((topic["name"], result["index"]))
            if partition is None or partition.leader_id < 0:
                continue
            result["current_leader"] = {"leader_id": partition.leader_id, "leader_epoch": partition.leader_epoch}
            for b, host, port in broker.live_brokers:
                if b == partition.leader_id:
                    endpoints[b] = {"node_id": b, "host": host, "port": port, "rack": None}
    if endpoints:
        answer["node_endpoints"] = list(endpoints.values())


def _append(ctx, request, topic, name, pdata) -> dict:
    acks = request.acks
    if acks not in (0, 1, -1):
        return _partition_error(pdata.index, ErrorCode.INVALID_REQUIRED_ACKS, f"acks={acks}")
    if topic is None or not 0 <= pdata.index < topic.num_partitions:
        return _partition_error(pdata.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                f"This server does not host this topic-partition: {name}-{pdata.index}")
    if topic.is_internal:
        return _partition_error(pdata.index, ErrorCode.INVALID_TOPIC_EXCEPTION,
                                f"Cannot append to internal topic {name}")
    txn_coordinator = ctx.broker.transaction_coordinator
    if request.transactional_id is not None and txn_coordinator is None:
        return _partition_error(pdata.index, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                                "transactions are not implemented by the mini broker in cluster mode")
    try:
        records = bytes(pdata.records or b"")
        header = validate_records(ctx.api_version, records)
        if header.is_transactional:
            if request.transactional_id is None:
                raise KafkaError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                 "a transactional batch needs the request's transactional id")
            code = txn_coordinator.verify_transaction(request.transactional_id, header.producer_id,
                                                      header.producer_epoch, (name, pdata.index))
            if code:
                raise KafkaError(code, f"{name}-{pdata.index} is not in an ongoing transaction of "
                                       f"{request.transactional_id!r} (producer {header.producer_id}, epoch "
                                       f"{header.producer_epoch})")
    except KafkaError as exc:   # refused before the append (Kafka's KafkaApis): no log start offset
        log.debug("produce to %s-%d refused: %s", name, pdata.index, exc)
        return _partition_error(pdata.index, exc.code, exc.message)
    appended = ctx.broker.replica_manager.append_to_local_log(name, pdata.index, records, acks)
    if appended.error is not None:
        exc = appended.error
        log.debug("produce to %s-%d failed: %s", name, pdata.index, exc)
        result = _partition_error(pdata.index, exc.code, exc.message)
        result["log_start_offset"] = appended.log_start_offset
        if getattr(exc, "record_errors", None):   # v8+: which records were refused (KIP-467)
            result["record_errors"] = [{"batch_index": i, "batch_index_error_message": m} for i, m in exc.record_errors]
        return result
    info = appended.info
    result = {"index": pdata.index, "error_code": 0, "base_offset": info.first_offset,
              "log_append_time_ms": info.log_append_time, "log_start_offset": info.log_start_offset}
    if acks == -1:
        result["_required_offset"] = appended.required_offset
    return result
