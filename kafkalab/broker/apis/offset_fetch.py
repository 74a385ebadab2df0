"""OffsetFetch (key 9), versions 1-10: read a group's committed offsets.

v1   offsets from Kafka (not ZooKeeper)
v2   topics=null means every partition the group has committed; + top-level error_code
v3   + throttle_time_ms
v4   same as v3
v5   + committed_leader_epoch (KIP-320)
v6   flexible
v7   + require_stable (KIP-447): a partition whose offset waits for a transaction's marker
     (TxnOffsetCommit) answers UNSTABLE_OFFSET_COMMIT, and the consumer retries
v8   batched: several groups per request (KIP-709)
v9   + member_id/member_epoch: a KIP-848 member's are checked (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH);
     ignored for classic groups, as in Kafka
v10  topics by topic_id
Not implemented: v0 (ZooKeeper offsets).

A partition without a committed offset answers offset -1, empty metadata and
no error — also for a group that does not exist.
"""
from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse

from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api

def _partition(index, om, error=ErrorCode.NONE):
    if om is None:
        return {"partition_index": index, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                "error_code": error}
    return {"partition_index": index, "committed_offset": om.offset, "committed_leader_epoch": om.leader_epoch,
            "metadata": om.metadata, "error_code": error}


def _fetch_group(ctx, group_id, topics, by_id: bool, require_stable: bool = False) -> tuple[ErrorCode, list[dict]]:
    """(group error, topics) where each topic is {name or topic_id, partitions}.

    Kafka 3.9's checks: DESCRIBE on the group (else GROUP_AUTHORIZATION_FAILED) and on each topic: one the
    principal may not DESCRIBE is left out of "all the group's topics", and named is TOPIC_AUTHORIZATION_FAILED."""
    broker = ctx.broker
    coordinator = broker.group_coordinator
    field = "topic_id" if by_id else "name"
    if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    try:  # cluster mode: NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a group coordinated elsewhere
        coordinator.check_group_status(group_id)
    except KafkaError as exc:
        return exc.code, []
    if topics is None:  # everything the group committed
        by_topic: dict[str, list] = {}
        for (name, index), om in sorted(coordinator.fetch_offsets(group_id, None).items()):
            by_topic.setdefault(name, []).append(_partition(index, om))
        out = []
        allowed = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, list(by_topic),
                                       log_if_denied=False)
        for name, parts in by_topic.items():
            if name not in allowed:
                continue
            if by_id:
                meta = broker.metadata_cache.get(name)
                if meta is None:
                    continue
                out.append({"topic_id": meta.topic_id, "partitions": parts})
            else:
                out.append({"name": name, "partitions": parts})
        return ErrorCode.NONE, out
    out = []
    names = [t.name if not by_id else getattr(broker.metadata_cache.by_id(t.topic_id), "name", None) for t in topics]
    allowed = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    for t in topics:
        if by_id:
            meta = broker.metadata_cache.by_id(t.topic_id)
            if meta is None:
                out.append({"topic_id": t.topic_id, "partitions": [
                    _partition(i, None, ErrorCode.UNKNOWN_TOPIC_ID) for i in t.partition_indexes or []]})
                continue
            name = meta.name
        else:
            name = t.name
        if name not in allowed:
            out.append({field: t.topic_id if by_id else name, "partitions": [
                _partition(i, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for i in t.partition_indexes or []]})
            continue
        wanted = [(name, i) for i in t.partition_indexes or []]
        found = coordinator.fetch_offsets(group_id, wanted)
        parts = []
        for i in t.partition_indexes or []:
            if require_stable and coordinator.has_pending_transactional_offsets(group_id, (name, i)):
                parts.append(_partition(i, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
            else:
                parts.append(_partition(i, found[(name, i)]))
        out.append({field: t.topic_id if by_id else name, "partitions": parts})
    return ErrorCode.NONE, out


@api(OffsetFetchRequest, OffsetFetchResponse, versions=(1, 10))
async def handle_offset_fetch(ctx, request):
    v = ctx.api_version
    if v >= 8:
        groups = []
        for g in request.groups or []:
            error = ErrorCode.NONE
            if v >= 9:  # a KIP-848 member fetches with its member id and epoch (STALE_MEMBER_EPOCH, as Kafka)
                error = ctx.broker.group_coordinator.validate_consumer_group_fetch(
                    g.group_id, g.member_id, g.member_epoch) or ErrorCode.NONE
            if error != ErrorCode.NONE:
                topics = []
            else:
                error, topics = _fetch_group(ctx, g.group_id, g.topics, by_id=v >= 10,
                                             require_stable=bool(request.require_stable))
            groups.append({"group_id": g.group_id, "topics": topics, "error_code": error})
        return {"throttle_time_ms": 0, "groups": groups}
    topics = request.topics
    if v < 2 and topics is None:
        topics = []
    error, topics = _fetch_group(ctx, request.group_id, topics, by_id=False,
                                 require_stable=v >= 7 and bool(request.require_stable))
    if error != ErrorCode.NONE and v < 2:  # no top-level error code before v2: put it on each partition
        topics = [{"name": t.name, "partitions": [_partition(i, None, error) for i in t.partition_indexes or []]}
                  for t in request.topics or []]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error}
