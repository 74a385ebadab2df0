"""The segment files are byte for byte what Kafka writes, and Kafka-written files load.

Expected bytes come from ``kafka_spec`` (written from the format
specification with ``struct``), never from kafkalab's encoder, and the
expected index entries follow Kafka's LogSegment.append rule: per batch, once
more than ``index.interval.bytes`` were written since the last entry, the
offset index gets (batch last offset - base, batch position) and the time
index (largest timestamp so far, offset of that batch - base) if the
timestamp grew; at roll the time index gets a final entry.
"""
from __future__ import annotations

import os

from tests.helpers.kafka_spec import batch, index_entry, time_index_entry

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.log.log_manager import LogManager

T0 = 1_700_000_000_000


def make_log(tmp_path, **overrides):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    return UnifiedLog(str(tmp_path / "t-0"), "t", 0, LogConfig(broker, overrides))


def read(path):
    with open(path, "rb") as f:
        return f.read()


def test_file_names_are_20_digit_base_offsets(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 200})
    for i in range(6):
        log.append_as_leader(batch(0, [(T0 + i, b"k", b"x" * 60)]))
    names = sorted(os.listdir(log.dir))
    assert "00000000000000000000.log" in names
    assert "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and len(bases) > 1
    for b in bases:
        assert f"{b:020d}.log" in names


def test_log_index_and_timeindex_bytes(tmp_path):
    """Three segments' worth of batches; every file compared with the spec's bytes."""
    interval = 150
    log = make_log(tmp_path, **{"segment.bytes": 1000, "index.interval.bytes": interval})
    # timestamps go up and down: the time index only records growth
    stamps = [T0 + 10, T0 + 5, T0 + 30, T0 + 20, T0 + 40, T0 + 40, T0 + 50, T0 + 45, T0 + 60, T0 + 55,
              T0 + 70, T0 + 65, T0 + 80, T0 + 75, T0 + 90]
    sent = []
    for i, ts in enumerate(stamps):
        records = [(ts, b"key-%d" % i, b"v" * 40), (ts - 3, b"key-%d" % i, b"w" * 30)]
        sent.append(records)
        log.append_as_leader(batch(0, records))
    log.roll()

    # what Kafka would write, computed from the spec alone
    expected = {}        # base offset -> (log bytes, index bytes, timeindex bytes)
    seg_base, seg_log, idx, tidx = 0, b"", b"", b""
    since_entry, max_ts, max_ts_off, last_t = 0, -1, 0, -1
    offset = 0
    for records in sent:
        data = batch(offset, records)
        if len(seg_log) + len(data) > 1000:  # roll: final time index entry
            if max_ts > last_t:
                tidx += time_index_entry(max_ts, max_ts_off - seg_base)
            expected[seg_base] = (seg_log, idx, tidx)
            seg_base, seg_log, idx, tidx = offset, b"", b"", b""
            since_entry, max_ts, max_ts_off, last_t = 0, -1, 0, -1
        last_offset = offset + len(records) - 1
        batch_max = max(r[0] for r in records)
        if batch_max > max_ts:
            max_ts, max_ts_off = batch_max, last_offset
        if since_entry > interval:
            idx += index_entry(last_offset - seg_base, len(seg_log))
            if max_ts > last_t:
                tidx += time_index_entry(max_ts, max_ts_off - seg_base)
                last_t = max_ts
            since_entry = 0
        since_entry += len(data)
        seg_log += data
        offset = last_offset + 1
    if max_ts > last_t:
        tidx += time_index_entry(max_ts, max_ts_off - seg_base)
    expected[seg_base] = (seg_log, idx, tidx)

    assert len(expected) >= 3
    assert [s.base_offset for s in log.segments[:-1]] == sorted(expected)
    for base, (log_bytes, index_bytes, time_bytes) in expected.items():
        prefix = os.path.join(log.dir, f"{base:020d}")
        assert read(prefix + ".log") == log_bytes
        assert read(prefix + ".index") == index_bytes
        assert read(prefix + ".timeindex") == time_bytes
        assert index_bytes and time_bytes  # the fixture really exercises both indexes


