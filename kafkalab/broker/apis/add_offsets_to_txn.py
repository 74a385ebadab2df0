"""AddOffsetsToTxn (key 25), versions 0-4: a group's offsets join a producer's transaction (KIP-98).

v1   same as v0
v2   same as v1
v3   flexible
v4   same as v3 (KIP-890)
Not implemented: nothing (v5+ are Kafka 4's transactions V2). Sent to the
transactional id's coordinator (NOT_COORDINATOR elsewhere in cluster mode).

``send_offsets_to_transaction`` (consume-transform-produce) first sends this to
the transaction coordinator: the group's ``__consumer_offsets`` partition
(``abs(groupId.hashCode()) % offsets.topic.num.partitions``) is added to the
transaction, so the COMMIT or ABORT marker goes there too; then the producer
sends TxnOffsetCommit to the group coordinator. Errors as AddPartitionsToTxn.
"""
from kafka.protocol.producer.transaction import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse

from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, versions=(0, 4))
async def handle_add_offsets_to_txn(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    if not request.group_id:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_GROUP_ID}
    try:
        ctx.broker.group_coordinator.manager.ensure_offsets_topic()
    except KafkaError:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    code = await coordinator.handle_add_partitions_to_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch,
        {coordinator.offsets_partition_for(request.group_id)})
    return {"throttle_time_ms": 0, "error_code": code}
