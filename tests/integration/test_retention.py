"""Retention through a real client: old segments go, the log start offset moves, consumers reset."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition
from kafka.errors import OffsetOutOfRangeError

import kafkalab

T0 = 1_700_000_000_000
HOUR = 3_600_000


def produce(bootstrap, topic, n, ts_of=lambda i: T0 + i * 60_000):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 1})
    for i in range(n):
        producer.produce(topic, value=b"v%04d" % i + b"x" * 100, partition=0, timestamp=ts_of(i))
        producer.flush(10)


def segments(broker, topic):
    return broker.call(lambda: broker.server.log_manager.get_log(topic, 0).describe_segments())


@pytest.fixture
def broker(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"num.partitions": 1, "log.segment.bytes": 1024,
                                                       "log.retention.ms": HOUR}) as b:
        yield b


@pytest.mark.timeout(60)
def test_retention_ms_by_record_timestamps_and_consumer_reset(broker):
    produce(broker.bootstrap_servers, "events", 60)              # one record a minute, an hour of data
    segs = segments(broker, "events")
    assert len(segs) > 4
    lm = broker.server.log_manager
    cutoff = segs[2]["largest_timestamp"] + HOUR + 1             # the first three segments expire
    assert broker.call(lm.cleanup_logs, cutoff) == 3
    after = segments(broker, "events")
    assert after[0]["base_offset"] == segs[3]["base_offset"] and after[-1]["active"]
    start = after[0]["base_offset"]

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="none")
    tp = TopicPartition("events", 0)
    consumer.assign([tp])
    assert consumer.beginning_offsets([tp])[tp] == start
    consumer.seek(tp, 0)
    with pytest.raises(OffsetOutOfRangeError):                 # below the log start offset
        deadline = time.time() + 10
        while time.time() < deadline:
            consumer.poll(timeout_ms=500)
    consumer.close()

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None,
                             enable_auto_commit=False, auto_offset_reset="earliest", consumer_timeout_ms=3000)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    offsets = [m.offset for m in consumer]                      # auto.offset.reset=earliest: from the start
    consumer.close()
    assert offsets == list(range(start, 60))

    # everything expired, the active segment too: as Kafka, the log rolls a new empty active segment at
    # the log end offset and deletes every old one; the partition is empty, its offsets carry on
    n = len(after)
    assert broker.call(lm.cleanup_logs, T0 + 100 * HOUR) == n
    final = segments(broker, "events")
    assert len(final) == 1 and final[0]["active"] and final[0]["size"] == 0 and final[0]["base_offset"] == 60
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, group_id=None)
    assert consumer.beginning_offsets([tp])[tp] == consumer.end_offsets([tp])[tp] == 60
    consumer.close()
    produce(broker.bootstrap_servers, "events", 1, ts_of=lambda i: T0 + 100 * HOUR)
    assert segments(broker, "events")[0]["next_offset"] == 61


@pytest.mark.timeout(60)
def test_retention_bytes_and_runtime_config_change(broker):
    produce(broker.bootstrap_servers, "sized", 40, ts_of=lambda i: int(time.time() * 1000))
    lm = broker.server.log_manager
    assert broker.call(lm.cleanup_logs) == 0                    # young data, no size limit
    log_config = broker.call(lambda: lm.get_log("sized", 0).config)
    broker.call(log_config.set, "retention.bytes", 2048)         # like AlterConfigs: no restart
    broker.call(lm.cleanup_logs)
    segs = segments(broker, "sized")
    total = sum(s["size"] for s in segs)
    assert total - segs[0]["size"] < 2048 <= total


@pytest.mark.timeout(60)
def test_background_retention_task(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "bg"), **{"num.partitions": 1, "log.segment.bytes": 1024,
                                                         "log.retention.ms": 1000,
                                                         "log.retention.check.interval.ms": 200,
                                                         "log.initial.task.delay.ms": 0}) as b:
        produce(b.bootstrap_servers, "bg", 30, ts_of=lambda i: T0)   # records from 2023: long expired
        deadline = time.time() + 20
        while time.time() < deadline and len(segments(b, "bg")) > 1:
            time.sleep(0.2)
        assert len(segments(b, "bg")) == 1


@pytest.mark.timeout(60)
def test_the_first_retention_check_waits_log_initial_task_delay_ms(tmp_path):
    """As Kafka's LogManager.startup: the retention job first runs log.initial.task.delay.ms after start-up
    (30 s by default), then every log.retention.check.interval.ms."""
    with kafkalab.mini(log_dir=str(tmp_path / "first"), **{"num.partitions": 1, "log.segment.bytes": 1024,
                                                            "log.retention.ms": 1000,
                                                            "log.retention.check.interval.ms": 200,
                                                            "log.initial.task.delay.ms": 3000}) as b:
        started = time.monotonic()
        produce(b.bootstrap_servers, "first", 30, ts_of=lambda i: T0)   # long expired, deletable at once
        while time.monotonic() - started < 2.5:
            assert len(segments(b, "first")) > 1, "retention ran before log.initial.task.delay.ms"
            time.sleep(0.2)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(segments(b, "first")) > 1:
            time.sleep(0.2)
        assert len(segments(b, "first")) == 1
