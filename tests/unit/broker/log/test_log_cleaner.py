"""LogCleaner: latest value per key, offsets kept, when a log is cleanable, tombstones and delete horizon,
crash-safe swap."""
from __future__ import annotations

import os

import pytest
from tests.helpers.kafka_spec import batch

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.log.log_cleaner import DELETE_HORIZON_MASK
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.common.records import iter_batches, iter_records

T0 = 1_700_000_000_000
DAY = 86_400_000


@pytest.fixture
def manager(tmp_path):
    m = LogManager(str(tmp_path), BrokerConfig({"log.dirs": str(tmp_path)}))
    yield m
    m.close()


def compacted_log(manager, **overrides):
    cfg = {"cleanup.policy": "compact", "segment.bytes": 400, "min.cleanable.dirty.ratio": 0.5}
    cfg.update(overrides)
    return manager.get_or_create_log("c", 0, LogConfig(manager.config, cfg))


def put(log, key, value, ts=T0, **kw):
    info = log.append_as_leader(batch(0, [(ts, key, value)], **kw))
    log.high_watermark = log.log_end_offset
    return info


def records(log):
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for pos, h in iter_batches(data, strict=False):
            out += [(r.offset, r.key, r.value) for r in iter_records(memoryview(data)[pos:pos + h.size])]
            offset = h.next_offset
    return out


def test_keyless_record_is_rejected_on_a_compacted_topic(manager):
    log = compacted_log(manager)
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(batch(0, [(T0, None, b"v")]))
    assert e.value.code == ErrorCode.INVALID_RECORD


def test_latest_value_per_key_survives_with_original_offsets(manager):
    log = compacted_log(manager)
    for i in range(40):
        put(log, b"k%d" % (i % 4), b"v%d" % i)
    before = records(log)
    active_base = log.active_segment.base_offset
    stats = manager.run_cleaner(T0)
    assert stats and stats[0].records_kept < stats[0].records_read
    after = records(log)
    cleaned = [r for r in after if r[0] < active_base]
    latest = {}
    for off, k, v in before:
        latest[k] = (off, k, v)
    # in the cleaned part: at most one record per key, each the latest one below the active segment
    keys = [k for _, k, _ in cleaned]
    assert len(keys) == len(set(keys))
    for off, k, v in cleaned:
        assert (off, k, v) in before
        assert not any(o > off and kk == k for o, kk, _ in before if o < active_base)
    # the active segment is untouched, and every key still reads as its latest value
    assert [r for r in after if r[0] >= active_base] == [r for r in before if r[0] >= active_base]
    final = {}
    for off, k, v in after:
        final[k] = v
    assert final == {k: v for _, (o, k, v) in latest.items()}
    assert log.log_end_offset == 40  # offsets never change


def test_ratio_decides_when_a_log_is_cleanable(manager):
    log = compacted_log(manager, **{"min.cleanable.dirty.ratio": 0.99})
    for i in range(20):
        put(log, b"k%d" % i, b"v")
    assert manager.run_cleaner(T0) and manager.cleaner.first_dirty[("c", 0)] == log.active_segment.base_offset
    for i in range(4):
        put(log, b"k%d" % i, b"w")
    ltc = manager.cleaner.log_to_clean(log, T0)
    assert ltc.cleanable_ratio < 0.99
    assert manager.run_cleaner(T0) == []                     # not dirty enough
    assert manager.run_cleaner(T0, force=True)               # but can be forced


