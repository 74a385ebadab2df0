"""ShareFetch (key 78), versions 1-2: a share consumer's fetch, with piggybacked acknowledgements (KIP-932).

v0   Kafka 4.0's early access (not served by Kafka 4.1+, nor here)
v1   flexible; MaxRecords, BatchSize, AcquisitionLockTimeoutMs; what confluent-kafka 2.16 sends
v2   + ShareAcquireMode (KIP-1206: 0 batch_optimized, 1 record_limit), IsRenewAck (KIP-1222: acknowledgements
     of type RENEW (4) keep records acquired with a fresh lock; such a request acquires nothing new)
Simplified: the mini broker always acquires at most MaxRecords (record_limit; batch_optimized may give Kafka's
whole batches beyond it); BatchSize is ignored; MinBytes counts records (any acquired record answers at once).

The request names the member's share session and its epoch (0 opens, -1 closes, see
:mod:`kafkalab.broker.server.share.share_partition_manager`), partitions to add, partitions to forget, and per
partition acknowledgement batches (first offset, last offset, types: 0 gap, 1 accept, 2 release, 3 reject).
The response carries per partition the record batches read and the offset ranges this member **acquired**
(``AcquiredRecords``: first, last, delivery count): a consumer delivers only those records, and must
acknowledge them within ``AcquisitionLockTimeoutMs`` (``group.share.record.lock.duration.ms``). Errors:
INVALID_REQUEST (no group or member id), SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH (top level);
per partition UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, and as
AcknowledgeErrorCode INVALID_RECORD_STATE (a record not acquired by this member: its lock expired) or
INVALID_REQUEST.
"""
import time

from kafka.protocol.api_message import ApiMessage

from ..common.errors import ErrorCode, KafkaError
from ..server.share.share_partition_manager import FINAL_EPOCH, INITIAL_EPOCH
from ..common.message import schemas
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from ..server.faults import error_response
from . import api


class ShareFetchRequest(ApiMessage, load_json=schemas): pass
class ShareFetchResponse(ApiMessage, load_json=schemas): pass


def _top_error(code, message, lock_ms=0):
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
            "acquisition_lock_timeout_ms": lock_ms, "responses": [], "node_endpoints": []}


def partition_error(index: int, code: int, message: str | None = None) -> dict:
    return {"partition_index": index, "error_code": code, "error_message": message, "acknowledge_error_code": 0,
            "acknowledge_error_message": None, "current_leader": {"leader_id": -1, "leader_epoch": -1},
            "records": b"", "acquired_records": []}   # empty, never null: as Kafka 4.4 (librdkafka rejects null)


async def apply_acknowledgements(ctx, manager, group_id, member_id, topics, results, allow_renew=False) -> None:
    """Acknowledgement batches of each named partition; the (code, message) of each into ``results``."""
    cache = ctx.broker.metadata_cache
    for t in topics or []:
        meta = cache.by_id(t.topic_id)
        for p in t.partitions or []:
            if not p.acknowledgement_batches:
                continue
            if meta is None:
                results[(t.topic_id, p.partition_index)] = (ErrorCode.UNKNOWN_TOPIC_ID, None)
                continue
            results[(t.topic_id, p.partition_index)] = await manager.acknowledge(
                group_id, member_id, meta.name, t.topic_id, p.partition_index, p.acknowledgement_batches,
                allow_renew)


