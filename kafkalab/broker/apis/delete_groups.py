"""DeleteGroups (key 42), versions 0-2: delete Empty groups and their committed offsets.

v1   same as v0
v2   flexible
Not implemented: nothing.

Only a group without members can go: one with members gets
NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. Deleting writes
tombstones for the group and each of its offsets to ``__consumer_offsets``.
"""
from kafka.protocol.admin.groups import DeleteGroupsRequest, DeleteGroupsResponse

from ..errors import ErrorCode
from . import api


@api(DeleteGroupsRequest, DeleteGroupsResponse, versions=(0, 2))
async def handle_delete_groups(ctx, request):
    coordinator = ctx.broker.group_coordinator
    names = list(request.groups_names or [])
    if coordinator is None:
        results = {g: ErrorCode.COORDINATOR_NOT_AVAILABLE for g in names}
    else:
        results = coordinator.delete_groups(names)
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": results[g]} for g in names]}
