"""kafkalab.lessons.reading against a mini broker: what comes back is what was written, in the order promised."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kafkalab.lab import LabKafka
from kafkalab.lessons.reading import client_config, read_all, read_to_end, read_values, stable_end


@pytest.fixture(scope="module")
def kafka(shared_broker):
    return LabKafka(shared_broker.bootstrap_servers)


def produce(kafka, topic, values, partition=None, **config):
    producer = Producer(client_config(kafka, **config))
    for value in values:
        producer.produce(topic, value=value, **({} if partition is None else {"partition": partition}))
    assert producer.flush(10) == 0


def test_client_config_from_a_lab_kafka_or_a_string(kafka):
    assert client_config(kafka, group_id="g") == {"bootstrap.servers": kafka.bootstrap_servers, "group.id": "g"}
    assert client_config("h:1", enable_auto_commit=False, **{"fetch.wait.max.ms": 5}) == \
        {"bootstrap.servers": "h:1", "enable.auto.commit": False, "fetch.wait.max.ms": 5}


def test_read_values_reads_one_partition_up_to_the_high_watermark(kafka):
    topic = kafka.create_topic("reading-values", partitions=2)
    produce(kafka, topic, [f"p0-{i}" for i in range(30)], partition=0)
    produce(kafka, topic, ["p1-0", "p1-1"], partition=1)
    assert read_values(kafka, topic) == [f"p0-{i}" for i in range(30)]
    assert read_values(kafka.bootstrap_servers, topic, partition=1) == ["p1-0", "p1-1"]


def test_read_values_of_an_empty_partition_is_empty_at_once(kafka):
    topic = kafka.create_topic("reading-empty", partitions=1)
    assert read_values(kafka, topic, timeout_s=5) == []


def test_read_all_reads_every_partition_keeping_each_ones_order(kafka):
    topic = kafka.create_topic("reading-all", partitions=3)
    for p in range(3):
        produce(kafka, topic, [f"{p}:{i}" for i in range(10)], partition=p)
    got = read_all(kafka, topic, partitions=3, count=30)
    assert sorted(got) == sorted((f"{p}:{i}", p) for p in range(3) for i in range(10))
    for p in range(3):   # order holds within a partition
        assert [v for v, part in got if part == p] == [f"{p}:{i}" for i in range(10)]


def test_read_all_gives_up_with_what_came_when_fewer_records_exist(kafka):
    topic = kafka.create_topic("reading-short", partitions=1)
    produce(kafka, topic, ["only"], partition=0)
    assert read_all(kafka, topic, partitions=1, count=5, timeout_s=2) == [("only", 0)]


def test_read_to_end_at_both_isolation_levels(kafka):
    topic = kafka.create_topic("reading-txn", partitions=1)
    producer = Producer(client_config(kafka, transactional_id="reading-txn-writer"))
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=f"aborted-{i}", partition=0)
    producer.flush(10)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(topic, value=f"committed-{i}", partition=0)
    producer.commit_transaction(30)
    # 3 aborted records, ABORT marker, 2 committed records, COMMIT marker: the LSO reaches the high watermark
    assert stable_end(kafka, topic) == 7
    assert read_to_end(kafka, topic, "read_committed") == ["committed-0", "committed-1"]
    assert read_to_end(kafka, topic, "read_uncommitted") == ["aborted-0", "aborted-1", "aborted-2",
                                                            "committed-0", "committed-1"]


def test_read_to_end_stops_at_an_open_transaction(kafka):
    topic = kafka.create_topic("reading-open-txn", partitions=1)
    produce(kafka, topic, ["plain"], partition=0)
    producer = Producer(client_config(kafka, transactional_id="reading-open-writer"))
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value="open", partition=0)
    producer.flush(10)
    try:
        assert stable_end(kafka, topic, timeout_s=0.5) == 1        # the open transaction's first offset
        assert read_to_end(kafka, topic, "read_committed", timeout_s=5) == ["plain"]
        assert read_to_end(kafka, topic, "read_uncommitted") == ["plain", "open"]
    finally:
        producer.abort_transaction(30)