def test_tombstones_stay_for_delete_retention_ms_then_go(manager):
    log = compacted_log(manager, **{"delete.retention.ms": DAY})
    for i in range(10):
        put(log, b"k%d" % i, b"v%d" % i)
    put(log, b"k3", None)                                    # tombstone for k3
    for i in range(10):
        put(log, b"x%d" % i, b"filler" * 5)                  # push the tombstone out of the active segment
    manager.run_cleaner(T0)
    after = records(log)
    assert (10, b"k3", None) in after and not any(k == b"k3" and v for _, k, v in after)
    # the tombstone's batch now carries the delete horizon (KIP-534)
    seg = log.segments[log.segment_for(10)]
    pos, header = seg.translate_offset(10)
    assert header.attributes & DELETE_HORIZON_MASK and header.base_timestamp == T0 + DAY
    assert next(iter_records(seg.read_at(pos, header.size))).timestamp == T0  # record timestamps unchanged
    manager.run_cleaner(T0 + DAY - 1, force=True)
    assert (10, b"k3", None) in records(log)                 # horizon not reached yet
    # horizon passed, but no new records: nothing is dirty, so Kafka's cleaner does not pick the log
    # (LogCleanerManager.grabFilthiestCompactedLog has no delete-horizon trigger); the tombstone stays
    assert manager.run_cleaner(T0 + DAY + 1) == []
    assert manager.run_cleaner(T0 + 30 * DAY) == []
    assert (10, b"k3", None) in records(log)
    # the log gets dirty again (new records roll into new inactive segments): the next clean drops it
    for i in range(20):
        put(log, b"y%d" % i, b"filler" * 5, ts=T0 + DAY + 2)
    stats = manager.run_cleaner(T0 + DAY + 3)
    assert stats and stats[0].tombstones_removed == 1
    assert not any(k == b"k3" for _, k, _ in records(log))


def test_no_clean_without_dirty_bytes_or_compaction_lag(manager):
    """Cleanable only if dirty ratio > min.cleanable.dirty.ratio (strictly) or max.compaction.lag.ms forces it."""
    log = compacted_log(manager, **{"min.cleanable.dirty.ratio": 0.0})
    for i in range(30):
        put(log, b"k%d" % (i % 3), b"v%d" % i)
    assert manager.run_cleaner(T0)                           # dirty ratio 1.0 > 0.0
    assert manager.cleaner.log_to_clean(log, T0).cleanable_bytes == 0
    assert manager.run_cleaner(T0) == []                     # ratio 0.0 is not > 0.0: nothing to do
    assert manager.run_cleaner(T0 + 365 * DAY) == []         # and time alone changes nothing
    log.config.set("segment.bytes", 1 << 20)
    active = log.active_segment
    put(log, b"k0", b"only-in-the-active-segment")
    assert log.active_segment is active                      # no roll: the new record is in the active segment,
    assert manager.run_cleaner(T0) == []                     # which is never cleanable: still nothing dirty


def test_dirty_ratio_must_be_strictly_greater(manager):
    log = compacted_log(manager, **{"min.cleanable.dirty.ratio": 0.99})
    for i in range(20):
        put(log, b"k%d" % i, b"v")
    assert manager.run_cleaner(T0)
    for i in range(20):
        put(log, b"k%d" % i, b"w")
    ltc = manager.cleaner.log_to_clean(log, T0)
    assert 0 < ltc.cleanable_ratio < 1
    log.config.set("min.cleanable.dirty.ratio", ltc.cleanable_ratio)    # ratio == min: not cleanable
    assert manager.cleaner.why_clean(ltc, T0) is None and manager.run_cleaner(T0) == []
    log.config.set("min.cleanable.dirty.ratio", ltc.cleanable_ratio - 1e-9)
    assert manager.run_cleaner(T0)


def test_max_compaction_lag_forces_a_clean_below_the_ratio(manager):
    log = compacted_log(manager, **{"min.cleanable.dirty.ratio": 0.9, "max.compaction.lag.ms": DAY})
    for i in range(20):
        put(log, b"k%d" % i, b"v", ts=T0)
    assert manager.run_cleaner(T0)                           # everything dirty: ratio 1.0
    for i in range(4):
        put(log, b"k%d" % i, b"w", ts=T0 + 10)
    for i in range(4):
        put(log, b"z%d" % i, b"z", ts=T0 + 10)
    ltc = manager.cleaner.log_to_clean(log, T0 + DAY)
    assert 0 < ltc.cleanable_ratio <= 0.9
    assert manager.run_cleaner(T0 + DAY) == []               # the dirty records are not a day old yet
    stats = manager.run_cleaner(T0 + DAY + 11)               # now they are: cleaned despite the ratio
    assert stats and stats[0].superseded_removed > 0


