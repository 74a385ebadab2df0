"""The admin and cluster APIs, through both real admin clients.

confluent-kafka's ``AdminClient`` and kafka-python's ``KafkaAdminClient`` create,
describe, alter and delete topics and configs against the mini broker; config
changes are checked to act at runtime (a produce fails, then succeeds);
DeleteRecords is checked through what consumers of both clients then do; and
OffsetForLeaderEpoch, which clients only send on their own after a leader
change, is sent raw with kafka-python's protocol classes over a socket.
"""
from __future__ import annotations

import os
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError as CKError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka import errors as kerrors
from kafka.admin import AlterConfigOp, KafkaAdminClient
from kafka.admin import ConfigResource as KConfigResource
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.consumer.offsets import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse

import kafkalab
from kafkalab.broker.server.config import ConfigSource as Source
from kafkalab.broker.common.errors import ErrorCode

TIMEOUT = 30


# -- helpers -------------------------------------------------------------------

def admin(broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def create(a: AdminClient, *topics: NewTopic, validate_only: bool = False) -> None:
    for f in a.create_topics(list(topics), validate_only=validate_only, operation_timeout=10).values():
        f.result(TIMEOUT)


def create_error(a: AdminClient, topic: NewTopic, validate_only: bool = False):
    """The KafkaError a CreateTopics answer carries for ``topic``."""
    (f,) = a.create_topics([topic], validate_only=validate_only).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    return info.value.args[0]


def describe_topic(a: AdminClient, topic: str) -> dict:
    (f,) = a.describe_configs([ConfigResource("topic", topic)]).values()
    return f.result(TIMEOUT)


def incremental(a: AdminClient, topic: str, *entries: ConfigEntry, validate_only: bool = False) -> None:
    (f,) = a.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=list(entries))],
                                       validate_only=validate_only).values()
    f.result(TIMEOUT)


def topic_names(broker) -> set[str]:
    return set(admin(broker).list_topics(timeout=TIMEOUT).topics)


def produce_one(broker, topic: str, value: bytes, partition: int = 0, **conf):
    """Produce one record with confluent-kafka; return the delivery error (None on success) and offset."""
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, **conf})
    out = {}
    p.produce(topic, value, partition=partition, on_delivery=lambda err, msg: out.update(err=err, msg=msg))
    assert p.flush(TIMEOUT) == 0
    return out["err"], (out["msg"].offset() if out["err"] is None else None)


def produce_n(broker, topic: str, n: int, partition: int = 0) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), partition=partition)
    assert p.flush(TIMEOUT) == 0


def partition_dirs(broker, topic: str) -> list[str]:
    return sorted(d for d in os.listdir(broker.log_dir) if d.rpartition("-")[0] == topic)


# -- CreateTopics ------------------------------------------------------------------

def test_create_with_configs_and_describe_sources(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("cfg-topic", 2, 1, config={"retention.ms": "60000", "cleanup.policy": "compact,delete"}))
    configs = describe_topic(a, "cfg-topic")
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not configs["retention.ms"].is_default
    assert configs["cleanup.policy"].value == "compact,delete"
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.bytes"].is_default
    # synonyms: the override first, then the broker default it hides
    names = [s.name for s in configs["retention.ms"].synonyms.values()]
    assert names[0] == "retention.ms" and "log.retention.hours" in names
    assert len(configs) >= 30 and not any(c.is_read_only for c in configs.values())
    assert shared_broker.call(lambda: shared_broker.server.metadata_cache.get("cfg-topic").num_partitions) == 2


def test_static_broker_config_is_reported_as_the_topic_source(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"log.retention.ms": 123456, "log.segment.bytes": 4096}) as b:
        a = admin(b)
        create(a, NewTopic("static-src", 1, 1))
        configs = describe_topic(a, "static-src")
        assert configs["retention.ms"].value == "123456"
        assert configs["retention.ms"].source == ConfigSource.STATIC_BROKER_CONFIG.value
        assert configs["segment.bytes"].value == "4096"
        assert configs["segment.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
        synonyms = list(configs["retention.ms"].synonyms.values())
        assert [(s.name, s.value, s.source) for s in synonyms] == [
            ("log.retention.ms", "123456", ConfigSource.STATIC_BROKER_CONFIG.value),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG.value)]


