"""LeaderAndIsr (key 4), version 7: the controller tells a broker which replicas it leads or follows.

Sent by the active controller (ZooKeeper mode) to the replicas of the
partitions whose leader, ISR or assignment changed. Each partition state
carries the leader, the leader epoch, the ISR, the replicas and the partition
epoch (the version of the partition's state znode); the broker becomes leader
or follower of each (``ReplicaManager.become_leader_or_follower``), creating the
local log of a new replica, and answers one error code per partition.

v7   (the only version served) flexible, topic ids, KIP-497 leader recovery state
Older versions are not served: a mini broker's controller always sends v7.

Two fences protect the broker from an old controller, as in Kafka:

* STALE_CONTROLLER_EPOCH (top-level) when the request's controller epoch is
  older than the newest one this broker has seen (a deposed controller that
  does not know it yet);
* STALE_BROKER_EPOCH when the request names an older broker epoch than this
  broker's (the czxid of its ``/brokers/ids/<id>`` znode): the request was
  meant for this broker's previous incarnation, before it restarted or
  re-registered after its ZooKeeper session expired.

A standalone broker (no ``zookeeper.connect``) has no controller: the request
closes the connection, as an API the broker does not serve would.
"""
from __future__ import annotations

import logging

from ..common.errors import ErrorCode, KafkaError
from ..cluster.partition_state import LeaderAndIsrPartitionState
from ..network.request_channel import InvalidRequest
from ..security.auth_helper import AclOperation, authorize_cluster
from ..server.faults import error_response
from . import api
from ..common.message.zk_messages import LeaderAndIsrRequest, LeaderAndIsrResponse

log = logging.getLogger(__name__)


def require_cluster_mode(broker, name: str) -> None:
    if not broker.in_cluster:
        raise InvalidRequest(f"{name} comes from a controller; a standalone broker (no zookeeper.connect) has none")


def broker_epoch_is_stale(broker, request_epoch: int) -> bool:
    """Kafka's ``isBrokerEpochStale``: -1 means "not checked" (older controllers)."""
    return request_epoch != -1 and request_epoch < broker.broker_epoch


def check_controller_epoch(broker, controller_epoch: int, update: bool = True) -> None:
    """STALE_CONTROLLER_EPOCH for a controller epoch older than the newest seen; else remember it.

    The newest epoch lives in the ReplicaManager (Kafka's ``ReplicaManager.controllerEpoch``), shared by
    LeaderAndIsr, UpdateMetadata and StopReplica."""
    rm = broker.replica_manager
    current = rm.controller_epoch
    if controller_epoch < current:
        raise KafkaError(ErrorCode.STALE_CONTROLLER_EPOCH,
                         f"controller epoch {controller_epoch} is older than {current}")
    if update:
        rm.controller_epoch = controller_epoch


def _error_response(request, code: int) -> dict:
    return {"error_code": code, "topics": [
        {"topic_id": t.topic_id, "partition_errors": [{"partition_index": p.partition_index, "error_code": code}
                                                      for p in t.partition_states]}
        for t in request.topic_states]}


@api(LeaderAndIsrRequest, LeaderAndIsrResponse, versions=(7, 7))
async def handle_leader_and_isr(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 3.9: authorizeClusterOperation
        return error_response("LeaderAndIsr", request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    broker = ctx.broker
    require_cluster_mode(broker, "LeaderAndIsr")
    if broker_epoch_is_stale(broker, request.broker_epoch):
        log.info("broker %d: LeaderAndIsr from controller %d with broker epoch %d, older than ours (%d): "
                 "ignored", broker.broker_id, request.controller_id, request.broker_epoch, broker.broker_epoch)
        return _error_response(request, ErrorCode.STALE_BROKER_EPOCH)
    states, topic_ids = [], {}
    for t in request.topic_states:
        topic_ids[t.topic_name] = t.topic_id
        for p in t.partition_states:
            states.append(LeaderAndIsrPartitionState(
                t.topic_name, p.partition_index, p.controller_epoch, p.leader, p.leader_epoch, list(p.isr),
                p.partition_epoch, list(p.replicas), list(p.adding_replicas or []),
                list(p.removing_replicas or []), bool(p.is_new), p.leader_recovery_state))
    live_leaders = {ll.broker_id: (ll.host_name, ll.port) for ll in request.live_leaders or []}
    try:
        errors = broker.replica_manager.become_leader_or_follower(
            request.controller_id, request.controller_epoch, states, topic_ids, live_leaders)
    except KafkaError as exc:
        log.info("broker %d: LeaderAndIsr from controller %d refused: %s", broker.broker_id,
                 request.controller_id, exc.message)
        return _error_response(request, exc.code)
    by_topic: dict[str, list[dict]] = {}
    for state in states:
        by_topic.setdefault(state.topic, []).append(
            {"partition_index": state.partition, "error_code": int(errors.get(state.key, ErrorCode.NONE))})
    return {"error_code": 0, "topics": [{"topic_id": topic_ids[name], "partition_errors": errs}
                                        for name, errs in by_topic.items()]}
