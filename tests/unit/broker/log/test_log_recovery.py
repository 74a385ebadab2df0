"""Loading damaged logs: the broker repairs, reports, and serves the valid prefix."""
from __future__ import annotations

import logging
import os

import pytest
from tests.helpers.kafka_spec import batch, index_entry

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.common.records import iter_batches, validate_batch

T0 = 1_700_000_000_000


def fill(tmp_path, n=30, **overrides):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    cfg = {"segment.bytes": 1000, "index.interval.bytes": 100}
    cfg.update(overrides)
    log = manager.get_or_create_log("t", 0, LogConfig(broker, cfg))
    sent = []
    for i in range(n):
        data = batch(0, [(T0 + i, b"k%d" % i, b"value-%d" % i * 5)])
        log.append_as_leader(data)
        sent.append(batch(i, [(T0 + i, b"k%d" % i, b"value-%d" % i * 5)]))
    return manager, log, sent


def reopen(tmp_path, clean: bool, **overrides):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    manager = LogManager(str(tmp_path), broker)
    assert manager.had_clean_shutdown == clean
    cfg = {"segment.bytes": 1000, "index.interval.bytes": 100}
    cfg.update(overrides)
    return manager, manager.get_or_create_log("t", 0, LogConfig(broker, cfg))


def crash(log):
    """What SIGKILL leaves: files as written, no flush, no checkpoint, no marker."""
    for seg in log.segments:
        seg.offset_index.flush()
        seg.time_index.flush()
        seg.close_handlers()


def served(log):
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for pos, h in iter_batches(data, strict=True):
            validate_batch(data, pos, h)           # CRC valid, never a partial batch
            out.append(bytes(data[pos:pos + h.size]))
            offset = h.next_offset
    return out


def test_clean_shutdown_writes_marker_and_restart_skips_recovery(tmp_path):
    manager, log, sent = fill(tmp_path)
    manager.close()
    assert os.path.exists(tmp_path / ".kafka_cleanshutdown")
    manager, log = reopen(tmp_path, clean=True)
    assert not os.path.exists(tmp_path / ".kafka_cleanshutdown")  # removed while running
    assert served(log) == sent and log.recovery_report == []
    assert log.recovery_point == log.log_end_offset
    manager.close()