def test_create_defaults_and_explicit_assignment(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("defaults-topic"))  # num_partitions/replication_factor -1: broker defaults
    md = a.list_topics("defaults-topic", timeout=TIMEOUT).topics["defaults-topic"]
    assert len(md.partitions) == 3  # the fixture's num.partitions
    assert all(p.replicas == [0] for p in md.partitions.values())
    create(a, NewTopic("assigned-topic", 2, replica_assignment=[[0], [0]]))
    assert len(a.list_topics("assigned-topic", timeout=TIMEOUT).topics["assigned-topic"].partitions) == 2
    err = create_error(a, NewTopic("bad-assign", 1, replica_assignment=[[1]]))
    assert err.code() == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert "bad-assign" not in topic_names(shared_broker)


def test_create_errors(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("exists", 1, 1))
    assert create_error(a, NewTopic("exists", 1, 1)).code() == CKError.TOPIC_ALREADY_EXISTS
    for bad in ("bad name", "..", "x" * 250, "a/b"):
        assert create_error(a, NewTopic(bad, 1, 1)).code() == CKError.TOPIC_EXCEPTION, bad
    create(a, NewTopic("metrics.a", 1, 1))
    err = create_error(a, NewTopic("metrics_a", 1, 1))  # '.' and '_' collide
    assert err.code() == CKError.TOPIC_EXCEPTION and "collides" in err.str()
    err = create_error(a, NewTopic("rf-too-big", 1, 2))
    assert err.code() == CKError.INVALID_REPLICATION_FACTOR
    err = create_error(a, NewTopic("bad-config", 1, 1, config={"retention.ms": "soon"}))
    assert err.code() == CKError.INVALID_CONFIG and "retention.ms" in err.str()
    err = create_error(a, NewTopic("bad-config", 1, 1, config={"segment.bytes": "3"}))
    assert err.code() == CKError.INVALID_CONFIG and "segment.bytes" in err.str()
    err = create_error(a, NewTopic("bad-config", 1, 1, config={"retention.mss": "1"}))
    assert err.code() == CKError.INVALID_CONFIG and "retention.mss" in err.str()
    err = create_error(a, NewTopic("bad-config", 1, 1, config={"cleanup.policy": "shred"}))
    assert err.code() == CKError.INVALID_CONFIG and "cleanup.policy" in err.str()
    names = topic_names(shared_broker)
    assert not {"metrics_a", "rf-too-big", "bad-config"} & names
    assert not partition_dirs(shared_broker, "bad-config") and not partition_dirs(shared_broker, "rf-too-big")


def test_validate_only_creates_nothing(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("dry-run", 4, 1, config={"retention.ms": "1000"}), validate_only=True)
    assert "dry-run" not in topic_names(shared_broker)
    assert partition_dirs(shared_broker, "dry-run") == []
    # and a validate_only request still reports what would fail
    assert create_error(a, NewTopic("dry-run", 1, 1, config={"retention.ms": "x"}),
                        validate_only=True).code() == CKError.INVALID_CONFIG


def test_create_topics_v5_result_with_kafka_python(shared_broker):
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        result = k.create_topics({"kp-created": {"num_partitions": 2, "configs": {"max.message.bytes": "2000"}}})
        (topic,) = result["topics"]
        assert topic["error_code"] == 0 and topic["num_partitions"] == 2 and topic["replication_factor"] == 1
        assert topic["configs"]["max.message.bytes"] == {"value": "2000", "read_only": False,
                                                          "config_source": "DYNAMIC_TOPIC_CONFIG",
                                                          "is_sensitive": False}
        assert topic["configs"]["segment.ms"]["config_source"] == "DEFAULT_CONFIG"
        uuid.UUID(str(topic["topic_id"]))
        with pytest.raises(kerrors.TopicAlreadyExistsError):
            k.create_topics(["kp-created"])
        with pytest.raises(kerrors.InvalidTopicError):
            k.create_topics(["no spaces"])
        with pytest.raises(kerrors.InvalidConfigurationError):
            k.create_topics({"kp-bad": {"configs": {"min.insync.replicas": "0"}}})
        dry = k.create_topics({"kp-dry": {"num_partitions": 5}}, validate_only=True)
        assert dry["topics"][0]["error_code"] == 0 and dry["topics"][0]["num_partitions"] == 5
        assert "kp-dry" not in k.list_topics()
    finally:
        k.close()


# -- DescribeConfigs -------------------------------------------------------------------

