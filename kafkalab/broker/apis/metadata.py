"""Metadata (key 3), versions 0-12: brokers, topics, partitions, leaders and ISRs.

v1   topics=null means "all topics"; + rack, controller id, is_internal
v2   + cluster id
v3   + throttle_time_ms
v4   + allow_auto_topic_creation
v5   + offline replicas
v7   + leader epoch per partition
v8   + authorized operations (KIP-430)
v9   flexible
v10  + topic ids (KIP-516)
v11  cluster authorized operations dropped
v12  topics may be asked for by id (answered by name lookup)
Not implemented: v13 (top-level error code).

With an authorizer (``authorizer.class.name``), as Kafka 3.9: all topics lists only those the principal may
DESCRIBE; a named topic it may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED (whether or not it exists); an unknown
topic it would auto-create needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
v8+ ``include_topic_authorized_operations`` (and, v8-v10, ``include_cluster_authorized_operations``) answer
KIP-430's authorized operations, with or without an authorizer (without one: every supported operation).

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
replicas, ISR and offline replicas. A topic is listed once UpdateMetadata has
brought it, with every partition it holds a state for (a LeaderAndIsr that
came first does not show it). A partition whose leader is not alive
gets LEADER_NOT_AVAILABLE with leader -1 (v0 also filters dead replicas out and
says REPLICA_NOT_AVAILABLE). Auto-creation writes the topic to ZooKeeper and
answers LEADER_NOT_AVAILABLE until the controller has created its partitions:
clients ask again.
"""

from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from ..common.errors import ErrorCode, KafkaError
from ..common.topic import validate_topic_name
from ..security.auth_helper import (
    CLUSTER_NAME, AclOperation, ResourceType, authorize_cluster, authorized_operations, authorizer_of,
    filter_by_authorized)
from ..server.metadata_cache import NULL_UUID
from ..network.request_channel import InvalidRequest
from . import api



def _visible(broker, topic):
    """The topic as Metadata may show it, or None. In cluster mode only UpdateMetadata (or, in KRaft, the
    metadata records) makes a topic known, with all its partitions at once, as Kafka's metadata cache; the entry
    a LeaderAndIsr makes for a broker's own replicas (before the UpdateMetadata) is not shown, or a client would
    see a new topic with only the partitions up to this broker's highest one and count its partitions wrong."""
    if topic is None or not broker.in_cluster or broker.metadata_cache.partition_states.get(topic.name):
        return topic
    return None


def _cluster_topic_entry(broker, topic, version: int) -> dict:
    cache = broker.metadata_cache
    partitions = []
    states = cache.partition_states.get(topic.name, {})
    for index in sorted(states):   # Kafka's ZkMetadataCache lists the partitions it holds states for
        st = states[index]
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
    found = _visible(broker, broker.metadata_cache.get(name))
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
    checked = authorizer_of(ctx) is not None
    if wanted is None or (ctx.api_version == 0 and not wanted):
        # all topics: those the principal may not DESCRIBE are left out (their refusals not logged)
        allowed = (filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, list(cache.topics),
                                        log_if_denied=False) if checked else None)
        topics = [topic_entry(broker, t, ctx.api_version) for t in cache.topics.values()
                  if (allowed is None or t.name in allowed) and _visible(broker, t) is not None]
    else:
        allow_auto = request.allow_auto_topic_creation if ctx.api_version >= 4 else True
        denied = _Denied(ctx, request, allow_auto) if checked else None
        topics, seen = [], set()
        for t in wanted:
            topic_id = getattr(t, "topic_id", None)
            if t.name is None:
                if ctx.api_version < 12 or topic_id in (None, NULL_UUID):
                    raise InvalidRequest(f"Metadata v{ctx.api_version}: a topic needs a name"
                                         + (" or an id" if ctx.api_version >= 12 else ""))
                found = _visible(broker, cache.by_id(topic_id))
                if found is not None and denied is not None and found.name in denied.describe:
                    denied.answers.append(error_entry(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic_id))
                    continue
                topics.append(topic_entry(broker, found, ctx.api_version) if found else
                              error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id))
                continue
            if t.name in seen:  # Kafka answers each topic once
                continue
            seen.add(t.name)
            if denied is not None and denied.refuse(t.name):
                continue
            topics.append(_named_topic(broker, t.name, allow_auto, ctx.api_version))
        if denied is not None:
            topics += denied.created + denied.answers
    if ctx.api_version >= 8 and getattr(request, "include_topic_authorized_operations", False):
        for entry in topics:   # KIP-430
            if entry["error_code"] == 0 and entry.get("name"):
                entry["authorized_operations"] = authorized_operations(ctx, ResourceType.TOPIC, entry["name"])
    answer = {
        "throttle_time_ms": 0,
        # the brokers as a client of this listener reaches them (Kafka: getAliveBrokerNodes(listenerName))
        "brokers": [{"node_id": b.id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in broker.live_broker_nodes_for(ctx.listener_name)],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.controller_id,
        "topics": topics,
    }
    if 8 <= ctx.api_version <= 10 and getattr(request, "include_cluster_authorized_operations", False):
        answer["authorized_operations"] = (authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
                                           if authorize_cluster(ctx, AclOperation.DESCRIBE) else set())
    return answer


class _Denied:
    """Kafka 3.9's ``handleTopicMetadataRequest`` with an authorizer: a named topic the principal may not
    DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED (not saying whether it exists; by id: the id, no name); one
    that does not exist and would be auto-created needs CREATE on the cluster or the topic, else it is
    TOPIC_AUTHORIZATION_FAILED too. Both come after the other topics, as Kafka lists them."""

    def __init__(self, ctx, request, allow_auto: bool):
        cache = ctx.broker.metadata_cache
        names = [t.name if t.name is not None else getattr(cache.by_id(t.topic_id), "name", None)
                 for t in request.topics]
        present: list[str] = [n for n in dict.fromkeys(names) if n is not None]
        self.describe = set(present) - filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, present)
        self.create: set[str] = set()
        missing = [n for n in present if n not in self.describe and cache.get(n) is None]
        if missing and allow_auto and ctx.broker.config["auto.create.topics.enable"]:
            if not authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False):
                self.create = set(missing) - filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC,
                                                                  missing)
        self.created: list[dict] = []     # refused for CREATE
        self.answers: list[dict] = []     # refused for DESCRIBE

    def refuse(self, name: str) -> bool:
        if name in self.describe:
            self.answers.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        elif name in self.create:
            self.created.append(error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        else:
            return False
        return True
