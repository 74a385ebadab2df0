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
UNKNOWN_TOPIC_OR_PARTITION; then an internal topic (``__consumer_offsets``, once
it exists) is INVALID_TOPIC_EXCEPTION; a partition this broker does not lead is
NOT_LEADER_OR_FOLLOWER (nothing deleted: the client asks the leader). Moving the
offset backwards is a no-op. Checked in ``Partition.delete_records_on_leader``
(Kafka's ``deleteRecordsOnLeader``).

The answer waits, up to ``timeout_ms``, until the partition's *low watermark*
(the smallest log start offset over the leader and its followers on live
brokers) reaches the offset: every replica has dropped the records (the
delete-records purgatory, :mod:`kafkalab.broker.server.delayed_delete_records`);
past ``timeout_ms`` it is REQUEST_TIMED_OUT. A standalone broker answers at once.

v0   topics, partitions and offsets; low watermark per partition
v1   same as v0
v2   flexible
"""
import os

from kafka.protocol.admin.topics import DeleteRecordsRequest, DeleteRecordsResponse

from ..common.errors import ErrorCode
from ..log.log_manager import LOG_START_OFFSET_CHECKPOINT
from ..log.offset_checkpoint import write_checkpoint
from ..security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from . import api

INVALID_LOW_WATERMARK = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK


def _checkpoint_log_start_offsets(broker) -> None:
    """Persist every log's start offset now (Kafka does it every
    ``log.flush.start.offset.checkpoint.interval.ms``)."""
    lm = broker.log_manager
    write_checkpoint(os.path.join(lm.log_dir, LOG_START_OFFSET_CHECKPOINT),
                     {k: log.log_start_offset for k, log in lm.logs.items()})


@api(DeleteRecordsRequest, DeleteRecordsResponse, versions=(0, 2))
async def handle_delete_records(ctx, request):
    rm = ctx.broker.replica_manager
    cache = ctx.broker.metadata_cache
    results, offsets = {}, {}
    allowed = filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, [t.name for t in request.topics])
    for t in request.topics:
        meta = cache.get(t.name)
        for p in t.partitions:
            if t.name not in allowed:   # Kafka 3.9: DELETE on the topic
                results[(t.name, p.partition_index)] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, INVALID_LOW_WATERMARK)
            elif meta is None or not 0 <= p.partition_index < meta.num_partitions:   # KafkaApis checks this first
                results[(t.name, p.partition_index)] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK)
            else:
                offsets[(t.name, p.partition_index)] = p.offset
    deleted, errors = rm.delete_records_on_local_log(offsets)
    results.update((key, (code, INVALID_LOW_WATERMARK)) for key, code in errors.items())
    if deleted:
        _checkpoint_log_start_offsets(ctx.broker)
        results.update(await rm.wait_for_low_watermarks(deleted, request.timeout_ms))
    topics = []
    for t in request.topics:
        topics.append({"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "low_watermark": results[(t.name, p.partition_index)][1],
             "error_code": results[(t.name, p.partition_index)][0]} for p in t.partitions]})
    return {"throttle_time_ms": 0, "topics": topics}