def test_torn_tail_after_crash_is_truncated(tmp_path, caplog):
    manager, log, sent = fill(tmp_path)
    active = log.active_segment.path
    crash(log)
    with open(active, "r+b") as f:                  # chop the last batch in half
        size = os.path.getsize(active)
        f.truncate(size - len(sent[-1]) // 2)
    with caplog.at_level(logging.WARNING, logger="kafkalab.broker.log"):
        manager, log = reopen(tmp_path, clean=False)
    assert served(log) == sent[:-1]
    assert log.log_end_offset == len(sent) - 1
    assert "truncated" in caplog.text
    log.append_as_leader(batch(0, [(T0, b"again", b"x")]))     # and the log goes on at the right offset
    assert log.log_end_offset == len(sent)
    manager.close()


def test_garbage_appended_to_a_log_is_cut_off_even_after_clean_shutdown(tmp_path):
    manager, log, sent = fill(tmp_path)
    active = log.active_segment.path
    manager.close()
    with open(active, "ab") as f:
        f.write(os.urandom(300))
    manager, log = reopen(tmp_path, clean=True)
    assert served(log) == sent
    assert log.recovery_report
    manager.close()


def test_corrupt_batch_in_the_middle_truncates_it_and_everything_after(tmp_path):
    manager, log, sent = fill(tmp_path)
    first_seg = log.segments[0]
    victim_offset = first_seg.next_offset - 3
    pos, _ = first_seg.translate_offset(victim_offset)
    path = first_seg.path
    crash(log)
    with open(path, "r+b") as f:                    # flip a byte inside a record: the CRC no longer matches
        f.seek(pos + 70)
        b = f.read(1)
        f.seek(pos + 70)
        f.write(bytes([b[0] ^ 0xFF]))
    manager, log = reopen(tmp_path, clean=False)
    assert served(log) == sent[:victim_offset]
    assert len(log.segments) == 1 and log.log_end_offset == victim_offset
    assert any("CRC" in line for line in log.recovery_report)
    manager.close()


@pytest.mark.parametrize("damage", ["truncate", "not-increasing", "delete"])
def test_broken_index_is_rebuilt_from_the_log(tmp_path, damage, caplog):
    manager, log, sent = fill(tmp_path)
    seg = log.segments[0]
    good = seg.offset_index.entries()
    assert len(good) >= 3
    index_path = seg.offset_index.path
    manager.close()
    if damage == "truncate":
        with open(index_path, "r+b") as f:
            f.truncate(os.path.getsize(index_path) - 3)
    elif damage == "not-increasing":
        with open(index_path, "wb") as f:
            f.write(index_entry(5, 400) + index_entry(2, 100) + index_entry(9, 800))
    else:
        os.remove(index_path)
    with caplog.at_level(logging.WARNING, logger="kafkalab.broker.log"):
        manager, log = reopen(tmp_path, clean=True)
    assert log.segments[0].offset_index.entries() == good
    assert served(log) == sent
    assert "rebuilt" in caplog.text
    manager.close()


def test_recovery_starts_at_the_recovery_point(tmp_path, monkeypatch):
    manager, log, sent = fill(tmp_path, n=60)
    log.flush_rolled_segments()                     # what the background flusher does after rolls
    manager.checkpoint()
    rp = log.recovery_point
    assert rp == log.active_segment.base_offset > 0
    crash(log)
    from kafkalab.broker.log.segment import LogSegment
    recovered = []
    real_recover = LogSegment.recover

    def spy(seg, *args):
        recovered.append(seg.base_offset)
        return real_recover(seg, *args)
    monkeypatch.setattr(LogSegment, "recover", spy)
    manager, log = reopen(tmp_path, clean=False)
    assert recovered == [rp]                        # only the segment holding the recovery point on
    assert served(log) == sent
    assert log.recovery_point == rp
    manager.close()


@pytest.mark.parametrize("clean", [True, False])
def test_checkpoints_ahead_of_the_files_are_pulled_back(tmp_path, clean):
    """Every segment file removed by hand: the recovery point and log start offset in the
    checkpoints point past what is on disk and must not stay there."""
    manager, log, sent = fill(tmp_path)
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(5)
    manager.close()
    if not clean:
        os.remove(tmp_path / ".kafka_cleanshutdown")
    for name in os.listdir(log.dir):
        if name.endswith((".log", ".index", ".timeindex")):
            os.remove(os.path.join(log.dir, name))
    manager, log = reopen(tmp_path, clean=clean)
    assert log.log_end_offset == 5 and log.log_start_offset == 5   # starts again at the log start offset
    assert log.recovery_point <= log.log_end_offset
    manager.close()


def test_segment_cut_by_hand_gets_indexes_that_end_with_it(tmp_path):
    """Batches cut off the end of a segment (at a batch boundary) after a clean shutdown: the
    offset and time indexes must not keep entries for offsets that are gone."""
    manager, log, sent = fill(tmp_path, n=10, **{"segment.bytes": 1 << 20, "index.interval.bytes": 4096})
    path = log.active_segment.path
    manager.close()
    keep = sum(len(b) for b in sent[:6])
    os.truncate(path, keep)                         # offsets 6..9 are gone, the time index still says 9
    manager, log = reopen(tmp_path, clean=True, **{"segment.bytes": 1 << 20, "index.interval.bytes": 4096})
    seg = log.active_segment
    assert log.log_end_offset == 6 and served(log) == sent[:6]
    assert seg.time_index.entries() == [(T0 + 5, 5)]
    assert any("time index" in line for line in log.recovery_report)
    log.append_as_leader(batch(0, [(T0 + 6, b"k", b"v")]))
    assert log.fetch_offset_by_timestamp(T0 + 6) == (6, T0 + 6)
    manager.close()
    manager, log = reopen(tmp_path, clean=True, **{"segment.bytes": 1 << 20, "index.interval.bytes": 4096})
    assert log.recovery_report == []                # the time index written since is consistent
    manager.close()


def test_stray_index_swap_files_are_removed(tmp_path):
    """A crash while renaming a swapped-in segment's files from .swap to their final names can
    leave its .index.swap/.timeindex.swap behind; as Kafka, they go and the indexes are rebuilt."""
    manager, log, sent = fill(tmp_path)
    seg = log.segments[0]
    manager.close()
    for suffix in (".index", ".timeindex"):
        os.replace(os.path.join(log.dir, f"{0:020d}{suffix}"), os.path.join(log.dir, f"{0:020d}{suffix}.swap"))
    manager, log = reopen(tmp_path, clean=True)
    assert not any(n.endswith(".swap") for n in os.listdir(log.dir))
    assert served(log) == sent and len(log.segments[0].offset_index) == len(seg.offset_index)
    manager.close()
