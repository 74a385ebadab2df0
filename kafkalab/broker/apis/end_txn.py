"""EndTxn (key 26), versions 0-4: commit or abort a producer's transaction (KIP-98).

v1   same as v0
v2   same as v1 (PRODUCER_FENCED in place of INVALID_PRODUCER_EPOCH for newer clients)
v3   flexible
v4   same as v3 (KIP-890)
Not implemented: v5 (transactions V2: the epoch bumped at every commit, KIP-890
part 2).

``commit_transaction()`` / ``abort_transaction()``: the coordinator moves the
transaction to PrepareCommit / PrepareAbort and answers once that is written
to ``__transaction_state``, as Kafka does; then it writes a COMMIT / ABORT
marker to every partition in it (and to the group's ``__consumer_offsets``
partition, which applies or drops the transaction's offsets), then
CompleteCommit / CompleteAbort. Until then an EndTxn (or AddPartitionsToTxn,
InitProducerId) for the id gets CONCURRENT_TRANSACTIONS, and the client
retries. A retry of the same EndTxn once complete is answered NONE; the other
one (abort after commit) INVALID_TXN_STATE, as is ending a transaction that
never began.
"""
from kafka.protocol.producer.transaction import EndTxnRequest, EndTxnResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(EndTxnRequest, EndTxnResponse, versions=(0, 4))
async def handle_end_txn(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    code = await coordinator.handle_end_transaction(request.transactional_id, request.producer_id,
                                              request.producer_epoch, bool(request.committed))
    if code == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:   # older clients know only this one
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return {"throttle_time_ms": 0, "error_code": code}
