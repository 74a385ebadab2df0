"""CreateAcls (key 30), versions 1-3: add ACL bindings (``AdminClient.create_acls``, ``kafka-acls --add``).

As Kafka 3.9's ``AclApis.handleCreateAcls``: the principal needs ALTER on the cluster (else every creation is
CLUSTER_AUTHORIZATION_FAILED); without an authorizer every creation is SECURITY_DISABLED. Then per creation:
a CLUSTER resource not named ``kafka-cluster`` or an empty name is INVALID_REQUEST, as is what the authorizer
refuses (a name with ``/``, an unknown code: "Failed to create ACL"); a malformed principal (no ``type:``) is
UNKNOWN_SERVER_ERROR. A creation naming ANY or MATCH fails the whole request with UNKNOWN_SERVER_ERROR, and a
code 0 (UNKNOWN) closes the connection (Kafka's request class refuses to parse it). Creating an ACL that exists
succeeds and changes nothing.

v1   resource_pattern_type (KIP-290: LITERAL or PREFIXED)
v2   flexible
v3   (Kafka: the controller may answer, KIP-590)
Kafka 3.9 also serves v0 (LITERAL only), removed in 4.0 (KIP-896); kafka-python's codec starts at v1.
"""
import asyncio

from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse

from ..common.errors import ErrorCode
from ..network.request_channel import InvalidRequest
from ..security.auth_helper import authorize_cluster, authorizer_of
from ..security.authorizer.acl import CLUSTER_NAME, AclOperation, ResourceType, binding_from_wire, raw_unknown
from . import api


@api(CreateAclsRequest, CreateAclsResponse, versions=(1, 3))
async def handle_create_acls(ctx, request):
    creations = request.creations or []
    for c in creations:
        if raw_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
            raise InvalidRequest(f"CreatableAcls contain unknown elements: {c}")

    def every(code, message):
        return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message} for _ in creations]}
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"Request {ctx.api_name} is not authorized.")
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return every(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    try:
        bindings = [binding_from_wire(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                                      c.operation, c.permission_type) for c in creations]
    except ValueError:   # ANY / MATCH: Kafka's IllegalArgumentException, the whole request's error
        return every(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    results: list = [None] * len(bindings)
    valid = []
    for i, b in enumerate(bindings):
        if b.pattern.resource_type is ResourceType.CLUSTER and b.pattern.name != CLUSTER_NAME:
            results[i] = (ErrorCode.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        elif not b.pattern.name:
            results[i] = (ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
        else:
            valid.append(i)
    # off the event loop: in ZooKeeper mode each resource is a znode write and a change notification
    created = await asyncio.to_thread(authorizer.create_acls, [bindings[i] for i in valid])
    for i, error in zip(valid, created):
        if error is not None:
            results[i] = (ErrorCode[error[0]], error[1] or None)
    return {"throttle_time_ms": 0, "results": [
        {"error_code": 0, "error_message": None} if r is None else {"error_code": r[0], "error_message": r[1]}
        for r in results]}
