"""SyncGroup (key 14), versions 0-5: the leader hands out the assignment; every member gets its share.

v1   + throttle_time_ms
v2   same as v1
v3   + group_instance_id (KIP-345)
v4   flexible
v5   + protocol_type and protocol_name, checked against the group's (INCONSISTENT_GROUP_PROTOCOL)
Not implemented: nothing.

A follower's SyncGroup waits until the leader's arrives; the leader's makes
the group Stable and answers everyone. A SyncGroup during a new rebalance
gets REBALANCE_IN_PROGRESS (rejoin), one from an old generation ILLEGAL_GENERATION.
"""
from kafka.protocol.consumer.group import SyncGroupRequest, SyncGroupResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(SyncGroupRequest, SyncGroupResponse, versions=(0, 5))
async def handle_sync_group(ctx, request):
    v = ctx.api_version
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "protocol_type": None,
                "protocol_name": None, "assignment": b""}
    result = await ctx.broker.group_coordinator.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None, request.protocol_name if v >= 5 else None,
        {a.member_id: bytes(a.assignment or b"") for a in request.assignments or []})
    return dict(result, throttle_time_ms=0)