def test_describe_unknown_topic_and_broker(shared_broker):
    a = admin(shared_broker)
    (f,) = a.describe_configs([ConfigResource("topic", "no-such-topic")]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.UNKNOWN_TOPIC_OR_PART
    (f,) = a.describe_configs([ConfigResource("broker", "0")]).values()
    broker_configs = f.result(TIMEOUT)
    assert broker_configs["num.partitions"].value == "3"
    assert broker_configs["num.partitions"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert broker_configs["log.retention.hours"].source == ConfigSource.DEFAULT_CONFIG.value
    assert broker_configs["log.retention.ms"].value is None
    assert all(c.is_read_only for c in broker_configs.values())


def test_describe_with_kafka_python_filters_synonyms_and_documentation(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("kp-describe", 1, 1, config={"segment.bytes": "1048576"}))
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        modified = k.describe_configs([KConfigResource("TOPIC", "kp-describe")])
        assert set(modified["topic"]["kp-describe"]) == {"segment.bytes"}
        everything = k.describe_configs([KConfigResource("TOPIC", "kp-describe")], include_synonyms=True,
                                        config_filter="all")["topic"]["kp-describe"]
        assert everything["segment.bytes"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        assert everything["segment.bytes"]["config_type"] == "INT"
        assert [s["name"] for s in everything["segment.bytes"]["synonyms"]] == ["segment.bytes", "log.segment.bytes"]
        assert everything["cleanup.policy"]["config_type"] == "LIST"
        broker = k.describe_configs([KConfigResource("BROKER", "0")], config_filter="static")["broker"]["0"]
        assert "num.partitions" in broker and "log.retention.hours" not in broker
    finally:
        k.close()
    # v4 with documentation and a key filter, sent raw
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="kp-describe", configuration_keys=["segment.bytes", "nonsense"])],
        include_synonyms=False, include_documentation=True)
    resp = raw_request(shared_broker, req, DescribeConfigsResponse, 4)
    (result,) = resp.results
    assert result.error_code == 0
    (entry,) = result.configs
    assert (entry.name, entry.value, entry.config_source) == ("segment.bytes", "1048576",
                                                              Source.DYNAMIC_TOPIC_CONFIG)
    assert "roll" in entry.documentation and entry.synonyms == []


# -- AlterConfigs / IncrementalAlterConfigs: runtime effect --------------------------------

def test_incremental_alter_takes_effect_at_runtime(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("alter-runtime", 1, 1))
    big = b"x" * 4000
    assert produce_one(shared_broker, "alter-runtime", big)[0] is None
    incremental(a, "alter-runtime", ConfigEntry("max.message.bytes", "1024",
                                                 incremental_operation=AlterConfigOpType.SET))
    assert describe_topic(a, "alter-runtime")["max.message.bytes"].value == "1024"
    err, _ = produce_one(shared_broker, "alter-runtime", big)
    assert err is not None and err.code() == CKError.MSG_SIZE_TOO_LARGE
    incremental(a, "alter-runtime", ConfigEntry("max.message.bytes", None,
                                                 incremental_operation=AlterConfigOpType.DELETE))
    described = describe_topic(a, "alter-runtime")["max.message.bytes"]
    assert described.value == "1048588" and described.source == ConfigSource.DEFAULT_CONFIG.value
    err, offset = produce_one(shared_broker, "alter-runtime", big)
    assert err is None and offset == 1
    # the override is saved with the topic, and the broker's live LogConfig is the one the log reads
    incremental(a, "alter-runtime", ConfigEntry("segment.bytes", "2048", incremental_operation=AlterConfigOpType.SET))
    log_cfg = shared_broker.call(lambda: shared_broker.server.replica_manager.get_partition("alter-runtime", 0)
                                 .log.config["segment.bytes"])
    assert log_cfg == 2048


