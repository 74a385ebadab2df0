"""``LogCleaner``: log compaction for ``cleanup.policy=compact`` (and ``compact,delete``).

A compacted topic keeps at least the *latest* record of every key. The
cleaner (Kafka's ``LogCleaner``/``Cleaner``) works like this:

* The log is split at the **first dirty offset** (kept per partition in the
  ``cleaner-offset-checkpoint`` file): before it, the *clean* part, already
  compacted; from it up to the **first uncleanable offset**, the *dirty* part.
  The first uncleanable offset is the active segment's base offset (the
  active segment is never cleaned), or earlier: the high watermark, or the
  first segment holding a record younger than ``min.compaction.lag.ms``.
* A log is **cleanable** (Kafka's ``LogCleanerManager.grabFilthiestCompactedLog``)
  in exactly two cases: its dirty bytes / (clean + dirty bytes) is strictly
  greater than ``min.cleanable.dirty.ratio``, or it has dirty bytes and the
  first batch of some dirty inactive segment is older than
  ``max.compaction.lag.ms``. Nothing else makes a log cleanable: not a
  tombstone whose delete horizon has passed, so a log that gets no new
  records keeps its tombstones until it is dirty again. The background job
  (every ``log.cleaner.backoff.ms``, if ``log.cleaner.enable``) cleans the
  dirtiest cleanable log first; ``LogManager.run_cleaner(now_ms)`` does the
  same on demand. Kafka's cleaner threads take one log per pass and sleep
  ``log.cleaner.backoff.ms`` only when none is cleanable; a pass here cleans
  every cleanable log. (``force=True`` is the mini broker's own test hook:
  it cleans a log that is not cleanable; Kafka has nothing like it.)
* **Offset map**: one pass over the dirty part records, per key, the offset
  of its last record.
* **Rewrite**: every inactive segment up to the first uncleanable offset is
  copied, batch by batch, keeping a record only if no later record has its
  key. Offsets never change, so gaps appear. Records without a key are
  dropped (a compacted topic refuses them at produce time: INVALID_RECORD).
  A batch keeps its base offset, last offset delta, producer id, epoch and
  base sequence, and a batch left empty is kept as an empty batch if it is
  its producer's last one, so idempotent producers carry on after cleaning.
  Control batches (transaction markers) are copied as they are, and so are
  the records of aborted transactions; the cleaned segment's ``.txnindex``
  gets the entries of the segments it replaces, so read_committed consumers
  still skip those records. Kafka drops aborted transactions' records while
  cleaning, and a marker once its transaction's records are gone and
  ``delete.retention.ms`` has passed (docs/differences.md).
* **Grouping**: small neighbouring segments are merged into one (up to
  ``segment.bytes`` and ``segment.index.bytes``). A group whose records all
  go leaves an *empty* segment, as in Kafka: it keeps its base offset (a read
  at an offset in it goes on to the next batch, in the next segment), and the
  next run merges it into a neighbour, since it adds no bytes to a group.
* **Tombstones** (a key with a null value) are kept for
  ``delete.retention.ms`` after the cleaner first saw them, so consumers can
  learn about the deletion; KIP-534: the cleaner stores the *delete horizon*
  (now + ``delete.retention.ms``) in the batch's ``baseTimestamp`` and sets
  attribute bit 6; a later run, started because the log is dirty again (or
  by ``max.compaction.lag.ms``), drops tombstones whose horizon has passed.
* **Crash safety**: a group of segments is written to ``.cleaned`` files,
  renamed ``.swap`` once complete and fsynced, then swapped in for the old
  segments (``UnifiedLog.replace_segments``); a restart deletes ``.cleaned``
  leftovers and completes a ``.swap`` (see ``recovery.py``). A run that
  fails deletes its ``.cleaned`` files and the log is skipped from then on
  (Kafka's *uncleanable* partitions); the other logs are still cleaned.
"""
from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass, field

from ..common.records import (CONTROL_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK, BatchHeader, build_batch,
                              compute_crc, iter_records)
from .offset_checkpoint import read_checkpoint, write_checkpoint
from .segment import CLEANED_FILE_SUFFIX, MAX_RELATIVE_OFFSET, LogSegment

