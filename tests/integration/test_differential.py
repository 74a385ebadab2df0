"""Issue 18, "real Kafka is the oracle": the same requests to a mini broker and to Apache Kafka 3.9.

Two one-broker clusters start once for the whole module, with the same broker configs: a mini
broker (``kafkalab.cluster(brokers=1)``) and a real Kafka 3.9 broker (``backend=KafkaBackend``),
each on its own real ZooKeeper. Each case below is a function that sends a fixed sequence of raw
requests (``tests/helpers/kafka_wire.py``) to one broker and returns what came back, normalised by
:func:`normal`; the test runs it on both and compares the two results field by field.

Where they differ, Kafka is right: the mini broker was fixed, or the difference is intended and
listed in :data:`LISTED` (with its reason, and in ``docs/differences.md``, "Checked against Kafka
3.9"). A listed difference is asserted exactly: if the mini broker starts answering like Kafka, or
differently again, the case fails and the list has to be updated.

What is ignored, and why, is all in :func:`normal`: cluster and topic ids (random per cluster),
ports (each broker has its own), free-text error messages (compared as present or absent) and
generated member ids (compared by their client-id prefix). Everything else — error codes,
offsets, high watermarks, leader epochs, partition counts, config values, the records fetched,
byte for byte — must be the same.
"""
from __future__ import annotations

import contextlib
import json
import struct

import pytest
from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.topics import (CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest,
                                         DeleteTopicsResponse)
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (JoinGroupRequest, JoinGroupResponse, OffsetCommitRequest,
                                           OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse)
from kafka.protocol.consumer.offsets import (ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
                                             OffsetForLeaderEpochResponse)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from tests.helpers.cluster_helpers import wait_until
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.records import Record, build_batch
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka

pytestmark = pytest.mark.cluster

#: The broker configs of both clusters, on top of the lab defaults (the same for both).
CONFIGS = {"auto.create.topics.enable": "false", "offsets.topic.num.partitions": 1}
BROKER_ID = 1
#: The topic every read case uses: 3 records written in leader epoch 0, 2 more in leader epoch 3.
DATA = "diff-data"
DATA_EPOCH = 3
DATA_TIMESTAMPS = [1000, 2000, 3000, 4000, 5000]
CLIENT_ID = "kafkalab-tests"   # kafka_wire's client id; Kafka's member ids start with it
CLIENT_SOFTWARE = {"client_software_name": "kafkalab-tests", "client_software_version": "1.0"}   # ApiVersions v3+

# Request versions: what kafka-python 3.0 sends (CreateTopics: the highest both serve); both brokers
# serve them all (test_api_versions_are_within_kafkas compares the ranges).
V_API_VERSIONS, V_METADATA, V_CREATE_TOPICS, V_DELETE_TOPICS, V_DESCRIBE_CONFIGS = 3, 12, 7, 6, 4
V_PRODUCE, V_FETCH, V_LIST_OFFSETS, V_OFFSET_FOR_LEADER_EPOCH, V_INIT_PRODUCER_ID = 9, 12, 8, 4, 4
V_FIND_COORDINATOR, V_JOIN_GROUP, V_OFFSET_COMMIT, V_OFFSET_FETCH = 6, 7, 8, 8


# -- the two brokers ------------------------------------------------------------------------------

class Side:
    """One broker under test: raw requests in, plain dicts out."""

    def __init__(self, name: str, cluster):
        self.name = name
        self.cluster = cluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap_servers

    def call(self, request_cls, response_cls, version: int, data: dict) -> dict:
        return wire.call(self.bootstrap, build(request_cls, version, data), response_cls, version).to_dict()

    def metadata(self, *topics: str) -> dict:
        return self.call(MetadataRequest, MetadataResponse, V_METADATA, {
            "topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})

    def create_topic(self, name: str, partitions: int = 1, **configs) -> None:
        """Create ``name`` (replication factor 1) and wait until every partition has a leader."""
        [t] = self.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
            {"name": name, "num_partitions": partitions, "replication_factor": 1, "configs": configs}))["topics"]
        assert t["error_code"] == 0, (self.name, t)
        self.wait_for_leaders(name, partitions)

    def wait_for_leaders(self, topic: str, partitions: int, epoch: int = 0) -> None:
        def ready():
            [t] = self.metadata(topic)["topics"]
            return (t["error_code"] == 0 and len(t["partitions"]) == partitions
                    and all(p["leader_id"] == BROKER_ID and p["leader_epoch"] == epoch for p in t["partitions"]))
        wait_until(ready, f"{topic} to have leaders with epoch {epoch} on {self.name}", timeout=30)

    def produce(self, topic: str, batch: bytes, acks: int = -1) -> dict:
        [t] = self.call(ProduceRequest, ProduceResponse, V_PRODUCE, produce(topic, batch, acks))["responses"]
        [p] = t["partition_responses"]
        return p


