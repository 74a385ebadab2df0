"""OffsetForLeaderEpoch (key 23), versions 2-4: where did a leader epoch end? (KIP-101, KIP-320)

A consumer (KIP-320) or a follower (KIP-101) holding an offset written under
leader epoch E asks the leader for the end offset of E. If its offset is past
that end, the log it read from was truncated by a leader change (the records
were never committed): a follower truncates, a consumer reports log
truncation or resets by ``auto.offset.reset``. Clients send it after a leader
change or when resuming from a committed offset that carries an epoch.

The answer comes from the log's ``LeaderEpochFileCache``: for the current epoch
the log end offset; for an older one the start offset of the next epoch; for an
unknown newer epoch UNDEFINED (epoch -1, offset -1). ``current_leader_epoch`` is
the requester's idea of the leader's epoch: older than ours is FENCED_LEADER_EPOCH,
newer is UNKNOWN_LEADER_EPOCH, -1 skips the check. A standalone mini broker is
always the leader at epoch 0.

v0-v1 not served (Kafka 4 dropped them)
v2   + current_leader_epoch (KIP-320), throttle_time_ms
v3   + replica_id (-1 consumer, >= 0 a follower; -2 means "debug")
v4   flexible
"""
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

from ..common.errors import ErrorCode, KafkaError
from ..log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from ..security.auth_helper import AclOperation, ResourceType, authorize_cluster, filter_by_authorized
from . import api


def _answer(broker, topic: str, p) -> dict:
    """Kafka's ``Partition.lastOffsetForLeaderEpoch``: check the requester's leader epoch and that we
    lead the partition, then ask the leader epoch cache."""
    try:
        partition = broker.replica_manager.get_partition(topic, p.partition)
        log = partition.local_log_with_epoch(p.current_leader_epoch, require_leader=True)
        epoch, end_offset = log.leader_epoch_cache.end_offset_for(p.leader_epoch, log.log_end_offset)
        return {"error_code": 0, "partition": p.partition, "leader_epoch": epoch, "end_offset": end_offset}
    except KafkaError as exc:
        return {"error_code": exc.code, "partition": p.partition, "leader_epoch": UNDEFINED_EPOCH,
                "end_offset": UNDEFINED_EPOCH_OFFSET}


@api(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, versions=(2, 4))
async def handle_offset_for_leader_epoch(ctx, request):
    # Kafka 3.9: a follower's CLUSTER_ACTION covers every topic, else DESCRIBE on each
    names = [t.topic for t in request.topics]
    allowed = (set(names) if authorize_cluster(ctx, AclOperation.CLUSTER_ACTION, log_if_denied=False)
               else filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names))
    topics = [{"topic": t.topic, "partitions": [
        _answer(ctx.broker, t.topic, p) if t.topic in allowed else
        {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "partition": p.partition, "leader_epoch": UNDEFINED_EPOCH,
         "end_offset": UNDEFINED_EPOCH_OFFSET} for p in t.partitions]} for t in request.topics]
    return {"throttle_time_ms": 0, "topics": topics}
