"""Producer-state ``.snapshot`` files on a real broker process (#19): written at each roll, an open
transaction kept across SIGKILL by the snapshot plus the replayed tail, and Kafka 3.9's own
``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``) reads the files the mini broker wrote as
``kafkalab dump-log`` does."""
from __future__ import annotations

import glob
import io
import os
import struct
import subprocess
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from conftest import NO_RETENTION_CHECK
from kafkalab.broker.common.records import ABORT, iter_batches, iter_records
from kafkalab.broker.log.producer_snapshot import list_snapshots, read_snapshot

WAIT_S = 20
FAST = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": 300,
        "transaction.state.log.num.partitions": 3, "num.partitions": 1, **NO_RETENTION_CHECK}


def last_stable_offset(bootstrap, topic):
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed", request_timeout_ms=10000)
    try:
        return c.end_offsets([TopicPartition(topic, 0)])[TopicPartition(topic, 0)]
    finally:
        c.close()


def markers(path):
    out = []
    for seg in sorted(glob.glob(os.path.join(path, "*.log"))):
        data = open(seg, "rb").read()
        for pos, h in iter_batches(data, strict=False):
            if h.is_control:
                out.append(struct.unpack(">hh", next(iter_records(memoryview(data)[pos:pos + h.size])).key)[1])
    return out


def test_open_transaction_survives_sigkill_through_the_snapshots_and_kafkas_tool_reads_them(broker_process,
                                                                                           tmp_path):
    bp = broker_process(str(tmp_path / "b"), configs=FAST).start()
    topic = "snap"
    admin = AdminClient({"bootstrap.servers": bp.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": "600"})])[topic].result(WAIT_S)
    idem = Producer({"bootstrap.servers": bp.bootstrap_servers, "enable.idempotence": True, "linger.ms": 0})
    for i in range(12):
        idem.produce(topic, b"v" * 50, partition=0)
        idem.flush(WAIT_S)
    txn = Producer({"bootstrap.servers": bp.bootstrap_servers, "transactional.id": "snap-open",
                    "transaction.timeout.ms": 4000, "linger.ms": 0})
    txn.init_transactions(WAIT_S)
    txn.begin_transaction()
    txn.produce(topic, b"open" * 12, partition=0)
    txn.flush(WAIT_S)
    open_first = 12
    for i in range(12):                                      # the open transaction spans several rolls
        idem.produce(topic, b"w" * 50, partition=0)
        idem.flush(WAIT_S)
    assert last_stable_offset(bp.bootstrap_servers, topic) == open_first

    data_dir = os.path.join(bp.log_dir, f"{topic}-0")
    bases = sorted(int(os.path.basename(f)[:20]) for f in glob.glob(os.path.join(data_dir, "*.log")))
    assert len(bases) >= 4 and list(list_snapshots(data_dir)) == bases[1:]    # one per roll
    last = {e.producer_id: e for e in read_snapshot(list_snapshots(data_dir)[bases[-1]])}
    assert sorted(e.current_txn_first_offset for e in last.values()) == [-1, open_first]

    bp.kill()                                                # SIGKILL: no clean-shutdown snapshot
    killed_at = time.monotonic()
    del txn
    assert max(list_snapshots(data_dir)) == bases[-1]
    bp.start()
    # loaded from a snapshot, the tail replayed: the LSO is held at the open transaction again
    assert last_stable_offset(bp.bootstrap_servers, topic) == open_first
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and markers(data_dir) != [ABORT]:
        time.sleep(0.2)
    assert markers(data_dir) == [ABORT], bp.stderr_text()[-3000:]
    assert time.monotonic() - killed_at < 20
    end = 12 + 1 + 12 + 1
    assert last_stable_offset(bp.bootstrap_servers, topic) == end
    bp.stop()                                                # clean: a snapshot at the log end offset
    assert max(list_snapshots(data_dir)) == end
    final = {e.producer_id: e for e in read_snapshot(list_snapshots(data_dir)[end])}
    assert all(e.current_txn_first_offset == -1 for e in final.values())
    aborted = next(e for e in final.values() if e.coordinator_epoch >= 0)   # the ABORT marker's coordinator epoch
    # the abort at the timeout bumped the producer's epoch (fencing it), which forgets its batches (Kafka's
    # maybeUpdateProducerEpoch): no last batch in the file
    assert (aborted.epoch, aborted.last_offset, aborted.last_sequence) == (1, -1, -1)
    assert sorted(e.last_offset for e in final.values()) == [-1, 24]

    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.tools.dump_log import dump_files
    files = list(list_snapshots(data_dir).values())
    out = subprocess.run(["java", "-cp", str(fetch_kafka("3.9") / "libs" / "*"), "kafka.tools.DumpLogSegments",
                          "--files", ",".join(files)], capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    theirs = out.stdout.splitlines()
    ours = io.StringIO()
    dump_files(files, print_data_log=False, file=ours)
    assert theirs == ours.getvalue().splitlines()
    assert sum(line.startswith("producerId: ") for line in theirs) == sum(len(read_snapshot(f)) for f in files)
    # after the restart: one at the log end offset once the tail was replayed, one at the clean stop
    assert list(list_snapshots(data_dir))[-2:] == [end - 1, end]
    assert any("currentTxnFirstOffset: OptionalLong[12]" in line for line in theirs)
