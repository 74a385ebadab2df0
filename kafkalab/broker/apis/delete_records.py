"""DeleteRecords (key 21), versions 0-2: move a partition's log start offset forward.

``DeleteRecords(t-0, offset=5)`` makes offset 5 the first offset a consumer
may read (``UnifiedLog.maybe_increment_log_start_offset``) and answers the new
*low watermark* (the log start offset). The records below stay on disk until
retention deletes the segments wholly below the new start; they are already
unreadable: a Fetch below the start gets OFFSET_OUT_OF_RANGE, the consumer's
``auto.offset.reset`` decides where it goes, and ListOffsets EARLIEST answers
the new start. The new start is written to ``log-start-offset-checkpoint`` at
once, so it survives a crash too.

Per partition: offset -1 means "up to the high watermark" (delete everything
consumers could see); an offset above the high watermark or below -1 is
OFFSET_OUT_OF_RANGE; a topic whose ``cleanup.policy`` lacks ``delete``
(compact only) is POLICY_VIOLATION, as in Kafka; an unknown partition is
UNKNOWN_TOPIC_OR_PARTITION. Moving the offset backwards is a no-op.

v0   topics, partitions and offsets; low watermark per partition
v1   same as v0
v2   flexible
``timeout_ms`` is ignored: with no followers to wait for, the answer is immediate.
"""
import os

from kafka.protocol.admin.topics import DeleteRecordsRequest, DeleteRecordsResponse

from ..common.errors import ErrorCode, KafkaError
from ..log.log_manager import LOG_START_OFFSET_CHECKPOINT
from ..log.offset_checkpoint import write_checkpoint
from . import api

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK


def delete_records_on_leader(partition, offset: int) -> int:
    """Kafka's ``Partition.deleteRecordsOnLeader``: returns the new low watermark."""
    log = partition.log
    if not log.config.delete_enabled:
        raise KafkaError(ErrorCode.POLICY_VIOLATION,
                         f"Records of partition {partition.name} can not be deleted due to the configured "
                         f"policy (cleanup.policy={log.config['cleanup.policy']})")
    converted = log.high_watermark if offset == HIGH_WATERMARK else offset
    if converted < 0:
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"The offset {converted} for partition {partition.name} is not valid")
    log.maybe_increment_log_start_offset(converted)
    return log.log_start_offset


def _checkpoint_log_start_offsets(broker) -> None:
    """Persist every log's start offset now (Kafka does it every
    ``log.flush.start.offset.checkpoint.interval.ms``)."""
    lm = broker.log_manager
    write_checkpoint(os.path.join(lm.log_dir, LOG_START_OFFSET_CHECKPOINT),
                     {k: log.log_start_offset for k, log in lm.logs.items()})


@api(DeleteRecordsRequest, DeleteRecordsResponse, versions=(0, 2))
async def handle_delete_records(ctx, request):
    rm = ctx.broker.replica_manager
    topics, moved = [], False
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            entry = {"partition_index": p.partition_index, "low_watermark": -1, "error_code": 0}
            try:
                partition = rm.get_partition(t.name, p.partition_index)
                entry["low_watermark"] = delete_records_on_leader(partition, p.offset)
                moved = True
            except KafkaError as exc:
                entry["error_code"] = exc.code
            partitions.append(entry)
        topics.append({"name": t.name, "partitions": partitions})
    if moved:
        _checkpoint_log_start_offsets(ctx.broker)
    return {"throttle_time_ms": 0, "topics": topics}
