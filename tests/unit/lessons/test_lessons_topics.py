"""kafkalab.lessons.topics on a local 3-broker cluster: the replicas where the lesson put them, in sync."""
from __future__ import annotations

import pytest

import kafkalab
from kafkalab.lab import LabKafka
from kafkalab.lessons.timeline import partition_state
from kafkalab.lessons.topics import create_placed_topic

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    cluster = kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("lessons-topics") / "cluster"))
    try:
        yield LabKafka(cluster.bootstrap_servers, cluster=cluster)
    finally:
        cluster.close()


def test_replicas_as_assigned_in_sync_and_serving(kafka):
    assignment = [[2, 3, 1], [3, 1, 2]]
    topic = create_placed_topic(kafka, "placed", assignment, serving=True, **{"min.insync.replicas": 2})
    assert topic == "placed"
    described = kafka.cluster.describe(topic)
    assert [list(r) for r in described["replicas"]] == assignment        # preferred leader first
    for p, replicas in enumerate(assignment):
        s = partition_state(kafka.cluster, topic, p)
        assert s["leader"] == replicas[0] and s["isr"] == sorted(replicas) and s["high_watermark"] == 0


def test_an_existing_name_is_never_reused(kafka):
    first = create_placed_topic(kafka, "placed-twice", [[1, 2, 3]])
    second = create_placed_topic(kafka, "placed-twice", [[3, 2, 1]])
    assert (first, second) == ("placed-twice", "placed-twice-2")
    assert partition_state(kafka.cluster, second)["leader"] == 3


def test_without_renaming_an_existing_name_fails(kafka):
    from confluent_kafka import KafkaException

    create_placed_topic(kafka, "placed-once", [[1, 2, 3]], rename_existing=False)
    with pytest.raises(KafkaException, match="TOPIC_ALREADY_EXISTS|already exists"):
        create_placed_topic(kafka, "placed-once", [[1, 2, 3]], rename_existing=False)
