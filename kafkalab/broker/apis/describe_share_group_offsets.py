"""DescribeShareGroupOffsets (key 90), versions 0-1: where share groups are in their partitions (KIP-932).

v0   flexible (Kafka 4.1)
v1   + Lag per partition (Kafka 4.2)
Sent to the group coordinator (Java's ``Admin.listShareGroupOffsets``; confluent-kafka 2.16's AdminClient has
no call for it). Per partition the share-partition start offset (SPSO: every record below it is done), the
leader epoch of the state's last write, and the lag: records from the SPSO to the high watermark not yet
acknowledged or archived. A partition whose share state was never initialized (the group never read it) has
start offset -1; with ``Topics`` null the answer lists the partitions of the topics the group's members
subscribe to that have state. An unknown group answers no error and no topics (as Kafka 4.4); the id of a
classic or consumer group GROUP_ID_NOT_FOUND (kafkalab's answer, not compared with Kafka). Simplified: in cluster
mode the lag is -1 ("unknown") unless this broker has a replica of the partition (Kafka asks the partition
leader for its offsets).
"""
from kafka.protocol.api_message import ApiMessage

from ..common.errors import ErrorCode, KafkaError
from ..server.share.share_partition import RecordState
from ..common.message import schemas
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=schemas): pass
class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=schemas): pass


@api(DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, versions=(0, 1))
async def handle_describe_share_group_offsets(ctx, request):
    return {"throttle_time_ms": 0, "groups": [await _describe_group(ctx, g) for g in request.groups or []]}


async def _describe_group(ctx, g) -> dict:
    coordinator = ctx.broker.group_coordinator
    out = {"group_id": g.group_id, "topics": [], "error_code": ErrorCode.NONE, "error_message": None}
    if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):   # Kafka 4: DESCRIBE on the group
        return {**out, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": "Group authorization failed."}
    status = coordinator.group_status_error(g.group_id)
    if status is not None:
        return {**out, "error_code": status}
    group = coordinator.share_groups.get(g.group_id)
    if group is None:
        if g.group_id in coordinator.groups or g.group_id in coordinator.consumer_groups:
            return {**out, "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                    "error_message": f"Group {g.group_id} is not a share group."}
        if g.topics is None:   # an unknown group: no error, nothing to list (measured on Kafka 4.4)
            return out
    cache = ctx.broker.metadata_cache
    if g.topics is None:
        wanted = [(name, None) for name in sorted(group.subscription_metadata)]
    else:
        wanted = [(t.topic_name, list(t.partitions or [])) for t in g.topics]
    persister = ctx.broker.share_partition_manager.persister
    allowed = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, [n for n, _ in wanted],
                                   log_if_denied=g.topics is not None)
    for name, partitions in wanted:
        if name not in allowed:   # named: TOPIC_AUTHORIZATION_FAILED; of all the group's topics: left out
            if partitions is not None:
                out["topics"].append({"topic_name": name, "topic_id": None, "partitions": [
                    _partition(p, -1, -1, -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
                    for p in partitions]})
            continue
        meta = cache.get(name)
        if meta is None:
            if partitions is not None:
                out["topics"].append({"topic_name": name, "topic_id": None, "partitions": [
                    _partition(p, -1, -1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.") for p in partitions]})
            continue
        parts = []
        for index in (range(meta.num_partitions) if partitions is None else partitions):
            try:
                state = await persister.read(g.group_id, meta.topic_id, index)
            except KafkaError as exc:
                parts.append(_partition(index, -1, -1, -1, exc.code, exc.message))
                continue
            if state is None or state["start_offset"] < 0:
                if partitions is not None:
                    parts.append(_partition(index, -1, -1, -1))
                continue
            parts.append(_partition(index, state["start_offset"], state.get("leader_epoch", -1),
                                    _lag(ctx, name, index, state)))
        if parts or partitions is not None:
            out["topics"].append({"topic_name": name, "topic_id": meta.topic_id, "partitions": parts})
    return out


def _partition(index, start, leader_epoch, lag, code=ErrorCode.NONE, message=None) -> dict:
    return {"partition_index": index, "start_offset": start, "leader_epoch": leader_epoch, "lag": lag,
            "error_code": code, "error_message": message}


def _lag(ctx, topic: str, index: int, state: dict) -> int:
    partition = ctx.broker.replica_manager.partitions.get((topic, index))
    if partition is None or partition.log is None:
        return -1
    done = sum(b["last_offset"] - b["first_offset"] + 1 for b in state["state_batches"]
               if b["delivery_state"] in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))
    return max(0, partition.log.high_watermark - state["start_offset"] - done)
