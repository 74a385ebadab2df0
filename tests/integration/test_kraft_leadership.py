"""Partition leadership in KRaft on the mini KRaft cluster, and the same steps on Apache Kafka 4.4 KRaft:

* eligible leader replicas (KIP-966, ``eligible.leader.replicas.version=1`` as both bootstrap it): RF 3,
  ``min.insync.replicas=2``, the brokers SIGKILLed one by one, then restarted: the leader, ISR, ELR and
  LastKnownElr after each step, read from the controllers' ``__cluster_metadata`` log (every
  PartitionRecord and PartitionChangeRecord of the topic replayed), and ElectLeaders' answers for a leaderless
  partition whose preferred replica is down; the outcomes must be the same on both backends (Kafka is the oracle);
* ElectLeaders through confluent-kafka's ``AdminClient.elect_leaders`` forwarded by a mini broker to the active
  controller (PREFERRED, UNCLEAN, Kafka's per-partition errors);
* the auto leader rebalance: a killed preferred leader restarted gets its leadership back by itself (on both).
"""
from __future__ import annotations

import functools
import os
import subprocess
import uuid

import pytest
from confluent_kafka import ElectionType, KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.tools.metadata_log import metadata_log_df

pytestmark = pytest.mark.cluster
wait_until = functools.partial(cluster_helpers.wait_until, timeout=60, interval=0.2)
ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE = 84, 80, 83
UNKNOWN_TOPIC_OR_PARTITION = 3


def partition_history(c, topic: str) -> dict[int, list[dict]]:
    """partition -> its states {leader, isr, elr, last_known_elr}, one after each of the topic's PartitionRecord and
    PartitionChangeRecords, replayed from the metadata log of the first controller that has the topic (every
    controller holds the same log)."""
    for node in c.controller_ids:
        df = metadata_log_df(c.metadata_log_dir(node))
        topic_ids = [d["topicId"] for t, d in zip(df["type"], df["data"]) if t == "TOPIC_RECORD" and d["name"] == topic]
        if not topic_ids:
            continue
        history: dict[int, list[dict]] = {}
        for kind, d in zip(df["type"], df["data"]):
            if kind not in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD") or d.get("topicId") != topic_ids[-1]:
                continue
            if kind == "PARTITION_RECORD":
                p = {"leader": d["leader"], "isr": [], "elr": [], "last_known_elr": []}
            else:
                p = dict(history[d["partitionId"]][-1])
            for field, key in (("isr", "isr"), ("eligibleLeaderReplicas", "elr"), ("lastKnownElr", "last_known_elr")):
                if d.get(field) is not None:
                    p[key] = sorted(d[field])
            if d.get("leader", -2) != -2:
                p["leader"] = d["leader"]
            history.setdefault(d["partitionId"], []).append(p)
        return history
    return {}


def partition_state(c, topic: str) -> dict[int, dict]:
    """partition -> its state now (as the metadata log has it)."""
    return {p: states[-1] for p, states in partition_history(c, topic).items()}


def new_topic(c, assignment, **configs) -> str:
    name = f"lead-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(name, len(assignment), replica_assignment=assignment, config={k: str(v) for k, v in configs.items()})],
                        operation_timeout=30)[name].result(60)
    wait_until(lambda: all(len(p["isr"]) == len(assignment[0]) for p in partition_state(c, name).values())
               and len(partition_state(c, name)) == len(assignment), f"{name} created, full ISRs")
    return name


def elect(c, election_type, topic: str, partitions) -> dict[int, int]:
    """ElectLeaders through confluent-kafka -> partition -> error code (0: elected)."""
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    tps = [CTopicPartition(topic, p) for p in partitions]
    try:
        results = admin.elect_leaders(election_type, tps).result(60)
    except KafkaException as exc:     # every partition failed alike
        return {p: _code(exc) for p in partitions}
    return {tp.partition: 0 if err is None else _code(err) for tp, err in results.items()}


def _code(err) -> int:
    """A KafkaError, or a KafkaException holding one."""
    return err.code() if hasattr(err, "code") else err.args[0].code()


