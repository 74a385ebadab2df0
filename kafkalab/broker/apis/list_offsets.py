"""ListOffsets (key 2), versions 1-8: find an offset by timestamp.

The timestamp is a real time in ms, or a special value:
  -2 EARLIEST  the log start offset
  -1 LATEST    the high watermark (the next offset a consumer will see)
  -3 MAX_TIMESTAMP (v7, KIP-734) the offset of the record with the largest timestamp
  -4 EARLIEST_LOCAL (v8, KIP-405) the log start offset (no tiered storage here)
For a real timestamp the answer is the first offset whose timestamp is at or
after it (how a consumer seeks "to 10:00", ``offsets_for_times``), or -1 if
there is none. A special timestamp the request's version does not know gets
UNSUPPORTED_VERSION; a stale or future ``current_leader_epoch`` (v4+) gets
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, as in Fetch.

v1   one offset per partition (v0 is not served)
v2   + isolation level, throttle time
v4   + current leader epoch / leader epoch (KIP-320)
v6   flexible
v7   MAX_TIMESTAMP
v8   EARLIEST_LOCAL
Not implemented: v9+ (EARLIEST_PENDING_UPLOAD, timeout), tiered storage.
With isolation level 1 (READ_COMMITTED) LATEST is the last stable offset: the
first offset of the earliest open transaction, else the high watermark.

The answer's ``leader_epoch`` (v4+) is the epoch that wrote the offset found, as Kafka's
``UnifiedLog.fetchOffsetByTimestamp`` gives it: for EARLIEST the first epoch of the leader epoch
cache (if it starts at or before the log start offset), for a timestamp or MAX_TIMESTAMP the epoch
of the batch holding the offset, for LATEST the partition's current leader epoch; -1 when nothing
was found.

Who asks matters, as in Kafka's ``ReplicaManager.fetchOffset``: a consumer
(``replica_id`` -1) must ask the leader and LATEST is the high watermark; a
follower (its broker id) also asks the leader, and LATEST is the log end
offset; ``replica_id`` -2 (``DEBUGGING_REPLICA_ID``, what
``Cluster.describe`` uses) may ask *any* replica, which answers LATEST with its
own log end offset. A leader elected moments ago whose high watermark is still behind the start
of its epoch answers a consumer's LATEST with OFFSET_NOT_AVAILABLE (retriable), as Kafka does.
"""
import collections

from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from ..common.errors import ErrorCode, KafkaError
from ..log.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from ..security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from . import api

CONSUMER_REPLICA_ID = -1
DEBUGGING_REPLICA_ID = -2
EARLIEST_LOCAL_TIMESTAMP = -4
MAX_TIMESTAMP = -3
READ_COMMITTED = 1   # isolation_level
#: the special timestamps each version may use
SPECIAL_SINCE = {LATEST_TIMESTAMP: 1, EARLIEST_TIMESTAMP: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL_TIMESTAMP: 8}


def _lookup(ctx, topic, pdata, replica_id, request):
    broker = ctx.broker
    try:
        ts = pdata.timestamp
        if ts < 0 and SPECIAL_SINCE.get(ts, 99) > ctx.api_version:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                             f"timestamp {ts} is not a special timestamp of ListOffsets v{ctx.api_version}")
        partition = broker.replica_manager.get_partition(topic, pdata.partition_index)
        # (before v4 the request has no current_leader_epoch: the codec gives -1, "don't check")
        log = partition.local_log_with_epoch(pdata.current_leader_epoch,
                                             require_leader=replica_id != DEBUGGING_REPLICA_ID)
        if ts == EARLIEST_LOCAL_TIMESTAMP:
            ts = EARLIEST_TIMESTAMP
        read_committed = ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
        lagging = _lagging_high_watermark(partition, log, replica_id)
        if ts == LATEST_TIMESTAMP and lagging:
            raise lagging
        if ts == LATEST_TIMESTAMP and replica_id != CONSUMER_REPLICA_ID:   # no isolation level: the LEO
            found = log.log_end_offset, -1
        else:
            found = log.fetch_offset_by_timestamp(ts, read_committed=read_committed)
        if lagging and ts != EARLIEST_TIMESTAMP and found is not None \
                and found[0] >= (log.last_stable_offset if read_committed else log.high_watermark):
            raise lagging
        offset, timestamp = found if found is not None else (-1, -1)
        return {"partition_index": pdata.partition_index, "error_code": 0, "timestamp": timestamp,
                "offset": offset, "leader_epoch": _epoch_of(partition, log, ts, found)}
    except KafkaError as exc:
        return {"partition_index": pdata.partition_index, "error_code": exc.code}


def _lagging_high_watermark(partition, log, replica_id) -> KafkaError | None:
    """Kafka's ``Partition.fetchOffsetForTimestamp``: a leader elected moments ago may not know yet how far
    the previous leader's high watermark had gone (a follower learns it a fetch later). Until followers have
    fetched up to where its epoch began, it answers a consumer's LATEST (and a timestamp found at or past what
    is fetchable) with the retriable OFFSET_NOT_AVAILABLE instead of a high watermark that would make
    acknowledged records look gone."""
    start = partition.leader_epoch_start_offset
    if replica_id != CONSUMER_REPLICA_ID or start is None or start <= log.high_watermark:
        return None
    return KafkaError(ErrorCode.OFFSET_NOT_AVAILABLE,
                      f"the high watermark of {partition.name} ({log.high_watermark}) is behind the start offset "
                      f"of leader epoch {partition.leader_epoch} ({start})")


def _epoch_of(partition, log, ts, found) -> int:
    """The leader epoch that goes with the offset found (Kafka's ``TimestampAndOffset.leaderEpoch``)."""
    if ts == LATEST_TIMESTAMP:
        return partition.leader_epoch
    entries = log.leader_epoch_cache.entries
    if found is None:
        return -1
    if ts == EARLIEST_TIMESTAMP:   # the first cached epoch, if it covers the log start offset
        return entries[0].epoch if entries and entries[0].start_offset <= log.log_start_offset else -1
    # the epoch of the batch holding the offset: the last one that started at or before it
    return next((e.epoch for e in reversed(entries) if e.start_offset <= found[0]), -1)


@api(ListOffsetsRequest, ListOffsetsResponse, versions=(1, 8))
async def handle_list_offsets(ctx, request):
    seen = collections.Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    topics = []
    allowed = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, [t.name for t in request.topics])
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if t.name not in allowed:   # Kafka 3.9: DESCRIBE on the topic
                parts.append({"partition_index": p.partition_index, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                              "timestamp": -1, "offset": -1, "leader_epoch": -1})
            elif seen[(t.name, p.partition_index)] > 1:  # Kafka answers duplicates with INVALID_REQUEST
                parts.append({"partition_index": p.partition_index, "error_code": ErrorCode.INVALID_REQUEST})
            else:
                parts.append(_lookup(ctx, t.name, p, request.replica_id, request))
        topics.append({"name": t.name, "partitions": parts})
    return {"throttle_time_ms": 0, "topics": topics}
