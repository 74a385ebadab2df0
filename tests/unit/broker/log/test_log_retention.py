"""Rolling and retention of UnifiedLog, with clock control (record timestamps and ``now_ms``)."""
from __future__ import annotations

import os

import pytest
from tests.helpers.kafka_spec import batch

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.log.log import UnifiedLog

T0 = 1_700_000_000_000
HOUR = 3_600_000


def make_log(tmp_path, **overrides):
    broker = BrokerConfig({"log.dirs": str(tmp_path)})
    return UnifiedLog(str(tmp_path / "t-0"), "t", 0, LogConfig(broker, overrides))


def append(log, ts, value=b"v" * 50, key=b"k"):
    info = log.append_as_leader(batch(0, [(ts, key, value)]))
    log.high_watermark = log.log_end_offset
    return info


def test_rolls_on_segment_bytes(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 500})
    for i in range(20):
        append(log, T0 + i)
    assert len(log.segments) > 3
    assert all(s.size <= 500 for s in log.segments)
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases)) and bases[0] == 0


def test_rolls_on_segment_ms_by_record_timestamps(tmp_path):
    """Kafka compares the new batch's timestamp with the segment's first batch timestamp."""
    log = make_log(tmp_path, **{"segment.ms": HOUR})
    append(log, T0)
    append(log, T0 + HOUR)          # exactly segment.ms later: not yet
    assert len(log.segments) == 1
    append(log, T0 + HOUR + 1)      # more than segment.ms: roll
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_segment_jitter_is_random_per_segment_and_below_segment_ms(tmp_path):
    log = make_log(tmp_path, **{"segment.ms": 1000, "segment.jitter.ms": 500})
    jitters = {log._new_segment(1000 + i).roll_jitter_ms for i in range(30)}
    assert all(0 <= j < 500 for j in jitters) and len(jitters) > 1


def test_rolls_when_the_offset_index_is_full(tmp_path):
    # 3 offset index entries fit in 24 bytes; time index: 2 entries, one slot kept for the roll entry
    log = make_log(tmp_path, **{"segment.index.bytes": 24, "index.interval.bytes": 1})
    for i in range(12):
        append(log, T0 + i)
    assert len(log.segments) > 2
    for seg in log.segments:
        assert len(seg.offset_index) <= 3 and len(seg.time_index) <= 2


def test_runtime_config_changes_apply_without_restart(tmp_path):
    log = make_log(tmp_path)
    for i in range(5):
        append(log, T0 + i)
    assert len(log.segments) == 1 and len(log.segments[0].offset_index) == 0
    log.config.set("index.interval.bytes", 1)      # AlterConfigs
    for i in range(5):
        append(log, T0 + 10 + i)
    assert len(log.segments[0].offset_index) >= 4
    log.config.set("segment.bytes", 300)
    for i in range(10):
        append(log, T0 + 20 + i)
    assert len(log.segments) > 2


def test_retention_ms_deletes_old_segments_and_rolls_an_expired_active_one(tmp_path):
    """Kafka's UnifiedLog.deleteOldSegments: when every segment has expired, the active one too, the log
    first rolls a new empty active segment at the log end offset, then deletes all the old ones."""
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": HOUR})
    for i in range(10):
        append(log, T0 + i * 60_000)  # a record a minute
    n = len(log.segments)
    assert n > 3
    assert log.delete_old_segments(now_ms=T0 + 9 * 60_000) == 0       # nothing older than an hour
    old_active = log.active_segment
    deleted = log.delete_old_segments(now_ms=T0 + 100 * HOUR)          # everything expired
    assert deleted == n                                                 # the active segment too
    assert len(log.segments) == 1 and log.active_segment is not old_active
    assert log.active_segment.base_offset == log.log_end_offset == 10 and log.active_segment.size == 0
    assert log.log_start_offset == 10                                   # the partition is empty
    assert sorted(os.listdir(log.dir)) == sorted(
        [f"{10:020d}.log", f"{10:020d}.index", f"{10:020d}.timeindex", f"{10:020d}.snapshot"] +
        [f for f in os.listdir(log.dir) if not f[0].isdigit()])       # only the new segment's files, and the
    #                                   producer snapshot its roll wrote (Kafka's too); the old segments' went
    with pytest.raises(KafkaError) as e:
        log.read(0, 1000)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.read(10, 10_000) == b""
    assert log.delete_old_segments(now_ms=T0 + 200 * HOUR) == 0        # an empty active segment is never deleted
    assert append(log, T0 + 200 * HOUR).first_offset == 10               # offsets carry on


