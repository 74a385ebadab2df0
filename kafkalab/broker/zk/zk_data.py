"""Kafka's znodes: their paths and the JSON each one holds (Kafka's ``kafka.zk.ZkData``).

A ZooKeeper-mode Kafka cluster keeps its metadata in ZooKeeper under these
paths; the mini brokers write the same paths and the same JSON, so a student
browsing the znodes of a kafkalab cluster sees what a real cluster holds::

    /cluster/id                                   {"version":"1","id":"<cluster id>"}
    /controller                                   {"version":2,"brokerid":1,"timestamp":"...","kraftControllerEpoch":-1}
    /controller_epoch                             7
    /brokers/ids/<id>            (ephemeral)      {"features":{},
                                                   "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                                                   "endpoints":["PLAINTEXT://127.0.0.1:9092"],"jmx_port":-1,
                                                   "port":9092,"host":"127.0.0.1","version":5,"timestamp":"..."}
    /brokers/topics/<t>                           {"partitions":{"0":[1,2,3]},"topic_id":"...","adding_replicas":{},
                                                   "removing_replicas":{},"version":3}
    /brokers/topics/<t>/partitions/<p>/state      {"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,
                                                   "isr":[1,2,3]}
    /config/topics/<t>                            {"version":1,"config":{"retention.ms":"60000"}}
    /config/changes/config_change_<seq>           {"version":2,"entity_path":"topics/<t>"}
    /admin/delete_topics/<t>                      (a marker: the controller deletes the topic)
    /admin/preferred_replica_election             {"version":1,"partitions":[{"topic":"t","partition":0}]}
    /latest_producer_id_block                     {"version":1,"broker":0,"block_start":"0","block_end":"999"}

The *version* of a znode (ZooKeeper's ``Stat.version``, bumped by every
write) matters: the partition state's version is the partition epoch, and
every update of it is conditional on the version read before (Kafka's
``zkVersion``), so a stale controller or leader cannot overwrite a newer state.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field



def kafka_uuid_string(raw: bytes) -> str:
    """A 16-byte id the way Kafka prints its Uuids: URL-safe base64 without padding.

    (The same function as ``kafka_server.kafka_uuid_string``, defined here so that
    importing the znode formats does not import the whole broker.)
    """
    import base64
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONFIG_TOPICS = "/config/topics"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"

#: Created at start-up by every Kafka broker (``KafkaZkClient.createTopLevelPaths``).
PERSISTENT_PATHS = ["/consumers", BROKER_IDS, BROKER_TOPICS, CONFIG_CHANGES, "/config/topics", "/config/clients",
                    "/config/users", "/config/brokers", "/config/ips", "/admin/delete_topics", BROKER_SEQID,
                    ISR_CHANGE_NOTIFICATION, "/latest_producer_id_block", "/log_dir_event_notification"]


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _now_ms() -> str:
    return str(int(time.time() * 1000))


# -- paths -----------------------------------------------------------------------

def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


# -- /cluster/id ------------------------------------------------------------------------

def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return json.loads(data)["id"]


# -- /controller and /controller_epoch -------------------------------------------------

def encode_controller(broker_id: int) -> bytes:
    return _dumps({"version": 2, "brokerid": broker_id, "timestamp": _now_ms(), "kraftControllerEpoch": -1})


def decode_controller(data: bytes) -> int:
    """The controller's broker id."""
    return int(json.loads(data)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode())


# -- /brokers/ids/<id> -------------------------------------------------------------------

@dataclass
class BrokerInfo:
    """A registered broker (Kafka's ``BrokerInfo``): where clients and other brokers reach it.

    ``host``/``port`` are its PLAINTEXT endpoint (the first endpoint if none is PLAINTEXT); ``listeners`` every
    advertised endpoint by listener name with its security protocol (empty: only ``host``/``port``, a
    PLAINTEXT listener named PLAINTEXT)."""
    id: int
    host: str
    port: int
    rack: str | None = None
    timestamp: int = 0
    #: listener name -> (host, port, security protocol), in the order registered
    listeners: dict[str, tuple[str, int, str]] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"PLAINTEXT://{self.host}:{self.port}"

    def endpoints(self) -> dict[str, tuple[str, int, str]]:
        return dict(self.listeners) or {"PLAINTEXT": (self.host, self.port, "PLAINTEXT")}

    def endpoint_for(self, listener_name: str) -> tuple[str, int]:
        """Where another broker reaches this one on ``listener_name`` (its inter-broker listener); the
        PLAINTEXT endpoint if it registered no such listener."""
        host, port, _ = self.endpoints().get(listener_name, (self.host, self.port, "PLAINTEXT"))
        return host, port


def _connection_string(name: str, host: str, port: int) -> str:
    return f"{name}://[{host}]:{port}" if ":" in host else f"{name}://{host}:{port}"


def encode_broker(info: BrokerInfo) -> bytes:
    """Kafka 3.9's ``BrokerIdZNode.encode`` (version 5): every endpoint, the listeners' security protocols, and
    the legacy ``host``/``port`` of the PLAINTEXT-protocol endpoint (null and -1 without one)."""
    endpoints = info.endpoints()
    plaintext = next(((h, p) for h, p, protocol in endpoints.values() if protocol == "PLAINTEXT"), (None, -1))
    data = {"features": {},
            "listener_security_protocol_map": {name: protocol for name, (_, _, protocol) in endpoints.items()},
            "endpoints": [_connection_string(name, h, p) for name, (h, p, _) in endpoints.items()],
            "jmx_port": -1, "port": plaintext[1], "host": plaintext[0], "version": 5, "timestamp": _now_ms()}
    if info.rack is not None:
        data["rack"] = info.rack
    return _dumps(data)


