"""kafkalab.lessons.traffic.Writer against a mini broker: numbered records, every one accounted for."""
from __future__ import annotations

import time

from kafkalab.lab import LabKafka
from kafkalab.lessons.reading import read_values
from kafkalab.lessons.traffic import Writer


def test_writer_writes_numbered_records_and_reports_each(shared_broker):
    kafka = LabKafka(shared_broker.bootstrap_servers)
    topic = kafka.create_topic("traffic-writer", partitions=2)
    writer = Writer(kafka, topic, partition=1, acks="all", enable_idempotence=True, linger_ms=5).start()
    deadline = time.monotonic() + 20
    while len(writer.acked) < 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert writer.stop() == 0
    writer.close()
    assert len(writer.acked) >= 50 and not writer.failed
    assert len(writer.acked) == writer.sent
    assert [offset for _, offset, _ in writer.acked] == list(range(writer.sent))
    assert [value for _, _, value in writer.acked] == [f"{i:06d}" for i in range(writer.sent)]
    times = writer.ack_times()
    assert len(times) == writer.sent and times.is_monotonic_increasing
    assert read_values(kafka, topic, partition=1) == [f"{i:06d}" for i in range(writer.sent)]
    assert read_values(kafka, topic, partition=0, timeout_s=2) == []


def test_writer_reports_what_the_cluster_refused(shared_broker):
    # one replica, min.insync.replicas=2: every acks=all write is refused with NOT_ENOUGH_REPLICAS
    kafka = LabKafka(shared_broker.bootstrap_servers)
    topic = kafka.create_topic("traffic-writer-refused", partitions=1, replication_factor=1,
                               **{"min.insync.replicas": 2})
    writer = Writer(kafka, topic, acks="all", retries=0, enable_idempotence=False).start()
    deadline = time.monotonic() + 20
    while len(writer.failed) < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    writer.stop(timeout_s=10)
    writer.close()
    assert not writer.acked and len(writer.failed) == writer.sent >= 5
    assert {error for _, error in writer.failed} == {"NOT_ENOUGH_REPLICAS"}
    assert [value for value, _ in writer.failed] == [f"{i:06d}" for i in range(writer.sent)]


def test_trickle_latency_is_about_linger_ms(shared_broker):
    # a record sent alone waits linger.ms for company: the latencies follow the setting
    from kafkalab.lessons.traffic import trickle

    kafka = LabKafka(shared_broker.bootstrap_servers)
    topic = kafka.create_topic("traffic-trickle", partitions=1)
    quick = trickle(kafka, topic, 4, 0.01, linger_ms=0)
    lingering = trickle(kafka, topic, 4, 0.01, linger_ms=150)
    assert len(quick) == len(lingering) == 4
    assert (lingering >= 140).all() and quick.median() < 100
    assert read_values(kafka, topic) == [f"trickle-{i}" for i in range(4)] * 2


def test_trickle_to_consumer_times_the_long_poll(shared_broker):
    # fetch.min.bytes never reached: each Fetch waits its full fetch.wait.max.ms and brings what came meanwhile
    from confluent_kafka import Producer

    from kafkalab.lessons.traffic import trickle_to_consumer

    kafka = LabKafka(shared_broker.bootstrap_servers)
    topic = kafka.create_topic("traffic-long-poll", partitions=1)
    producer = Producer(kafka.client_config(linger_ms=0))
    try:
        eager, eager_got = trickle_to_consumer(kafka, topic, producer, n=8, gap_s=0.05, fetch_min_bytes=1,
                                               fetch_wait_max_ms=300)
        held, held_got = trickle_to_consumer(kafka, topic, producer, n=8, gap_s=0.05, fetch_min_bytes=1_000_000,
                                             fetch_wait_max_ms=300)
    finally:
        producer.flush(10)
    assert sorted(eager_got) == sorted(held_got) == list(range(8))
    assert max(eager) < 150                                        # each record released the waiting Fetch
    assert max(held) > 150                                         # some waited out most of the 300 ms
    assert len({round(t, 2) for t in held_got.values()}) < 8       # and came together with others
