"""SIGKILL a real broker process while a producer writes; every acknowledged record survives.

Flush settings: the defaults (``flush.messages`` and ``flush.ms`` unset, as in
Kafka), so nothing is fsynced on append. The records are in the OS page
cache when the producer is acknowledged, and the page cache survives the
death of the broker *process* (not a power cut: that is what replication is
for). On restart there is no ``.kafka_cleanshutdown`` marker, so each log is
recovered from its recovery point: batches CRC-checked, torn tails cut,
indexes rebuilt.
"""
from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.common.records import iter_batches, iter_records, validate_batch

TOPIC = "crash-test"
PARTITIONS = 3


def consume_all(bootstrap, partitions, timeout=30):
    """Every record of every partition, via kafka-python (check_crcs on), as {partition: [(offset, value)]}."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", check_crcs=True, consumer_timeout_ms=3000)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        got = {p: [] for p in range(partitions)}
        deadline = time.time() + timeout
        while time.time() < deadline and any(consumer.position(tp) < ends[tp] for tp in tps):
            for tp, msgs in consumer.poll(timeout_ms=500).items():
                got[tp.partition] += [(m.offset, m.value) for m in msgs]
        return got, {tp.partition: ends[tp] for tp in tps}
    finally:
        consumer.close()


def check_files(log_dir):
    """Read the partition files directly: whole batches only, every CRC valid, offsets increasing."""
    for name in os.listdir(log_dir):
        path = os.path.join(log_dir, name)
        if not (os.path.isdir(path) and name.startswith(TOPIC)):
            continue
        last = -1
        for f in sorted(os.listdir(path)):
            if f.endswith(".log"):
                data = open(os.path.join(path, f), "rb").read()
                end = 0
                for pos, h in iter_batches(data, strict=True):
                    validate_batch(data, pos, h)
                    assert h.base_offset > last
                    last = h.last_offset
                    end = pos + h.size
                assert end == len(data)


@pytest.mark.timeout(180)
def test_sigkill_during_acks_all_writes_loses_no_acknowledged_record(broker_process, tmp_path):
    configs = {"num.partitions": PARTITIONS, "log.segment.bytes": 64 * 1024, "log.index.interval.bytes": 1024}
    bp = broker_process(configs=configs).start()
    acked, failed = [], []

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            failed.append(err)

    producer = Producer({"bootstrap.servers": bp.bootstrap_servers, "acks": "all", "linger.ms": 2,
                         "message.timeout.ms": 4000, "retries": 0, "enable.idempotence": False})
    i, killed_at = 0, None
    deadline = time.time() + 60
    while time.time() < deadline:
        producer.produce(TOPIC, value=b"record-%08d-" % i + b"x" * 80, key=b"%d" % (i % 7),
                         on_delivery=on_delivery)
        i += 1
        producer.poll(0)
        if i % 200 == 0:
            producer.poll(0.001)
        if killed_at is None and len(acked) >= 20_000:
            bp.kill()                                  # mid-write: requests are in flight
            killed_at = time.time()
        if killed_at is not None and time.time() - killed_at > 0.5:
            break
    assert killed_at is not None, f"only {len(acked)} records acknowledged in 60 s"
    producer.flush(10)
    assert failed, "the producer should have seen the broker die"
    acked_before_kill = list(acked)

    bp2 = broker_process(log_dir=bp.log_dir, port=bp.port, configs=configs).start()
    got, ends = consume_all(bp2.bootstrap_servers, PARTITIONS)
    by_partition = {p: dict(got[p]) for p in got}
    for p in got:
        offsets = [o for o, _ in got[p]]
        assert offsets == list(range(len(offsets))), "offsets must be contiguous and in order"
        assert len(offsets) == ends[p]
    missing = [(p, o) for p, o, v in acked_before_kill if by_partition[p].get(o) != v]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]}"

    # still writable after recovery, at the right offsets
    producer = Producer({"bootstrap.servers": bp2.bootstrap_servers, "acks": "all"})
    producer.produce(TOPIC, value=b"after", partition=0, on_delivery=on_delivery)
    producer.flush(10)
    assert acked[-1][:2] == (0, ends[0])
    bp2.stop()
    check_files(bp.log_dir)


def _produce(bootstrap, n, partition=0):
    acked = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "batch.num.messages": 10})
    for i in range(n):
        producer.produce(TOPIC, value=b"value-%05d" % i + b"y" * 100, partition=partition,
                         on_delivery=lambda err, msg: acked.append((msg.offset(), msg.value())) if not err else None)
        producer.poll(0)
    producer.flush(10)
    assert len(acked) == n
    return acked


@pytest.mark.timeout(120)
def test_broker_starts_on_damaged_files_and_serves_the_valid_prefix(broker_process):
    configs = {"num.partitions": 1, "log.segment.bytes": 16 * 1024, "log.index.interval.bytes": 512}
    bp = broker_process(configs=configs).start()
    acked = _produce(bp.bootstrap_servers, 400)
    bp.stop()
    part_dir = os.path.join(bp.log_dir, f"{TOPIC}-0")
    logs = sorted(f for f in os.listdir(part_dir) if f.endswith(".log"))
    assert len(logs) >= 3
    first_index = os.path.join(part_dir, logs[0].replace(".log", ".index"))
    with open(first_index, "r+b") as f:                              # a truncated index
        f.truncate(os.path.getsize(first_index) - 5)
    active = os.path.join(part_dir, logs[-1])
    data = open(active, "rb").read()
    batches = list(iter_batches(data, strict=True))
    cut_pos, cut = batches[-1]
    with open(active, "r+b") as f:                                   # the last batch chopped in half
        f.truncate(cut_pos + cut.size // 2)
    with open(active, "ab") as f:                                    # and garbage after it
        f.write(b"\xde\xad\xbe\xef" * 40)
    lost = cut.records_count

    bp2 = broker_process(log_dir=bp.log_dir, port=bp.port, configs=configs)
    bp2.start()
    got, ends = consume_all(bp2.bootstrap_servers, 1)
    assert got[0] == acked[:len(acked) - lost]
    assert ends[0] == len(acked) - lost
    bp2.proc.terminate()
    bp2.proc.wait(20)
    stderr = bp2.stderr_text()
    bp2.stop()
    assert "rebuilt" in stderr and "truncated" in stderr, stderr
    check_files(bp.log_dir)


def test_loading_offline_after_kill_reports_nothing_to_lose(broker_process, tmp_path):
    """The files a killed broker leaves load in-process too (LogManager without a marker)."""
    bp = broker_process(configs={"num.partitions": 1}).start()
    acked = _produce(bp.bootstrap_servers, 50)
    bp.kill()
    broker = BrokerConfig({"log.dirs": bp.log_dir})
    manager = LogManager(bp.log_dir, broker)
    assert not manager.had_clean_shutdown
    log = manager.get_or_create_log(TOPIC, 0, LogConfig(broker))
    data = log.read(0, 1 << 20)
    values = [(r.offset, r.value) for pos, h in iter_batches(data) for r in iter_records(data[pos:pos + h.size])]
    assert values == acked
    manager.close()