def decode_broker(broker_id: int, data: bytes) -> BrokerInfo:
    """``BrokerIdZNode.decode``: the endpoints with their protocols (from ``listener_security_protocol_map``,
    else the listener's name); ``host``/``port`` the PLAINTEXT listener's, else the first's."""
    js = json.loads(data)
    host, port = js.get("host"), js.get("port", -1)
    protocols = js.get("listener_security_protocol_map") or {}
    listeners: dict[str, tuple[str, int, str]] = {}
    for endpoint in js.get("endpoints", []):
        name, _, hostport = endpoint.partition("://")
        h, _, p = hostport.rpartition(":")
        listeners[name] = (h.strip("[]"), int(p), protocols.get(name, name))
    chosen = listeners.get("PLAINTEXT") or next(iter(listeners.values()), None)
    if chosen is not None:   # the PLAINTEXT endpoint wins over the legacy host/port
        host, port = chosen[0], chosen[1]
    return BrokerInfo(broker_id, host, int(port), js.get("rack"), int(js.get("timestamp", 0)), listeners)


# -- /brokers/topics/<t> -------------------------------------------------------------------

@dataclass
class TopicAssignment:
    """A topic's id and replica assignment: partition -> replicas, the first one preferred leader."""
    topic_id: uuid.UUID | None
    partitions: dict[int, list[int]]
    adding_replicas: dict[int, list[int]] = field(default_factory=dict)
    removing_replicas: dict[int, list[int]] = field(default_factory=dict)


def encode_topic_assignment(assignment: TopicAssignment) -> bytes:
    data = {"partitions": {str(p): list(r) for p, r in sorted(assignment.partitions.items())},
            "adding_replicas": {str(p): list(r) for p, r in sorted(assignment.adding_replicas.items())},
            "removing_replicas": {str(p): list(r) for p, r in sorted(assignment.removing_replicas.items())},
            "version": 3}
    if assignment.topic_id is not None:
        data["topic_id"] = kafka_uuid_string(assignment.topic_id.bytes)
    return _dumps(data)


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Kafka prints Uuids as URL-safe base64 without padding (``Uuid.toString``)."""
    import base64
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def decode_topic_assignment(data: bytes) -> TopicAssignment:
    js = json.loads(data)
    topic_id = js.get("topic_id")
    return TopicAssignment(
        parse_kafka_uuid(topic_id) if topic_id else None,
        {int(p): list(r) for p, r in js.get("partitions", {}).items()},
        {int(p): list(r) for p, r in (js.get("adding_replicas") or {}).items()},
        {int(p): list(r) for p, r in (js.get("removing_replicas") or {}).items()})


# -- /brokers/topics/<t>/partitions/<p>/state ------------------------------------------------

@dataclass
class LeaderIsrAndControllerEpoch:
    """A partition's state znode (Kafka's ``LeaderIsrAndControllerEpoch``) and its version.

    ``zk_version`` is the znode's ``Stat.version``: the *partition epoch* of
    LeaderAndIsr and AlterPartition. -1 for a state not read from ZooKeeper.
    """
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = -1
    leader_recovery_state: int = 0   # 0 RECOVERED, 1 RECOVERING (after an unclean election, KIP-704)

    NO_LEADER = -1


def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    data = {"controller_epoch": state.controller_epoch, "leader": state.leader, "version": 1,
            "leader_epoch": state.leader_epoch, "isr": list(state.isr)}
    if state.leader_recovery_state != 0:
        data["leader_recovery_state"] = state.leader_recovery_state
    return _dumps(data)


def decode_partition_state(data: bytes, zk_version: int = -1) -> LeaderIsrAndControllerEpoch:
    js = json.loads(data)
    return LeaderIsrAndControllerEpoch(int(js["leader"]), int(js["leader_epoch"]), [int(b) for b in js["isr"]],
                                       int(js["controller_epoch"]), zk_version,
                                       int(js.get("leader_recovery_state", 0)))


# -- /config/topics/<t> and /config/changes ---------------------------------------------------

def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dumps({"version": 1, "config": {k: str(v) for k, v in configs.items()}})


def decode_topic_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    return dict(json.loads(data).get("config", {}))


def encode_config_change(entity_path: str) -> bytes:
    """A change notification: brokers watching /config/changes re-read ``/config/<entity_path>``."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes) -> str:
    return json.loads(data)["entity_path"]


# -- /admin/preferred_replica_election --------------------------------------------------------

def encode_preferred_replica_election(partitions: list[tuple[str, int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_preferred_replica_election(data: bytes) -> list[tuple[str, int]]:
    return [(e["topic"], int(e["partition"])) for e in json.loads(data).get("partitions", [])]


# -- /latest_producer_id_block ----------------------------------------------------------------

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


def encode_producer_id_block(broker_id: int, block_start: int, block_end: int) -> bytes:
    return _dumps({"version": 1, "broker": broker_id, "block_start": str(block_start), "block_end": str(block_end)})


def decode_producer_id_block(data: bytes) -> tuple[int, int, int]:
    """(broker, first id, last id) of the latest block handed out."""
    js = json.loads(data)
    return int(js["broker"]), int(js["block_start"]), int(js["block_end"])
