"""ConsumerGroupDescribe (key 69), versions 0-1: a KIP-848 consumer group, its epochs and members.

v0   flexible from the start (Kafka 3.7; what AdminClient.describeConsumerGroups asks Kafka 4 first)
v1   + member_type per member (KIP-1099, Kafka 4.1): 0 a classic member inside the consumer group (online
     migration), 1 a consumer-protocol member
KIP-430: with ``include_authorized_operations``, what the principal may do on each group found (every group
operation without an authorizer), as Kafka 4's ``KafkaApis.handleConsumerGroupDescribe``.

Per group: state (Empty, Assigning, Reconciling, Stable), group epoch,
target assignment epoch, the assignor, and per member its epoch, client,
subscription, current assignment and target assignment (topic ids and names).
A classic group's id answers GROUP_ID_NOT_FOUND ("not a consumer group"), as
in Kafka; so does an unknown one.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorized_operations_field
from . import api


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas): pass
class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas): pass


def _refused(group_id: str) -> dict:
    """Kafka: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED."""
    return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": "Group authorization failed.",
            "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
            "members": [], "authorized_operations": -2147483648}


@api(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, versions=(0, 1))
async def handle_consumer_group_describe(ctx, request):
    coordinator = ctx.broker.group_coordinator
    return {"throttle_time_ms": 0,
            "groups": describe_groups(ctx, request, coordinator.consumer_group_describe)}


def describe_groups(ctx, request, describe) -> list[dict]:
    """Each of the request's groups described by ``describe`` (ConsumerGroupDescribe's and ShareGroupDescribe's
    coordinator call), or refused without DESCRIBE on it; KIP-430's authorized operations on each one found."""
    groups = []
    for g in request.group_ids or []:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g):
            groups.append(_refused(g))
            continue
        entry = describe(g)
        if request.include_authorized_operations and entry["error_code"] == ErrorCode.NONE:
            entry["authorized_operations"] = authorized_operations_field(ctx, ResourceType.GROUP, g)
        groups.append(entry)
    return groups
