"""DescribeTransactions (key 65), version 0: the state of transactional ids (KIP-664).

v0   flexible (the only version, Kafka 3.0 to 4.x)
Not implemented: nothing.

Sent to each transactional id's coordinator (FindCoordinator key type 1), as
``kafka-transactions.sh describe`` and the admin clients do: per id its state
(``Ongoing``, ``CompleteCommit``, ... as Kafka names them), producer id and
epoch, timeout, when the transaction started and the partitions in it.
TRANSACTIONAL_ID_NOT_FOUND for an id the coordinator does not know (never
used, or expired after ``transactional.id.expiration.ms``).
"""
from kafka.protocol.admin.transactions import DescribeTransactionsRequest, DescribeTransactionsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(DescribeTransactionsRequest, DescribeTransactionsResponse, versions=(0, 0))
async def handle_describe_transactions(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    states = []
    for txn_id in request.transactional_ids or []:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, txn_id):   # as Kafka 3.9
            states.append({"error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "transactional_id": txn_id,
                           "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                           "producer_id": -1, "producer_epoch": -1, "topics": []})
        elif coordinator is None:
            states.append({"error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactional_id": txn_id,
                           "transaction_state": "", "transaction_timeout_ms": 0, "transaction_start_time_ms": -1,
                           "producer_id": -1, "producer_epoch": -1, "topics": []})
        else:
            states.append(coordinator.handle_describe_transaction(txn_id))
    return {"throttle_time_ms": 0, "transaction_states": states}
