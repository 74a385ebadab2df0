"""Producer-state ``.snapshot`` files (Kafka's ``ProducerStateManager`` snapshots): the format, checked on
files Kafka 3.9.2 wrote, and the log writing, loading, trusting and deleting them as Kafka's does."""
from __future__ import annotations

import io
import os
import shutil

import pytest
from tests.helpers.kafka_spec import batch

from kafkalab.broker.common.records import ABORT, COMMIT, TRANSACTIONAL_MASK, build_end_txn_marker
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.log.producer_snapshot import (CorruptSnapshotError, SnapshotEntry, decode_snapshot,
                                                   encode_snapshot, list_snapshots, read_snapshot)
from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.tools.dump_log import dump_files

#: a partition directory a Kafka 3.9.2 broker wrote (segment.bytes 600) and left at a clean shutdown: an
#: idempotent producer (0), a committed (1) and an aborted (2) transaction, one left open (3) at offset 18
TESTS = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KAFKA_DIR = os.path.join(TESTS, "data", "kafka-3.9.2-snap-0")
T0 = 1_700_000_000_000
IDEMPOTENT, TXN, OPEN = 1000, 2000, 3000


# -- the format --------------------------------------------------------------------------------------

def test_round_trip_and_layout():
    entries = [SnapshotEntry(7, 2, 41, 99, 3, T0, 5, 90), SnapshotEntry(8, 0, -1, -1, 0, -1, -1, -1)]
    data = encode_snapshot(entries)
    assert len(data) == 2 + 4 + 4 + 2 * 46                 # version, crc, count, 46 bytes per producer
    assert data[:2] == b"\x00\x01"                           # version 1
    assert decode_snapshot(data) == entries
    assert entries[0].first_sequence == 38 and not entries[1].has_batch
    assert SnapshotEntry(1, 0, 1, 10, 4).first_sequence == 2**31 - 3   # sequences wrap at Integer.MAX_VALUE


@pytest.mark.parametrize("damage, message", [
    (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "CRC is no longer valid"),
    (lambda d: b"\x00\x02" + d[2:], "unknown file version 2"),
    (lambda d: d[:20], "schema validation"),
])
def test_corrupt_files_are_refused(damage, message):
    data = encode_snapshot([SnapshotEntry(7, 2, 41, 99, 3, T0, 5, 90)])
    with pytest.raises(CorruptSnapshotError, match=message):
        decode_snapshot(damage(data))


#: kafka-dump-log.sh (Kafka 3.9.2's DumpLogSegments) on two of KAFKA_DIR's snapshots
KAFKA_TOOL = {
    "14": ["producerId: 0 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
           "lastTimestamp: 1795656951857 firstSequence: 11 lastSequence: 11 lastOffset: 11 offsetDelta: 0 "
           "timestamp: 1795656951857",
           "producerId: 1 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[12] "
           "lastTimestamp: 1795656952403 firstSequence: 1 lastSequence: 1 lastOffset: 13 offsetDelta: 0 "
           "timestamp: 1795656952403"],
    "24": ["producerId: 0 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
           "lastTimestamp: 1795656953024 firstSequence: 15 lastSequence: 15 lastOffset: 23 offsetDelta: 0 "
           "timestamp: 1795656953024",
           "producerId: 1 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong.empty "
           "lastTimestamp: 1795656952451 firstSequence: 2 lastSequence: 2 lastOffset: 14 offsetDelta: 0 "
           "timestamp: 1795656952451",
           "producerId: 2 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong.empty "
           "lastTimestamp: 1795656952952 firstSequence: 0 lastSequence: 0 lastOffset: 16 offsetDelta: 0 "
           "timestamp: 1795656952952",
           "producerId: 3 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[18] "
           "lastTimestamp: 1795656953015 firstSequence: 1 lastSequence: 1 lastOffset: 19 offsetDelta: 0 "
           "timestamp: 1795656953015"],
}


@pytest.mark.parametrize("offset", ["14", "24"])
def test_files_written_by_kafka_decode_and_dump_as_kafkas_tool_prints_them(offset):
    path = os.path.join(KAFKA_DIR, f"{int(offset):020d}.snapshot")
    entries = read_snapshot(path)
    assert encode_snapshot(entries) == open(path, "rb").read()       # byte for byte what Kafka wrote
    out, err = io.StringIO(), io.StringIO()
    assert dump_files([path], print_data_log=False, file=out, err=err)
    assert out.getvalue().splitlines() == [f"Dumping {path}"] + KAFKA_TOOL[offset]
    assert err.getvalue() == ""


