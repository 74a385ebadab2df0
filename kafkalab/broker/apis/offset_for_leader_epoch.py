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

from ..errors import ErrorCode, KafkaError
from ..log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from . import api

NO_EPOCH = -1  # current_leader_epoch not given


def check_current_leader_epoch(partition, current_leader_epoch: int) -> None:
    """Kafka's ``Partition.checkCurrentLeaderEpoch``."""
    if current_leader_epoch == NO_EPOCH:
        return
    if current_leader_epoch < partition.leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                         f"{partition.name}: the request's leader epoch {current_leader_epoch} is older than the "
                         f"leader's {partition.leader_epoch}")
    if current_leader_epoch > partition.leader_epoch:
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                         f"{partition.name}: the request's leader epoch {current_leader_epoch} is newer than the "
                         f"leader's {partition.leader_epoch}")


def last_offset_for_leader_epoch(partition, leader_epoch: int) -> tuple[int, int]:
    """Kafka's ``Partition.lastOffsetForLeaderEpoch``: (epoch, end offset), or UNDEFINED."""
    log = partition.log
    cache = getattr(log, "leader_epoch_cache", None)
    if cache is None:  # a log without an epoch cache: everything was written at the current epoch
        if leader_epoch == partition.leader_epoch:
            return leader_epoch, log.log_end_offset
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    return cache.end_offset_for(leader_epoch, log.log_end_offset)


def _answer(broker, topic: str, p) -> dict:
    try:
        partition = broker.replica_manager.get_partition(topic, p.partition)
        check_current_leader_epoch(partition, p.current_leader_epoch)
        epoch, end_offset = last_offset_for_leader_epoch(partition, p.leader_epoch)
        return {"error_code": 0, "partition": p.partition, "leader_epoch": epoch, "end_offset": end_offset}
    except KafkaError as exc:
        return {"error_code": exc.code, "partition": p.partition, "leader_epoch": UNDEFINED_EPOCH,
                "end_offset": UNDEFINED_EPOCH_OFFSET}


@api(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, versions=(2, 4))
async def handle_offset_for_leader_epoch(ctx, request):
    topics = [{"topic": t.topic, "partitions": [_answer(ctx.broker, t.topic, p) for p in t.partitions]}
              for t in request.topics]
    return {"throttle_time_ms": 0, "topics": topics}
