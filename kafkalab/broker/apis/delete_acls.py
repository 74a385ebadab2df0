"""DeleteAcls (key 31), versions 1-3: remove the ACL bindings filters match (``AdminClient.delete_acls``).

As Kafka 3.9's ``AclApis.handleDeleteAcls``: the principal needs ALTER on the cluster (else every filter is
CLUSTER_AUTHORIZATION_FAILED); without an authorizer SECURITY_DISABLED. Each filter (as DescribeAcls') is
answered with the bindings it deleted; a binding two filters match is counted for the first. A filter with a
code 0 (UNKNOWN) closes the connection, as Kafka's request class refuses to parse it. A KRaft broker forwards the
request to the active controller (:mod:`kafkalab.controller.acl_apis`), where an ACL two filters match is listed
by both, as Kafka 4's AclControlManager lists it.

v1   pattern_type_filter (KIP-290)
v2   flexible
v3   (Kafka: the controller may answer, KIP-590)
"""
import asyncio

from kafka.protocol.admin.acl import DeleteAclsRequest, DeleteAclsResponse

from ..common.errors import ErrorCode
from ..network.request_channel import InvalidRequest
from ..security.auth_helper import authorize_cluster, authorizer_of
from ..security.authorizer.acl import AclOperation, filter_from_wire, raw_unknown
from . import api


def check_filters(filters) -> list:
    """The filters as AclBindingFilters; InvalidRequest for a code 0 (UNKNOWN)."""
    for f in filters:
        if raw_unknown(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type):
            raise InvalidRequest(f"Filters contain UNKNOWN elements, filters: {f}")
    return [filter_from_wire(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                             f.host_filter, f.operation, f.permission_type) for f in filters]


def every_filter(filters, code, message) -> dict:
    return {"throttle_time_ms": 0, "filter_results": [
        {"error_code": code, "error_message": message, "matching_acls": []} for _ in filters]}


def filter_result(bindings, code: int = 0, message: str | None = None) -> dict:
    """``DeleteAclsResponse.filterResult``: the bindings one filter deleted, or its error."""
    return {"error_code": code, "error_message": message, "matching_acls": [
        {"error_code": 0, "error_message": None, "resource_type": b.pattern.resource_type,
         "resource_name": b.pattern.name, "pattern_type": b.pattern.pattern_type, "principal": b.entry.principal,
         "host": b.entry.host, "operation": b.entry.operation, "permission_type": b.entry.permission_type}
        for b in bindings]}


@api(DeleteAclsRequest, DeleteAclsResponse, versions=(1, 3))
async def handle_delete_acls(ctx, request):
    filters = request.filters or []
    binding_filters = check_filters(filters)
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every_filter(filters, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            f"Request {ctx.api_name} is not authorized.")
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return every_filter(filters, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    deleted = await asyncio.to_thread(authorizer.delete_acls, binding_filters)
    return {"throttle_time_ms": 0, "filter_results": [filter_result(bindings) for bindings in deleted]}
