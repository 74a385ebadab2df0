"""kafkalab.cluster.failover_probe on the lab's default cluster (ZooKeeper + 3 mini brokers): a SIGKILLed controller
and a SIGKILLed partition leader, timed from ZooKeeper's own znode times. (The KRaft side runs in
tests/integration/test_kraft_metadata_log.py and, under nbval, in lesson 10.)"""
from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.cluster.failover_probe import kill_and_watch, preferred_leader

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("probe") / "cluster")) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, "log_level": 3})
        admin.create_topics([NewTopic("orders", num_partitions=3,
                                      replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])])["orders"].result(30)
        cluster_helpers.wait_until(lambda: c.describe("orders")["leader"].tolist() == [1, 2, 3], "leaders 1, 2, 3")
        yield c


def test_a_killed_controller_waits_for_its_session(zk):
    session_s = int(zk.configs["zookeeper.session.timeout.ms"]) / 1000
    epoch = json.loads(zk.zk.get("/controller_epoch")[0])
    r = kill_and_watch(zk, zk.controller, "orders")
    zk.restart(r["victim"])
    assert r["mode"] == "zookeeper" and r["was_controller"]
    assert r["new_controller"] != r["victim"] and r["new_leader"] != r["victim"]
    assert json.loads(zk.zk.get("/controller_epoch")[0]) == epoch + 1
    assert min(r["detected_s"], r["new_controller_s"], r["new_leader_s"]) >= 0.5 * session_s


def test_a_killed_leader_is_noticed_when_its_session_expires(zk):
    session_s = int(zk.configs["zookeeper.session.timeout.ms"]) / 1000
    cluster_helpers.wait_until(lambda: all(len(i) == 3 for i in zk.describe("orders")["isr"]), "full ISRs", timeout=60)
    victim = preferred_leader(zk, "orders")
    d = zk.describe("orders")
    assert victim != zk.controller and victim in d["leader"].tolist()
    r = kill_and_watch(zk, victim, "orders")
    zk.restart(victim)
    assert not r["was_controller"] and r["new_controller_s"] is None and r["new_leader"] != victim
    assert r["detected_s"] >= 0.5 * session_s and r["new_leader_s"] >= 0.5 * session_s


def test_a_broker_that_leads_nothing_is_refused(zk):
    with pytest.raises(ValueError, match="leads no partition"):
        kill_and_watch(zk, 99, "orders")
