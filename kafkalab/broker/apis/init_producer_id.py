"""InitProducerId (key 22), versions 0-5: give an idempotent producer its id and epoch (KIP-98).

v1   same as v0
v2   flexible
v3   + producer_id/epoch in the request: a producer may ask to bump its epoch (KIP-360)
v4   same as v3 (PRODUCER_FENCED may be returned)
v5   same as v4 (KIP-890)
Not implemented: transactional ids (no transaction coordinator here; a
request with one gets TRANSACTIONAL_ID_NOT_FOUND), v6 (two-phase commit).

An idempotent producer (``enable.idempotence=true``, the default of both
clients) calls this once, then stamps every batch with its producer id, epoch
and per-partition sequence numbers; the partition logs use them to drop
retried duplicates (see ``kafkalab.broker.log.producer_state``). A producer
that re-initialises with its current id and epoch gets the epoch bumped.
"""
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from ..errors import ErrorCode
from . import api

MAX_EPOCH = 32767


@api(InitProducerIdRequest, InitProducerIdResponse, versions=(0, 5))
async def handle_init_producer_id(ctx, request):
    if request.transactional_id is not None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,
                "producer_id": -1, "producer_epoch": -1}
    manager = ctx.broker.producer_id_manager
    pid = request.producer_id if ctx.api_version >= 3 else -1
    epoch = request.producer_epoch if ctx.api_version >= 3 else -1
    if pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id": pid, "producer_epoch": epoch + 1}
    return {"throttle_time_ms": 0, "error_code": 0, "producer_id": manager.generate_producer_id(),
            "producer_epoch": 0}
