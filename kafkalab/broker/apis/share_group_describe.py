"""ShareGroupDescribe (key 77), version 1: a KIP-932 share group, its epochs and members.

v0   Kafka 4.0's early access (not served)
v1   flexible; the first production version (Kafka 4.1)
KIP-430: with ``include_authorized_operations``, what the principal may do on each group found (every group
operation without an authorizer), as Kafka 4's ``KafkaApis.handleShareGroupDescribe``.

Per group: state (Empty, Stable), group epoch, assignment epoch, the assignor (``simple``), and per member its
epoch, client, subscription and assignment (topic ids and names). The id of a classic or consumer group
answers GROUP_ID_NOT_FOUND ("not a share group"), as in Kafka; so does an unknown one.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorized_operations_field
from . import api


class ShareGroupDescribeRequest(ApiMessage, load_json=schemas): pass
class ShareGroupDescribeResponse(ApiMessage, load_json=schemas): pass


def _refused(group_id: str) -> dict:
    """Kafka: DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED."""
    return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "error_message": "Group authorization failed.",
            "group_id": group_id, "group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "",
            "members": [], "authorized_operations": -2147483648}


@api(ShareGroupDescribeRequest, ShareGroupDescribeResponse, versions=(1, 1))
async def handle_share_group_describe(ctx, request):
    coordinator = ctx.broker.group_coordinator
    groups = []
    for g in request.group_ids or []:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g):
            groups.append(_refused(g))
            continue
        entry = coordinator.share_group_describe(g)
        if request.include_authorized_operations and entry["error_code"] == ErrorCode.NONE:   # KIP-430
            entry["authorized_operations"] = authorized_operations_field(ctx, ResourceType.GROUP, g)
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": groups}
