"""StopReplica (key 5), version 4: the controller tells a broker to stop (and maybe delete) replicas.

Sent when a replica leaves a partition's assignment, when its topic is
deleted (``delete_partition`` true, leader epoch -2) and, without deleting,
to a broker shutting down in a controlled way for the partitions it follows.
The broker stops fetching for them, drops them from its ReplicaManager and,
if asked, deletes their logs (``ReplicaManager.stop_replicas``).

v4   (the only version served) flexible, per-partition leader epoch and delete flag
Fences: STALE_CONTROLLER_EPOCH and STALE_BROKER_EPOCH, as for LeaderAndIsr.
"""
from __future__ import annotations

import logging

from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation, authorize_cluster
from ..server.faults import error_response
from . import api
from .leader_and_isr import broker_epoch_is_stale, require_cluster_mode
from ..common.message.zk_messages import StopReplicaRequest, StopReplicaResponse

log = logging.getLogger(__name__)


@api(StopReplicaRequest, StopReplicaResponse, versions=(4, 4))
async def handle_stop_replica(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 3.9: authorizeClusterOperation
        return error_response("StopReplica", request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    broker = ctx.broker
    require_cluster_mode(broker, "StopReplica")
    if broker_epoch_is_stale(broker, request.broker_epoch):
        log.info("broker %d: StopReplica with broker epoch %d, older than ours (%d): ignored",
                 broker.broker_id, request.broker_epoch, broker.broker_epoch)
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": []}
    partitions = [(t.topic_name, p.partition_index, p.leader_epoch, bool(p.delete_partition))
                  for t in request.topic_states or [] for p in t.partition_states]
    try:
        errors = broker.replica_manager.stop_replicas(request.controller_id, request.controller_epoch, partitions)
    except KafkaError as exc:
        log.info("broker %d: StopReplica from controller %d refused: %s", broker.broker_id,
                 request.controller_id, exc.message)
        return {"error_code": exc.code, "partition_errors": []}
    return {"error_code": 0, "partition_errors": [
        {"topic_name": t, "partition_index": p, "error_code": int(errors.get((t, p), ErrorCode.NONE))}
        for t, p, _, _ in partitions]}