log = logging.getLogger(__name__)

CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
DELETE_HORIZON_MASK = 0x40  # batch attribute bit 6 (KIP-534): baseTimestamp holds the delete horizon
_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass
class LogToClean:
    """What the cleaner would do to one log now (Kafka's LogToClean)."""

    log: object
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    segments: list = field(default_factory=list)   # the inactive segments a run rewrites

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass
class CleanerStats:
    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    dirty_ratio: float
    segments_before: int = 0
    segments_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_read: int = 0
    records_kept: int = 0
    superseded_removed: int = 0
    tombstones_removed: int = 0
    keyless_removed: int = 0


def _first_batch_timestamp(seg: LogSegment) -> int:
    first = next(seg.batches_from(0), None)
    return first[1].max_timestamp if first else -1


def group_segments_by_size(segments: list[LogSegment], max_size: int, max_index_size: int) -> list[list[LogSegment]]:
    """Neighbouring segments whose total fits ``segment.bytes`` (and the indexes) become one (Kafka does the same)."""
    groups: list[list[LogSegment]] = []
    current: list[LogSegment] = []
    size = index_size = 0
    for seg in segments:
        if current and (size + seg.size > max_size
                        or index_size + seg.offset_index.size_in_bytes > max_index_size
                        or seg.next_offset - 1 - current[0].base_offset > MAX_RELATIVE_OFFSET):
            groups.append(current)
            current, size, index_size = [], 0, 0
        current.append(seg)
        size += seg.size
        index_size += seg.offset_index.size_in_bytes
    if current:
        groups.append(current)
    return groups


def empty_batch(header: BatchHeader) -> bytes:
    """A header-only batch keeping a producer's offsets and sequence numbers (Kafka's writeEmptyHeader)."""
    attributes = header.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    batch = bytearray(_HEADER.pack(header.base_offset, 49, header.partition_leader_epoch, 2, 0, attributes,
                                   header.last_offset_delta, header.max_timestamp, header.max_timestamp,
                                   header.producer_id, header.producer_epoch, header.base_sequence, 0))
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return bytes(batch)