def create_topics(*topics: dict, validate_only: bool = False) -> dict:
    return {"topics": [dict(t, assignments=[], configs=[{"name": k, "value": str(v)} for k, v in
                                                         t.get("configs", {}).items()]) for t in topics],
            "timeout_ms": 30000, "validate_only": validate_only}


def produce(topic: str, batch: bytes, acks: int = -1) -> dict:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def batch(*values: bytes, timestamps=None, **kwargs) -> bytes:
    timestamps = timestamps or [1_700_000_000_000 + i for i in range(len(values))]
    return build_batch([Record(i, ts, b"k%d" % i, v, []) for i, (v, ts) in enumerate(zip(values, timestamps))],
                       **kwargs)


def wait_answering(side: Side) -> None:
    """Kafka opens its listener a moment after it registers in ZooKeeper (which is all the cluster
    waits for); wait until ApiVersions is answered."""
    def answers():
        r = side.call(ApiVersionsRequest, ApiVersionsResponse, V_API_VERSIONS, CLIENT_SOFTWARE)
        return r["error_code"] == 0
    wait_until(answers, f"{side.name} to answer ApiVersions", timeout=60)


def advertised(side: Side) -> dict[int, tuple[int, int]]:
    r = side.call(ApiVersionsRequest, ApiVersionsResponse, V_API_VERSIONS, CLIENT_SOFTWARE)
    return {k["api_key"]: (k["min_version"], k["max_version"]) for k in r["api_keys"]}


def prepare(side: Side) -> None:
    """The state every case may read: ``diff-data`` with 5 records over leader epochs 0 and 3, the
    group coordinator (and Kafka's transaction coordinator) loaded."""
    wait_answering(side)
    side.create_topic(DATA)
    first = side.produce(DATA, batch(b"v0", b"v1", b"v2", timestamps=DATA_TIMESTAMPS[:3]))
    assert first["error_code"] == 0 and first["base_offset"] == 0, (side.name, first)
    # A later leader epoch. A one-broker cluster never elects a new leader, so the partition's state
    # znode is given leader epoch 3 while the broker is down (as three elections would have left it);
    # the controller reads it at start-up and makes the broker leader in that epoch.
    c = side.cluster
    c.stop(BROKER_ID)
    path = f"/brokers/topics/{DATA}/partitions/0/state"
    state = json.loads(c.zk.get(path)[0])
    state.update(leader=BROKER_ID, leader_epoch=DATA_EPOCH, isr=[BROKER_ID])
    c.zk.set(path, json.dumps(state).encode())
    c.restart(BROKER_ID)
    wait_answering(side)
    side.wait_for_leaders(DATA, 1, epoch=DATA_EPOCH)
    second = side.produce(DATA, batch(b"v3", b"v4", timestamps=DATA_TIMESTAMPS[3:]))
    assert second["error_code"] == 0 and second["base_offset"] == 3, (side.name, second)
    # Coordinators: the first FindCoordinator creates __consumer_offsets (and, on a broker with
    # transactions, __transaction_state); the cases want them loaded.
    for key_type, key in [(0, "diff-warm-up"), (1, "diff-warm-up")]:
        wait_until(lambda: find_coordinator(side, key_type, key)["error_code"] == "NONE",
                   f"{side.name}'s coordinator for key type {key_type}", timeout=60)


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    base = tmp_path_factory.mktemp("differential")
    with contextlib.ExitStack() as stack:   # whatever fails, every started cluster is closed
        mini = stack.enter_context(kafkalab.cluster(brokers=1, dir=str(base / "mini"), **CONFIGS))
        kafka = stack.enter_context(kafkalab.cluster(brokers=1, dir=str(base / "kafka"),
                                                     backend=KafkaBackend(str(fetch_kafka("3.9"))), **CONFIGS))
        both = {"mini": Side("mini", mini), "kafka": Side("kafka", kafka)}
        for side in both.values():
            prepare(side)
        yield both


# -- normalising and comparing --------------------------------------------------------------------

