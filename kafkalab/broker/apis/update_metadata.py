"""UpdateMetadata (key 6), version 8: the controller tells every broker the cluster's metadata.

Kafka brokers in ZooKeeper mode do not read partition states from ZooKeeper:
the active controller sends every live broker the live brokers (with their
endpoints and racks), its own id, and the state of every partition that
changed (leader, leader epoch, ISR, replicas, offline replicas, topic id).
The broker keeps it in its metadata cache (``MetadataCache.update_metadata``,
Kafka's ``ZkMetadataCache``) and answers Metadata, FindCoordinator and
DescribeCluster from it. A partition whose leader is -2 belongs to a topic
being deleted and leaves the cache; the group coordinator then forgets the
committed offsets of that topic (Kafka's ``onPartitionsDeleted``).

Topic config overrides do not travel in UpdateMetadata: a topic new to the
cache has them read from ``/config/topics/<t>``.

v8   (the only version served) flexible, topic ids in topic states
Fences: STALE_CONTROLLER_EPOCH and STALE_BROKER_EPOCH, as for LeaderAndIsr.
"""
from __future__ import annotations

import logging

from ..common.errors import ErrorCode, KafkaError
from ..server.metadata_cache import BrokerEndpoint
from ..cluster.partition_state import LeaderAndIsrPartitionState
from ..security.auth_helper import AclOperation, authorize_cluster
from ..server.faults import error_response
from . import api
from .leader_and_isr import broker_epoch_is_stale, check_controller_epoch, require_cluster_mode
from ..common.message.zk_messages import UpdateMetadataRequest, UpdateMetadataResponse

log = logging.getLogger(__name__)


def _live_broker(b, listener_name: str) -> BrokerEndpoint:
    """A live broker: ``host``/``port`` its endpoint on this broker's inter-broker listener (replica fetchers,
    AlterPartition, transaction markers reach it there), ``listeners`` every endpoint (Metadata per listener)."""
    endpoints = list(b.endpoints or [])
    ep = next((e for e in endpoints if e.listener == listener_name), None) or next(
        (e for e in endpoints if e.listener == "PLAINTEXT"), endpoints[0] if endpoints else None)
    return BrokerEndpoint(b.id, ep.host if ep else "", ep.port if ep else -1, b.rack,
                          {e.listener: (e.host, e.port) for e in endpoints})


@api(UpdateMetadataRequest, UpdateMetadataResponse, versions=(8, 8))
async def handle_update_metadata(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 3.9: authorizeClusterOperation
        return error_response("UpdateMetadata", request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    broker = ctx.broker
    require_cluster_mode(broker, "UpdateMetadata")
    if broker_epoch_is_stale(broker, request.broker_epoch):
        log.info("broker %d: UpdateMetadata with broker epoch %d, older than ours (%d): ignored",
                 broker.broker_id, request.broker_epoch, broker.broker_epoch)
        return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
    try:
        check_controller_epoch(broker, request.controller_epoch)
    except KafkaError as exc:
        log.info("broker %d: UpdateMetadata from controller %d refused: %s", broker.broker_id,
                 request.controller_id, exc.message)
        return {"error_code": exc.code}
    topic_states = []
    for t in request.topic_states or []:
        topic_states.append((t.topic_name, t.topic_id, [
            LeaderAndIsrPartitionState(t.topic_name, p.partition_index, p.controller_epoch, p.leader,
                                       p.leader_epoch, list(p.isr), p.zk_version, list(p.replicas),
                                       offline_replicas=list(p.offline_replicas or []))
            for p in t.partition_states]))
    inter_broker = broker.config.listener_configs.inter_broker_listener_name
    await broker.apply_update_metadata(request.controller_id, topic_states,
                                       [_live_broker(b, inter_broker) for b in request.live_brokers or []])
    return {"error_code": 0}
