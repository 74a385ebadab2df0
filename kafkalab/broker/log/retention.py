"""Retention: deleting a log's oldest segments (Kafka's ``UnifiedLog.deleteOldSegments``).

Kafka never deletes single records for retention; it deletes whole segments,
oldest first, and moves the log start offset to the base offset of the first
segment that is left. Three rules, checked every
``log.retention.check.interval.ms`` by the broker (or right away with
``LogManager.cleanup_logs(now_ms)``), in this order:

* the **log start offset**: a segment whose records are all below the log
  start offset (moved by DeleteRecords) goes, whatever the cleanup policy;
* ``retention.bytes`` (per *partition*, not per topic): while the log minus
  its oldest segment is still at least ``retention.bytes``, the oldest
  segment goes (``-1``: no limit);
* ``retention.ms``: a segment whose largest record timestamp is older than
  ``now - retention.ms`` goes (``-1``: keep forever). Timestamps are the
  records' own (CreateTime, or the broker's clock with LogAppendTime); a
  segment without any uses its file's modification time. A record timestamp
  in the future therefore keeps its segment (and every later one) until
  that time has passed.

The last two apply when ``cleanup.policy`` contains ``delete``; a purely
compacted topic keeps its data until the cleaner removes it.

As in Kafka's ``deletableSegments``, a segment is only deleted when every
offset in it is below the **high watermark** (the next segment's base offset,
or for the last segment the log end offset, is at most the high watermark),
so the log start offset never passes the high watermark. The **active
segment** is no exception: when it is not empty, wholly below the high
watermark and expired (or over ``retention.bytes``) like every segment
before it, Kafka's ``deleteSegments`` first rolls a new, empty active segment
at the log end offset and then deletes the old one; so does this module. The
log start offset then equals the log end offset: the partition is empty, and
its offsets carry on where they were. ``segment.ms`` plays no part here: it is
only checked when a record is appended (see ``segment.py``).

Simplified: Kafka renames a deleted segment's files ``.deleted`` and removes
them ``file.delete.delay.ms`` (default 60 s) later; the mini broker removes
them at once (see docs/differences.md).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .segment import LogSegment

# ``ulog`` below is a UnifiedLog (log.py). log.py imports this module, so this module never
# imports log.py back: the annotations name the class as a string only.

#: (segment, next segment) -> delete?
Predicate = Callable[["LogSegment", "LogSegment"], bool]


def deletable_segments(ulog: "UnifiedLog", predicate: Predicate) -> list["LogSegment"]:
    """Oldest segments for which ``predicate`` holds, stopping at the first that does not.

    ``predicate(segment, next_segment)`` gets ``None`` as the next segment of
    the active one. A segment qualifies only if all its offsets are below the
    high watermark (its upper bound, the next segment's base offset or the log
    end offset, is at most the high watermark); an empty active segment never
    does (Kafka's ``deletableSegments``).
    """
    out = []
    segments = ulog.segments
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        upper = nxt.base_offset if nxt is not None else ulog.log_end_offset
        if ulog.high_watermark < upper or not predicate(seg, nxt):
            break
        if nxt is None and seg.size == 0:
            break
        out.append(seg)
    return out


def log_start_offset_breached(ulog: "UnifiedLog") -> list["LogSegment"]:
    return deletable_segments(ulog, lambda seg, nxt: nxt is not None and nxt.base_offset <= ulog.log_start_offset)


def retention_ms_breached(ulog: "UnifiedLog", now_ms: int) -> list["LogSegment"]:
    retention_ms = ulog.config["retention.ms"]
    if retention_ms < 0:
        return []
    return deletable_segments(ulog, lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms)


def retention_size_breached(ulog: "UnifiedLog") -> list["LogSegment"]:
    retention_bytes = ulog.config["retention.bytes"]
    if retention_bytes < 0 or ulog.size < retention_bytes:
        return []
    excess = ulog.size - retention_bytes

    def over(seg, nxt) -> bool:
        nonlocal excess
        if excess - seg.size >= 0:
            excess -= seg.size
            return True
        return False
    return deletable_segments(ulog, over)


def delete_segments(ulog: "UnifiedLog", doomed: list["LogSegment"], reason: str) -> int:
    """Delete ``doomed`` (oldest first); if that is every segment, roll a new active one first
    (Kafka's ``UnifiedLog.deleteSegments``: a log always keeps at least one segment)."""
    if not doomed:
        return 0
    if len(doomed) == len(ulog.segments):
        ulog.roll()  # the new, empty active segment starts at the log end offset
    ulog.delete_segments(doomed, reason)
    return len(doomed)


def delete_old_segments(ulog: "UnifiedLog", now_ms: int) -> int:
    """Apply the three rules in Kafka's order; return how many segments were deleted."""
    deleted = delete_segments(ulog, log_start_offset_breached(ulog),
                              f"every offset is below the log start offset {ulog.log_start_offset}")
    if not ulog.config.delete_enabled:
        return deleted
    deleted += delete_segments(ulog, retention_size_breached(ulog),
                               f"the log is larger than retention.bytes={ulog.config['retention.bytes']}")
    deleted += delete_segments(ulog, retention_ms_breached(ulog, now_ms),
                               f"its largest timestamp is older than retention.ms={ulog.config['retention.ms']}")
    return deleted
