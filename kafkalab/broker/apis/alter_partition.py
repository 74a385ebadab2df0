"""AlterPartition (key 56), version 1: a partition leader asks the controller to change the ISR.

In ZooKeeper mode a leader does not write its partition's state znode: it
sends the ISR it wants (shrunk: a follower fell behind ``replica.lag.time.max.ms``;
expanded: a follower caught up) with the leader epoch and the *partition
epoch* (the state znode's version) it knows. The controller checks, writes the
znode conditionally and answers with the new state (its new partition epoch),
then tells every broker through UpdateMetadata.

v0   flexible from the start (KIP-497, the old AlterIsr)
v1   + LeaderRecoveryState (KIP-704) -- the only version served
Errors: NOT_CONTROLLER, STALE_BROKER_EPOCH (top level); per partition
FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, OPERATION_NOT_ATTEMPTED (a new ISR member
that is not live: what Kafka answers v0-v1 requests; v2+ would get INELIGIBLE_REPLICA),
UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST.
"""
from __future__ import annotations

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from ..server.faults import error_response
from . import api
from ..common.message.zk_messages import AlterPartitionRequest, AlterPartitionResponse


@api(AlterPartitionRequest, AlterPartitionResponse, versions=(1, 1))
async def handle_alter_partition(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 3.9: authorizeClusterOperation
        return error_response("AlterPartition", request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    controller = ctx.broker.kafka_controller
    if controller is None or not controller.is_active:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}
    return await controller.handle_alter_partition(request.broker_id, request.broker_epoch, request.topics or [])