class LogCleaner:
    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        self.checkpoint_path = os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT)
        #: (topic, partition) -> first dirty offset
        self.first_dirty: dict[tuple[str, int], int] = read_checkpoint(self.checkpoint_path)
        #: logs whose cleaning failed, skipped from then on (Kafka's markPartitionUncleanable)
        self.uncleanable: set[tuple[str, int]] = set()

    # -- choosing ---------------------------------------------------------------

    def log_to_clean(self, ulog, now_ms: int) -> LogToClean:
        key = (ulog.topic, ulog.partition)
        first_dirty = self.first_dirty.get(key, ulog.log_start_offset)
        if not ulog.log_start_offset <= first_dirty <= ulog.log_end_offset:
            first_dirty = ulog.log_start_offset  # e.g. retention deleted past it
        # as Kafka: never past the last stable offset (an open transaction's records stay as they are)
        first_uncleanable = min(ulog.active_segment.base_offset, ulog.last_stable_offset)
        min_lag = ulog.config["min.compaction.lag.ms"]
        inactive = ulog.segments[:-1]
        if min_lag > 0:
            for seg in inactive:
                if seg.next_offset > first_dirty and seg.largest_timestamp > now_ms - min_lag:
                    first_uncleanable = min(first_uncleanable, seg.base_offset)
                    break
        segments = [s for s, n in zip(ulog.segments, ulog.segments[1:]) if n.base_offset <= first_uncleanable]
        end = ulog.segments[len(segments)].base_offset if segments else ulog.segments[0].base_offset
        clean = sum(s.size for s, n in zip(segments, ulog.segments[1:]) if n.base_offset <= first_dirty)
        dirty = sum(s.size for s, n in zip(segments, ulog.segments[1:]) if n.base_offset > first_dirty)
        return LogToClean(ulog, first_dirty, end, clean, dirty, segments)

    @staticmethod
    def max_compaction_delay(ulog, first_dirty_offset: int, now_ms: int) -> int:
        """How long past ``max.compaction.lag.ms`` the oldest dirty record is (0: not yet);
        Kafka's ``LogCleanerManager.maxCompactionDelay`` over the first batch of each dirty
        inactive segment."""
        dirty = ulog.segments[ulog.segment_for(first_dirty_offset):-1]
        firsts = [ts for ts in map(_first_batch_timestamp, dirty) if ts > 0]
        clean_until = now_ms - max(ulog.config["max.compaction.lag.ms"], 0)
        return clean_until - min(firsts) if firsts and min(firsts) < clean_until else 0

    def why_clean(self, ltc: LogToClean, now_ms: int) -> str | None:
        """Why this log should be cleaned now, or None (Kafka's two conditions, nothing else)."""
        ulog = ltc.log
        if not ltc.segments or ltc.total_bytes == 0:
            return None
        ratio = ulog.config["min.cleanable.dirty.ratio"]
        if ltc.cleanable_ratio > ratio:
            return f"dirty ratio {ltc.cleanable_ratio:.2f} > min.cleanable.dirty.ratio={ratio}"
        if ltc.cleanable_bytes > 0 and self.max_compaction_delay(ulog, ltc.first_dirty_offset, now_ms) > 0:
            return f"dirty records older than max.compaction.lag.ms={ulog.config['max.compaction.lag.ms']}"
        return None

    def clean_logs(self, logs, now_ms: int, force: bool = False) -> list[CleanerStats]:
        """Clean every compacted log that is cleanable (dirtiest first).

        ``force`` (a test hook, not a Kafka feature) also cleans logs that are not cleanable."""
        candidates = []
        for ulog in logs:
            if not ulog.config.compact or (ulog.topic, ulog.partition) in self.uncleanable:
                continue
            ltc = self.log_to_clean(ulog, now_ms)
            reason = self.why_clean(ltc, now_ms)
            if reason is None and force and ltc.segments:
                reason = "cleaning forced"
            if reason is not None:
                candidates.append((ltc, reason))
        candidates.sort(key=lambda c: c[0].cleanable_ratio, reverse=True)
        stats = []
        for ltc, reason in candidates:
            log.info("cleaning %s: %s", ltc.log.name, reason)
            try:
                stats.append(self.clean(ltc, now_ms))
            except Exception:  # e.g. a batch that cannot be decompressed: skip this log, clean the others
                log.exception("cannot clean %s; it is marked uncleanable until the broker restarts", ltc.log.name)
                self.uncleanable.add((ltc.log.topic, ltc.log.partition))
        if stats:
            self.checkpoint()
        return stats

    # -- cleaning ---------------------------------------------------------------

    def build_offset_map(self, ltc: LogToClean) -> dict[bytes, int]:
        """key -> offset of its last record in the dirty part."""
        offset_map: dict[bytes, int] = {}
        for seg in ltc.segments:
            if seg.next_offset <= ltc.first_dirty_offset:
                continue
            for pos, header in seg.batches_from(0):
                if header.is_control or header.records_count == 0 or header.last_offset < ltc.first_dirty_offset:
                    continue
                for record in iter_records(seg.read_at(pos, header.size)):
                    if record.key is not None and record.offset >= ltc.first_dirty_offset:
                        offset_map[record.key] = record.offset
        return offset_map

    def clean(self, ltc: LogToClean, now_ms: int) -> CleanerStats:
        ulog = ltc.log
        stats = CleanerStats(ulog.topic, ulog.partition, ltc.first_dirty_offset, ltc.first_uncleanable_offset,
                             ltc.cleanable_ratio, segments_before=len(ltc.segments),
                             bytes_before=sum(s.size for s in ltc.segments))
        offset_map = self.build_offset_map(ltc)
        last_batch_of = {pid: entry.batches[-1].last_offset
                         for pid, entry in ulog.producer_state.producers.items() if entry.batches}
        groups = group_segments_by_size(ltc.segments, ulog.config["segment.bytes"],
                                        ulog.config["segment.index.bytes"])
        for group in groups:
            cleaned = self._clean_segments(ulog, group, offset_map, last_batch_of, now_ms, stats)
            stats.bytes_after += cleaned.size
            stats.segments_after += 1
        key = (ulog.topic, ulog.partition)
        self.first_dirty[key] = ltc.first_uncleanable_offset
        log.info("cleaned %s: %d segments (%d bytes) -> %d segments (%d bytes); kept %d of %d records, "
                 "removed %d tombstones", ulog.name, stats.segments_before, stats.bytes_before,
                 stats.segments_after, stats.bytes_after, stats.records_kept, stats.records_read,
                 stats.tombstones_removed)
        return stats

    def _clean_segments(self, ulog, group: list[LogSegment], offset_map, last_batch_of, now_ms,
                        stats) -> LogSegment:
        base = group[0].base_offset
        cleaned = ulog._new_segment(base, file_suffix=CLEANED_FILE_SUFFIX)
        if cleaned.size:  # a stale .cleaned file: start over
            cleaned.delete()
            cleaned = ulog._new_segment(base, file_suffix=CLEANED_FILE_SUFFIX)
        delete_retention = ulog.config["delete.retention.ms"]
        try:
            for seg in group:
                for pos, header in seg.batches_from(0):
                    data = seg.read_at(pos, header.size)
                    out, _ = self._filter_batch(data, header, offset_map, last_batch_of, now_ms,
                                                delete_retention, stats)
                    if out:
                        cleaned.append(out, [(0, BatchHeader.parse(out))])
            for seg in group:   # the aborted transactions' records and markers stay: so do their entries
                for txn in seg.txn_index.all_aborted():
                    cleaned.txn_index.append(txn)
            cleaned.on_become_inactive()
        except BaseException:
            cleaned.delete()  # as Kafka: an aborted run leaves no .cleaned files (nor open descriptors)
            raise
        mtime = max(os.stat(s.path).st_mtime for s in group)
        ulog.replace_segments(cleaned, group)
        os.utime(cleaned.path, (mtime, mtime))  # Kafka keeps the newest source lastModified time
        return cleaned

    @staticmethod
    def _filter_batch(data: bytes, header: BatchHeader, offset_map, last_batch_of, now_ms, delete_retention,
                      stats) -> tuple[bytes | None, int | None]:
        """The batch as it stays in the log (or None), and the delete horizon of tombstones it keeps."""
        if header.is_control:
            return data, None
        records = list(iter_records(data))
        horizon = header.base_timestamp if header.attributes & DELETE_HORIZON_MASK else None
        kept = []
        for record in records:
            stats.records_read += 1
            if record.key is None:
                stats.keyless_removed += 1
            elif offset_map.get(record.key, -1) > record.offset:
                stats.superseded_removed += 1
            elif record.value is None and horizon is not None and now_ms >= horizon:
                stats.tombstones_removed += 1
            else:
                kept.append(record)
        stats.records_kept += len(kept)
        has_tombstones = any(r.value is None for r in kept)
        new_horizon = (horizon if horizon is not None else now_ms + delete_retention) if has_tombstones else None
        if len(kept) == len(records) and new_horizon == horizon:
            return data, new_horizon  # nothing to change: the batch is copied as it is
        if not kept:
            if header.producer_id >= 0 and last_batch_of.get(header.producer_id) == header.last_offset:
                return empty_batch(header), None  # keeps the producer's last sequence number
            return None, None
        attributes = header.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK)
        if new_horizon is not None:
            attributes |= DELETE_HORIZON_MASK
        out = build_batch(kept, base_offset=header.base_offset, compression=header.attributes & 0x07,
                          producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                          base_sequence=header.base_sequence, partition_leader_epoch=header.partition_leader_epoch,
                          attributes_extra=attributes, last_offset_delta=header.last_offset_delta,
                          base_timestamp=new_horizon)
        return out, new_horizon

    # -- checkpoint -----------------------------------------------------------------

    def checkpoint(self) -> None:
        write_checkpoint(self.checkpoint_path, self.first_dirty)

    def forget(self, topic: str, partition: int) -> None:
        self.first_dirty.pop((topic, partition), None)
        self.uncleanable.discard((topic, partition))
