"""The mini KRaft cluster's Kafka metrics (three controllers, three brokers; ``Cluster.metrics()``), against what
the cluster itself reports (DescribeQuorum, DescribeCluster, Metadata) after each change: healthy; a broker
SIGKILLed (fenced after ``broker.session.timeout.ms``, the lab's 3 s); the active controller SIGKILLed."""
from __future__ import annotations

import functools

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab

pytestmark = pytest.mark.cluster

wait_until = functools.partial(cluster_helpers.wait_until, retry_on=())
CONTROLLER = "kafka_controller_kafkacontroller_"
RAFT = "kafka_server_raft_metrics_"


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path_factory.mktemp("kraft-metrics"))) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(20)
        wait_until(lambda: all(len(p["isr"]) == 3 for p in partitions(cluster).values()) and
                   len(partitions(cluster)) == 3, "orders' leaders and full ISRs")
        yield cluster


def partitions(c) -> dict[int, dict]:
    return {p["partition"]: p for p in c.metadata(["orders"])["topics"].get("orders", {}).get("partitions", [])}


def by_node(c, name: str) -> dict[int, float]:
    """One unlabelled sample per node that serves it."""
    frame = c.metrics([name])
    frame = frame[frame["metric"] == name]
    assert not frame["broker"].duplicated().any(), frame
    return dict(zip(frame["broker"], frame["value"]))


def test_healthy_cluster_every_node_serves_its_metrics_and_they_match_the_quorum(c):
    nodes = c.nodes.set_index("id")
    assert nodes["metrics_url"].str.startswith("http://127.0.0.1:").all()
    assert nodes["metrics_url"].is_unique
    frame = c.metrics(RAFT + "current_epoch")
    assert set(frame["roles"]) == {"controller"} and sorted(frame["broker"]) == c.controller_ids

    leader = c.quorum().set_index("status").loc["Leader", "node_id"]
    assert leader == c.controller
    assert by_node(c, CONTROLLER + "activecontrollercount") == {i: (1.0 if i == leader else 0.0)
                                                               for i in c.controller_ids}
    assert by_node(c, RAFT + "current_leader") == {i: leader for i in c.controller_ids}
    states = c.metrics(RAFT + "current_state_info")
    assert {row.broker: row.labels["state"] for row in states.itertuples()} == {
        i: ("leader" if i == leader else "follower") for i in c.controller_ids}
    brokers = c.brokers
    wait_until(lambda: by_node(c, CONTROLLER + "activebrokercount")[leader] == (~brokers["fenced"]).sum() == 3,
               "ActiveBrokerCount 3")
    assert by_node(c, CONTROLLER + "fencedbrokercount")[leader] == 0
    assert by_node(c, CONTROLLER + "globaltopiccount")[leader] == len(c.metadata()["topics"])
    assert by_node(c, CONTROLLER + "globalpartitioncount")[leader] == len(partitions(c))
    assert by_node(c, CONTROLLER + "offlinepartitionscount")[leader] == 0

    hw = by_node(c, RAFT + "high_watermark")[leader]
    assert hw > 0
    wait_until(lambda: by_node(c, RAFT + "high_watermark")[leader] > hw, "the high watermark to advance", 10)
    committed = by_node(c, CONTROLLER + "lastcommittedrecordoffset")
    assert committed[leader] >= hw - 1
    # the brokers' own: ReplicaManager's
    assert by_node(c, "kafka_server_replicamanager_underreplicatedpartitions") == {1: 0.0, 2: 0.0, 3: 0.0}


def under_replicated_by_leader(c) -> dict[int, int]:
    counts = {b: 0 for b in c.broker_ids}
    for p in partitions(c).values():
        if p["leader"] in counts and len(p["isr"]) < len(p["replicas"]):
            counts[p["leader"]] += 1
    return counts


def test_a_killed_broker_is_counted_fenced_and_its_partitions_under_replicated(c):
    leader = c.controller
    victim = partitions(c)[0]["leader"]
    c.kill(victim)
    wait_until(lambda: by_node(c, CONTROLLER + "fencedbrokercount")[leader] == 1, "FencedBrokerCount 1", 20)
    assert by_node(c, CONTROLLER + "activebrokercount")[leader] == 2
    # the brokers' DescribeCluster shows it once they have replayed the fencing (a moment after the controllers)
    wait_until(lambda: list(c.brokers.set_index("id")["fenced"]) == [b == victim for b in c.broker_ids],
               "DescribeCluster to show the victim, alone, fenced")
    assert by_node(c, CONTROLLER + "fencedbrokercount")[leader] == 1
    assert by_node(c, CONTROLLER + "timedoutbrokerheartbeatcount")[leader] == 1
    live = [b for b in c.broker_ids if b != victim]
    wait_until(lambda: all(victim not in p["isr"] and p["leader"] in live for p in partitions(c).values()),
               "the victim out of every ISR")
    expected = under_replicated_by_leader(c)
    assert sum(expected.values()) == 3
    wait_until(lambda: by_node(c, "kafka_server_replicamanager_underreplicatedpartitions") ==
               {b: float(expected[b]) for b in live}, "UnderReplicatedPartitions as counted")
    assert victim not in by_node(c, "kafka_server_replicamanager_underreplicatedpartitions")   # not scraped


def test_a_killed_active_controller_is_succeeded_in_a_later_epoch_and_the_metrics_say_so(c):
    old = c.controller
    epoch = by_node(c, RAFT + "current_epoch")[old]
    c.kill(old)
    wait_until(lambda: c.controller not in (None, old), "a new active controller")
    new = c.controller
    rest = [i for i in c.controller_ids if i != old]
    wait_until(lambda: by_node(c, CONTROLLER + "activecontrollercount") == {i: (1.0 if i == new else 0.0)
                                                                           for i in rest}, "the new one active")
    assert by_node(c, RAFT + "current_leader") == {i: new for i in rest}
    assert all(e > epoch for e in by_node(c, RAFT + "current_epoch").values())
    assert c.quorum().set_index("status").loc["Leader", "node_id"] == new
    assert by_node(c, CONTROLLER + "fencedbrokercount")[new] == 1   # from the log it replayed
    assert by_node(c, RAFT + "election_latency_max")[new] >= 0
