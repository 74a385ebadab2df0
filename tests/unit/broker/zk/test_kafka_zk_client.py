"""KafkaZkClient against a real ZooKeeper: registration, controller election, conditional writes."""
from __future__ import annotations

import threading
import uuid

import pytest

from kafkalab.broker.zk import zk_data as zd
from kafkalab.broker.zk.kafka_zk_client import BadVersionError, ControllerMovedError, KafkaZkClient
from kafkalab.broker.zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch, TopicAssignment
from kafkalab.cluster.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory):
    with ZooKeeperServer(str(tmp_path_factory.mktemp("zk"))) as server:
        yield server


@pytest.fixture
def client(zk_server):
    c = KafkaZkClient(zk_server.connect_string, session_timeout_ms=4000)
    c.start()
    for path in ("/brokers", "/controller", "/controller_epoch", "/admin", "/config", "/cluster",
                 "/latest_producer_id_block"):
        c.zk.delete(path, recursive=True) if c.zk.exists(path) else None
    c.create_top_level_paths()
    yield c
    c.close()


@pytest.fixture
def other(zk_server):
    c = KafkaZkClient(zk_server.connect_string, session_timeout_ms=4000)
    c.start()
    yield c
    c.close()


def test_top_level_paths_and_cluster_id(client, other):
    for path in zd.PERSISTENT_PATHS:
        assert client.zk.exists(path) is not None
    assert client.get_or_create_cluster_id("abc") == "abc"
    assert other.get_or_create_cluster_id("xyz") == "abc"


def test_register_broker_epoch_is_czxid_and_ephemeral(client, other):
    epoch = client.register_broker(BrokerInfo(1, "127.0.0.1", 9092))
    _, stat = client.zk.get("/brokers/ids/1")
    assert epoch == stat.czxid > 0
    assert other.get_all_brokers_in_cluster()[1].port == 9092
    assert other.get_all_broker_and_epochs_in_cluster()[1][1] == epoch
    with pytest.raises(Exception):
        other.register_broker(BrokerInfo(1, "127.0.0.1", 9093))   # another session holds id 1
    client.close()
    assert other.get_sorted_broker_list() == []                    # ephemeral: gone with the session


def test_controller_election_and_epoch(client, other):
    epoch, version = client.register_controller_and_increment_controller_epoch(1)
    assert epoch == 1 and other.get_controller_id() == 1
    assert other.get_controller_epoch() == (1, version)
    with pytest.raises(ControllerMovedError):
        other.register_controller_and_increment_controller_epoch(2)
    client.close()   # controller's session ends: /controller is deleted
    epoch2, version2 = other.register_controller_and_increment_controller_epoch(2)
    assert (epoch2, other.get_controller_id()) == (2, 2) and version2 == version + 1


def _assignment(parts):
    return TopicAssignment(uuid.uuid4(), parts)


def test_partition_states_conditional_updates_and_fencing(client, other):
    epoch, epoch_version = client.register_controller_and_increment_controller_epoch(1)
    client.zk.create(zd.topic_path("t"), zd.encode_topic_assignment(_assignment({0: [1, 2], 1: [2, 1]})))
    assert client.get_all_topics_in_cluster() == {"t"}
    assert client.get_topic_assignment("t").partitions == {0: [1, 2], 1: [2, 1]}
    created = client.create_partition_states(
        {("t", 0): LeaderIsrAndControllerEpoch(1, 0, [1, 2], epoch), ("t", 1): LeaderIsrAndControllerEpoch(2, 0, [2, 1], epoch)},
        epoch_version)
    assert created == {("t", 0): 0, ("t", 1): 0}
    states = other.get_partition_states([("t", 0), ("t", 1), ("t", 9)])
    assert set(states) == {("t", 0), ("t", 1)} and states[("t", 0)].isr == [1, 2] and states[("t", 0)].zk_version == 0
    # a write based on version 0 succeeds and returns version 1; a second one based on 0 fails
    s0 = states[("t", 0)]
    s0.isr = [1]
    ok, failed = client.update_partition_states({("t", 0): s0}, epoch_version)
    assert ok == {("t", 0): 1} and failed == {}
    ok, failed = client.update_partition_states({("t", 0): s0}, epoch_version)
    assert ok == {} and isinstance(failed[("t", 0)], BadVersionError)
    assert client.get_partition_state("t", 0).isr == [1]
    # another controller bumps the epoch: the old one's writes are fenced
    client.zk.delete(zd.CONTROLLER)
    other.register_controller_and_increment_controller_epoch(2)
    s0 = client.get_partition_state("t", 0)
    with pytest.raises(ControllerMovedError):
        client.update_partition_states({("t", 0): s0}, epoch_version)
    assert client.get_partition_state("t", 0).zk_version == 1


def test_topic_deletion_bookkeeping_and_configs(client):
    client.zk.create(zd.topic_path("gone"), zd.encode_topic_assignment(_assignment({0: [1]})))
    client.create_partition_states({("gone", 0): LeaderIsrAndControllerEpoch(1, 0, [1], 1)})
    client.zk.create(zd.topic_config_path("gone"), zd.encode_topic_config({"retention.ms": "1000"}))
    client.zk.create(zd.delete_topic_path("gone"))
    assert client.get_topic_config("gone") == {"retention.ms": "1000"}
    assert client.get_topic_config("nope") == {}
    assert client.get_topic_deletions() == {"gone"}
    client.delete_topic_znode("gone")
    client.delete_topic_configs(["gone"])
    client.delete_topic_deletions(["gone"])
    assert not client.topic_exists("gone") and client.get_topic_deletions() == set()
    assert client.zk.exists(zd.topic_config_path("gone")) is None


def test_producer_id_blocks_are_disjoint(client, other):
    assert client.allocate_producer_id_block(1) == (0, 999)
    assert other.allocate_producer_id_block(2) == (1000, 1999)
    got = []
    threads = [threading.Thread(target=lambda c=c: got.append(c.allocate_producer_id_block(3)))
               for c in (client, other, client, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == [(2000, 2999), (3000, 3999), (4000, 4999), (5000, 5999)]
    assert zd.decode_producer_id_block(client.zk.get(zd.PRODUCER_ID_BLOCK)[0])[2] == 5999


def test_watches_fire_once_per_registration(client, other):
    fired = threading.Event()
    events = []

    def cb(event):
        events.append(event)
        fired.set()
    assert client.get_children_and_watch(zd.BROKER_IDS, cb) == []
    other.register_broker(BrokerInfo(7, "h", 1))
    assert fired.wait(5)
    assert len(events) == 1 and events[0].path == zd.BROKER_IDS


def test_session_state_listener(client, zk_server):
    states = []
    client.add_state_listener(states.append)
    client.zk.stop()
    assert "EXPIRED" in states   # kazoo reports a closed session as lost