def test_min_compaction_lag_keeps_young_segments_dirty(manager):
    log = compacted_log(manager, **{"min.cleanable.dirty.ratio": 0.01, "min.compaction.lag.ms": DAY})
    for i in range(30):
        put(log, b"k%d" % (i % 3), b"v%d" % i, ts=T0 + i)
    assert manager.run_cleaner(T0 + 100) == []               # every record younger than a day: nothing cleanable
    before = records(log)
    stats = manager.run_cleaner(T0 + DAY + 100)              # a day later every inactive segment may be cleaned
    assert stats and len(records(log)) < len(before)


def test_idempotent_producer_state_survives_cleaning_and_restart(tmp_path):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    log = compacted_log(manager)
    pid = 4242
    for seq in range(30):
        put(log, b"same-key", b"v%d" % seq, producer_id=pid, producer_epoch=0, base_sequence=seq)
    for i in range(10):
        put(log, b"other%d" % i, b"x" * 40)                  # other writers push pid's batches out
    manager.run_cleaner(T0, force=True)
    # a retry of the last batch is still recognised as a duplicate, and the next sequence is accepted
    dup = log.append_as_leader(batch(0, [(T0, b"same-key", b"v29")], producer_id=pid, producer_epoch=0,
                                     base_sequence=29))
    assert dup.duplicate and dup.first_offset == 29
    manager.close()
    manager = LogManager(str(tmp_path), broker)
    log = compacted_log(manager)
    dup = log.append_as_leader(batch(0, [(T0, b"same-key", b"v29")], producer_id=pid, producer_epoch=0,
                                     base_sequence=29))
    assert dup.duplicate and dup.first_offset == 29
    with pytest.raises(KafkaError) as e:
        log.append_as_leader(batch(0, [(T0, b"same-key", b"gap")], producer_id=pid, producer_epoch=0,
                                   base_sequence=31))
    assert e.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    info = log.append_as_leader(batch(0, [(T0, b"same-key", b"v30")], producer_id=pid, producer_epoch=0,
                                      base_sequence=30))
    assert not info.duplicate and info.first_offset == 40
    manager.close()


def test_empty_batch_is_kept_for_a_producers_last_batch(manager):
    log = compacted_log(manager)
    put(log, b"k", b"old", producer_id=7, producer_epoch=0, base_sequence=0)
    for i in range(10):
        put(log, b"k", b"new%d" % i)
    manager.run_cleaner(T0, force=True)
    seg = log.segments[0]
    pos, header = seg.translate_offset(0)
    assert header.producer_id == 7 and header.records_count == 0 and header.base_offset == 0
    assert header.last_offset_delta == 0 and header.base_sequence == 0
    assert list(iter_records(seg.read_at(pos, header.size))) == []


def test_crash_after_cleaned_files_were_written_loses_nothing(tmp_path):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    log = compacted_log(manager)
    for i in range(30):
        put(log, b"k%d" % (i % 3), b"v%d" % i)
    before = records(log)
    # simulate: the cleaner wrote a .cleaned segment, then the broker died before the swap
    with open(os.path.join(log.dir, f"{0:020d}.log.cleaned"), "wb") as f:
        f.write(b"half written")
    manager.close()
    manager = LogManager(str(tmp_path), broker)
    log = compacted_log(manager)
    assert records(log) == before
    assert not any(n.endswith(".cleaned") for n in os.listdir(log.dir))
    manager.close()


def test_crash_during_swap_completes_the_swap(tmp_path, monkeypatch):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    log = compacted_log(manager)
    for i in range(30):
        put(log, b"k%d" % (i % 3), b"v%d" % i)
    latest = {k: v for _, k, v in records(log)}
    from kafkalab.broker.log import log as log_module

    def crash(seg):
        raise SystemExit("killed during the swap")
    monkeypatch.setattr(log_module, "_delete_segment_files", crash)
    with pytest.raises(SystemExit):
        manager.run_cleaner(T0)
    assert any(n.endswith(".swap") for n in os.listdir(log.dir))
    monkeypatch.undo()
    for seg in log.segments:
        seg.close_handlers()
    manager = LogManager(str(tmp_path), broker)              # no clean shutdown: recovery
    log = compacted_log(manager)
    assert not any(n.endswith((".swap", ".cleaned")) for n in os.listdir(log.dir))
    after = records(log)
    assert {k: v for _, k, v in after} == latest
    offsets = [o for o, _, _ in after]
    assert offsets == sorted(set(offsets))
    assert any("swap" in line for line in log.recovery_report)
    manager.close()


