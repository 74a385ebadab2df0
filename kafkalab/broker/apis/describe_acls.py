"""DescribeAcls (key 29), versions 1-3: the ACL bindings a filter matches (``AdminClient.describe_acls``).

As Kafka 3.9's ``AclApis.handleDescribeAcls``: the principal needs DESCRIBE on the cluster (else
CLUSTER_AUTHORIZATION_FAILED); without an authorizer SECURITY_DISABLED ("No Authorizer is configured on the
broker"). The filter (resource type, name, pattern type, principal, host, operation, permission type) matches
as Kafka's ``AclBindingFilter``: ANY and null match anything, the pattern type MATCH every pattern that applies
to the named resource (the literal name, ``*``, its prefixes). The bindings come back grouped by resource.
A filter with a code 0 (UNKNOWN) closes the connection, as Kafka's request class refuses to parse it.

v1   pattern_type_filter (KIP-290)
v2   flexible
v3   (Kafka: the controller may answer, KIP-590)
"""
from kafka.protocol.admin.acl import DescribeAclsRequest, DescribeAclsResponse

from ..common.errors import ErrorCode
from ..network.request_channel import InvalidRequest
from ..security.auth_helper import authorize_cluster, authorizer_of
from ..security.authorizer.acl import AclOperation, filter_from_wire, raw_unknown
from . import api


def resources(bindings) -> list[dict]:
    """``DescribeAclsResponse.aclsResources``: the bindings grouped by resource pattern."""
    grouped: dict = {}
    for b in bindings:
        grouped.setdefault(b.pattern, []).append(b.entry)
    return [{"resource_type": p.resource_type, "resource_name": p.name, "pattern_type": p.pattern_type,
             "acls": [{"principal": e.principal, "host": e.host, "operation": e.operation,
                       "permission_type": e.permission_type} for e in entries]} for p, entries in grouped.items()]


@api(DescribeAclsRequest, DescribeAclsResponse, versions=(1, 3))
async def handle_describe_acls(ctx, request):
    r = request
    if raw_unknown(r.resource_type_filter, r.pattern_type_filter, r.operation, r.permission_type):
        raise InvalidRequest(f"DescribeAclsRequest contains UNKNOWN elements: {r}")

    def error(code, message):
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "resources": []}
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"Request {ctx.api_name} is not authorized.")
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    binding_filter = filter_from_wire(r.resource_type_filter, r.resource_name_filter, r.pattern_type_filter,
                                      r.principal_filter, r.host_filter, r.operation, r.permission_type)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "resources": resources(authorizer.acls(binding_filter))}
