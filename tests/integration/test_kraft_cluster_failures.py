"""Issue #21's proof on the mini KRaft cluster: the replication durability test (the leader of a partition
SIGKILLed five times while an idempotent acks=all producer writes; nothing acknowledged is lost) and the
confluent-kafka -> kafka-python check, the very test bodies of ``test_cluster_failures`` run against
``kafkalab.cluster(brokers=3, mode="kraft")``: three controllers (a Raft quorum) and three mini brokers,
no ZooKeeper. A killed broker is fenced by the active controller after ``broker.session.timeout.ms``
(3 s, the lab default) and its leaderships move with PartitionChangeRecords.
"""
from __future__ import annotations

import subprocess
import uuid

import pytest

import kafkalab
from tests.helpers.cluster_helpers import broker_states, wait_until
# the scenarios themselves: collected here a second time, with this module's ``cluster`` fixture
from test_cluster_failures import (  # noqa: F401
    consume_all,
    create_topic,
    test_acks_all_loses_nothing_when_the_leader_is_killed_five_times,
    test_kafka_python_reads_what_confluent_kafka_wrote,
)
from test_java_consumer_group import group_client  # noqa: F401  (the Java client compiled once: a fixture)

pytestmark = pytest.mark.cluster

WAIT_S = 45


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path_factory.mktemp("kraft"))) as c:
        yield c


@pytest.fixture(autouse=True)
def all_brokers_up(cluster):
    """What a test broke, restarted: every broker running, registered and unfenced again."""
    yield
    for b in broker_states(cluster):
        if b["alive"] == "paused":
            cluster.resume(b["id"])
        elif b["alive"] != "running":
            cluster.restart(b["id"])
    wait_until(lambda: not cluster.nodes.set_index("id").loc[cluster.broker_ids, "fenced"].any(),
               "every broker unfenced again", timeout=WAIT_S)


def test_java_producer_acks_all_and_java_consumer_read_it_back(cluster, group_client):  # noqa: F811  (the fixture imported above)
    """Kafka's own Java client (kafka-clients 4.4, tests/java/GroupClient.java) on the KRaft cluster: an idempotent
    acks=all KafkaProducer writes N records, a KafkaConsumer in a KIP-848 group (group.protocol=consumer) reads
    them all back and commits; every value is in the log exactly once."""
    n = 300
    topic = create_topic(cluster, "java-kraft", partitions=3, rf=3, **{"min.insync.replicas": 2})
    bs = cluster.bootstrap_servers
    produced = _java(group_client, "produce", bs, topic, str(n))
    assert _count(produced, "ACKED") == n and _count(produced, "FAILED") == 0, produced
    consumed = _java(group_client, "consume", bs, topic, f"jk-{uuid.uuid4().hex[:6]}", "consumer", str(n), "60")
    assert _count(consumed, "CONSUMED") == n, consumed
    values = sorted(v for records in consume_all(cluster, topic, 3).values() for _, v in records)
    assert values == [b"%08d" % i for i in range(n)]


def _java(prefix: list[str], *args: str) -> list[str]:
    p = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"GroupClient {args[0]} failed:\n{p.stdout}\n{p.stderr[-3000:]}"
    return p.stdout.splitlines()


def _count(lines: list[str], word: str) -> int:
    return int(next(line.split()[1] for line in lines if line.startswith(word + " ")))