def first_batch_at(log, offset):
    data = log.read(offset, 1)
    return next(iter_batches(data, strict=True), (None, None))[1]


def test_reads_inside_compacted_gaps_return_the_next_batch(manager):
    """An offset the cleaner removed reads as the next surviving batch, also when that batch is in
    a later segment (a cleaned segment may end early, or be left empty)."""
    log = compacted_log(manager)
    for i in range(12):
        put(log, b"a%d" % i, b"old" + b"x" * 40)
    for i in range(12):
        put(log, b"a%d" % i, b"new")                         # supersedes every record of the first segments
    for i in range(6):
        put(log, b"pad%d" % i, b"p" * 40)
    manager.run_cleaner(T0, force=True)
    surviving = sorted({o for o, _, _ in records(log)})
    assert surviving[0] > 0 and len(surviving) < log.log_end_offset   # gaps, one of them at the start
    assert any(s.size == 0 for s in log.segments[:-1])                 # an emptied segment keeps its place
    for offset in range(log.log_start_offset, log.log_end_offset):
        header = first_batch_at(log, offset)
        expected = next(o for o in surviving if o >= offset)
        assert header.base_offset <= expected <= header.last_offset, offset


def test_an_emptied_segment_is_merged_into_its_neighbour_by_the_next_run(manager):
    log = compacted_log(manager)
    for i in range(12):
        put(log, b"a%d" % i, b"old" + b"x" * 40)
    for i in range(12):
        put(log, b"a%d" % i, b"new")
    for i in range(6):
        put(log, b"pad%d" % i, b"p" * 40)
    manager.run_cleaner(T0, force=True)
    empty = [s.base_offset for s in log.segments if s.size == 0]
    assert empty
    before = records(log)
    manager.run_cleaner(T0, force=True)
    assert not any(s.size == 0 for s in log.segments[:-1])
    assert records(log) == before
    assert not any(f.endswith((".cleaned", ".swap", ".deleted")) for f in os.listdir(log.dir))


def test_a_failing_clean_leaves_no_files_and_the_other_logs_are_cleaned(manager, monkeypatch, caplog):
    broken = compacted_log(manager)
    healthy = manager.get_or_create_log("d", 0, broken.config)
    for i in range(30):
        put(broken, b"bad%d" % (i % 3), b"v%d" % i)
        put(healthy, b"k%d" % (i % 3), b"v%d" % i)
    def open_in_broken_dir() -> int:
        """This process's open files in c-0's directory (other tests' and threads' files do not count)."""
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                count += os.readlink(f"/proc/self/fd/{fd}").startswith(broken.dir + os.sep)
            except OSError:   # closed meanwhile (listdir's own fd)
                pass
        return count
    fds = open_in_broken_dir()
    from kafkalab.broker.log.log_cleaner import LogCleaner
    real_filter = LogCleaner._filter_batch

    def filter_batch(data, header, *args):   # say, a batch that cannot be decompressed any more
        if b"bad" in data and header.base_offset > 5:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "cannot decompress gzip")
        return real_filter(data, header, *args)
    monkeypatch.setattr(LogCleaner, "_filter_batch", staticmethod(filter_batch))
    stats = manager.run_cleaner(T0, force=True)
    assert [(s.topic, s.partition) for s in stats] == [("d", 0)]
    assert ("c", 0) in manager.cleaner.uncleanable and "cannot clean c-0" in caplog.text
    assert not any(f.endswith(".cleaned") for f in os.listdir(broken.dir))
    assert open_in_broken_dir() <= fds          # the .cleaned segment's files (and what the clean read) were closed
    assert [(s.topic, s.partition) for s in manager.run_cleaner(T0, force=True)] == [("d", 0)]  # skipped now
    manager.delete_log("c", 0)
    assert ("c", 0) not in manager.cleaner.uncleanable
