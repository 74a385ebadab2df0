"""EndTxn (key 26), versions 0-4: commit or abort a producer's transaction (KIP-98).

v1   same as v0
v2   same as v1 (PRODUCER_FENCED in place of INVALID_PRODUCER_EPOCH for newer clients)
v3   flexible
v4   same as v3 (KIP-890)
Not implemented: v5 (transactions V2: the epoch bumped at every commit, KIP-890
part 2).

``commit_transaction()`` / ``abort_transaction()``: the coordinator moves the
transaction to PrepareCommit / PrepareAbort, writes a COMMIT / ABORT marker to
every partition in it (and to the group's ``__consumer_offsets`` partition,
which applies or drops the transaction's offsets), then CompleteCommit /
CompleteAbort. A retry of the same EndTxn is answered NONE; the other one
(abort after commit) INVALID_TXN_STATE, as is ending a transaction that never
began. Each state is written to ``__transaction_state`` before it is acted on;
on the standalone broker the markers are written before the answer (Kafka
answers once PrepareCommit / PrepareAbort is written, and sends the markers
afterwards).
"""
from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse

from ..common.errors import ErrorCode
from . import api


@api(EndTxnRequest, EndTxnResponse, versions=(0, 4))
async def handle_end_txn(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    code = await coordinator.handle_end_transaction(request.transactional_id, request.producer_id,
                                              request.producer_epoch, bool(request.committed))
    if code == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:   # older clients know only this one
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": code}
