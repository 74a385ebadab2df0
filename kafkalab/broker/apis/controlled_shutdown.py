"""ControlledShutdown (key 7), version 3: a stopping broker asks the controller to move its leaderships.

Before closing its logs a ZooKeeper-mode broker (``controlled.shutdown.enable``)
sends this to the controller. The controller moves the leadership of every
partition the broker leads to another in-sync replica (leader epoch + 1),
takes the broker out of the ISR of the partitions it follows, and answers
with the partitions the broker *still* leads (those with no other in-sync
replica). The broker retries (``controlled.shutdown.max.retries``) while that
list is not empty, then shuts down anyway.

v3   (the only version served) the first flexible version; has BrokerEpoch (since v2)
Errors: NOT_CONTROLLER (this broker is not the active controller: find it again),
STALE_BROKER_EPOCH, BROKER_NOT_AVAILABLE.
"""
from __future__ import annotations

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from ..server.faults import error_response
from . import api
from ..common.message.zk_messages import ControlledShutdownRequest, ControlledShutdownResponse


@api(ControlledShutdownRequest, ControlledShutdownResponse, versions=(3, 3))
async def handle_controlled_shutdown(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 3.9: authorizeClusterOperation
        return error_response("ControlledShutdown", request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.broker.kafka_controller
    if controller is None or not controller.is_active:
        return {"error_code": ErrorCode.NOT_CONTROLLER, "remaining_partitions": []}
    error, remaining = await controller.handle_controlled_shutdown(request.broker_id, request.broker_epoch)
    return {"error_code": int(error),
            "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining]}