def test_incremental_append_subtract_and_errors(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("alter-lists", 1, 1))
    incremental(a, "alter-lists", ConfigEntry("cleanup.policy", "compact",
                                               incremental_operation=AlterConfigOpType.APPEND))
    assert describe_topic(a, "alter-lists")["cleanup.policy"].value == "delete,compact"
    incremental(a, "alter-lists", ConfigEntry("cleanup.policy", "delete",
                                               incremental_operation=AlterConfigOpType.SUBTRACT))
    assert describe_topic(a, "alter-lists")["cleanup.policy"].value == "compact"
    SET, APPEND = AlterConfigOpType.SET, AlterConfigOpType.APPEND
    for entries, needle in [
        ([ConfigEntry("retention.ms", "1", incremental_operation=APPEND)], "retention.ms"),  # not a list
        ([ConfigEntry("retention.ms", "later", incremental_operation=SET)], "retention.ms"),
        ([ConfigEntry("no.such.config", "1", incremental_operation=SET)], "no.such.config"),
        # each valid alone, contradictory together: nothing is applied
        ([ConfigEntry("min.compaction.lag.ms", "100", incremental_operation=SET),
          ConfigEntry("max.compaction.lag.ms", "50", incremental_operation=SET)], "max.compaction.lag.ms"),
    ]:
        (f,) = a.incremental_alter_configs([ConfigResource("topic", "alter-lists",
                                                           incremental_configs=entries)]).values()
        with pytest.raises(KafkaException) as info:
            f.result(TIMEOUT)
        assert info.value.args[0].code() == CKError.INVALID_CONFIG and needle in info.value.args[0].str()
    incremental(a, "alter-lists", ConfigEntry("max.compaction.lag.ms", "50", incremental_operation=SET),
                validate_only=True)
    configs = describe_topic(a, "alter-lists")  # nothing of the failed requests applied
    assert configs["cleanup.policy"].value == "compact"
    assert configs["retention.ms"].is_default and configs["min.compaction.lag.ms"].is_default
    assert configs["max.compaction.lag.ms"].is_default  # validate_only changed nothing
    (f,) = a.incremental_alter_configs([ConfigResource("topic", "no-such-topic", incremental_configs=[
        ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.UNKNOWN_TOPIC_OR_PART


def test_legacy_alter_configs_replaces_the_whole_set(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("alter-legacy", 1, 1, config={"retention.ms": "1000", "segment.bytes": "4096"}))
    (f,) = a.alter_configs([ConfigResource("topic", "alter-legacy", set_config={"retention.bytes": "5000"})]).values()
    f.result(TIMEOUT)
    configs = describe_topic(a, "alter-legacy")
    assert configs["retention.bytes"].value == "5000" and not configs["retention.bytes"].is_default
    assert configs["retention.ms"].is_default and configs["segment.bytes"].is_default
    (f,) = a.alter_configs([ConfigResource("topic", "alter-legacy", set_config={"retention.bytes": "x"})]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.INVALID_CONFIG
    assert describe_topic(a, "alter-legacy")["retention.bytes"].value == "5000"


def test_broker_resources_cannot_be_altered(shared_broker):
    a = admin(shared_broker)
    (f,) = a.incremental_alter_configs([ConfigResource("broker", "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.INVALID_REQUEST
    assert "dynamic broker configs are not supported" in info.value.args[0].str()


def test_kafka_python_alter_reset_and_runtime_effect(shared_broker):
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers, max_request_size=10_000, retries=0)
    try:
        k.create_topics({"kp-alter": {"num_partitions": 1}})
        assert producer.send("kp-alter", b"y" * 3000).get(TIMEOUT).offset == 0
        assert k.alter_configs([KConfigResource("TOPIC", "kp-alter", {"max.message.bytes": "1000"})]) == \
            {"topic": {"kp-alter": "OK"}}
        with pytest.raises(kerrors.MessageSizeTooLargeError):
            producer.send("kp-alter", b"y" * 3000).get(TIMEOUT)
        assert k.reset_configs([KConfigResource("TOPIC", "kp-alter", ["max.message.bytes"])]) == \
            {"topic": {"kp-alter": "OK"}}
        assert producer.send("kp-alter", b"y" * 3000).get(TIMEOUT).offset == 1
        # APPEND through kafka-python, then the legacy API (incremental=False) replaces the set
        k.alter_configs([KConfigResource("TOPIC", "kp-alter", {"cleanup.policy": (AlterConfigOp.APPEND, "compact"),
                                                               "retention.ms": "99000"})])
        modified = k.describe_configs([KConfigResource("TOPIC", "kp-alter")])["topic"]["kp-alter"]
        assert {n: c["value"] for n, c in modified.items()} == {"cleanup.policy": "delete,compact",
                                                               "retention.ms": "99000"}
        result = k.alter_configs([KConfigResource("TOPIC", "kp-alter", {"retention.ms": "abc"})])
        assert "InvalidConfigurationError" in result["topic"]["kp-alter"]
        assert "retention.ms" in result["topic"]["kp-alter"]
    finally:
        producer.close()
        k.close()


def test_config_overrides_survive_a_restart(tmp_path):
    log_dir = str(tmp_path / "restart")
    with kafkalab.mini(log_dir=log_dir) as b:
        a = admin(b)
        create(a, NewTopic("persisted", 1, 1))
        incremental(a, "persisted", ConfigEntry("retention.ms", "4242", incremental_operation=AlterConfigOpType.SET))
    with kafkalab.mini(log_dir=log_dir) as b:
        configs = describe_topic(admin(b), "persisted")
        assert configs["retention.ms"].value == "4242"
        assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        assert b.call(lambda: b.server.replica_manager.get_partition("persisted", 0).log.config["retention.ms"]) == 4242


# -- CreatePartitions / DeleteTopics ------------------------------------------------------

def test_create_partitions_then_produce_to_the_new_one(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("grow", 2, 1))
    (f,) = a.create_partitions([NewPartitions("grow", 4)], validate_only=True).values()
    f.result(TIMEOUT)
    assert len(a.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 2
    (f,) = a.create_partitions([NewPartitions("grow", 4)]).values()
    f.result(TIMEOUT)
    assert len(a.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 4
    assert partition_dirs(shared_broker, "grow") == ["grow-0", "grow-1", "grow-2", "grow-3"]
    err, offset = produce_one(shared_broker, "grow", b"to the new partition", partition=3)
    assert err is None and offset == 0
    for count in (4, 3):
        (f,) = a.create_partitions([NewPartitions("grow", count)]).values()
        with pytest.raises(KafkaException) as info:
            f.result(TIMEOUT)
        assert info.value.args[0].code() == CKError.INVALID_PARTITIONS
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        from kafka.admin import NewPartitions as KNewPartitions
        k.create_partitions({"grow": KNewPartitions(6)})
        with pytest.raises(kerrors.InvalidPartitionsError):
            k.create_partitions({"grow": KNewPartitions(5)})
        with pytest.raises(kerrors.UnknownTopicOrPartitionError):
            k.create_partitions({"no-such-grow": KNewPartitions(5)})
    finally:
        k.close()
    assert len(a.list_topics("grow", timeout=TIMEOUT).topics["grow"].partitions) == 6


def test_delete_topic_removes_metadata_and_disk(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("doomed", 2, 1))
    produce_n(shared_broker, "doomed", 5)
    assert partition_dirs(shared_broker, "doomed") == ["doomed-0", "doomed-1"]
    (f,) = a.delete_topics(["doomed"], operation_timeout=10).values()
    f.result(TIMEOUT)
    assert "doomed" not in topic_names(shared_broker)
    assert partition_dirs(shared_broker, "doomed") == []
    (f,) = a.delete_topics(["doomed"]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.UNKNOWN_TOPIC_OR_PART
    # the name can be used again, from scratch
    create(a, NewTopic("doomed", 1, 1))
    err, offset = produce_one(shared_broker, "doomed", b"again")
    assert err is None and offset == 0


def test_delete_topics_by_name_and_id_with_kafka_python(shared_broker):
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        k.create_topics({"kp-del-name": {"num_partitions": 1}, "kp-del-id": {"num_partitions": 2}})
        topic_id = k.describe_topics(["kp-del-id"])[0]["topic_id"]
        topic_id = topic_id if isinstance(topic_id, uuid.UUID) else uuid.UUID(str(topic_id))
        result = k.delete_topics(["kp-del-name", topic_id])
        by_id = [t for t in result["topics"] if t["topic_id"] == topic_id or str(t["topic_id"]) == str(topic_id)]
        assert by_id and by_id[0]["name"] == "kp-del-id" and by_id[0]["error_code"] == 0
        assert not {"kp-del-name", "kp-del-id"} & set(k.list_topics())
        assert partition_dirs(shared_broker, "kp-del-id") == []
        with pytest.raises(kerrors.UnknownTopicIdError):
            k.delete_topics([uuid.uuid4()])
        with pytest.raises(kerrors.UnknownTopicOrPartitionError):
            k.delete_topics(["kp-del-name"])
    finally:
        k.close()


# -- DescribeCluster --------------------------------------------------------------------

def test_describe_cluster_both_clients(shared_broker):
    port = int(shared_broker.bootstrap_servers.rpartition(":")[2])
    a = admin(shared_broker)  # keep the client alive until its future is done
    result = a.describe_cluster(include_authorized_operations=True).result(TIMEOUT)
    assert result.controller.id == 0 and [n.id for n in result.nodes] == [0]
    assert result.nodes[0].port == port and result.cluster_id
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        cluster = k.describe_cluster()
    finally:
        k.close()
    assert cluster["cluster_id"] == result.cluster_id and cluster["controller_id"] == 0
    assert cluster["brokers"] == [{"broker_id": 0, "host": "127.0.0.1", "port": port, "rack": None,
                                   "is_fenced": False}]
    # KIP-430 without an authorizer: every operation the cluster supports, as Kafka's AuthHelper answers
    cluster_operations = {"ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS",
                          "IDEMPOTENT_WRITE"}
    assert {op.name for op in result.authorized_operations} == cluster_operations
    assert set(cluster["authorized_operations"]) == cluster_operations


# -- DeleteRecords ----------------------------------------------------------------------

def confluent_consume_from(broker, topic: str, offset: int, reset: str, expect: int = 1):
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                  "enable.auto.commit": False, "auto.offset.reset": reset})
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        out, deadline = [], time.time() + TIMEOUT
        while len(out) < expect and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None:
                out.append(m)
        return out
    finally:
        c.close()


def test_delete_records_moves_the_start_and_consumers_reset(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("trimmed", 1, 1))
    produce_n(shared_broker, "trimmed", 10)
    (f,) = a.delete_records([TopicPartition("trimmed", 0, 4)]).values()
    assert f.result(TIMEOUT).low_watermark == 4
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": "wm"})
    try:
        assert c.get_watermark_offsets(TopicPartition("trimmed", 0), timeout=TIMEOUT) == (4, 10)
    finally:
        c.close()
    # earliest: out of range at 0, reset to the new start
    (m,) = confluent_consume_from(shared_broker, "trimmed", 0, "earliest")
    assert m.error() is None and m.offset() == 4 and m.value() == b"v4"
    # error: the consumer is told
    (m,) = confluent_consume_from(shared_broker, "trimmed", 0, "error")
    assert m.error() is not None and m.error().code() == CKError._AUTO_OFFSET_RESET
    # moving back is a no-op; -1 means the high watermark; beyond it is OFFSET_OUT_OF_RANGE
    (f,) = a.delete_records([TopicPartition("trimmed", 0, 2)]).values()
    assert f.result(TIMEOUT).low_watermark == 4
    (f,) = a.delete_records([TopicPartition("trimmed", 0, 11)]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.OFFSET_OUT_OF_RANGE
    (f,) = a.delete_records([TopicPartition("trimmed", 0, -1)]).values()
    assert f.result(TIMEOUT).low_watermark == 10
    # latest: out of range at 0, reset to the end; the next record produced is the one seen
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": f"g-{uuid.uuid4()}",
                  "enable.auto.commit": False, "auto.offset.reset": "latest"})
    try:
        c.assign([TopicPartition("trimmed", 0, 0)])
        deadline, m = time.time() + TIMEOUT, None
        while m is None and time.time() < deadline:  # produce until the reset consumer sees something
            produce_n(shared_broker, "trimmed", 1)
            m = c.poll(1.0)
        assert m is not None and m.error() is None and m.offset() >= 10  # nothing below the old end
    finally:
        c.close()


def test_delete_records_with_kafka_python(shared_broker):
    k = KafkaAdminClient(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        k.create_topics({"kp-trim": {"num_partitions": 1}})
        produce_n(shared_broker, "kp-trim", 6)
        tp = KTopicPartition("kp-trim", 0)
        assert k.delete_records({tp: 3})[tp]["low_watermark"] == 3
        with pytest.raises(kerrors.OffsetOutOfRangeError):
            k.delete_records({tp: 100})
    finally:
        k.close()

    def consumer(reset):
        c = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap_servers, auto_offset_reset=reset,
                          enable_auto_commit=False, consumer_timeout_ms=10_000)
        c.assign([tp])
        c.seek(tp, 0)
        return c

    c = consumer("earliest")
    try:
        assert [m.offset for m in c][:3] == [3, 4, 5]
        assert c.beginning_offsets([tp]) == {tp: 3}
    finally:
        c.close()
    c = consumer("none")
    try:
        with pytest.raises(kerrors.OffsetOutOfRangeError):
            deadline = time.time() + TIMEOUT
            while time.time() < deadline:
                c.poll(500)
    finally:
        c.close()


def test_delete_records_refused_on_a_compacted_topic(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("compacted-only", 1, 1, config={"cleanup.policy": "compact"}))
    (f,) = a.delete_records([TopicPartition("compacted-only", 0, 0)]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == CKError.POLICY_VIOLATION


def test_log_start_offset_survives_a_crash(broker_process, tmp_path):
    bp = broker_process(configs={"num.partitions": 1}).start()
    a = AdminClient({"bootstrap.servers": bp.bootstrap_servers})
    create(a, NewTopic("crashy", 1, 1))
    produce_n(bp, "crashy", 8)
    (f,) = a.delete_records([TopicPartition("crashy", 0, 5)]).values()
    assert f.result(TIMEOUT).low_watermark == 5
    bp.kill()
    bp.start()
    c = Consumer({"bootstrap.servers": bp.bootstrap_servers, "group.id": "crashy"})
    try:
        assert c.get_watermark_offsets(TopicPartition("crashy", 0), timeout=TIMEOUT) == (5, 8)
    finally:
        c.close()


# -- OffsetForLeaderEpoch, raw ----------------------------------------------------------------

def raw_request(broker, request, response_cls, version: int):
    """Send one request with kafka-python's protocol classes over a plain socket; decode the answer."""
    host, _, port = broker.bootstrap_servers.rpartition(":")
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="raw-test")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as s:
        s.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", _recv_exactly(s, 4))
        frame = _recv_exactly(s, size)
    response = response_cls.decode(frame, version=version, header=True)
    assert response.header.correlation_id == 7
    return response


def _recv_exactly(s, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


def offset_for_epoch(broker, topic, partitions, version=4, replica_id=-1):
    Topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    Part = Topic.OffsetForLeaderPartition
    req = OffsetForLeaderEpochRequest(replica_id=replica_id, topics=[Topic(topic=topic, partitions=[
        Part(partition=p, current_leader_epoch=cur, leader_epoch=epoch) for p, cur, epoch in partitions])])
    resp = raw_request(broker, req, OffsetForLeaderEpochResponse, version)
    return [(p.partition, p.error_code, p.leader_epoch, p.end_offset) for p in resp.topics[0].partitions]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_offset_for_leader_epoch_standalone(shared_broker, version):
    topic = f"epochs-v{version}"
    create(admin(shared_broker), NewTopic(topic, 2, 1))
    produce_n(shared_broker, topic, 7)
    assert offset_for_epoch(shared_broker, topic, [
        (0, -1, 0),   # the current epoch: it ends at the log end offset
        (1, 0, 0),    # an empty partition: epoch 0 starts and ends at 0
        (0, -1, 3),   # a future epoch: UNDEFINED
        (0, 1, 0),    # the requester believes in a newer leader epoch
        (9, -1, 0),   # no such partition
    ], version=version) == [
        (0, 0, 0, 7),
        (1, 0, 0, 0),
        (0, 0, -1, -1),
        (0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
        (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]
    cache_file = os.path.join(shared_broker.log_dir, f"{topic}-0", "leader-epoch-checkpoint")
    with open(cache_file) as f:
        assert f.read() == "0\n1\n0 0\n"


def test_offset_for_leader_epoch_after_a_leader_change(broker):
    """Simulate what the cluster mode does on a leader change: the epoch goes up and new
    appends carry it. The end of epoch 0 is then where epoch 1 began."""
    create(admin(broker), NewTopic("leader-change", 1, 1))
    produce_n(broker, "leader-change", 5)

    def bump_epoch():
        p = broker.server.replica_manager.get_partition("leader-change", 0)
        p.leader_epoch = 1
        p.log.leader_epoch_cache.assign(1, p.log.log_end_offset)

    broker.call(bump_epoch)
    produce_n(broker, "leader-change", 3)
    assert offset_for_epoch(broker, "leader-change", [(0, -1, 0), (0, 1, 1), (0, 0, 0), (0, -1, 2)]) == [
        (0, 0, 0, 5),                            # epoch 0 ended where epoch 1 started
        (0, 0, 1, 8),                            # the current epoch ends at the log end offset
        (0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1),  # the requester still believes in epoch 0
        (0, 0, -1, -1),
    ]
    with open(os.path.join(broker.log_dir, "leader-change-0", "leader-epoch-checkpoint")) as f:
        assert f.read() == "0\n2\n0 0\n1 5\n"
    # DeleteRecords past the epoch boundary trims the cache from the start
    a = admin(broker)
    (f,) = a.delete_records([TopicPartition("leader-change", 0, 6)]).values()
    assert f.result(TIMEOUT).low_watermark == 6
    with open(os.path.join(broker.log_dir, "leader-change-0", "leader-epoch-checkpoint")) as f:
        assert f.read() == "0\n1\n1 6\n"


@pytest.mark.parametrize("reset", ["error", "earliest"])
def test_confluent_consumer_detects_truncation_with_offset_for_leader_epoch(broker, monkeypatch, reset):
    """KIP-320 with a real client: a consumer at offset 8 (epoch 0) learns that a new leader
    (epoch 1) has truncated the log to 5. librdkafka asks OffsetForLeaderEpoch(epoch 0), hears
    "epoch 0 ended at 5", and reports the truncation (or, with a reset policy, goes on from 5)."""
    from kafkalab.broker.apis import REGISTRY
    spec = REGISTRY[OffsetForLeaderEpochRequest.API_KEY]
    asked = []

    async def recording(ctx, request, _orig=spec.handler):
        asked.append([(t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
                      for t in request.topics for p in t.partitions])
        return await _orig(ctx, request)

    monkeypatch.setattr(spec, "handler", recording)
    create(admin(broker), NewTopic("truncated", 1, 1))
    produce_n(broker, "truncated", 5)   # two flushes: offset 5 starts a batch, as the cut below needs
    produce_n(broker, "truncated", 3)   # (a log is never cut inside a batch)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "kip320",
                  "enable.auto.commit": False, "auto.offset.reset": reset})
    try:
        c.assign([TopicPartition("truncated", 0, 0)])
        got, deadline = [], time.time() + TIMEOUT
        while len(got) < 8 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.offset(), m.leader_epoch()))
        assert got == [(i, 0) for i in range(8)]

        def unclean_leader_change():  # what an unclean election does to the log
            p = broker.server.replica_manager.get_partition("truncated", 0)
            p.log.truncate_to(5)
            assert p.log.log_end_offset == 5
            p.leader_epoch = 1
            p.log.leader_epoch_cache.assign(1, p.log.log_end_offset)

        broker.call(unclean_leader_change)
        produce_n(broker, "truncated", 3)  # offsets 5, 6, 7 again, now in epoch 1
        errors, deadline = [], time.time() + TIMEOUT
        while time.time() < deadline and not errors and len(got) < 11:
            m = c.poll(0.5)
            if m is not None:
                if m.error() is not None:
                    errors.append(m.error())
                else:
                    got.append((m.offset(), m.leader_epoch()))
    finally:
        c.close()
    assert [("truncated", 0, 1, 0)] in asked
    if reset == "error":
        assert errors and errors[0].code() == CKError._AUTO_OFFSET_RESET
        assert "truncation detected at offset 8" in errors[0].str() and "end offset is 5" in errors[0].str()
    else:
        assert not errors and got[8:] == [(5, 1), (6, 1), (7, 1)]


def test_deleting_a_topic_drops_its_committed_offsets(shared_broker):
    a = admin(shared_broker)
    create(a, NewTopic("offsets-gone", 1, 1))
    produce_n(shared_broker, "offsets-gone", 3)
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": "offsets-gone-group",
                  "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition("offsets-gone", 0, 2)], asynchronous=False)
        assert c.committed([TopicPartition("offsets-gone", 0)], timeout=TIMEOUT)[0].offset == 2
        (f,) = a.delete_topics(["offsets-gone"]).values()
        f.result(TIMEOUT)
        assert c.committed([TopicPartition("offsets-gone", 0)], timeout=TIMEOUT)[0].offset < 0  # OFFSET_INVALID
    finally:
        c.close()


def test_consumer_offsets_can_be_neither_deleted_nor_grown(shared_broker):
    """More partitions would move groups away from their records (a group's partition is its hash
    modulo the count): a commit made before would be lost at the next restart."""
    shared_broker.call(shared_broker.server.group_coordinator.manager.ensure_offsets_topic)
    a = admin(shared_broker)
    before = len(a.list_topics("__consumer_offsets", timeout=TIMEOUT).topics["__consumer_offsets"].partitions)
    (deleted,) = a.delete_topics(["__consumer_offsets"]).values()
    (grown,) = a.create_partitions([NewPartitions("__consumer_offsets", before + 1)]).values()
    for f in (deleted, grown):
        with pytest.raises(KafkaException) as info:
            f.result(TIMEOUT)
        assert info.value.args[0].code() == CKError.INVALID_REQUEST
    assert "internal topic" in info.value.args[0].str()  # CreatePartitions carries the message
    after = len(a.list_topics("__consumer_offsets", timeout=TIMEOUT).topics["__consumer_offsets"].partitions)
    assert after == before
