"""CreateAcls and DeleteAcls on a KRaft controller, and the authorization of the controller's APIs (Kafka 4's
``AclApis`` and the checks of ``ControllerApis``, with the controller's StandardAuthorizer).

A KRaft broker forwards CreateAcls and DeleteAcls (in an Envelope) to the active controller, which answers them
as Kafka's ``AclApis`` does, for the client's principal: ALTER on the cluster (else every item
CLUSTER_AUTHORIZATION_FAILED "Request CreateAcls is not authorized."), no authorizer configured SECURITY_DISABLED
"No Authorizer is configured.", a CLUSTER resource not named ``kafka-cluster`` or an empty name INVALID_REQUEST;
then the :class:`~kafkalab.controller.acl_control_manager.AclControlManager` writes the records and each node's
authorizer replays them. DescribeAcls stays on the broker, answered from its own authorizer.
"""
from __future__ import annotations

from ..broker.apis.create_acls import check_creations, creation_results, every_creation
from ..broker.apis.delete_acls import check_filters, every_filter, filter_result
from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.security.auth_helper import authorize, authorize_cluster, filter_by_authorized
from ..broker.security.authorizer.acl import AclOperation, ResourceType
from .controller_request_context import request_context

CREATE_ACLS, DELETE_ACLS = 30, 31
TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32
#: ``new ApiError(error)``'s message: the error's default one (Kafka's Errors)
AUTHORIZATION_MESSAGES = {ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
                          ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
                          ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed."}


def _not_authorized(ctx) -> str:
    return f"Request {ctx.api_name} is not authorized."


async def handle_create_acls(controller, request) -> dict:
    creations = request.creations or []
    ctx = request_context(controller, CREATE_ACLS)
    checked = check_creations(creations)     # InvalidRequest for an UNKNOWN: the forwarding broker closes
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every_creation(creations, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _not_authorized(ctx))
    if controller.authorizer is None:
        return every_creation(creations, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    if checked is None:
        return every_creation(creations, ErrorCode.UNKNOWN_SERVER_ERROR, None)
    bindings, results, valid = checked
    try:
        created = await controller.create_acls([bindings[i] for i in valid])
    except KafkaError as exc:   # NOT_CONTROLLER: the forwarding broker looks for the active one
        return every_creation(creations, int(exc.code), exc.message)
    for i, error in zip(valid, created):
        results[i] = error
    return creation_results(results)


async def handle_delete_acls(controller, request) -> dict:
    filters = request.filters or []
    ctx = request_context(controller, DELETE_ACLS)
    binding_filters = check_filters(filters)
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return every_filter(filters, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _not_authorized(ctx))
    if controller.authorizer is None:
        return every_filter(filters, ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    try:
        deleted = await controller.delete_acls(binding_filters)
    except KafkaError as exc:
        return every_filter(filters, int(exc.code), exc.message)
    return {"throttle_time_ms": 0, "filter_results": [
        filter_result([], int(r[0]), r[1]) if isinstance(r, tuple) else filter_result(r) for r in deleted]}


# -- the other APIs' checks (ControllerApis) ---------------------------------------------------------------------

def cluster_authorized(controller, api_key: int, operation: AclOperation) -> bool:
    """``authorizeClusterOperation``: ``operation`` on the cluster for the request being handled."""
    return authorize_cluster(request_context(controller, api_key), operation)


def authorized_topics(controller, api_key: int, cluster_operation: AclOperation | None,
                      operations: tuple[AclOperation, ...], names) -> set[str]:
    """The topics the principal may change: all with ``cluster_operation`` on the cluster (not logged when
    denied, as ``logIfDenied = false``), else those allowed every one of ``operations``."""
    ctx = request_context(controller, api_key)
    names = [n for n in names if n is not None]
    if cluster_operation is not None and authorize(ctx, cluster_operation, ResourceType.CLUSTER, "kafka-cluster",
                                                   log_if_denied=False):
        return set(names)
    allowed = set(names)
    for operation in operations:
        allowed &= filter_by_authorized(ctx, operation, ResourceType.TOPIC, names)
    return allowed


def alter_resource_error(controller, api_key: int, resource_type: int, name: str) -> ErrorCode | None:
    """``authorizeAlterResource``: ALTER_CONFIGS on the cluster (BROKER), the topic or the group; None if allowed."""
    ctx = request_context(controller, api_key)
    if resource_type == TOPIC_RESOURCE:
        return None if authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name) \
            else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type == GROUP_RESOURCE:
        return None if authorize(ctx, AclOperation.ALTER_CONFIGS, ResourceType.GROUP, name) \
            else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None if authorize_cluster(ctx, AclOperation.ALTER_CONFIGS) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