def test_active_segment_time_index_gets_final_entry_on_close(tmp_path):
    log = make_log(tmp_path, **{"index.interval.bytes": 4096})
    log.append_as_leader(batch(0, [(T0 + 7, b"a", b"1")]))
    log.append_as_leader(batch(0, [(T0 + 3, b"b", b"2")]))
    prefix = os.path.join(log.dir, f"{0:020d}")
    assert read(prefix + ".index") == b""
    log.close()
    assert read(prefix + ".timeindex") == time_index_entry(T0 + 7, 0)


def _write_kafka_segment(directory, base, batches, index_entries, time_entries, preallocate=0):
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, f"{base:020d}")
    with open(prefix + ".log", "wb") as f:
        f.write(b"".join(batches))
    with open(prefix + ".index", "wb") as f:
        f.write(b"".join(index_entries) + b"\0" * preallocate * 8)
    with open(prefix + ".timeindex", "wb") as f:
        f.write(b"".join(time_entries) + b"\0" * preallocate * 12)


def test_loads_segments_written_like_kafka_including_preallocated_indexes(tmp_path):
    """A killed Kafka broker leaves its active segment's indexes zero-padded to segment.index.bytes."""
    d = tmp_path / "logs" / "orders-0"
    b0 = batch(0, [(T0, b"a", b"1"), (T0 + 1, b"b", b"2")])
    b1 = batch(2, [(T0 + 5, b"c", b"3")])
    b2 = batch(3, [(T0 + 9, b"d", b"4"), (T0 + 8, b"e", b"5")])
    _write_kafka_segment(str(d), 0, [b0, b1, b2], [index_entry(2, len(b0))],
                         [time_index_entry(T0 + 5, 2)], preallocate=100)
    (tmp_path / "logs" / ".kafka_cleanshutdown").write_text("")
    broker = BrokerConfig({"log.dirs": str(tmp_path / "logs")})
    manager = LogManager(str(tmp_path / "logs"), broker)
    log = manager.get_or_create_log("orders", 0, LogConfig(broker))
    assert log.recovery_report == []
    assert log.log_end_offset == 5
    assert log.read(2, 10_000) == b1 + b2
    assert log.read(3, 10_000) == b2
    assert log.segments[0].offset_index.entries() == [(2, len(b0))]
    assert log.fetch_offset_by_timestamp(T0 + 1) == (1, T0 + 1)  # the record, not its batch's base offset
    assert log.fetch_offset_by_timestamp(T0 + 6) == (3, T0 + 9)  # first in offset order at or after
    assert log.fetch_offset_by_timestamp(-3) == (3, T0 + 9)      # MAX_TIMESTAMP (KIP-734)
    manager.close()
    assert os.path.getsize(d / "00000000000000000000.index") == 8  # trimmed, as Kafka trims at close


def test_kafka_written_segment_is_recovered_after_a_crash(tmp_path):
    """No clean shutdown marker: the segment is re-checked and its indexes rebuilt."""
    d = tmp_path / "logs" / "orders-0"
    batches = [batch(i, [(T0 + i, b"k%d" % i, b"v" * 50)]) for i in range(10)]
    _write_kafka_segment(str(d), 0, batches, [], [], preallocate=10)
    broker = BrokerConfig({"log.dirs": str(tmp_path / "logs"), "log.index.interval.bytes": 100})
    manager = LogManager(str(tmp_path / "logs"), broker)
    log = manager.get_or_create_log("orders", 0, LogConfig(broker))
    assert log.log_end_offset == 10
    expected, since, pos = [], 0, 0
    for o, b in enumerate(batches):
        if since > 100:
            expected.append((o, pos))
            since = 0
        since += len(b)
        pos += len(b)
    assert expected
    assert log.segments[0].offset_index.entries() == expected
    assert log.read(5, 1) == batches[5]
    manager.close()
    assert read(str(d / "00000000000000000000.index")) == b"".join(index_entry(o, p) for o, p in expected)