def normal(value, key: str | None = None):
    """A response (as a dict) with what legitimately differs between two clusters replaced:

    - ``cluster_id``, ``topic_id``: random per cluster / topic -> ``<id>`` (None stays None);
    - ``port``: each broker listens on its own -> left out;
    - ``error_message``: free text -> ``<text>``; None and "" both mean "no message" -> None (whether
      there is one counts);
    - ``member_id``: Kafka makes it ``<client id>-<uuid>`` -> ``<client id>-<uuid>`` when it has that form;
    - error codes -> their names, for readable differences.
    """
    if isinstance(value, dict):
        return {k: normal(v, k) for k, v in value.items() if k != "port"}
    if isinstance(value, list):
        return [normal(v) for v in value]
    if key in ("cluster_id", "topic_id") and value is not None:
        return "<id>"
    if key == "error_message":
        return "<text>" if value else None
    if key == "member_id" and isinstance(value, str) and value.startswith(CLIENT_ID + "-"):
        return CLIENT_ID + "-<uuid>"
    if key is not None and key.endswith("error_code") and isinstance(value, int):
        return ErrorCode(value).name
    return value


ABSENT = "<absent>"


class _Any:
    def __eq__(self, other):
        return other is not ABSENT

    def __repr__(self):
        return "ANY"


ANY = _Any()   # in LISTED: present, with any value


