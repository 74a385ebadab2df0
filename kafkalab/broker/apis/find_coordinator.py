"""FindCoordinator (key 10), versions 0-6: which broker coordinates a group.

v1   + key_type (0 group, 1 transaction), throttle_time_ms, error_message
v2   same as v1
v3   flexible
v4   batched: coordinator_keys in, one entry per key out (KIP-699)
v5   same as v4 (TRANSACTION_ABORTABLE may be returned)
v6   key_type 2 (share, KIP-932): the share coordinator of a share-partition, key
     ``group:topicId:partition``, the leader of its ``__share_group_state`` partition (what
     Kafka's brokers ask; share consumers look up their group with key type 0)

A transactional id's coordinator is, in Kafka, the leader of partition
``abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`` of
``__transaction_state``, created here on first use (in cluster mode
COORDINATOR_NOT_AVAILABLE until its partitions have leaders). The standalone
broker leads every partition of that topic, so it is the coordinator of every
transactional id.

A group's coordinator is the leader of partition
``abs(groupId.hashCode()) % offsets.topic.num.partitions`` of
``__consumer_offsets``; the topic is created here on first use, as in Kafka.
A standalone broker leads every partition, so it is every group's
coordinator. In cluster mode the answer comes from the metadata cache: the
live leader of the group's partition, COORDINATOR_NOT_AVAILABLE while it has
none. The first FindCoordinator writes ``__consumer_offsets`` to ZooKeeper
(``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
replicas) and answers COORDINATOR_NOT_AVAILABLE until the controller has
elected leaders; with fewer live brokers than the replication factor the topic
cannot be created and the answer stays COORDINATOR_NOT_AVAILABLE, as in Kafka.
"""
import base64

from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

from ..common.errors import ErrorCode, KafkaError
from ..coordinator.group.offsets_topic import java_string_hash
from ..coordinator.share.share_coordinator import SHARE_STATE_TOPIC
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from . import api

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _coordinator_for(broker, key: str | None, key_type: int) -> dict:
    out = {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": ErrorCode.NONE, "error_message": None}
    if key_type == TRANSACTION and broker.transaction_coordinator is not None:
        if not key:
            out.update(error_code=ErrorCode.INVALID_REQUEST, error_message="transactional id must not be empty")
            return out
        manager = broker.transaction_coordinator.state_manager
        try:
            manager.ensure_transaction_topic()
        except KafkaError as exc:
            out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=exc.message)
            return out
        return _leader_of(broker, "__transaction_state", manager.partition_for(key), out)
    if key_type == SHARE and broker.share_coordinator is not None:
        return _share_coordinator_for(broker, key, out)
    if key_type != GROUP:
        kind = {TRANSACTION: "transaction", SHARE: "share"}.get(key_type)
        if kind is None:
            out.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"unknown key_type {key_type}")
        else:
            out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       error_message=f"the mini broker has no {kind} coordinator")
        return out
    coordinator = broker.group_coordinator
    if not key:
        out.update(error_code=ErrorCode.INVALID_REQUEST, error_message="group id must not be empty")
        return out
    try:
        coordinator.manager.ensure_offsets_topic()
    except KafkaError as exc:
        out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=exc.message)
        return out
    partition = coordinator.manager.partition_for(key)
    if broker.in_cluster:
        node = broker.metadata_cache.leader_endpoint("__consumer_offsets", partition)
        if node is None:
            out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       error_message=f"__consumer_offsets-{partition} has no leader")
        else:
            out.update(node_id=node.id, host=node.host, port=node.port)
        return out
    leader = broker.replica_manager.partitions.get(("__consumer_offsets", partition))
    node = next((b for b in broker.live_brokers if leader is not None and b[0] == leader.leader_id), None)
    if node is None:
        out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                   error_message=f"__consumer_offsets-{partition} has no leader")
        return out
    out.update(node_id=node[0], host=node[1], port=node[2])
    return out


