"""DeleteGroups (key 42), versions 0-2: delete Empty groups and their committed offsets.

v1   same as v0
v2   flexible
Not implemented: nothing.

Only a group without members can go: one with members gets
NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND. Deleting writes
tombstones for the group and each of its offsets to ``__consumer_offsets``.
A group named twice is deleted once and answered once, as in Kafka.
"""
from kafka.protocol.admin.groups import DeleteGroupsRequest, DeleteGroupsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from . import api


@api(DeleteGroupsRequest, DeleteGroupsResponse, versions=(0, 2))
async def handle_delete_groups(ctx, request):
    names = list(dict.fromkeys(request.groups_names or []))
    allowed = filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, names)   # Kafka: DELETE each
    results = ctx.broker.group_coordinator.delete_groups([g for g in names if g in allowed])
    results.update({g: ErrorCode.GROUP_AUTHORIZATION_FAILED for g in names if g not in allowed})
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": e} for g, e in results.items()]}
