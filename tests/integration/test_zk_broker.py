"""The broker side of ZooKeeper mode, with a real ZooKeeper and real broker processes.

Three ``python -m kafkalab.broker --config zookeeper.connect=...`` processes
share one ZooKeeper. The tests browse the znodes the brokers write (with
kazoo) and compare their JSON with Kafka's, then check what a cluster must
do: one cluster id, a topic created through any broker showing up the same in
every broker's Metadata, deletion, config changes reaching every broker,
producer ids unique across brokers, and a broker frozen past its session
timeout registering again under a new broker epoch. Each broker is asked
directly (one socket per broker), so a broker that lags behind is caught.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kazoo.client import KazooClient

from kafkalab.broker.common.errors import ErrorCode
from kafkalab.cluster.zookeeper import ZooKeeperServer

from tests.helpers import kafka_wire as wire
from conftest import ROOT, BrokerProcess

SESSION_MS = 4000
BROKER_IDS = (1, 2, 3)
TIMEOUT = 20


def _configs(zk_connect: str) -> dict:
    return {"zookeeper.connect": zk_connect, "zookeeper.session.timeout.ms": SESSION_MS,
            "controlled.shutdown.retry.backoff.ms": 200, "controlled.shutdown.max.retries": 2,
            "replica.lag.time.max.ms": 3000, "offsets.topic.num.partitions": 3,
            "offsets.topic.replication.factor": 3, "group.initial.rebalance.delay.ms": 0}


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    server = ZooKeeperServer(str(tmp_path_factory.mktemp("zk")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def cluster(zk, tmp_path_factory):
    root = tmp_path_factory.mktemp("brokers")
    brokers: dict[int, BrokerProcess] = {}
    try:
        for i in BROKER_IDS:
            brokers[i] = BrokerProcess(str(root / f"b{i}"), broker_id=i, configs=_configs(zk.connect_string)).start()
        kz = _kazoo(zk)
        try:
            _wait(lambda: len(_alive_in_metadata(brokers[i])) == len(BROKER_IDS) for i in BROKER_IDS)
        finally:
            kz.stop()
            kz.close()
        yield brokers
    finally:
        for bp in brokers.values():
            if bp.proc and bp.proc.poll() is None:
                try:
                    os.kill(bp.proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            bp.stop()


@pytest.fixture
def kz(zk):
    client = _kazoo(zk)
    yield client
    client.stop()
    client.close()


def _kazoo(zk) -> KazooClient:
    client = KazooClient(hosts=zk.connect_string)
    client.start(timeout=10)
    return client


def _wait(condition, timeout: float = TIMEOUT, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition() if callable(condition) else all(condition)
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def _metadata(bp: BrokerProcess, topics=None) -> MetadataResponse:
    req = MetadataRequest(topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t)
                                                              for t in topics],
                          allow_auto_topic_creation=False)
    return wire.call(bp.bootstrap_servers, req, MetadataResponse, 12)


def _alive_in_metadata(bp: BrokerProcess) -> set[int]:
    return {b.node_id for b in _metadata(bp).brokers}


def _topic_view(bp: BrokerProcess, topic: str):
    """What one broker says about a topic: per partition (error, leader, epoch, replicas, isr)."""
    (t,) = _metadata(bp, [topic]).topics
    if t.error_code != 0:
        return t.error_code
    return {p.partition_index: (p.error_code, p.leader_id, p.leader_epoch, tuple(p.replica_nodes),
                                tuple(sorted(p.isr_nodes))) for p in t.partitions}


def _admin(bp: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": bp.bootstrap_servers})


# -- znodes -----------------------------------------------------------------------

def test_broker_registrations_and_cluster_id_have_kafkas_shape(cluster, kz):
    assert sorted(int(i) for i in kz.get_children("/brokers/ids")) == list(BROKER_IDS)
    for i, bp in cluster.items():
        data, stat = kz.get(f"/brokers/ids/{i}")
        js = json.loads(data)
        assert set(js) == {"features", "listener_security_protocol_map", "endpoints", "jmx_port", "port", "host",
                           "version", "timestamp"}
        assert js["version"] == 5 and js["jmx_port"] == -1
        assert js["endpoints"] == [f"PLAINTEXT://127.0.0.1:{bp.port}"]
        assert (js["host"], js["port"]) == ("127.0.0.1", bp.port)
        assert js["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT"}
        assert stat.ephemeralOwner != 0  # ephemeral: it goes with the broker's session
    cluster_js = json.loads(kz.get("/cluster/id")[0])
    assert cluster_js["version"] == "1" and len(cluster_js["id"]) == 22
    for path in ("/brokers/topics", "/config/topics", "/config/changes", "/admin/delete_topics",
                 "/isr_change_notification", "/latest_producer_id_block"):
        assert kz.exists(path) is not None, path
    # every broker reports the one cluster id and the same controller
    metas = [_metadata(bp) for bp in cluster.values()]
    assert {m.cluster_id for m in metas} == {cluster_js["id"]}
    controller = json.loads(kz.get("/controller")[0])["brokerid"]
    assert {m.controller_id for m in metas} == {controller}
    assert all(sorted(b.node_id for b in m.brokers) == list(BROKER_IDS) for m in metas)


def test_describe_cluster_lists_every_broker(cluster):
    admin = _admin(cluster[2])  # kept referenced: a collected client cancels its requests
    desc = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert sorted(n.id for n in desc.nodes) == list(BROKER_IDS)
    assert desc.controller.id in BROKER_IDS


# -- topics -------------------------------------------------------------------------

def test_topic_created_on_any_broker_shows_up_everywhere_the_same(cluster, kz):
    admin = _admin(cluster[2])
    fs = admin.create_topics([NewTopic("zk-orders", num_partitions=3, replication_factor=3,
                                       config={"retention.ms": "3600000"})], operation_timeout=15)
    fs["zk-orders"].result(TIMEOUT)
    assignment = json.loads(kz.get("/brokers/topics/zk-orders")[0])
    assert set(assignment) == {"partitions", "topic_id", "adding_replicas", "removing_replicas", "version"}
    assert assignment["version"] == 3 and len(assignment["topic_id"]) == 22
    assert sorted(assignment["partitions"]) == ["0", "1", "2"]
    assert all(sorted(r) == list(BROKER_IDS) for r in assignment["partitions"].values())
    # the preferred leaders are spread: each broker first in one partition
    assert sorted(r[0] for r in assignment["partitions"].values()) == list(BROKER_IDS)
    assert json.loads(kz.get("/config/topics/zk-orders")[0]) == {"version": 1, "config": {"retention.ms": "3600000"}}
    state = json.loads(kz.get("/brokers/topics/zk-orders/partitions/0/state")[0])
    assert set(state) >= {"controller_epoch", "leader", "version", "leader_epoch", "isr"}
    # CreateTopics answered only once the partitions had leaders; every broker soon says the same
    views = _wait(lambda: (v := [_topic_view(bp, "zk-orders") for bp in cluster.values()])
                  and all(x == v[0] for x in v) and v, what="the same view on every broker")
    view = views[0]
    assert set(view) == {0, 1, 2}
    for p, (err, leader, _epoch, replicas, _isr) in view.items():
        assert err == 0 and leader in BROKER_IDS
        assert list(replicas) == assignment["partitions"][str(p)]
    # the topic id is the one in ZooKeeper
    from kafkalab.broker.zk.zk_data import parse_kafka_uuid
    (t,) = _metadata(cluster[3], ["zk-orders"]).topics
    assert t.topic_id == parse_kafka_uuid(assignment["topic_id"])


def test_replication_factor_above_registered_brokers_is_refused(cluster, kz):
    admin = _admin(cluster[1])
    (f,) = admin.create_topics([NewTopic("zk-too-many", 1, 4)]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == ErrorCode.INVALID_REPLICATION_FACTOR
    assert kz.exists("/brokers/topics/zk-too-many") is None


def test_existing_topic_is_refused_by_every_broker(cluster):
    first, other = _admin(cluster[1]), _admin(cluster[3])
    first.create_topics([NewTopic("zk-twice", 1, 1)])["zk-twice"].result(TIMEOUT)
    (f,) = other.create_topics([NewTopic("zk-twice", 1, 1)]).values()
    with pytest.raises(KafkaException) as info:
        f.result(TIMEOUT)
    assert info.value.args[0].code() == ErrorCode.TOPIC_ALREADY_EXISTS


def test_delete_topic_leaves_every_broker_and_zookeeper(cluster, kz):
    admin = _admin(cluster[1])
    admin.create_topics([NewTopic("zk-doomed", 2, 2)], operation_timeout=15)["zk-doomed"].result(TIMEOUT)
    _wait(lambda: all(isinstance(_topic_view(bp, "zk-doomed"), dict) for bp in cluster.values()),
          what="the topic on every broker")
    other = _admin(cluster[3])
    other.delete_topics(["zk-doomed"], operation_timeout=15)["zk-doomed"].result(TIMEOUT)
    _wait(lambda: all(_topic_view(bp, "zk-doomed") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                      for bp in cluster.values()), what="the topic gone from every broker")
    _wait(lambda: kz.exists("/brokers/topics/zk-doomed") is None and kz.exists("/admin/delete_topics/zk-doomed")
          is None, what="the topic's znodes removed")
    assert kz.exists("/config/topics/zk-doomed") is None


def _described(bp: BrokerProcess, topic: str, name: str) -> str | None:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name=topic, configuration_keys=[name])], include_synonyms=False,
        include_documentation=False)
    resp = wire.call(bp.bootstrap_servers, req, DescribeConfigsResponse, 4)
    (res,) = resp.results
    assert res.error_code == 0, res.error_message
    return {c.name: c.value for c in res.configs}.get(name)


def test_config_change_reaches_every_broker(cluster, kz):
    admin = _admin(cluster[1])
    admin.create_topics([NewTopic("zk-configs", 3, 3)], operation_timeout=15)["zk-configs"].result(TIMEOUT)
    _wait(lambda: all(isinstance(_topic_view(bp, "zk-configs"), dict) for bp in cluster.values()))
    before = set(kz.get_children("/config/changes"))
    resource = ConfigResource("topic", "zk-configs", incremental_configs=[
        ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT)
    assert json.loads(kz.get("/config/topics/zk-configs")[0])["config"] == {"retention.ms": "120000"}
    (new,) = set(kz.get_children("/config/changes")) - before
    assert new.startswith("config_change_") and len(new) == len("config_change_") + 10
    assert json.loads(kz.get(f"/config/changes/{new}")[0]) == {"version": 2, "entity_path": "topics/zk-configs"}
    _wait(lambda: all(_described(bp, "zk-configs", "retention.ms") == "120000" for bp in cluster.values()),
          what="retention.ms=120000 on every broker")


# -- producer ids -------------------------------------------------------------------------

def test_producer_ids_are_unique_across_brokers(cluster, kz):
    ids = []
    for bp in cluster.values():
        for _ in range(3):
            resp = wire.call(bp.bootstrap_servers,
                             InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000,
                                                   producer_id=-1, producer_epoch=-1),
                             InitProducerIdResponse, 4)
            assert resp.error_code == 0
            ids.append(resp.producer_id)
    assert len(set(ids)) == len(ids)
    block = json.loads(kz.get("/latest_producer_id_block")[0])
    assert set(block) == {"version", "broker", "block_start", "block_end"}
    assert int(block["block_end"]) - int(block["block_start"]) == 999
    assert max(ids) <= int(block["block_end"])


# -- ZooKeeper sessions ------------------------------------------------------------------------

def test_frozen_broker_registers_again_after_its_session_expired(cluster, kz):
    bp = cluster[3]
    _, stat = kz.get("/brokers/ids/3")
    old_epoch, old_owner = stat.czxid, stat.ephemeralOwner
    os.kill(bp.proc.pid, signal.SIGSTOP)
    try:
        _wait(lambda: kz.exists("/brokers/ids/3") is None, timeout=SESSION_MS / 1000 + 10,
              what="the frozen broker's registration to expire")
        # the others see it gone
        _wait(lambda: 3 not in _alive_in_metadata(cluster[1]), what="broker 3 gone from broker 1's metadata")
    finally:
        os.kill(bp.proc.pid, signal.SIGCONT)
    _, stat = _wait(lambda: kz.exists("/brokers/ids/3") and kz.get("/brokers/ids/3"), timeout=TIMEOUT,
                    what="broker 3 registered again")
    assert stat.czxid > old_epoch and stat.ephemeralOwner != old_owner
    _wait(lambda: 3 in _alive_in_metadata(cluster[1]), what="broker 3 back in broker 1's metadata")
    assert "ZooKeeper session expired" in bp.stderr_text()
    _wait(lambda: f"registered again, broker epoch {old_epoch} -> {stat.czxid}" in bp.stderr_text(),
          what="the re-registration in the broker's log")


def test_broker_without_zookeeper_fails_to_start_with_a_clear_error(tmp_path):
    from kafkalab.cluster.ports import free_port
    cmd = [sys.executable, "-m", "kafkalab.broker", "--port", "0", "--log-dir", str(tmp_path / "b"),
           "--broker-id", "7", "--config", f"zookeeper.connect=127.0.0.1:{free_port()}",
           "--config", "zookeeper.connection.timeout.ms=1000"]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
    assert proc.returncode == 1
    assert "Cannot connect to ZooKeeper" in proc.stderr and "zookeeper.connect" in proc.stderr


# -- consumer groups ------------------------------------------------------------------------------

def test_consumer_group_is_served_by_the_leader_of_its_offsets_partition(cluster):
    from confluent_kafka import Consumer, Producer
    from kafka.protocol.consumer.group import OffsetFetchRequest, OffsetFetchResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    admin = _admin(cluster[1])
    admin.create_topics([NewTopic("zk-group-topic", 2, 3)], operation_timeout=15)["zk-group-topic"].result(TIMEOUT)
    boot = ",".join(bp.bootstrap_servers for bp in cluster.values())
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 0})
    for i in range(10):
        p.produce("zk-group-topic", f"v{i}".encode(), partition=i % 2)
    assert p.flush(TIMEOUT) == 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "zk-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        c.subscribe(["zk-group-topic"])
        got = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        assert sorted(got) == sorted(f"v{i}".encode() for i in range(10))
        c.commit(asynchronous=False)
    finally:
        c.close()
    # every broker names the same coordinator: the leader of the group's __consumer_offsets partition
    answers = {wire.call(bp.bootstrap_servers, FindCoordinatorRequest(key="zk-group", key_type=0),
                         FindCoordinatorResponse, 3).node_id for bp in cluster.values()}
    (coordinator,) = answers
    # the committed offsets are there on the coordinator; the others say NOT_COORDINATOR
    for i, bp in cluster.items():
        resp = wire.call(bp.bootstrap_servers, OffsetFetchRequest(group_id="zk-group", topics=None),
                         OffsetFetchResponse, 7)
        if i == coordinator:
            assert resp.error_code == 0
            committed = {(t.name, pp.partition_index): pp.committed_offset for t in resp.topics for pp in t.partitions}
            assert sum(committed.values()) == 10
        else:
            assert resp.error_code == ErrorCode.NOT_COORDINATOR