def test_dump_of_a_corrupt_snapshot_reports_on_stderr(tmp_path):
    path = str(tmp_path / f"{5:020d}.snapshot")
    data = bytearray(encode_snapshot([SnapshotEntry(7, 2, 41, 99, 3, T0, 5, 90)]))
    data[-1] ^= 0xFF
    open(path, "wb").write(data)
    out, err = io.StringIO(), io.StringIO()
    dump_files([path], print_data_log=False, file=out, err=err)
    assert out.getvalue().splitlines() == [f"Dumping {path}"]
    assert err.getvalue().startswith("Snapshot is corrupt (CRC is no longer valid). Stored crc: ")


# -- the log ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("clean", [True, False])
def test_kafkas_partition_directory_loads_to_kafkas_producer_state(tmp_path, clean):
    """Loaded after its clean shutdown, Kafka's directory gives the state of its last snapshot without a
    replay; loaded as after a crash from offset 0, the replay of Kafka's batches gives that same state."""
    shutil.copytree(KAFKA_DIR, tmp_path / "snap-0")
    kafkas = read_snapshot(os.path.join(KAFKA_DIR, f"{24:020d}.snapshot"))
    log = UnifiedLog(str(tmp_path / "snap-0"), "snap", 0, LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), {}),
                     recovery_point=24 if clean else 0, had_clean_shutdown=clean)
    assert log.producer_state_replayed_batches == (0 if clean else 24)
    assert state(log) == kafkas
    assert log.producer_state.first_unstable_offset == 18
    assert read_snapshot(list_snapshots(log.dir)[24]) == kafkas      # (rewritten after the replay: the same)
    log.close()


def open_log(tmp_path, **overrides):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    cfg = {"segment.bytes": 400, "index.interval.bytes": 100}
    cfg.update(overrides)
    return manager, manager.get_or_create_log("t", 0, LogConfig(broker, cfg))


def crash(log):
    """What SIGKILL leaves: files as written, no flush, no checkpoint, no marker, no close."""
    for seg in log.segments:
        seg.offset_index.flush()
        seg.time_index.flush()
        seg.close_handlers()


def write_history(log, n=12, seq=None):
    """An idempotent producer, a committed transaction, then a transaction left open across rolls
    (``seq``: the next sequence per producer, to go on writing)."""
    seq = {IDEMPOTENT: 0, TXN: 0, OPEN: 0} if seq is None else seq

    def send(pid, attributes=0):
        log.append_as_leader(batch(0, [(T0 + seq[pid], b"k", b"v" * 60)], producer_id=pid, producer_epoch=0,
                                   base_sequence=seq[pid], attributes=attributes))
        seq[pid] += 1
    for _ in range(n):
        send(IDEMPOTENT)
    for _ in range(3):
        send(TXN, TRANSACTIONAL_MASK)
    log.append_as_leader(build_end_txn_marker(COMMIT, TXN, 0, 4, T0 + 50), from_coordinator=True)
    open_first = log.log_end_offset
    for _ in range(n):
        send(OPEN, TRANSACTIONAL_MASK)
        send(IDEMPOTENT)
    return open_first


def state(log):
    return log.producer_state.snapshot_entries()


def test_each_roll_writes_a_snapshot_named_by_the_new_segment(tmp_path):
    manager, log = open_log(tmp_path)
    open_first = write_history(log)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 5
    assert list(list_snapshots(log.dir)) == bases[1:]        # one per roll, none for the first segment
    last = read_snapshot(list_snapshots(log.dir)[bases[-1]])
    assert max(e.last_offset for e in last) == bases[-1] - 1  # the state up to the new segment's base
    by_pid = {e.producer_id: e for e in last}
    assert by_pid[TXN].coordinator_epoch == 4 and by_pid[TXN].current_txn_first_offset == -1
    assert by_pid[OPEN].current_txn_first_offset == open_first and by_pid[OPEN].coordinator_epoch == -1
    manager.close()


