"""JoinGroup (key 11), versions 0-9: join a consumer group, or rejoin for a rebalance.

v1   + rebalance_timeout_ms (v0: the session timeout is the rebalance timeout)
v2   + throttle_time_ms
v3   same as v2
v4   a first join without a member id gets MEMBER_ID_REQUIRED and its id (KIP-394)
v5   + group_instance_id: static membership (KIP-345)
v6   flexible
v7   + protocol_type in the response
v8   + reason (KIP-800)
v9   + skip_assignment: a restarted static leader must not reassign (KIP-814)
Not implemented: nothing of the classic protocol is missing; the
"consumer" rebalance protocol of KIP-848 is a different API (ConsumerGroupHeartbeat).

The request waits here until the rebalance completes (every member rejoined,
or the rebalance timeout passed), as in Kafka: the response carries the new
generation, the chosen assignor and — for the leader only — every member's
subscription. See :mod:`kafkalab.broker.coordinator.group.group_coordinator`.
"""
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize
from . import api


@api(JoinGroupRequest, JoinGroupResponse, versions=(0, 9))
async def handle_join_group(ctx, request):
    v = ctx.api_version
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "generation_id": -1,
                "protocol_type": None, "protocol_name": None if v >= 7 else "", "leader": "",
                "skip_assignment": False, "member_id": "", "members": []}
    result = await ctx.broker.group_coordinator.join_group(
        request.group_id, request.member_id or "", request.group_instance_id if v >= 5 else None,
        ctx.client_id or "", ctx.client_host, request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        request.session_timeout_ms, request.protocol_type,
        [(p.name, bytes(p.metadata or b"")) for p in request.protocols or []],
        require_known_member_id=v >= 4, reason=request.reason if v >= 8 else None)
    result = dict(result, throttle_time_ms=0)
    if v < 7:  # protocol_name is nullable from v7 only
        result["protocol_name"] = result.get("protocol_name") or ""
    if v < 5:
        result["members"] = [{"member_id": m["member_id"], "metadata": m["metadata"]} for m in result["members"]]
    return result
