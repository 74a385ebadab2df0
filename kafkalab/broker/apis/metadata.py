"""Metadata (key 3), versions 0-12: brokers, topics, partitions, leaders and ISRs.

v1   topics=null means "all topics"; + rack, controller id, is_internal
v2   + cluster id
v3   + throttle_time_ms
v4   + allow_auto_topic_creation
v5   + offline replicas
v7   + leader epoch per partition
v8   + authorized operations (answered with "not requested")
v9   flexible
v10  + topic ids (KIP-516)
v11  cluster authorized operations dropped
v12  topics may be asked for by id (answered by name lookup)
Not implemented: v13 (top-level error code), authorized operations (no ACLs here).

v0 asks for all topics with an empty list; v1+ with null (an empty list means none).
Asking for an unknown topic creates it when ``auto.create.topics.enable`` is
on and the request allows it (always for v0-v3); otherwise
UNKNOWN_TOPIC_OR_PARTITION. An illegal name gets INVALID_TOPIC_EXCEPTION and
is never created (as Kafka, whether or not auto-creation is on). A topic
named twice is answered once.

The brokers are those of the listener the request came in on, at that listener's advertised address
(``advertised.listeners``; Kafka's ``getAliveBrokerNodes(request.context.listenerName)``).

In cluster mode the answer comes from the metadata cache the controller's
UpdateMetadata fills (Kafka's ``ZkMetadataCache``): the live brokers with
their racks, the controller id, and per partition the leader, leader epoch,
replicas, ISR and offline replicas. A partition whose leader is not alive
gets LEADER_NOT_AVAILABLE with leader -1 (v0 also filters dead replicas out and
says REPLICA_NOT_AVAILABLE). Auto-creation writes the topic to ZooKeeper and
answers LEADER_NOT_AVAILABLE until the controller has created its partitions:
clients ask again.
"""

from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from ..common.errors import ErrorCode, KafkaError
from ..common.topic import validate_topic_name
from ..server.metadata_cache import NULL_UUID
from ..network.request_channel import InvalidRequest
from . import api



def _cluster_topic_entry(broker, topic, version: int) -> dict:
    cache = broker.metadata_cache
    partitions = []
    for index in range(topic.num_partitions):
        st = cache.partition_state(topic.name, index)
        if st is None:
            partitions.append({"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": index,
                               "leader_id": -1, "leader_epoch": -1, "replica_nodes": [], "isr_nodes": [],
                               "offline_replicas": []})
            continue
        replicas, isr = list(st.replicas), list(st.isr)
        error = ErrorCode.NONE
        if version == 0:  # Kafka's errorUnavailableEndpoints: v0 lists live replicas only
            alive = cache.alive_brokers
            if any(r not in alive for r in replicas) or any(r not in alive for r in isr):
                error = ErrorCode.REPLICA_NOT_AVAILABLE
            replicas, isr = [r for r in replicas if r in alive], [r for r in isr if r in alive]
        leader = st.leader if st.leader in cache.alive_brokers else -1
        if leader == -1:
            error = ErrorCode.LEADER_NOT_AVAILABLE
        partitions.append({"error_code": error, "partition_index": index, "leader_id": leader,
                           "leader_epoch": st.leader_epoch, "replica_nodes": replicas, "isr_nodes": isr,
                           "offline_replicas": list(st.offline_replicas)})
    return {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id, "is_internal": topic.is_internal,
            "partitions": partitions}


def topic_entry(broker, topic, version: int = 12) -> dict:
    if broker.in_cluster:
        return _cluster_topic_entry(broker, topic, version)
    partitions = []
    for index in range(topic.num_partitions):
        p = broker.replica_manager.partitions.get((topic.name, index))
        if p is None:
            partitions.append({"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": index,
                               "leader_id": -1, "replica_nodes": [], "isr_nodes": []})
            continue
        partitions.append({"error_code": 0, "partition_index": index, "leader_id": p.leader_id,
                           "leader_epoch": p.leader_epoch, "replica_nodes": list(p.replicas),
                           "isr_nodes": list(p.isr), "offline_replicas": []})
    return {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id, "is_internal": topic.is_internal,
            "partitions": partitions}


def error_entry(name, code, topic_id=NULL_UUID) -> dict:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False, "partitions": []}


def _named_topic(broker, name, allow_auto, version: int) -> dict:
    """Kafka's getTopicMetadata for one name: existing, auto-created, or an error entry."""
    found = broker.metadata_cache.get(name)
    if found is not None:
        return topic_entry(broker, found, version)
    in_cluster = broker.in_cluster
    try:
        validate_topic_name(name)  # Kafka: INVALID_TOPIC_EXCEPTION, with or without auto-creation
        if allow_auto and broker.config["auto.create.topics.enable"]:
            found = broker.admin_manager.maybe_auto_create(name)
            if in_cluster:  # written to ZooKeeper: the partitions have no leader yet
                return error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            return error_entry(name, exc.code)
        if in_cluster:  # created meanwhile (or not yet in this broker's cache)
            return error_entry(name, ErrorCode.LEADER_NOT_AVAILABLE)
        found = broker.metadata_cache.get(name)
    return topic_entry(broker, found, version) if found else error_entry(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


@api(MetadataRequest, MetadataResponse, versions=(0, 12))
async def handle_metadata(ctx, request):
    broker = ctx.broker
    cache = broker.metadata_cache
    wanted = request.topics
    if wanted is None or (ctx.api_version == 0 and not wanted):
        topics = [topic_entry(broker, t, ctx.api_version) for t in cache.topics.values()]
    else:
        allow_auto = request.allow_auto_topic_creation if ctx.api_version >= 4 else True
        topics, seen = [], set()
        for t in wanted:
            topic_id = getattr(t, "topic_id", None)
            if t.name is None:
                if ctx.api_version < 12 or topic_id in (None, NULL_UUID):
                    raise InvalidRequest(f"Metadata v{ctx.api_version}: a topic needs a name"
                                         + (" or an id" if ctx.api_version >= 12 else ""))
                found = cache.by_id(topic_id)
                topics.append(topic_entry(broker, found, ctx.api_version) if found else
                              error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                continue
            if t.name in seen:  # Kafka answers each topic once
                continue
            seen.add(t.name)
            topics.append(_named_topic(broker, t.name, allow_auto, ctx.api_version))
    return {
        "throttle_time_ms": 0,
        # the brokers as a client of this listener reaches them (Kafka: getAliveBrokerNodes(listenerName))
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in broker.live_broker_nodes_for(ctx.listener_name)],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id,
        "topics": topics,
    }
