"""ListGroups (key 16), versions 0-5: every group this coordinator knows.

v1   + throttle_time_ms
v2   same as v1
v3   flexible
v4   + states_filter, group_state per group (KIP-518)
v5   + types_filter, group_type per group (KIP-848: "classic" or "consumer")
v5 lists share groups too (type "share", KIP-932).

Groups with only committed offsets (``assign()`` + commit) are listed with
an empty protocol type, as in Kafka. Filters compare case-insensitively.
"""
from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from . import api


@api(ListGroupsRequest, ListGroupsResponse, versions=(0, 5))
async def handle_list_groups(ctx, request):
    v = ctx.api_version
    groups = ctx.broker.group_coordinator.list_groups(states=request.states_filter if v >= 4 else None,
                                                      types=request.types_filter if v >= 5 else None)
    if not authorize_cluster(ctx, AclOperation.DESCRIBE, log_if_denied=False):   # else the groups it may DESCRIBE
        groups = [g for g in groups if authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"],
                                                 log_if_denied=False)]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": groups}
