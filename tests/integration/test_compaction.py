"""Compaction through real clients: latest value per key, tombstones, offsets kept, restart-safe."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

import kafkalab

T0 = 1_700_000_000_000
DAY = 86_400_000


def read_all(bootstrap, topic):
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    out = [(m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    return out


@pytest.mark.timeout(90)
def test_compacted_topic_end_to_end(tmp_path):
    configs = {"num.partitions": 1, "log.segment.bytes": 1024, "log.cleanup.policy": "compact",
               "log.cleaner.delete.retention.ms": DAY, "log.cleaner.backoff.ms": 3_600_000}
    with kafkalab.mini(log_dir=str(tmp_path / "c"), **configs) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0,
                             "batch.num.messages": 1, "enable.idempotence": True})
        for i in range(90):
            producer.produce("profiles", key=b"user-%d" % (i % 6), value=b"v%d" % i, partition=0)
            producer.flush(10)
        producer.produce("profiles", key=b"user-0", value=None, partition=0)     # tombstone
        producer.flush(10)
        for i in range(30):
            producer.produce("profiles", key=b"pad-%d" % i, value=b"p" * 50, partition=0)
            producer.flush(10)
        before = read_all(broker.bootstrap_servers, "profiles")
        assert len(before) == 121

        lm = broker.server.log_manager
        stats = broker.call(lm.run_cleaner, T0 + 1_000)
        assert stats and stats[0].superseded_removed > 0
        after = read_all(broker.bootstrap_servers, "profiles")
        assert len(after) < len(before)
        latest = {}
        for off, k, v in before:
            latest[k] = (off, v)
        assert {k: (o, v) for o, k, v in after} == latest         # latest per key, same offsets
        assert (90, b"user-0", None) in after                      # the tombstone is still readable

        # a keyless record is refused
        p2 = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "retries": 0})
        errors = []
        p2.produce("profiles", value=b"no key", partition=0, on_delivery=lambda e, m: errors.append(e))
        p2.flush(10)
        assert errors and errors[0] is not None and errors[0].name() == "INVALID_RECORD"

        # the idempotent producer carries on after cleaning
        producer.produce("profiles", key=b"user-1", value=b"after-clean", partition=0)
        producer.flush(10)

    # restart: data and producer state survive; then the tombstone's delete horizon passes
    with kafkalab.mini(log_dir=str(tmp_path / "c"), **configs) as broker:
        again = read_all(broker.bootstrap_servers, "profiles")
        assert again[:-1] == after and again[-1][1:] == (b"user-1", b"after-clean")
        lm = broker.server.log_manager
        # past the horizon, but nothing new is dirty: the cleaner does not pick the log, the tombstone stays
        assert broker.call(lm.run_cleaner, T0 + 2 * DAY) == []
        assert (90, b"user-0", None) in read_all(broker.bootstrap_servers, "profiles")
        # new records make the log dirty again; the next clean drops the tombstone (its horizon, kept in
        # the batch header, survived the restart)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
        for i in range(40):
            producer.produce("profiles", key=b"pad-%d" % (i % 5), value=b"q" * 50, partition=0)
            producer.flush(10)
        stats = broker.call(lm.run_cleaner, T0 + 2 * DAY)
        assert stats and stats[0].tombstones_removed == 1
        final = read_all(broker.bootstrap_servers, "profiles")
        assert not any(k == b"user-0" for _, k, _ in final)
        assert [o for o, _, _ in final] == sorted(o for o, _, _ in final)
