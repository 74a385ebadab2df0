"""ListOffsets (key 2), versions 1-8: find an offset by timestamp.

The timestamp is a real time in ms, or a special value:
  -2 EARLIEST  the log start offset
  -1 LATEST    the high watermark (the next offset a consumer will see)
  -3 MAX_TIMESTAMP (v7, KIP-734) the offset of the record with the largest timestamp
  -4 EARLIEST_LOCAL (v8, KIP-405) the log start offset (no tiered storage here)
For a real timestamp the answer is the first offset whose timestamp is at or
after it (how a consumer seeks "to 10:00"), or -1 if there is none.

v1   one offset per partition (v0 is not served)
v2   + isolation level, throttle time
v4   + current leader epoch / leader epoch (KIP-320)
v6   flexible
v7   MAX_TIMESTAMP
v8   EARLIEST_LOCAL
"""
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from ..errors import ErrorCode, KafkaError
from ..log.log import EARLIEST_TIMESTAMP
from . import api

EARLIEST_LOCAL_TIMESTAMP = -4


def _lookup(broker, topic, pdata):
    try:
        partition = broker.replica_manager.get_partition(topic, pdata.partition_index)
        ts = EARLIEST_TIMESTAMP if pdata.timestamp == EARLIEST_LOCAL_TIMESTAMP else pdata.timestamp
        found = partition.log.fetch_offset_by_timestamp(ts)
        offset, timestamp = found if found is not None else (-1, -1)
        return {"partition_index": pdata.partition_index, "error_code": 0, "timestamp": timestamp,
                "offset": offset, "leader_epoch": partition.leader_epoch}
    except KafkaError as exc:
        return {"partition_index": pdata.partition_index, "error_code": exc.code}


@api(ListOffsetsRequest, ListOffsetsResponse, versions=(1, 8))
async def handle_list_offsets(ctx, request):
    topics = [{"name": t.name, "partitions": [_lookup(ctx.broker, t.name, p) for p in t.partitions]}
              for t in request.topics]
    return {"throttle_time_ms": 0, "topics": topics}
