"""The source's offset reader survives a partition leader's death, as Spark's does (fetchOffset.numRetries).

A streaming query asks for each input partition's offsets every trigger. When the leader of a
partition is killed, librdkafka keeps waiting for the dead broker with the metadata it has; before
the retries, the query then failed with "could not reach Kafka" (lesson 06, section 7). Now a failed
request is tried again with a new consumer, which finds the new leader.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

import kafkalab
from kafkalab.lab import LabKafka
from kafkalab.spark.offset_reader import KafkaOffsetReader, KafkaUnreachableError
from kafkalab.spark.options import KafkaOptionError, ReadOptions

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def three(tmp_path):
    c = kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **{"zookeeper.session.timeout.ms": 4000,
                                                                       "min.insync.replicas": 2})
    try:
        yield LabKafka(c.bootstrap_servers, cluster=c)
    finally:
        c.close()


def _reader(kafka, topic, **more):
    options = {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
               "kafkaConsumer.pollTimeoutMs": "4000", **more}   # 4 s per attempt
    return KafkaOffsetReader(ReadOptions(options, streaming=True))


def test_watermarks_come_from_the_new_leader_after_the_old_one_is_killed(three):
    topic = three.create_topic("lines", partitions=1, replication_factor=3)
    producer = Producer(three.client_config(acks="all", enable_idempotence=True))
    for i in range(10):
        producer.produce(topic, value=f"line {i}")
    assert producer.flush(30) == 0
    producer.close()
    reader = _reader(three, topic)
    try:
        assert reader.watermarks([(topic, 0)]) == {(topic, 0): (0, 10)}   # the client now knows the leader
        leader = int(three.cluster.describe(topic)["leader"].iloc[0])
        three.cluster.kill(leader)
        start = time.monotonic()
        assert reader.watermarks([(topic, 0)]) == {(topic, 0): (0, 10)}   # nothing acknowledged is lost
        took = time.monotonic() - start
        assert int(three.cluster.describe(topic)["leader"].iloc[0]) != leader
        assert took < 3 * 4 + 2 * 1 + 2, took
    finally:
        reader.close()


def test_with_one_attempt_the_dead_leader_fails_the_request(three):
    """The retries are what makes the difference: one attempt, shorter than the failover, fails."""
    topic = three.create_topic("lines", partitions=1, replication_factor=3)
    producer = Producer(three.client_config(acks="all"))
    producer.produce(topic, value="x")
    assert producer.flush(30) == 0
    producer.close()
    reader = _reader(three, topic, **{"fetchOffset.numRetries": "1", "kafkaConsumer.pollTimeoutMs": "1500"})
    try:
        assert reader.watermarks([(topic, 0)]) == {(topic, 0): (0, 1)}
        three.cluster.kill(int(three.cluster.describe(topic)["leader"].iloc[0]))
        with pytest.raises(KafkaUnreachableError, match="ListOffsets for lines-0"):
            reader.watermarks([(topic, 0)])
    finally:
        reader.close()


@pytest.mark.parametrize("option, value", [("fetchOffset.numRetries", "0"), ("fetchOffset.retryIntervalMs", "-1")])
def test_bad_retry_options_are_named(option, value):
    with pytest.raises(KafkaOptionError, match=option):
        ReadOptions({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", option: value}, streaming=True)