def elr_scenario(c) -> list:
    """The brokers killed one by one, then restarted; the partition's state after each step, and ElectLeaders'
    answers while no replica is live. Leaves every broker running."""
    b1, b2, b3 = c.broker_ids[:3]
    topic = new_topic(c, [[b1, b2, b3]], **{"min.insync.replicas": 2})
    seen, done = [], [0]     # the steps seen; how far in the partition's history they are

    def step(what, leader, isr, elr, last):
        """Wait for the state to appear in the partition's history (later ones may follow at once: a follower
        catching up), after the previous step's."""
        want = {"leader": leader, "isr": sorted(isr), "elr": sorted(elr), "last_known_elr": sorted(last)}

        def reached():
            later = partition_history(c, topic)[0][done[0]:]
            return (done[0] + later.index(want) + 1) if want in later else None
        try:
            done[0] = wait_until(reached, f"{what}: {want}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; history {partition_history(c, topic).get(0)}") from None
        seen.append((what, want))

    c.kill(b3)
    step("kill 3", b1, [b1, b2], [], [])            # ISR still at min ISR: no ELR
    c.kill(b2)
    step("kill 2", b1, [b1], [b2], [])              # below min ISR: 2 goes to the ELR
    c.kill(b1)
    step("kill 1", -1, [], [b1, b2], [b1])          # ISR empty, both eligible, 1 the last leader
    c.restart(b2)                                   # after SIGKILL: an unclean shutdown, out of the ELR
    step("restart 2", -1, [], [b1], [b1])
    # a broker is up again (ElectLeaders needs one to send to); the preferred replica 1 is not
    seen.append(("elect preferred", elect(c, ElectionType.PREFERRED, topic, [0, 9])))
    c.restart(b1)                                   # out of the ELR too; back, it leads as the last known leader
    step("restart 1", b1, [b1], [], [])
    wait_until(lambda: partition_state(c, topic)[0]["isr"] == sorted([b1, b2]), "2 caught up, in the ISR")
    c.restart(b3)
    wait_until(lambda: partition_state(c, topic)[0]["isr"] == sorted([b1, b2, b3]), "3 caught up, in the ISR")
    seen.append(("all back", partition_state(c, topic)[0]))
    return seen


def clean_stop_scenario(c) -> list:
    """Broker 3 killed, broker 2 *stopped* (SIGTERM: a controlled shutdown, the clean-shutdown marker written with
    its broker epoch), then both started again: the partition's states, consecutive repeats left out. A clean
    shutdown keeps the replica in the ELR (an unclean one would be taken out when it registers again)."""
    b1, b2, b3 = c.broker_ids[:3]
    topic = new_topic(c, [[b1, b2, b3]], **{"min.insync.replicas": 2})
    c.kill(b3)
    wait_until(lambda: partition_state(c, topic)[0]["isr"] == [b1, b2], "3 out of the ISR")
    c.stop(b2)
    wait_until(lambda: partition_state(c, topic)[0]["elr"] == [b2], "2 in the ELR")
    c.restart(b2)
    wait_until(lambda: partition_state(c, topic)[0]["isr"] == [b1, b2], "2 back in the ISR")
    c.restart(b3)
    wait_until(lambda: partition_state(c, topic)[0]["isr"] == [b1, b2, b3], "3 back in the ISR")
    changes = []
    for state in partition_history(c, topic)[0]:
        if not changes or changes[-1] != state:
            changes.append(state)
    return changes


EXPECTED_CLEAN_STOP = [
    {"leader": 1, "isr": [1, 2, 3], "elr": [], "last_known_elr": []},
    {"leader": 1, "isr": [1, 2], "elr": [], "last_known_elr": []},
    {"leader": 1, "isr": [1], "elr": [2], "last_known_elr": []},     # stopped: to the ELR, and it stays there
    {"leader": 1, "isr": [1, 2], "elr": [], "last_known_elr": []},   # until it is back in the ISR
    {"leader": 1, "isr": [1, 2, 3], "elr": [], "last_known_elr": []},
]


EXPECTED = [
    ("kill 3", {"leader": 1, "isr": [1, 2], "elr": [], "last_known_elr": []}),
    ("kill 2", {"leader": 1, "isr": [1], "elr": [2], "last_known_elr": []}),
    ("kill 1", {"leader": -1, "isr": [], "elr": [1, 2], "last_known_elr": [1]}),
    ("restart 2", {"leader": -1, "isr": [], "elr": [1], "last_known_elr": [1]}),
    ("elect preferred", {0: PREFERRED_LEADER_NOT_AVAILABLE, 9: UNKNOWN_TOPIC_OR_PARTITION}),
    ("restart 1", {"leader": 1, "isr": [1], "elr": [], "last_known_elr": []}),
    ("all back", {"leader": 1, "isr": [1, 2, 3], "elr": [], "last_known_elr": []}),
]


# -- the mini KRaft cluster ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path_factory.mktemp("kraft-lead")),
                          **{"leader.imbalance.check.interval.seconds": 2}) as c:
        yield c


@pytest.fixture
def all_up(mini):
    yield
    for b in cluster_helpers.broker_states(mini):
        if b["alive"] != "running":
            mini.restart(b["id"])


