"""DescribeGroups (key 15), versions 0-6: a group's state, protocol and members.

v1   + throttle_time_ms
v2   same as v1
v3   + include_authorized_operations (KIP-430)
v4   + group_instance_id per member (KIP-345)
v5   flexible
v6   + error_message; an unknown group gets GROUP_ID_NOT_FOUND (before v6: state "Dead", no error); so does
     a KIP-848 consumer group ("not a classic group"), as in Kafka 4.4
With an authorizer, a group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (as Kafka 3.9).

As in Kafka's GroupMetadata.summary, members' subscriptions
(``member_metadata``) and assignments are shown only while the group is
Stable; ``protocol_data`` is the chosen assignor (e.g. ``range``,
``cooperative-sticky``).
"""
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse

from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorized_operations
from . import api


@api(DescribeGroupsRequest, DescribeGroupsResponse, versions=(0, 6))
async def handle_describe_groups(ctx, request):
    coordinator = ctx.broker.group_coordinator
    v = ctx.api_version
    groups = []
    for group_id in request.groups or []:
        entry = {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id, "group_state": "Dead",
                 "protocol_type": "", "protocol_data": "", "members": []}
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            entry.update(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_state="")
        elif not group_id:
            entry["error_code"] = ErrorCode.INVALID_GROUP_ID
        else:
            try:
                summary = coordinator.describe_group(group_id)
            except KafkaError as exc:  # cluster mode: the group is coordinated by another broker
                entry["error_code"] = exc.code
                groups.append(entry)
                continue
            if summary is None:
                if v >= 6:  # a KIP-848 consumer group is "not a classic group" (Kafka 4.4's words)
                    entry.update(error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                 error_message=f"Group {group_id} is not a classic group."
                                 if group_id in coordinator.consumer_groups or group_id in coordinator.share_groups
                                 else f"Group {group_id} not found.")
            else:
                summary.pop("generation_id", None)
                entry.update(summary)
        if v >= 3 and request.include_authorized_operations and entry["error_code"] == ErrorCode.NONE:   # KIP-430
            entry["authorized_operations"] = authorized_operations(ctx, ResourceType.GROUP, group_id)
        groups.append(entry)
    return {"throttle_time_ms": 0, "groups": groups}
