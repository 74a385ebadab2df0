"""LeaveGroup (key 13), versions 0-5: members leave, and the group rebalances without them.

v1   + throttle_time_ms
v2   same as v1
v3   batched: members (member id and group instance id) with an error each (KIP-345);
     an admin may remove a static member by group_instance_id alone
v4   flexible
v5   + reason per member (KIP-800)
Not implemented: nothing.

A consumer sends it on ``close()`` (static members do not: they are expected
back within ``session.timeout.ms``). Up to v2 the single member's error is
the top-level error code.
"""
from kafka.protocol.consumer.group import LeaveGroupRequest, LeaveGroupResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(LeaveGroupRequest, LeaveGroupResponse, versions=(0, 5))
async def handle_leave_group(ctx, request):
    v = ctx.api_version
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
    if v >= 3:
        leaving = [(m.member_id or "", m.group_instance_id) for m in request.members or []]
        reasons = [m.reason for m in request.members or []] if v >= 5 else []
    else:
        leaving, reasons = [(request.member_id or "", None)], []
    reason = next((r for r in reasons if r), None)
    error, member_errors = ctx.broker.group_coordinator.leave_group(request.group_id, leaving, reason)
    if v < 3:
        if error == ErrorCode.NONE and member_errors:
            error = member_errors[0]
        return {"throttle_time_ms": 0, "error_code": error}
    return {"throttle_time_ms": 0, "error_code": error,
            "members": [{"member_id": mid, "group_instance_id": iid, "error_code": e}
                        for (mid, iid), e in zip(leaving, member_errors)]}
