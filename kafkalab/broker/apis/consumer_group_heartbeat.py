"""ConsumerGroupHeartbeat (key 68), versions 0-1: KIP-848's consumer group protocol (``group.protocol=consumer``).

v0   flexible from the start (Kafka 3.7 early access, GA in 4.0): the coordinator generates the member id
v1   + SubscribedTopicRegex (KIP-848 regex subscriptions); the client generates its member id (KIP-1082)
Not implemented: rack-aware assignment (rack_id is kept and shown, not used), KIP-848's classic
members inside a consumer group (``group.consumer.migration.policy``).

One request does what JoinGroup, SyncGroup, Heartbeat and LeaveGroup do in the
classic protocol: member epoch 0 joins, -1 leaves, -2 leaves for a static
member's restart; the response carries the member's epoch, the heartbeat
interval and, when it changed, its assignment (topic ids and partitions).
Errors: INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (a classic group with members),
INVALID_REGULAR_EXPRESSION, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS
(cluster mode). The logic is in
:mod:`kafkalab.broker.coordinator.group.consumer_group_heartbeat`.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas): pass
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas): pass


def heartbeat_refused(ctx, request) -> dict | None:
    """The answer to a ConsumerGroupHeartbeat or ShareGroupHeartbeat the authorizer refuses, else None: Kafka wants
    READ on the group, and (Kafka 4.4, measured) DESCRIBE on every subscribed topic."""
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": "Group authorization failed.", "member_id": None, "member_epoch": 0,
                "heartbeat_interval_ms": 0, "assignment": None}
    subscribed = list(request.subscribed_topic_names or [])
    if subscribed and len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)) < len(
            set(subscribed)):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    return None


@api(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, versions=(0, 1))
async def handle_consumer_group_heartbeat(ctx, request):
    refused = heartbeat_refused(ctx, request)
    if refused is not None:
        return refused
    body = ctx.broker.group_coordinator.consumer_group_heartbeat(request, ctx.api_version, ctx.client_id,
                                                                 ctx.client_host)
    return {"throttle_time_ms": 0, **body}
