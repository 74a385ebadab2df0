"""ShareGroupHeartbeat (key 76), version 1: KIP-932 share groups ("queues for Kafka").

v0   Kafka 4.0's early access (not served by Kafka 4.1+, nor here)
v1   flexible; the first production version (Kafka 4.1); what confluent-kafka 2.16's ShareConsumer sends
Not implemented: rack-aware assignment (rack_id is kept and shown, not used).

A member joins with epoch 0 (its own member id, and its subscription), heartbeats with its epoch, leaves with
-1; the response carries its epoch, the heartbeat interval (``group.share.heartbeat.interval.ms``) and, when
it changed, its assignment (topic ids and partitions; a partition may be assigned to several members).
Errors: INVALID_REQUEST, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND
(the id of a classic or consumer group), NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS (cluster mode). The
logic is in :mod:`kafkalab.broker.coordinator.group.share_group_heartbeat`.
"""
from kafka.protocol.api_message import ApiMessage

from ..common.message import schemas
from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api


class ShareGroupHeartbeatRequest(ApiMessage, load_json=schemas): pass
class ShareGroupHeartbeatResponse(ApiMessage, load_json=schemas): pass


@api(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, versions=(1, 1))
async def handle_share_group_heartbeat(ctx, request):
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):   # Kafka: READ on the group
        return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
                "error_message": "Group authorization failed.", "member_id": None, "member_epoch": 0,
                "heartbeat_interval_ms": 0, "assignment": None}
    subscribed = list(request.subscribed_topic_names or [])
    if subscribed and len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, subscribed)) < len(
            set(subscribed)):   # Kafka 4.4: every subscribed topic needs DESCRIBE (measured)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "error_message": None,
                "member_id": None, "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}
    body = ctx.broker.group_coordinator.share_group_heartbeat(request, ctx.client_id, ctx.client_host)
    return {"throttle_time_ms": 0, **body}
