"""Where real clients put keyed records, against kafkalab.partitioner's predictions."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

import kafkalab
from kafkalab.partitioner import crc32_partition, murmur2_partition

KEYS = [f"account-{i}" for i in range(40)] + ["a", "ab", "abc", "abcd", "ünïcode", "x" * 33]
PARTITIONS = 5


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.connect(log_dir=str(tmp_path_factory.mktemp("broker"))) as kafka:
        yield kafka


def _confluent_partitions(kafka, topic, **config):
    where = {}
    producer = Producer(kafka.client_config(**config))
    for key in KEYS:
        producer.produce(topic, key=key, value=b"v",
                         on_delivery=lambda err, msg: where.__setitem__(msg.key().decode(), msg.partition()))
    assert producer.flush(10) == 0
    return where


def test_confluent_kafka_default_is_crc32(kafka):
    topic = kafka.create_topic("crc", partitions=PARTITIONS)
    where = _confluent_partitions(kafka, topic)
    assert where == {k: crc32_partition(k, PARTITIONS) for k in KEYS}
    assert where != {k: murmur2_partition(k, PARTITIONS) for k in KEYS}   # the two really differ


def test_confluent_kafka_murmur2_random_is_javas_partitioner(kafka):
    topic = kafka.create_topic("murmur", partitions=PARTITIONS)
    assert _confluent_partitions(kafka, topic, partitioner="murmur2_random") == \
        {k: murmur2_partition(k, PARTITIONS) for k in KEYS}


def test_kafka_python_default_is_murmur2(kafka):
    from kafka import KafkaProducer

    topic = kafka.create_topic("kp", partitions=PARTITIONS)
    producer = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    try:
        where = {k: producer.send(topic, key=k.encode(), value=b"v").get(timeout=10).partition for k in KEYS}
    finally:
        producer.close()
    assert where == {k: murmur2_partition(k, PARTITIONS) for k in KEYS}