@api(ShareFetchRequest, ShareFetchResponse, versions=(1, 2))
async def handle_share_fetch(ctx, request):
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):   # Kafka 4: READ on the group
        return error_response("ShareFetch", request, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    manager = ctx.broker.share_partition_manager
    lock_ms = ctx.broker.config["group.share.record.lock.duration.ms"]
    if not request.group_id or not request.member_id:
        return _top_error(ErrorCode.INVALID_REQUEST, "GroupId and MemberId must be set", lock_ms)
    group_id, member_id, epoch = request.group_id, request.member_id, request.share_session_epoch
    if ctx.api_version >= 2 and request.is_renew_ack and any(
            (request.max_wait_ms, request.min_bytes, request.max_bytes, request.max_records, request.batch_size)):
        # a renewing request fetches nothing (Kafka 4.4 refuses one with fetch limits set, and its session's
        # epoch does not move; measured)
        return _top_error(ErrorCode.INVALID_REQUEST, "a ShareFetch with IsRenewAck must not ask for records "
                          "(MaxWaitMs, MinBytes, MaxBytes, MaxRecords, BatchSize: 0)", 0)
    try:
        session = manager.session_for(group_id, member_id, epoch, ctx.connection_id)
    except KafkaError as exc:
        return _top_error(exc.code, exc.message, lock_ms)
    cache = ctx.broker.metadata_cache
    ack_results: dict[tuple, tuple] = {}
    renew = ctx.api_version >= 2 and bool(request.is_renew_ack)
    await apply_acknowledgements(ctx, manager, group_id, member_id, request.topics, ack_results, renew)
    if epoch == FINAL_EPOCH:
        manager.close_session(session)
        fetch_keys = []
    else:
        for t in request.topics or []:
            meta = cache.by_id(t.topic_id)
            for p in t.partitions or []:
                session.partitions[(t.topic_id, p.partition_index)] = meta.name if meta else None
        for t in request.forgotten_topics_data or []:
            for index in t.partitions or []:
                session.partitions.pop((t.topic_id, index), None)
        # (a renewing request acquires nothing new: it only extends the locks it names)
        fetch_keys = [] if renew else sorted(session.partitions, key=lambda k: (str(k[0]), k[1]))
    max_records = request.max_records if request.max_records > 0 else 500
    # Kafka 4: READ on each topic fetched from (else its partitions are TOPIC_AUTHORIZATION_FAILED)
    readable = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                    [session.partitions[k] for k in fetch_keys])
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    while True:
        results, acquired, budget = {}, 0, request.max_bytes
        for topic_id, index in fetch_keys:
            name = session.partitions[(topic_id, index)]
            if name is None or cache.by_id(topic_id) is None:
                results[(topic_id, index)] = partition_error(index, ErrorCode.UNKNOWN_TOPIC_ID)
                continue
            if name not in readable:
                results[(topic_id, index)] = partition_error(index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            if request.max_bytes <= 0:   # Kafka 4.4 acquires nothing for MaxBytes 0 (measured, librdkafka's 0180)
                results[(topic_id, index)] = partition_error(index, ErrorCode.NONE)
                continue
            try:
                answer = await manager.acquire(group_id, member_id, name, topic_id, index, max(budget, 1),
                                         max_records - acquired)
            except KafkaError as exc:
                results[(topic_id, index)] = partition_error(index, exc.code, exc.message)
                continue
            n = sum(r["last_offset"] - r["first_offset"] + 1 for r in answer["acquired_records"])
            acquired += n
            budget -= len(answer["records"] or b"")
            results[(topic_id, index)] = {"partition_index": index, **answer}
        remaining = deadline - time.monotonic()
        errors = any(r["error_code"] for r in results.values())
        if acquired or errors or ack_results or remaining <= 0 or not fetch_keys or epoch == FINAL_EPOCH:
            break
        # the share fetch purgatory: wake on an append, a release, or the next lock expiry
        lock = manager.next_deadline([(group_id, t, i) for t, i in fetch_keys])
        wait = remaining if lock is None else max(0.0, min(remaining, lock + 0.001))
        await ctx.broker.replica_manager.wait_for_data(
            [(session.partitions[k], k[1]) for k in fetch_keys if session.partitions[k]], wait)
    full = epoch == INITIAL_EPOCH
    by_topic: dict = {}
    for key in set(results) | set(ack_results):
        topic_id, index = key
        entry = results.get(key) or {**partition_error(index, ErrorCode.NONE)}
        if key in ack_results:
            entry["acknowledge_error_code"], entry["acknowledge_error_message"] = ack_results[key]
        if full or key in ack_results or entry["error_code"] or entry["acquired_records"]:
            by_topic.setdefault(topic_id, []).append(entry)
    responses = [{"topic_id": t, "partitions": sorted(ps, key=lambda p: p["partition_index"])}
                 for t, ps in sorted(by_topic.items(), key=lambda kv: str(kv[0]))]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "acquisition_lock_timeout_ms": lock_ms, "responses": responses, "node_endpoints": []}
