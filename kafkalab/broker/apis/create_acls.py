"""CreateAcls (key 30), versions 1-3: add ACL bindings (``AdminClient.create_acls``, ``kafka-acls --add``).

As Kafka 3.9's ``AclApis.handleCreateAcls``: the principal needs ALTER on the cluster (else every creation is
CLUSTER_AUTHORIZATION_FAILED); without an authorizer every creation is SECURITY_DISABLED. Then per creation:
a CLUSTER resource not named ``kafka-cluster`` or an empty name is INVALID_REQUEST, as is what the authorizer
refuses (a name with ``/``, an unknown code: "Failed to create ACL"); a malformed principal (no ``type:``) is
UNKNOWN_SERVER_ERROR. A creation naming ANY or MATCH fails the whole request with UNKNOWN_SERVER_ERROR, and a
code 0 (UNKNOWN) closes the connection (Kafka's request class refuses to parse it). Creating an ACL that exists
succeeds and changes nothing. A KRaft broker forwards the request to the active controller, which answers it
the same way (:mod:`kafkalab.controller.acl_apis`).

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


def check_creations(creations) -> tuple[list, list, list[int]] | None:
    """The creations as bindings, per creation None or the (error, message) AclApis answers itself (a CLUSTER
    resource not named kafka-cluster, an empty name), and the indexes of those left to the authorizer; None for a
    creation naming ANY or MATCH (the whole request UNKNOWN_SERVER_ERROR). InvalidRequest for a code 0."""
    for c in creations:
        if raw_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
            raise InvalidRequest(f"CreatableAcls contain unknown elements: {c}")
    try:
        bindings = [binding_from_wire(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                                      c.operation, c.permission_type) for c in creations]
    except ValueError:   # ANY / MATCH: Kafka's IllegalArgumentException, the whole request's error
        return None
    results: list = [None] * len(bindings)
    valid = []
    for i, b in enumerate(bindings):
        if b.pattern.resource_type is ResourceType.CLUSTER and b.pattern.name != CLUSTER_NAME:
            results[i] = (ErrorCode.INVALID_REQUEST, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        elif not b.pattern.name:
            results[i] = (ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
        else:
            valid.append(i)
    return bindings, results, valid


def every_creation(creations, code, message) -> dict:
    return {"throttle_time_ms": 0, "results": [{"error_code": code, "error_message": message} for _ in creations]}


def creation_results(results) -> dict:
    return {"throttle_time_ms": 0, "results": [
        {"error_code": 0, "error_message": None} if r is None else {"error_code": r[0], "error_message": r[1]}
        for r in results]}


@api(CreateAclsRequest, CreateAclsResponse, versions=(1, 3))
async def handle_create_acls(ctx, request):
    creations = request.creations or []
    for c in creations:
        if raw_unknown(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
            raise InvalidRequest(f"CreatableAcls contain unknown elements: {c}")
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every_creation(creations, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                              f"Request {ctx.api_name} is not authorized.")
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return every_creation(creations, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    checked = check_creations(creations)
    if checked is None:
        return every_creation(creations, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    bindings, results, valid = checked
    # off the event loop: in ZooKeeper mode each resource is a znode write and a change notification
    created = await asyncio.to_thread(authorizer.create_acls, [bindings[i] for i in valid])
    for i, error in zip(valid, created):
        if error is not None:
            results[i] = (ErrorCode[error[0]], error[1] or None)
    return creation_results(results)