def test_eligible_leader_replicas_on_the_mini_kraft_cluster(mini, all_up):
    assert elr_scenario(mini) == EXPECTED


def test_a_cleanly_stopped_broker_keeps_its_elr_place_on_the_mini_kraft_cluster(mini, all_up):
    assert clean_stop_scenario(mini) == EXPECTED_CLEAN_STOP


def rebalance_scenario(c) -> None:
    """Three partitions, each broker the preferred leader of one; broker 1 killed: its partition moves to the next
    replica; restarted, once back in the ISR the active controller's auto leader rebalance (every 2 s here)
    moves it back to broker 1, without anyone asking."""
    b1, b2, b3 = c.broker_ids[:3]
    topic = new_topic(c, [[b1, b2, b3], [b2, b3, b1], [b3, b1, b2]])
    c.kill(b1)
    wait_until(lambda: partition_state(c, topic)[0]["leader"] == b2, "partition 0 led by 2")
    c.restart(b1)
    wait_until(lambda: [p["leader"] for _, p in sorted(partition_state(c, topic).items())] == [b1, b2, b3],
               "every partition led by its preferred replica again")


def test_a_restarted_broker_gets_its_preferred_leaderships_back(mini, all_up):
    rebalance_scenario(mini)


def test_elect_leaders_through_confluent_kafka_forwarded_to_the_controller(tmp_path):
    """Without the auto rebalance, a restarted preferred leader stays a follower until ElectLeaders (PREFERRED) asks
    (confluent-kafka for partition 0, Kafka 4.4's kafka-leader-election.sh for all partitions); then
    ELECTION_NOT_NEEDED; UNCLEAN for a partition with a leader: ELECTION_NOT_NEEDED; an unknown partition."""
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "c"),
                          **{"auto.leader.rebalance.enable": "false"}) as c:
        b1, b2, b3 = c.broker_ids[:3]
        topic = new_topic(c, [[b1, b2, b3], [b1, b3, b2]])
        c.kill(b1)
        wait_until(lambda: [p["leader"] for _, p in sorted(partition_state(c, topic).items())] == [b2, b3],
                   "leadership moved off broker 1")
        c.restart(b1)
        wait_until(lambda: all(b1 in p["isr"] for p in partition_state(c, topic).values()), "broker 1 back in the ISRs")
        assert [p["leader"] for _, p in sorted(partition_state(c, topic).items())] == [b2, b3]
        assert elect(c, ElectionType.PREFERRED, topic, [0]) == {0: 0}
        assert partition_state(c, topic)[0]["leader"] == b1
        wait_until(lambda: cluster_helpers.leader_of(c, topic, 0) == b1, "the brokers' metadata shows broker 1 leading")
        # Kafka's own kafka-leader-election.sh, every partition (a null list): those needing no election left out
        tool = subprocess.run(["java", "-cp", os.path.join(str(fetch_kafka("4")), "libs", "*"),
                               "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", c.bootstrap_servers,
                               "--election-type", "preferred", "--all-topic-partitions"],
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert tool.returncode == 0, tool.stderr[-2000:]
        assert f"Successfully completed leader election (PREFERRED) for partitions {topic}-1\n" in tool.stdout
        assert elect(c, ElectionType.PREFERRED, topic, [0, 1, 7]) == {0: ELECTION_NOT_NEEDED, 1: ELECTION_NOT_NEEDED,
                                                                      7: UNKNOWN_TOPIC_OR_PARTITION}
        assert elect(c, ElectionType.UNCLEAN, topic, [0]) == {0: ELECTION_NOT_NEEDED}
        assert [p["leader"] for _, p in sorted(partition_state(c, topic).items())] == [b1, b1]


# -- Apache Kafka 4.4 KRaft, the same steps: the oracle ---------------------------------------------------------------

def test_eligible_leader_replicas_on_kafka_4_kraft_match(tmp_path):
    """The same scenarios on Apache Kafka 4.4 (three controllers, three brokers, SIGKILLs, a SIGTERM): the same leaders,
    ISRs, ELRs, LastKnownElrs and ElectLeaders answers as the mini cluster's (EXPECTED, EXPECTED_CLEAN_STOP), and the
    preferred leader back by the auto leader rebalance."""
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "k"), backend=KRaftBackend(str(fetch_kafka("4"))),
                          **{"replica.lag.time.max.ms": 3000, "leader.imbalance.check.interval.seconds": 2}) as c:
        assert elr_scenario(c) == EXPECTED
        assert clean_stop_scenario(c) == EXPECTED_CLEAN_STOP
        rebalance_scenario(c)
