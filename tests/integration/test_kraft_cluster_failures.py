"""Issue #21's proof on the mini KRaft cluster: the replication durability test (the leader of a partition
SIGKILLed five times while an idempotent acks=all producer writes; nothing acknowledged is lost) and the
confluent-kafka -> kafka-python check, the very test bodies of ``test_cluster_failures`` run against
``kafkalab.cluster(brokers=3, mode="kraft")``: three controllers (a Raft quorum) and three mini brokers,
no ZooKeeper. A killed broker is fenced by the active controller after ``broker.session.timeout.ms``
(3 s, the lab default) and its leaderships move with PartitionChangeRecords.
"""
from __future__ import annotations

import pytest

import kafkalab
from cluster_helpers import broker_states, wait_until
# the scenarios themselves: collected here a second time, with this module's ``cluster`` fixture
from test_cluster_failures import (  # noqa: F401
    test_acks_all_loses_nothing_when_the_leader_is_killed_five_times,
    test_kafka_python_reads_what_confluent_kafka_wrote,
)

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