def test_expired_active_segment_stays_while_not_below_the_high_watermark(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": HOUR})
    for i in range(10):
        append(log, T0 + i)
    log.high_watermark = log.log_end_offset - 1     # the last record is not replicated to the whole ISR yet
    n = len(log.segments)
    assert log.delete_old_segments(now_ms=T0 + 100 * HOUR) == n - 1   # all but the active segment
    assert len(log.segments) == 1 and log.active_segment.size > 0
    assert log.log_start_offset == log.active_segment.base_offset <= log.high_watermark
    log.high_watermark = log.log_end_offset
    assert log.delete_old_segments(now_ms=T0 + 100 * HOUR) == 1       # now it goes, after a roll
    assert log.log_start_offset == log.log_end_offset == 10


def test_retention_bytes_zero_empties_the_partition(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.bytes": 0})
    for i in range(10):
        append(log, T0 + i)
    assert log.delete_old_segments(now_ms=T0) > 1
    assert log.size == 0 and log.log_start_offset == log.log_end_offset == 10


def test_segment_ms_is_checked_on_append_only(tmp_path):
    """An idle partition does not roll because segment.ms passed: Kafka checks it in maybeRoll on append."""
    log = make_log(tmp_path, **{"segment.ms": HOUR, "retention.ms": 7 * 24 * HOUR})
    append(log, T0)
    append(log, T0 + 60_000)
    for now in (T0 + 2 * HOUR, T0 + 48 * HOUR):
        assert log.delete_old_segments(now_ms=now) == 0
        assert len(log.segments) == 1                      # no roll while nothing is appended
    append(log, T0 + 2 * HOUR)                             # the next append rolls it
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_a_future_timestamp_keeps_its_segment_and_all_later_ones(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": HOUR})
    for i in range(10):
        append(log, T0 + 365 * 24 * HOUR if i == 4 else T0 + i)   # one record stamped a year ahead
    older = log.segment_for(4)                                         # segments before the one holding offset 4
    future = log.segments[older]
    assert older > 0 and len(log.segments) > older + 1
    assert log.delete_old_segments(now_ms=T0 + 100 * HOUR) == older    # only the ones before it
    assert log.log_start_offset == future.base_offset <= 4             # later expired segments wait too
    assert len(log.segments) > 1


def test_retention_ms_uses_each_segments_largest_timestamp(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": HOUR})
    for i in range(10):
        append(log, T0 + i * 10 * 60_000)  # a record every 10 minutes
    segs = list(log.segments)
    now = segs[1].largest_timestamp + HOUR + 1     # the first two segments have expired
    log.delete_old_segments(now_ms=now)
    assert log.segments[0] is segs[2]
    assert log.log_start_offset == segs[2].base_offset


def test_retention_bytes_is_per_partition(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.bytes": 700})
    for i in range(20):
        append(log, T0 + i)
    log.delete_old_segments(now_ms=T0)
    total = log.size
    assert total >= 700 or len(log.segments) == 1
    assert total - log.segments[0].size < 700  # deleting one more would go below retention.bytes


def test_retention_respects_the_high_watermark(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": 1})
    for i in range(10):
        append(log, T0 + i)
    second = log.segments[1]
    log.high_watermark = second.base_offset  # followers have not caught up past segment 0
    assert log.delete_old_segments(now_ms=T0 + 10 * HOUR) == 1
    assert log.segments[0] is second and log.log_start_offset == second.base_offset


def test_compact_only_topic_keeps_data_past_retention(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": 1, "cleanup.policy": "compact"})
    for i in range(10):
        append(log, T0 + i)
    assert log.delete_old_segments(now_ms=T0 + 10 * HOUR) == 0


def test_delete_records_then_retention_deletes_segments_below_log_start(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300, "retention.ms": -1, "cleanup.policy": "compact"})
    for i in range(10):
        append(log, T0 + i)
    third = log.segments[2].base_offset
    log.maybe_increment_log_start_offset(third + 1)
    assert log.log_start_offset == third + 1 and log.segments[0].base_offset == 0
    deleted = log.delete_old_segments(now_ms=T0)
    assert deleted == 2 and log.segments[0].base_offset == third
    assert log.log_start_offset == third + 1   # never moves back
    with pytest.raises(KafkaError):
        log.maybe_increment_log_start_offset(log.log_end_offset + 5)


# --- reading across segment boundaries -------------------------------------------------

def _base_offsets(data: bytes) -> list[int]:
    from kafkalab.broker.common.records import iter_batches
    return [h.base_offset for _, h in iter_batches(data, strict=True)]


def test_read_at_segment_boundaries(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300})
    for i in range(10):
        append(log, T0 + i)
    assert len(log.segments) > 2
    for seg, nxt in zip(log.segments, log.segments[1:]):
        last = nxt.base_offset - 1
        assert _base_offsets(log.read(last, 1)) == [last]            # the last batch of a segment
        assert _base_offsets(log.read(nxt.base_offset, 1)) == [nxt.base_offset]
        assert _base_offsets(log.read(last, 10_000))[:2] == [last]   # a read stops at the segment's end
    assert log.read(log.log_end_offset, 10_000) == b""
    with pytest.raises(KafkaError) as e:
        log.read(log.log_end_offset + 1, 10_000)
    assert e.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_never_skips_a_batch_too_large_for_max_bytes(tmp_path):
    """Without min_one_message (a later partition of a Fetch), a batch that does not fit gives
    nothing; the read must not go on to the next segment and hand out later offsets instead."""
    log = make_log(tmp_path, **{"segment.bytes": 300})
    append(log, T0, value=b"x" * 200)      # offset 0 fills segment 0
    append(log, T0 + 1, value=b"y")        # offset 1 starts segment 1
    assert [s.base_offset for s in log.segments] == [0, 1]
    assert log.read(0, 100, log.high_watermark, min_one_message=False) == b""
    assert _base_offsets(log.read(0, 100, log.high_watermark, min_one_message=True)) == [0]   # KIP-74
    assert _base_offsets(log.read(1, 100, log.high_watermark, min_one_message=False)) == [1]


def test_read_stops_at_the_high_watermark_across_segments(tmp_path):
    log = make_log(tmp_path, **{"segment.bytes": 300})
    for i in range(10):
        append(log, T0 + i)
    hw = log.segments[1].base_offset + 1
    assert _base_offsets(log.read(hw, 10_000, max_offset=hw)) == []
    assert _base_offsets(log.read(0, 100_000, max_offset=hw))[-1] == log.segments[0].next_offset - 1