def test_clean_restart_loads_the_snapshot_and_replays_nothing(tmp_path):
    manager, log = open_log(tmp_path)
    open_first = write_history(log)
    log.append_as_leader(batch(0, [(T0, b"k", b"v")], producer_id=IDEMPOTENT, producer_epoch=0, base_sequence=24))
    before, leo, batches = state(log), log.log_end_offset, sum(1 for s in log.segments for _ in s.batches_from(0))
    manager.close()
    assert leo in list_snapshots(log.dir)                    # the clean shutdown's, at the log end offset
    manager, log = open_log(tmp_path)
    assert log.producer_state_replayed_batches == 0          # nothing read for producer state
    assert state(log) == before and log.producer_state.first_unstable_offset == open_first
    # a retry of the producer's last batch is still a duplicate, and the next sequence follows on
    dup = log.append_as_leader(batch(0, [(T0, b"k", b"v")], producer_id=IDEMPOTENT, producer_epoch=0,
                                     base_sequence=24))
    assert dup.duplicate and dup.first_offset == leo - 1
    manager.close()
    # without the snapshots the same state costs a read of every batch
    for path in list_snapshots(log.dir).values():
        os.remove(path)
    manager, log = open_log(tmp_path)
    assert log.producer_state_replayed_batches == batches
    assert state(log) == before
    manager.close()


def test_after_a_crash_the_snapshot_at_or_below_the_recovery_point_is_loaded(tmp_path):
    manager, log = open_log(tmp_path)
    seq = {IDEMPOTENT: 0, TXN: 0, OPEN: 0}
    open_first = write_history(log, seq=seq)
    log.flush_rolled_segments()                               # the recovery point moves to the active segment
    manager.checkpoint()
    rp_base = log.active_segment.base_offset
    seq[TXN] = 0                                              # a new transaction of the same producer
    write_history(log, n=6, seq=seq)                          # more rolls, not flushed: snapshots above it
    above = [o for o in list_snapshots(log.dir) if o > rp_base]
    assert above
    before = state(log)
    unreplayed = sum(1 for s in log.segments if s.base_offset >= rp_base for _ in s.batches_from(0))
    crash(log)
    manager, log = open_log(tmp_path)
    assert log.recovery_point == rp_base
    assert log.producer_state_replayed_batches == unreplayed  # from the snapshot at rp_base on, not from 0
    assert state(log) == before
    assert log.last_stable_offset == open_first               # the open transaction still holds the LSO
    assert max(list_snapshots(log.dir)) == log.log_end_offset  # as Kafka: a snapshot after the replay
    log.append_as_leader(build_end_txn_marker(ABORT, OPEN, 0, 4, T0 + 99), from_coordinator=True)
    assert log.producer_state.first_unstable_offset is None
    log.high_watermark = log.log_end_offset                   # (the Partition moves it)
    assert log.last_stable_offset == log.log_end_offset
    assert log.aborted_txns[-1].first_offset == open_first
    manager.close()


def test_a_corrupt_snapshot_is_deleted_with_a_warning_and_an_older_one_used(tmp_path):
    manager, log = open_log(tmp_path)
    write_history(log)
    before = state(log)
    manager.close()
    snaps = list_snapshots(log.dir)
    latest, previous = list(snaps)[-1], list(snaps)[-2]
    data = bytearray(open(snaps[latest], "rb").read())
    data[-3] ^= 0x40
    open(snaps[latest], "wb").write(data)
    manager, log = open_log(tmp_path)
    assert any("CRC is no longer valid" in m and f"{latest:020d}.snapshot" in m for m in log.recovery_report)
    replayed_from_previous = sum(1 for s in log.segments for _, h in s.batches_from(0) if h.base_offset >= previous)
    assert log.producer_state_replayed_batches == replayed_from_previous > 0
    assert state(log) == before
    assert read_snapshot(list_snapshots(log.dir)[latest]) == before   # written again after the replay
    manager.close()


def test_snapshots_go_with_their_segments_and_after_truncation(tmp_path):
    manager, log = open_log(tmp_path, **{"retention.bytes": 1200})
    write_history(log)
    log.high_watermark = log.log_end_offset                   # (the Partition moves it; retention stays below)
    assert log.delete_old_segments(now_ms=T0) > 0
    start = log.log_start_offset
    assert min(list_snapshots(log.dir)) == start              # the first segment left has its snapshot
    assert set(list_snapshots(log.dir)) <= {s.base_offset for s in log.segments}
    cut = log.segments[-2].base_offset + 1
    log.truncate_to(cut)
    assert max(list_snapshots(log.dir)) <= log.log_end_offset
    manager.close()
