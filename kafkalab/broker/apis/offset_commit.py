"""OffsetCommit (key 8), versions 2-10: store a group's consumed positions.

v2   + retention_time_ms (ignored, as in Kafka since 2.1: ``offsets.retention.minutes`` applies)
v3   + throttle_time_ms
v4   same as v3
v5   retention_time_ms dropped
v6   + committed_leader_epoch per partition (KIP-320)
v7   + group_instance_id: a static member's commits are fenced by it (KIP-345)
v8   flexible
v9   generation_id_or_member_epoch: a KIP-848 member commits with its member epoch (STALE_MEMBER_EPOCH when
     it is not the member's current one; UNSUPPORTED_VERSION below v9, as Kafka)
v10  topics by topic_id instead of name (UNKNOWN_TOPIC_ID for an unknown id)
Not implemented: v0-1 (ZooKeeper-stored offsets, per-partition commit timestamps).

A member commits with its generation: a stale generation gets
ILLEGAL_GENERATION, a removed member UNKNOWN_MEMBER_ID, a commit during
CompletingRebalance REBALANCE_IN_PROGRESS. A commit with generation -1 and
no member id is a "simple" commit, accepted only while the group is Empty.
Each partition is written as one record to ``__consumer_offsets``.
Per partition: UNKNOWN_TOPIC_OR_PARTITION for a partition that does not
exist, OFFSET_METADATA_TOO_LARGE over ``offset.metadata.max.bytes`` (4096).
"""
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse

from ..server.metadata_cache import NULL_UUID
from ..coordinator.group.group_metadata import now_ms
from ..coordinator.group.offsets_topic import OffsetAndMetadata
from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api


@api(OffsetCommitRequest, OffsetCommitResponse, versions=(2, 10))
async def handle_offset_commit(ctx, request):
    broker = ctx.broker
    v = ctx.api_version
    coordinator = broker.group_coordinator
    now = now_ms()
    errors: dict[tuple, ErrorCode] = {}      # (topic key, partition) -> error decided here
    to_commit: dict[tuple[str, int], OffsetAndMetadata] = {}
    keys: dict[tuple[str, int], tuple] = {}  # (name, partition) -> (topic key, partition)
    order = []
    # Kafka 3.9: READ on the group (else every partition GROUP_AUTHORIZATION_FAILED), READ on each topic
    group_denied = not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    metas = [broker.metadata_cache.by_id(t.topic_id) if v >= 10 else broker.metadata_cache.get(t.name)
             for t in request.topics or []]
    names = [t.name if v < 10 else (m.name if m else None) for t, m in zip(request.topics or [], metas)]
    allowed = set() if group_denied else filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)
    for t, meta, name in zip(request.topics or [], metas, names):
        topic_key = t.topic_id if v >= 10 else t.name
        for p in t.partitions or []:
            k = (topic_key, p.partition_index)
            order.append(k)
            if group_denied:
                errors[k] = ErrorCode.GROUP_AUTHORIZATION_FAILED
            elif name is not None and name not in allowed:
                errors[k] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None:
                errors[k] = ErrorCode.UNKNOWN_TOPIC_ID if v >= 10 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not 0 <= p.partition_index < meta.num_partitions:
                errors[k] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                tp = (meta.name, p.partition_index)
                keys[tp] = k
                to_commit[tp] = OffsetAndMetadata(p.committed_offset,
                                                  p.committed_leader_epoch if v >= 6 else -1,
                                                  p.committed_metadata or "", now)
    # a KIP-848 consumer group checks member id and member epoch itself (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)
    cg_error = coordinator.validate_consumer_group_commit(request.group_id, request.member_id or "",
                                                          request.generation_id_or_member_epoch, v, list(to_commit))
    if to_commit and cg_error not in (None, ErrorCode.NONE):
        for tp in to_commit:
            errors[keys[tp]] = cg_error
    elif to_commit:
        if cg_error == ErrorCode.NONE:  # a valid consumer group commit: stored like a simple commit
            result = await coordinator.commit_offsets_and_wait(request.group_id, -1, "", None, to_commit)
        else:
            result = await coordinator.commit_offsets_and_wait(
                request.group_id, request.generation_id_or_member_epoch, request.member_id or "",
                request.group_instance_id if v >= 7 else None, to_commit)
        for tp, code in result.items():
            errors[keys[tp]] = code
    topics: dict = {}
    for k in order:
        topics.setdefault(k[0], []).append({"partition_index": k[1], "error_code": errors[k]})
    field = "topic_id" if v >= 10 else "name"
    return {"throttle_time_ms": 0,
            "topics": [{field: key if key is not None else (NULL_UUID if v >= 10 else ""), "partitions": parts}
                       for key, parts in topics.items()]}
