"""Heartbeat (key 12), versions 0-4: a member says it is alive; the answer says whether to rejoin.

v1   + throttle_time_ms
v2   same as v1
v3   + group_instance_id (KIP-345)
v4   flexible
Not implemented: nothing.

Each heartbeat restarts the member's ``session.timeout.ms`` timer. The
answer is NONE (carry on), REBALANCE_IN_PROGRESS (rejoin now),
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID (you were removed) or
FENCED_INSTANCE_ID (another process took your group.instance.id).
"""
from kafka.protocol.consumer.group import HeartbeatRequest, HeartbeatResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(HeartbeatRequest, HeartbeatResponse, versions=(0, 4))
async def handle_heartbeat(ctx, request):
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    error = ctx.broker.group_coordinator.heartbeat(request.group_id, request.member_id,
                                                   request.group_instance_id if ctx.api_version >= 3 else None,
                                                   request.generation_id)
    return {"throttle_time_ms": 0, "error_code": error}
