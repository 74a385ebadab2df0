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
from . import api
from .consumer_group_heartbeat import heartbeat_refused


class ShareGroupHeartbeatRequest(ApiMessage, load_json=schemas): pass
class ShareGroupHeartbeatResponse(ApiMessage, load_json=schemas): pass


@api(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, versions=(1, 1))
async def handle_share_group_heartbeat(ctx, request):
    refused = heartbeat_refused(ctx, request)   # the same checks and answers as ConsumerGroupHeartbeat's
    if refused is not None:
        return refused
    body = ctx.broker.group_coordinator.share_group_heartbeat(request, ctx.client_id, ctx.client_host)
    return {"throttle_time_ms": 0, **body}