def flatten(value, path: str = "", out: dict | None = None) -> dict:
    """``{"a": [{"b": 1}]}`` -> ``{"a[0].b": 1}``; an empty list or dict is a leaf."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flatten(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
    else:
        out[path] = bytes(value).hex() if isinstance(value, (bytes, bytearray, memoryview)) else value
    return out


def differences(mini, kafka) -> dict[str, tuple]:
    """``{path: (mini's value, Kafka's value)}`` for every leaf where they differ."""
    a, b = flatten(mini), flatten(kafka)
    return {p: (a.get(p, ABSENT), b.get(p, ABSENT)) for p in sorted(a.keys() | b.keys())
            if a.get(p, ABSENT) != b.get(p, ABSENT)}


# -- the cases ------------------------------------------------------------------------------------

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# ApiVersions

@case
def api_versions(side):
    r = side.call(ApiVersionsRequest, ApiVersionsResponse, V_API_VERSIONS, CLIENT_SOFTWARE)
    return {"error_code": normal(r["error_code"], "error_code")}


def raw_frame(api_key: int, version: int, body: bytes, flexible: bool, correlation_id: int = 7) -> bytes:
    """A request with header v1 (or v2, with an empty tagged-field section, if ``flexible``)."""
    header = struct.pack(">hhih", api_key, version, correlation_id, len(CLIENT_ID)) + CLIENT_ID.encode()
    data = header + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(data)) + data


@case
def api_versions_empty_client_software(side):
    # kafka-python's default ApiVersionsRequest(): client_software_name/version "" (KIP-511 wants both
    # non-empty, letters, digits, '.', '-')
    with wire.connect(side.bootstrap) as sock:
        sock.sendall(raw_frame(18, 3, b"\x01\x01\x00", flexible=True))
        frame = wire.recv_frame(sock)
    (correlation_id, error_code) = struct.unpack_from(">ih", frame)
    return {"correlation_id": correlation_id, "error_code": normal(error_code, "error_code")}


@case
def api_versions_unsupported_version(side):
    # ApiVersions v127: answered in v0 with UNSUPPORTED_VERSION and the ApiVersions versions served
    with wire.connect(side.bootstrap) as sock:
        sock.sendall(raw_frame(18, 127, b"\x01\x01\x00", flexible=True))
        frame = wire.recv_frame(sock)
    r = ApiVersionsResponse.decode(frame, version=0, header=True)
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    others = set(keys) - {18}
    return {"correlation_id": r.header.correlation_id, "error_code": normal(r.error_code, "error_code"),
            "ApiVersions versions": keys.get(18),
            "other APIs listed": "every API served" if others and others == set(advertised(side)) - {18}
                                 else tuple(sorted(others))}


@case
def unsupported_version_closes_the_connection(side):
    out = {}
    for name, api_key, version in (("Metadata v13", 3, 13), ("Fetch v18", 1, 18), ("Produce v12", 0, 12)):
        with wire.connect(side.bootstrap) as sock:
            sock.sendall(raw_frame(api_key, version, b"\x00" * 16, flexible=True))
            out[name] = "closed" if wire.is_closed(sock, timeout=10) else "open"
    return out


# Metadata, CreateTopics, DeleteTopics, DescribeConfigs

@case
def describe_cluster_endpoint_types(side):
    """DescribeCluster v1 (KIP-919) to a broker: brokers (1) are served, controllers (2) are the wrong kind of
    endpoint (MISMATCHED_ENDPOINT_TYPE), anything else an unknown one (UNSUPPORTED_ENDPOINT_TYPE)."""
    out = {}
    for endpoint_type in (1, 2, 7):
        r = side.call(DescribeClusterRequest, DescribeClusterResponse, 1, {
            "include_cluster_authorized_operations": False, "endpoint_type": endpoint_type})
        out[endpoint_type] = {"error_code": normal(r["error_code"], "error_code"), "brokers": len(r["brokers"]),
                              "message": r["error_message"] not in (None, "")}
    return out


@case
def authorized_operations_without_an_authorizer(side):
    """KIP-430 with no authorizer configured: every operation the resource type supports (Kafka's
    ``AuthHelper.authorizedOperations``), for the cluster (DescribeCluster, Metadata v8-v10), a topic (Metadata)
    and a group (DescribeGroups v3+: a group nobody joined is Dead, error NONE, so it gets them too)."""
    cluster = side.call(DescribeClusterRequest, DescribeClusterResponse, 1, {
        "include_cluster_authorized_operations": True, "endpoint_type": 1})
    not_asked = side.call(DescribeClusterRequest, DescribeClusterResponse, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 1})
    metadata = side.call(MetadataRequest, MetadataResponse, 10, {
        "topics": [{"name": DATA}], "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True, "include_topic_authorized_operations": True})
    groups = side.call(DescribeGroupsRequest, DescribeGroupsResponse, 5, {
        "groups": ["diff-warm-up"], "include_authorized_operations": True})
    return {"DescribeCluster": sorted(cluster["authorized_operations"]),
            "DescribeCluster, not asked": not_asked["authorized_operations"],
            "Metadata cluster": sorted(metadata["authorized_operations"]),
            "Metadata topic": sorted(metadata["topics"][0]["authorized_operations"]),
            "DescribeGroups": (groups["groups"][0]["group_state"],
                               sorted(groups["groups"][0]["authorized_operations"]))}


@case
def metadata_unknown_topic_without_auto_creation(side):
    r = side.call(MetadataRequest, MetadataResponse, V_METADATA, {
        "topics": [{"name": "diff-never-created"}], "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False})
    again = side.metadata("diff-never-created")
    return {"asked to create": normal(r["topics"]), "then": normal(again["topics"])}


@case
def metadata_of_a_topic(side):
    r = normal(side.metadata(DATA))
    return {"brokers": r["brokers"], "controller_id": r["controller_id"], "topics": r["topics"]}


#: The configs a CreateTopics answer is compared on (all of them: describe_configs_of_a_topic)
CREATE_CONFIGS = ("retention.ms", "cleanup.policy", "segment.bytes", "max.message.bytes", "min.insync.replicas")


def created(r: dict) -> list[dict]:
    out = []
    for t in normal(r["topics"]):
        configs = t.pop("configs")
        t["configs"] = (None if configs is None else
                        {c["name"]: c for c in configs if c["name"] in CREATE_CONFIGS})
        out.append(t)
    return out


@case
def create_topics_ok(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        {"name": "diff-created", "num_partitions": 2, "replication_factor": 1,
         "configs": {"retention.ms": 86400000}}))
    side.wait_for_leaders("diff-created", 2)
    return {"created": created(r), "metadata": normal(side.metadata("diff-created")["topics"])}


@case
def create_topics_already_exists(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        {"name": DATA, "num_partitions": 1, "replication_factor": 1}))
    return created(r)


@case
def create_topics_invalid_names(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        *({"name": name, "num_partitions": 1, "replication_factor": 1}
          for name in ("diff bad name!", "..", "x" * 250, "diff-data\u00e9"))))
    return created(r)


@case
def create_topics_invalid_replication_factor(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        {"name": "diff-rf-2", "num_partitions": 1, "replication_factor": 2},
        {"name": "diff-rf-0", "num_partitions": 1, "replication_factor": 0},
        {"name": "diff-rf-minus-2", "num_partitions": 1, "replication_factor": -2}))
    return created(r)


@case
def create_topics_invalid_partitions(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        {"name": "diff-partitions-0", "num_partitions": 0, "replication_factor": 1},
        {"name": "diff-partitions-minus-2", "num_partitions": -2, "replication_factor": 1},
        {"name": "diff-partitions-default", "num_partitions": -1, "replication_factor": -1}))
    side.wait_for_leaders("diff-partitions-default", 1)
    return created(r)


@case
def create_topics_validate_only(side):
    r = side.call(CreateTopicsRequest, CreateTopicsResponse, V_CREATE_TOPICS, create_topics(
        {"name": "diff-validated", "num_partitions": 3, "replication_factor": 1,
         "configs": {"cleanup.policy": "compact"}},
        {"name": "diff-validated-bad", "num_partitions": 1, "replication_factor": 1,
         "configs": {"retention.ms": "soon"}},
        validate_only=True))
    return {"created": created(r), "then": normal(side.metadata("diff-validated")["topics"])}


@case
def delete_topics_unknown(side):
    r = side.call(DeleteTopicsRequest, DeleteTopicsResponse, V_DELETE_TOPICS, {
        "topics": [{"name": "diff-never-created", "topic_id": None}], "timeout_ms": 30000})
    return normal(r["responses"])


@case
def describe_configs_of_a_topic(side):
    side.create_topic("diff-configs", **{"retention.ms": 12345, "cleanup.policy": "compact"})
    r = side.call(DescribeConfigsRequest, DescribeConfigsResponse, V_DESCRIBE_CONFIGS, {
        "resources": [{"resource_type": 2, "resource_name": "diff-configs", "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    [res] = normal(r["results"])
    # one leaf per config: (value, source, read-only, sensitive, type)
    res["configs"] = {c["name"]: (c["value"], c["config_source"], c["read_only"], c["is_sensitive"],
                                  c["config_type"]) for c in res["configs"]}
    return res


# Produce

@case
def produce_to_an_unknown_topic(side):
    return normal(side.produce("diff-never-created", batch(b"x")))


@case
def produce_acks(side):
    side.create_topic("diff-acks")
    out = {"acks=1": normal(side.produce("diff-acks", batch(b"a", b"b"), acks=1)),
           "acks=-1": normal(side.produce("diff-acks", batch(b"c", b"d"), acks=-1))}
    with wire.connect(side.bootstrap) as sock:
        # acks=0: no answer; the next request on the connection is answered next
        sock.sendall(wire.encode(build(ProduceRequest, V_PRODUCE, produce("diff-acks", batch(b"e", b"f"), 0)),
                                 V_PRODUCE, correlation_id=1))
        r = wire.roundtrip(sock, list_offsets("diff-acks", -1), ListOffsetsResponse, V_LIST_OFFSETS,
                           correlation_id=2)
    out["acks=0, then ListOffsets latest"] = normal(r.to_dict()["topics"])
    return out


@case
def produce_acks_0_that_fails_closes_the_connection(side):
    with wire.connect(side.bootstrap) as sock:
        sock.sendall(wire.encode(build(ProduceRequest, V_PRODUCE, produce("diff-never-created", batch(b"x"), 0)),
                                 V_PRODUCE))
        return {"connection": "closed" if wire.is_closed(sock, timeout=10) else "open"}


@case
def produce_invalid_required_acks(side):
    return {acks: normal(side.produce(DATA, batch(b"x"), acks=acks)) for acks in (2, -2)}


@case
def produce_corrupt_crc(side):
    data = bytearray(batch(b"x", b"y"))
    data[17] ^= 0xFF   # the CRC's first byte
    return normal(side.produce(DATA, bytes(data)))


@case
def produce_over_max_message_bytes(side):
    side.create_topic("diff-small", **{"max.message.bytes": 1024})
    return {"over": normal(side.produce("diff-small", batch(b"z" * 2000))),
            "under": normal(side.produce("diff-small", batch(b"z" * 500)))}


@case
def produce_idempotent_sequences(side):
    side.create_topic("diff-idempotent")

    def init():
        return side.call(InitProducerIdRequest, InitProducerIdResponse, V_INIT_PRODUCER_ID, {
            "transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
    # Kafka 3.9 (ZooKeeper mode) gets blocks of producer ids from its controller (AllocateProducerIds,
    # KIP-730) and answers COORDINATOR_LOAD_IN_PROGRESS until the first block is there; clients retry
    r = wait_until(lambda: (r := init())["error_code"] != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and r,
                   f"a producer id from {side.name}", timeout=30)
    pid, epoch = r["producer_id"], r["producer_epoch"]

    def send(seq, *values):
        return normal(side.produce("diff-idempotent", batch(*values, producer_id=pid, producer_epoch=epoch,
                                                            base_sequence=seq)))
    return {"init": normal(r) | {"producer_id": "<id>" if pid >= 0 else pid},
            "seq 0": send(0, b"a", b"b"),
            "seq 0 again (a retry)": send(0, b"a", b"b"),
            "seq 2": send(2, b"c"),
            "seq 5 (a gap)": send(5, b"d"),
            "seq 2 with other records": send(2, b"e"),
            "seq 3": send(3, b"f")}


# Fetch

def fetch(topic: str, offset: int, current_leader_epoch: int = -1, last_fetched_epoch: int = -1) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{
                "partition": 0, "current_leader_epoch": current_leader_epoch, "fetch_offset": offset,
                "last_fetched_epoch": last_fetched_epoch, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}


def fetched(side, *args, **kwargs) -> dict:
    r = normal(side.call(FetchRequest, FetchResponse, V_FETCH, fetch(*args, **kwargs)))
    [t] = r.pop("responses")
    [p] = t["partitions"]
    return {"top": r, "topic": t["topic"], "partition": p}


@case
def fetch_records(side):
    return {"from 0": fetched(side, DATA, 0, DATA_EPOCH),
            "from 3": fetched(side, DATA, 3),
            "at the end": fetched(side, DATA, len(DATA_TIMESTAMPS))}


@case
def fetch_offset_out_of_range(side):
    return {"after the end": fetched(side, DATA, 100), "negative": fetched(side, DATA, -5)}


@case
def fetch_unknown_topic(side):
    return fetched(side, "diff-never-created", 0)


@case
def fetch_leader_epoch_ahead(side):
    return fetched(side, DATA, 0, current_leader_epoch=DATA_EPOCH + 1)


@case
def fetch_leader_epoch_behind(side):
    return fetched(side, DATA, 0, current_leader_epoch=DATA_EPOCH - 1)


@case
def fetch_diverging_epoch(side):
    # a consumer that read offsets 0-3 believing offset 3 was written in epoch 0 (it was epoch 3):
    # epoch 0 ended at offset 3, so the answer is a diverging epoch, no records
    return fetched(side, DATA, 4, last_fetched_epoch=0)


# Fetch sessions (KIP-227)

SESSION_TOPIC = "diff-session"


def session_fetch(session_id: int, epoch: int, partitions: dict[int, int], forgotten=()) -> dict:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch, "rack_id": "",
            "forgotten_topics_data": [{"topic": SESSION_TOPIC, "partitions": list(forgotten)}] if forgotten else [],
            "topics": [{"topic": SESSION_TOPIC, "partitions": [{
                "partition": p, "current_leader_epoch": -1, "fetch_offset": o, "last_fetched_epoch": -1,
                "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p, o in partitions.items()]}]
            if partitions else []}


@case
def fetch_session(side):
    """A consumer's session over one topic of two partitions: what each step answers (partitions by index, the
    session id as zero or not), the same on both."""
    side.create_topic(SESSION_TOPIC, 2)
    steps = {}

    def step(name, session_id, epoch, partitions=None, forgotten=()):
        r = side.call(FetchRequest, FetchResponse, V_FETCH, session_fetch(session_id, epoch, partitions or {},
                                                                          forgotten))
        steps[name] = {"error": ErrorCode(r["error_code"]).name, "session": "none" if r["session_id"] == 0 else "new",
                       "partitions": {p["partition_index"]: normal(p) for t in r["responses"] for p in t["partitions"]}}
        return r["session_id"]

    def produce_to(partition, value):
        r = side.call(ProduceRequest, ProduceResponse, V_PRODUCE, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [{
                "name": SESSION_TOPIC, "partition_data": [{"index": partition, "records": batch(value)}]}]})
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r

    sid = step("full, epoch 0: a new session", 0, 0, {0: 0, 1: 0})
    step("incremental, nothing changed", sid, 1)
    produce_to(1, b"into one")
    step("incremental, partition 1 has a record", sid, 2)
    step("incremental, partition 1 asked at 1, 0 forgotten", sid, 3, {1: 1}, forgotten=[0])
    produce_to(0, b"into the forgotten one")
    step("incremental, a record where none is asked", sid, 4)
    step("the same epoch again", sid, 4)
    step("an unknown session", sid + 1 if sid < 2**31 - 2 else 1, 1)
    step("epoch -1 with the session's id: closed, answered without", sid, -1, {0: 0})
    step("the closed session", sid, 5)
    return steps


# ListOffsets, OffsetForLeaderEpoch

def list_offsets(topic: str, timestamp: int, current_leader_epoch: int = -1):
    return build(ListOffsetsRequest, V_LIST_OFFSETS, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": current_leader_epoch,
                                        "timestamp": timestamp}]}]})


@case
def list_offsets_earliest_latest_by_time(side):
    out = {}
    for what, ts in (("earliest", -2), ("latest", -1), ("max timestamp", -3), ("earliest local", -4),
                     ("time 2000", 2000), ("time 2500", 2500), ("time 0", 0), ("time 9999", 9999)):
        r = wire.call(side.bootstrap, list_offsets(DATA, ts), ListOffsetsResponse, V_LIST_OFFSETS).to_dict()
        [t] = normal(r["topics"])
        out[what] = t["partitions"]
    return out


@case
def list_offsets_and_leader_epochs_of_an_empty_topic(side):
    side.create_topic("diff-empty")
    out = {}
    for what, ts in (("earliest", -2), ("latest", -1), ("max timestamp", -3), ("time 0", 0)):
        r = wire.call(side.bootstrap, list_offsets("diff-empty", ts), ListOffsetsResponse, V_LIST_OFFSETS).to_dict()
        out[what] = normal(r["topics"])[0]["partitions"]
    for epoch in (0, 1):
        r = side.call(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, V_OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": -1, "topics": [{"topic": "diff-empty", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": epoch}]}]})
        out[f"OffsetForLeaderEpoch {epoch}"] = normal(r["topics"])
    return out


@case
def list_offsets_leader_epochs_and_unknown_topic(side):
    out = {}
    for what, topic, epoch in (("current epoch", DATA, DATA_EPOCH), ("epoch ahead", DATA, DATA_EPOCH + 1),
                               ("epoch behind", DATA, DATA_EPOCH - 1), ("unknown topic", "diff-never-created", -1)):
        r = wire.call(side.bootstrap, list_offsets(topic, -1, epoch), ListOffsetsResponse, V_LIST_OFFSETS).to_dict()
        out[what] = normal(r["topics"])
    return out


@case
def offset_for_leader_epoch(side):
    out = {}
    for what, topic, epoch, current in (
            ("epoch 0", DATA, 0, -1), ("epoch 1 (none)", DATA, 1, -1), ("epoch 3 (latest)", DATA, 3, DATA_EPOCH),
            ("epoch 4 (after the latest)", DATA, 4, -1), ("current epoch ahead", DATA, 0, DATA_EPOCH + 1),
            ("current epoch behind", DATA, 0, DATA_EPOCH - 1), ("unknown topic", "diff-never-created", 0, -1)):
        r = side.call(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, V_OFFSET_FOR_LEADER_EPOCH, {
            "replica_id": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}]})
        out[what] = normal(r["topics"])
    return out


# Groups

def find_coordinator(side, key_type: int, key: str) -> dict:
    r = side.call(FindCoordinatorRequest, FindCoordinatorResponse, V_FIND_COORDINATOR, {
        "key_type": key_type, "coordinator_keys": [key]})
    [c] = normal(r["coordinators"])
    return c


@case
def find_coordinator_group(side):
    return find_coordinator(side, 0, "diff-group")


@case
def find_coordinator_transaction(side):
    return find_coordinator(side, 1, "diff-transaction")


def join_group(side, group: str, session_timeout_ms: int) -> dict:
    return normal(side.call(JoinGroupRequest, JoinGroupResponse, V_JOIN_GROUP, {
        "group_id": group, "session_timeout_ms": session_timeout_ms, "rebalance_timeout_ms": 10000,
        "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]}))


@case
def join_group_session_timeout_too_small(side):
    return {"1000 ms": join_group(side, "diff-join", 1000),
            "first join, 10000 ms": join_group(side, "diff-join", 10000)}


def offset_commit(side, group: str, generation: int, member_id: str, topic: str = DATA) -> list:
    r = side.call(OffsetCommitRequest, OffsetCommitResponse, V_OFFSET_COMMIT, {
        "group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "committed_offset": 2, "committed_leader_epoch": 0,
             "committed_metadata": "diff"}]}]})
    return normal(r["topics"])


def offset_fetch(side, group: str, topics=None) -> list:
    r = side.call(OffsetFetchRequest, OffsetFetchResponse, V_OFFSET_FETCH, {
        "groups": [{"group_id": group, "topics": topics}], "require_stable": False})
    return normal(r["groups"])


@case
def offset_commit_and_fetch_simple(side):
    return {"commit": offset_commit(side, "diff-simple", -1, ""),
            "commit to an unknown topic": offset_commit(side, "diff-simple", -1, "", "diff-never-created"),
            "fetch all": offset_fetch(side, "diff-simple"),
            "fetch one": offset_fetch(side, "diff-simple", [{"name": DATA, "partition_indexes": [0]}]),
            "fetch of a group that never was": offset_fetch(side, "diff-no-group",
                                                            [{"name": DATA, "partition_indexes": [0]}])}


@case
def offset_commit_bogus_member(side):
    return {"generation -1": offset_commit(side, "diff-bogus", -1, "bogus"),
            "generation 1": offset_commit(side, "diff-bogus", 1, "bogus"),
            "fetch": offset_fetch(side, "diff-bogus", [{"name": DATA, "partition_indexes": [0]}])}


# -- what differs, on purpose ---------------------------------------------------------------------

#: case -> {path: (mini's value, Kafka's value)}: the differences each case is expected to find, exactly.
#: Each is explained in docs/differences.md, "Checked against Kafka 3.9".
MINI_EXPLAINS = ("<text>", None)   # the mini broker explains an error in error_message; Kafka 3.9 sends null
LISTED: dict[str, dict[str, tuple]] = {
    # KIP-511: Kafka refuses a client software name/version that is empty (or has characters other than
    # letters, digits, '.' and '-'); the mini broker does not check them (kafka-python's default
    # ApiVersionsRequest() sends "" and the repository's raw-protocol tests rely on it)
    "api_versions_empty_client_software": {"error_code": ("NONE", "INVALID_REQUEST")},
    "delete_topics_unknown": {"[0].error_message": MINI_EXPLAINS},
    # configs of Kafka 3.x the mini broker does not have: one Kafka 4 removed (the other two it removed,
    # message.format.version and message.downconversion.enable, are served in ZooKeeper mode), and tiered storage's
    "describe_configs_of_a_topic": {f"configs.{name}": (ABSENT, ANY) for name in (
        "message.timestamp.difference.max.ms", "remote.log.copy.disable", "remote.log.delete.on.disable")},
    "produce_corrupt_crc": {"error_message": MINI_EXPLAINS},
    "produce_idempotent_sequences": {"seq 5 (a gap).error_message": MINI_EXPLAINS},
    "produce_invalid_required_acks": {"2.error_message": MINI_EXPLAINS, "-2.error_message": MINI_EXPLAINS},
    "produce_over_max_message_bytes": {"over.error_message": MINI_EXPLAINS},
    "produce_to_an_unknown_topic": {"error_message": MINI_EXPLAINS},
}


# -- the tests ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_same_answer_as_kafka(sides, name):
    results = {side: CASES[name](s) for side, s in sides.items()}
    found = differences(results["mini"], results["kafka"])
    expected = LISTED.get(name, {})
    unexpected = {p: v for p, v in found.items() if p not in expected or expected[p] != v}
    missing = {p: v for p, v in expected.items() if p not in found or found[p] != v}
    assert not unexpected and not missing, (
        f"\nmini:  {results['mini']}\nkafka: {results['kafka']}\n"
        f"differences not listed (mini, kafka): {unexpected}\nlisted but not found: {missing}")


#: API key -> (mini's max version, Kafka 3.9's): versions the mini broker serves that Kafka 3.9 does
#: not have (they came with Kafka 4.x); see docs/differences.md
NEWER_THAN_KAFKA_3_9: dict[int, tuple[int, int]] = {
    8: (10, 9),    # OffsetCommit v10: topic ids
    9: (10, 9),    # OffsetFetch v10: topic ids
    15: (6, 5),    # DescribeGroups v6: error_message, GROUP_ID_NOT_FOUND
    60: (2, 1),    # DescribeCluster v2: include_fenced_brokers / is_fenced (KIP-1073)
    68: (1, 0),    # ConsumerGroupHeartbeat v1: SubscribedTopicRegex, client-generated member ids (KIP-848, Kafka 4.0)
    69: (1, 0),    # ConsumerGroupDescribe v1: each member's type, classic or consumer (KIP-1099, Kafka 4.1)
}


#: APIs the mini broker serves that Kafka 3.9 does not serve at all (Kafka 4.x's), with the versions served:
#: tests/integration/test_share_groups.py checks them against a running Kafka 4.4
NOT_IN_KAFKA_3_9: dict[int, tuple[int, int]] = {
    76: (1, 1),    # ShareGroupHeartbeat (KIP-932; Kafka 4.4 serves v1)
    77: (1, 1),    # ShareGroupDescribe (Kafka 4.4: v1)
    78: (1, 2),    # ShareFetch (Kafka 4.4: v1-2)
    79: (1, 2),    # ShareAcknowledge (Kafka 4.4: v1-2)
    84: (0, 0),    # ReadShareGroupState, inter-broker (Kafka 4.4: v0)
    85: (0, 0),    # WriteShareGroupState, inter-broker (Kafka 4.4: v0-1)
    90: (0, 1),    # DescribeShareGroupOffsets (Kafka 4.4: v0-1)
}


def test_api_versions_are_within_kafkas(sides):
    mini, kafka = advertised(sides["mini"]), advertised(sides["kafka"])
    assert {key: v for key, v in mini.items() if key not in kafka} == NOT_IN_KAFKA_3_9, (mini, kafka)
    beyond = {key: (lo, hi) for key, (lo, hi) in mini.items()
              if key in kafka and (lo < kafka[key][0] or hi > kafka[key][1])}
    assert {key: (mini[key][1], kafka[key][1]) for key in beyond} == NEWER_THAN_KAFKA_3_9, (mini, kafka)