def _valid_share_key(key: str | None) -> bool:
    """Kafka's ``SharePartitionKey.getInstance``: a group id, a topic id (a Uuid in base64) and a partition number."""
    parts = (key or "").rsplit(":", 2)
    if len(parts) != 3 or not parts[0]:
        return False
    try:
        int(parts[2])
        return len(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))) == 16
    except (ValueError, TypeError):
        return False


def _share_coordinator_for(broker, key: str | None, out: dict) -> dict:
    """Key type SHARE: ``group:topicId:partition`` -> the leader of ``abs(key.hashCode()) %
    share.coordinator.state.topic.num.partitions`` of ``__share_group_state``."""
    if not _valid_share_key(key):
        out.update(error_code=ErrorCode.INVALID_REQUEST, error_message=f"Invalid coordinator key {key!r}: "
                   "a share coordinator key is groupId:topicId:partition")
        return out
    coordinator = broker.share_coordinator
    try:
        coordinator.ensure_topic()
    except KafkaError as exc:
        out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message=exc.message)
        return out
    partition = abs(java_string_hash(key)) % coordinator.num_partitions
    return _leader_of(broker, SHARE_STATE_TOPIC, partition, out)


def _leader_of(broker, topic: str, partition: int, out: dict) -> dict:
    """``out`` naming the coordinator that leads ``topic``'s ``partition`` (transaction and share
    coordinators): in cluster mode the live leader from the metadata cache, COORDINATOR_NOT_AVAILABLE while
    it has none; a standalone broker leads every partition, so it names itself once it is registered."""
    if broker.in_cluster:
        node = broker.metadata_cache.leader_endpoint(topic, partition)
        if node is None:
            out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       error_message=f"{topic}-{partition} has no leader")
        else:
            out.update(node_id=node.id, host=node.host, port=node.port)
        return out
    node = next((b for b in broker.live_brokers if b[0] == broker.broker_id), None)
    if node is None:
        out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, error_message="broker not registered yet")
    else:
        out.update(node_id=node[0], host=node[1], port=node[2])
    return out


def _on_listener(ctx, out: dict) -> dict:
    """The coordinator's address on the listener the request came in on (Kafka's
    ``getAliveBrokerNode(coordinatorId, request.context.listenerName)``): COORDINATOR_NOT_AVAILABLE if it has
    no such listener."""
    if out.get("error_code") or out.get("node_id", -1) < 0:
        return out
    node = next((b for b in ctx.broker.live_broker_nodes_for(ctx.listener_name) if b.id == out["node_id"]), None)
    if node is None:
        out.update(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, node_id=-1, host="", port=-1,
                   error_message=f"broker {out['node_id']} has no listener {ctx.listener_name}")
    else:
        out.update(host=node.host, port=node.port)
    return out


#: Kafka's ``Errors`` messages of the refusals (what a FindCoordinator below v4 says with its error)
_REFUSED = {ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed."}


def _refused(ctx, key: str | None, key_type: int) -> ErrorCode | None:
    """Kafka 3.9's ``getCoordinator`` checks, before anything else: DESCRIBE on the group or the transactional
    id, CLUSTER_ACTION on the cluster for a share coordinator."""
    if key_type == GROUP and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key or ""):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION and not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key or ""):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if key_type == SHARE and not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return None


def _coordinator_or_refusal(ctx, key: str | None, key_type: int, message: bool) -> dict:
    code = _refused(ctx, key, key_type)
    if code is None:
        return _on_listener(ctx, _coordinator_for(ctx.broker, key, key_type))
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code,
            "error_message": _REFUSED[code] if message else None}


@api(FindCoordinatorRequest, FindCoordinatorResponse, versions=(0, 6))
async def handle_find_coordinator(ctx, request):
    key_type = request.key_type if ctx.api_version >= 1 else GROUP
    if ctx.api_version >= 4:
        return {"throttle_time_ms": 0, "coordinators": [
            _coordinator_or_refusal(ctx, k, key_type, False) for k in request.coordinator_keys or []]}
    c = _coordinator_or_refusal(ctx, request.key, key_type, True)
    return {"throttle_time_ms": 0, "error_code": c["error_code"], "error_message": c["error_message"],
            "node_id": c["node_id"], "host": c["host"], "port": c["port"]}
