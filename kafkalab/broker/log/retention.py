"""Retention: deleting a log's oldest segments (Kafka's ``UnifiedLog.deleteOldSegments``).

Kafka never deletes single records for retention; it deletes whole
*inactive* segments, oldest first, and moves the log start offset to the base
offset of the first segment that is left. Three rules, checked every
``log.retention.check.interval.ms`` by the broker (or right away with
``LogManager.cleanup_logs(now_ms)``):

* ``retention.ms``: a segment whose largest record timestamp is older than
  ``now - retention.ms`` goes (``-1``: keep forever). Timestamps are the
  records' own (CreateTime, or the broker's clock with LogAppendTime); a
  segment without any uses its file's modification time.
* ``retention.bytes`` (per *partition*, not per topic): while the log minus
  its oldest segment is still at least ``retention.bytes``, the oldest
  segment goes (``-1``: no limit).
* the **log start offset**: a segment whose records are all below the log
  start offset (moved by DeleteRecords) goes, whatever the cleanup policy.

The first two apply when ``cleanup.policy`` contains ``delete``; a purely
compacted topic keeps its data until the cleaner removes it. A segment is
only deleted when every offset in it is below the high watermark, and the
active segment is never deleted (see docs/differences.md for how Kafka
treats a wholly expired active segment).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .log import UnifiedLog
    from .segment import LogSegment

#: (segment, next segment) -> delete?
Predicate = Callable[["LogSegment", "LogSegment"], bool]


def deletable_segments(ulog: "UnifiedLog", predicate: Predicate) -> list["LogSegment"]:
    """Oldest segments for which ``predicate`` holds, stopping at the first that does not.

    Only segments followed by another one qualify (so never the active
    segment), and only if the next segment starts at or below the high watermark.
    """
    out = []
    segments = ulog.segments
    for seg, nxt in zip(segments, segments[1:]):
        if nxt.base_offset > ulog.high_watermark or not predicate(seg, nxt):
            break
        out.append(seg)
    return out


def log_start_offset_breached(ulog: "UnifiedLog") -> list["LogSegment"]:
    return deletable_segments(ulog, lambda seg, nxt: nxt.base_offset <= ulog.log_start_offset)


def retention_ms_breached(ulog: "UnifiedLog", now_ms: int) -> list["LogSegment"]:
    retention_ms = ulog.config["retention.ms"]
    if retention_ms < 0:
        return []
    return deletable_segments(ulog, lambda seg, nxt: now_ms - seg.largest_timestamp > retention_ms)


def retention_size_breached(ulog: "UnifiedLog") -> list["LogSegment"]:
    retention_bytes = ulog.config["retention.bytes"]
    if retention_bytes < 0:
        return []
    excess = ulog.size - retention_bytes

    def over(seg, nxt) -> bool:
        nonlocal excess
        if excess - seg.size >= 0:
            excess -= seg.size
            return True
        return False
    return deletable_segments(ulog, over)


def delete_old_segments(ulog: "UnifiedLog", now_ms: int) -> int:
    """Apply the three rules in Kafka's order; return how many segments were deleted."""
    deleted = 0
    doomed = log_start_offset_breached(ulog)
    ulog.delete_segments(doomed, f"every offset is below the log start offset {ulog.log_start_offset}")
    deleted += len(doomed)
    if not ulog.config.delete_enabled:
        return deleted
    doomed = retention_size_breached(ulog)
    ulog.delete_segments(doomed, f"the log is larger than retention.bytes={ulog.config['retention.bytes']}")
    deleted += len(doomed)
    doomed = retention_ms_breached(ulog, now_ms)
    ulog.delete_segments(doomed, f"its largest timestamp is older than retention.ms={ulog.config['retention.ms']}")
    deleted += len(doomed)
    return deleted
