"""The authorization checks of the request handlers, as Kafka's ``kafka.server.AuthHelper``.

Every function takes the handler's :class:`~kafkalab.broker.apis.RequestContext` (the broker, its authorizer,
the principal, the client's host, the API) and answers as Kafka's does; with no authorizer configured
(``authorizer.class.name`` empty) everything is allowed and nothing is logged::

    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {..., "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
    allowed = filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, topic_names)
"""
from __future__ import annotations

import collections
from typing import Iterable

from .authorizer.acl import (
    CLUSTER_NAME, SUPPORTED_OPERATIONS, SUPPORTED_OPERATIONS_3_9, AclOperation, PatternType, ResourcePattern,
    ResourceType)
from .authorizer.acl_authorizer import Action, AclAuthorizer

__all__ = ["AclOperation", "ResourceType", "CLUSTER_NAME", "authorize", "authorize_cluster", "filter_by_authorized",
           "authorized_operations", "authorized_operations_field", "authorize_by_resource_type", "authorizer_of"]


def authorizer_of(ctx) -> AclAuthorizer | None:
    return getattr(ctx.broker, "authorizer", None)


def _request_name(ctx) -> str:
    return getattr(ctx, "api_name", "") or str(ctx.api_key)


def authorize(ctx, operation: AclOperation, resource_type: ResourceType, name: str, log_if_allowed: bool = True,
              log_if_denied: bool = True, ref_count: int = 1) -> bool:
    """One action on a LITERAL resource (``AuthHelper.authorize``)."""
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return True
    action = Action(operation, ResourcePattern(resource_type, name, PatternType.LITERAL), ref_count,
                    log_if_allowed, log_if_denied)
    return authorizer.authorize(ctx.principal, ctx.client_host, [action], _request_name(ctx))[0]


def authorize_cluster(ctx, operation: AclOperation, log_if_denied: bool = True) -> bool:
    """``operation`` on the cluster resource ``kafka-cluster`` (``authorizeClusterOperation`` raises; the callers
    here answer CLUSTER_AUTHORIZATION_FAILED when this is False)."""
    return authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)


def filter_by_authorized(ctx, operation: AclOperation, resource_type: ResourceType, names: Iterable[str | None],
                         log_if_allowed: bool = True, log_if_denied: bool = True) -> set[str]:
    """The names (each asked once, its count as ``resourceRefCount``) the principal may ``operation``."""
    present: list[str] = [n for n in names if n is not None]
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return set(present)
    counts = collections.Counter(present)
    actions = [Action(operation, ResourcePattern(resource_type, name, PatternType.LITERAL), count, log_if_allowed,
                      log_if_denied) for name, count in counts.items()]
    results = authorizer.authorize(ctx.principal, ctx.client_host, actions, _request_name(ctx))
    return {name for name, allowed in zip(counts, results) if allowed}


def authorized_operations(ctx, resource_type: ResourceType, name: str) -> set[int]:
    """KIP-430: the operations the principal may do on the resource, as the codes of the response's 32-bit field
    (kafka-python's ``bitfield``: the set of bits; each decision logged at TRACE only, as Kafka's
    ``authorizedOperations``). Without an authorizer every operation the resource type supports, as Kafka's
    ``AuthHelper.authorizedOperations`` answers: ``AclEntry.supportedOperations`` of Kafka 4.x on a KRaft broker,
    of Kafka 3.9 on the others (a group: without DESCRIBE_CONFIGS and ALTER_CONFIGS)."""
    kraft = getattr(getattr(ctx.broker, "metadata_mode", None), "name", "") == "KRAFT"
    supported = (SUPPORTED_OPERATIONS if kraft else SUPPORTED_OPERATIONS_3_9)[resource_type]
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return {int(op) for op in supported}
    pattern = ResourcePattern(resource_type, name, PatternType.LITERAL)
    results = authorizer.authorize(ctx.principal, ctx.client_host,
                                   [Action(op, pattern, 1, False, False) for op in supported], _request_name(ctx))
    return {int(op) for op, allowed in zip(supported, results) if allowed}


def authorized_operations_field(ctx, resource_type: ResourceType, name: str) -> int:
    """:func:`authorized_operations` as the int32 itself (Kafka's ``Utils.to32BitField``), for the schemas whose
    field kafka-python leaves an int32 (ConsumerGroupDescribe, ShareGroupDescribe)."""
    return sum(1 << op for op in authorized_operations(ctx, resource_type, name))


def authorize_by_resource_type(ctx, operation: AclOperation, resource_type: ResourceType) -> bool:
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(ctx.principal, ctx.client_host, operation, resource_type,
                                                 _request_name(ctx))
