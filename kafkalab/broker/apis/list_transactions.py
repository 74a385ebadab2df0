"""ListTransactions (key 66), versions 0-1: the transactional ids a coordinator knows (KIP-664).

v0   flexible; state_filters, producer_id_filters
v1   + duration_filter: only transactions running longer than it (KIP-994, Kafka 3.8)
Not implemented: v2 (transactional_id_pattern, KIP-1152, Kafka 4.1).

Each broker answers for the ``__transaction_state`` partitions it leads, so a
client asks every broker and joins the answers (``kafka-transactions.sh list``,
kafka-python's ``KafkaAdminClient.list_transactions``). State names Kafka does
not know come back in ``unknown_state_filters``.
"""
from kafka.protocol.admin.transactions import ListTransactionsRequest, ListTransactionsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorizer_of
from . import api


@api(ListTransactionsRequest, ListTransactionsResponse, versions=(0, 1))
async def handle_list_transactions(ctx, request):
    coordinator = ctx.broker.transaction_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                "unknown_state_filters": [], "transaction_states": []}
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    body = coordinator.handle_list_transactions(list(request.state_filters or []),
                                                list(request.producer_id_filters or []), duration)
    if authorizer_of(ctx) is not None:   # Kafka 3.9: only the transactional ids the principal may DESCRIBE
        body["transaction_states"] = [s for s in body["transaction_states"] if authorize(
            ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, s["transactional_id"])]
    return {"throttle_time_ms": 0, **body}
