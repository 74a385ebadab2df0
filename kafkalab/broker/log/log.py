"""``UnifiedLog``: one partition's log — an ordered list of segments.

Kafka's ``UnifiedLog`` (storage/.../UnifiedLog.java, once ``kafka.log.Log``)
owns the partition directory ``<log.dirs>/<topic>-<partition>/`` and keeps:

* ``log_start_offset``: the first offset a consumer may read. It moves up
  when retention deletes old segments or DeleteRecords is called.
* ``log_end_offset`` (LEO): the offset the next appended record gets.
* ``high_watermark`` (HW): the offset up to which records are replicated to
  the whole ISR, so consumers may see them. A single replica's HW is its LEO;
  the ``Partition`` moves it when followers catch up.
* ``last_stable_offset`` (LSO, KIP-98): the first offset of the earliest
  transaction still open in this partition, else the HW; ``read_committed``
  consumers read up to it. Aborted transactions are kept in each segment's
  ``.txnindex`` (:mod:`kafkalab.broker.log.transaction_index`) and in
  ``aborted_txns``.

``append_as_leader`` validates each batch, gives it offsets, and writes it to
the active segment, rolling a new segment first when ``segment.bytes``,
``segment.ms`` or a full index says so.

Durability (``flush.messages``, ``flush.ms``): like Kafka, by default the log
is *not* fsynced on append; a write sits in the OS page cache, which survives
the broker process being killed (SIGKILL) but not a power cut. Durability
comes from replication. A rolled segment is fsynced in the background
(``LogManager.flush_dirty_logs_in_background``) and the *recovery point* then moves past it; after
a crash only the segments from the recovery point on are re-checked
(:mod:`kafkalab.broker.log.recovery`).

Deleting old data (:mod:`kafkalab.broker.log.retention`) and compaction
(:mod:`kafkalab.broker.log.log_cleaner`) work on whole segments; the active
segment is never cleaned, and retention deletes it only by rolling first.
"""
from __future__ import annotations

import bisect
import logging
import os
import random
import time
from dataclasses import dataclass

from .log_config import LogConfig
from ..common.errors import ErrorCode, KafkaError
from ..common.records import ABORT, BatchHeader, assign_offsets, control_record_type, iter_batches, validate_batch
from .leader_epoch_cache import LeaderEpochFileCache
from .log_validator import validate_records
from .producer_snapshot import delete_snapshots, list_snapshots, marker_coordinator_epoch, take_snapshot
from .producer_state import ProducerStateManager
from .recovery import load_log, rebuild_producer_state
from . import retention
from .segment import CLEANED_FILE_SUFFIX, DELETED_FILE_SUFFIX, SWAP_FILE_SUFFIX, LogSegment
from .transaction_index import AbortedTxn

log = logging.getLogger(__name__)

#: ListOffsets' special timestamps
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP = -1, -2, -3


@dataclass
class LogAppendInfo:
    first_offset: int
    last_offset: int
    log_append_time: int = -1
    log_start_offset: int = 0
    duplicate: bool = False
    records_count: int = 0


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``"orders-3"`` -> ``("orders", 3)``; None for anything else."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


class UnifiedLog:
    def __init__(self, directory: str, topic: str, partition: int, config: LogConfig,
                 log_start_offset: int = 0, recovery_point: int = 0, had_clean_shutdown: bool = False):
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.producer_state = ProducerStateManager()
        #: batches read to rebuild producer state at the last load (0 when a snapshot covered the log)
        self.producer_state_replayed_batches = 0
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        #: offset up to which rolled segments wait for their background fsync
        self.pending_flush_offset = 0
        self.last_flush_ms = int(time.time() * 1000)
        #: what loading found and repaired (for the broker log, tests and notebooks)
        self.recovery_report: list[str] = []
        os.makedirs(directory, exist_ok=True)
        self._load(had_clean_shutdown)
        self.aborted_txns: list[AbortedTxn] = [t for seg in self.segments for t in seg.txn_index.all_aborted()]
        self.high_watermark = self.log_end_offset
        self.leader_epoch_cache = LeaderEpochFileCache.for_log(self)  # leader-epoch-checkpoint (KIP-101)

    # -- loading ----------------------------------------------------------------

    def _new_segment(self, base_offset: int, file_suffix: str = "") -> LogSegment:
        """A segment with the configs as they are now (segment.index.bytes, index.interval.bytes,
        and a random share of segment.jitter.ms, as Kafka's LogConfig.randomSegmentJitter)."""
        jitter = self.config["segment.jitter.ms"]
        roll_jitter = random.randrange(min(jitter, self.config["segment.ms"])) if jitter > 0 else 0
        return LogSegment(self.dir, base_offset,
                          index_interval_bytes=self.config["index.interval.bytes"],
                          max_index_size=self.config["segment.index.bytes"],
                          roll_jitter_ms=roll_jitter, file_suffix=file_suffix)

    def _load(self, had_clean_shutdown: bool) -> None:
        """Open the segments on disk, recovering what a crash may have left (see recovery.py)."""
        load_log(self, had_clean_shutdown)

    def _add_segment(self, seg: LogSegment) -> None:
        i = bisect.bisect_left(self._bases, seg.base_offset)
        self.segments.insert(i, seg)
        self._bases.insert(i, seg.base_offset)

    # -- state ------------------------------------------------------------------

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.active_segment.next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def segment_for(self, offset: int) -> int:
        """Index of the segment that would hold ``offset``."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    # -- appending --------------------------------------------------------------

    def analyze_and_validate(self, records: bytes) -> list[tuple[int, BatchHeader]]:
        """Every batch and every record in it, as Kafka's LogValidator checks them (log_validator.py)."""
        return validate_records(records, self.config)

    def append_as_leader(self, records: bytes, leader_epoch: int = 0, from_coordinator: bool = False) -> LogAppendInfo:
        """Append produced batches; ``from_coordinator``: a coordinator's own writes (Kafka's
        ``AppendOrigin.COORDINATOR``): the transaction coordinator's markers, the only control batches a
        leader takes, and the group coordinator's transactional offset commits, whose sequence numbers
        are not checked."""
        batches = self.analyze_and_validate(records)
        for pos, header in batches:  # duplicates and sequence gaps, before anything is written
            if header.is_control:
                if not from_coordinator:
                    raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
                self.producer_state.check_marker(
                    header, marker_coordinator_epoch(memoryview(records)[pos:pos + header.size]))
                continue
            if from_coordinator:
                continue
            dup = self.producer_state.check(header)
            if dup is not None:
                if len(batches) > 1:
                    raise KafkaError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, "duplicate batch in a multi-batch request")
                # as Kafka's UnifiedLog.append: the first append's offsets, and as its "log append time"
                # the timestamp remembered with the batch (its max timestamp, as written)
                return LogAppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, self.log_start_offset,
                                     duplicate=True)
        buf = bytearray(records)
        log_append_time = None
        if self.config["message.timestamp.type"] == "LogAppendTime":
            log_append_time = int(time.time() * 1000)
        offset = first = self.log_end_offset
        for pos, header in batches:
            assign_offsets(memoryview(buf)[pos:pos + header.size], offset, log_append_time, leader_epoch)
            header.base_offset = offset
            if log_append_time is not None:
                header.max_timestamp = log_append_time
            offset = header.next_offset
        self._maybe_roll(len(buf), first, offset - 1, max(h.max_timestamp for _, h in batches))
        active = self.active_segment
        active.index_interval_bytes = self.config["index.interval.bytes"]  # runtime changes apply
        active.append(buf, batches)
        self.leader_epoch_cache.assign(leader_epoch, first)  # a new epoch starts here (no-op if known)
        self._update_producer_state(buf, batches)
        count = offset - first
        if offset - self.recovery_point >= self.config["flush.messages"]:
            self.flush()  # flush.messages (default: never; the page cache keeps the data)
        return LogAppendInfo(first, offset - 1, log_append_time if log_append_time is not None else -1,
                             self.log_start_offset, records_count=count)

    def append_as_follower(self, records) -> LogAppendInfo:
        """A follower's append (Kafka's ``appendAsFollower``): the batches keep the leader's offsets and
        leader epochs. They are checked (whole batches, CRC, offsets rising) but never renumbered.

        A fetch response may end in a partial batch (the leader cut it at ``max_bytes``); it is
        dropped here and fetched again. A first offset below the log end offset is Kafka's
        UnexpectedAppendOffsetException (OFFSET_OUT_OF_RANGE here): the follower's fetch state and
        its log disagree. A gap above it is allowed (a compacted leader log has gaps).
        """
        batches = list(iter_batches(records, strict=False))
        leo = self.log_end_offset
        if not batches:
            return LogAppendInfo(leo, leo - 1, -1, self.log_start_offset)
        last_pos, last_header = batches[-1]
        end = last_pos + last_header.size
        buf = records if end == len(records) else records[:end]
        expected = leo
        for pos, header in batches:
            validate_batch(buf, pos, header)
            if header.base_offset < expected:
                raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"{self.name}: follower append at offset {header.base_offset}, expected at least "
                                 f"{expected} (log end offset {leo})")
            expected = header.next_offset
        first = batches[0][1].base_offset
        self._maybe_roll(len(buf), first, last_header.last_offset, max(h.max_timestamp for _, h in batches))
        active = self.active_segment
        active.index_interval_bytes = self.config["index.interval.bytes"]
        active.append(buf, batches)
        for _, header in batches:
            self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        self._update_producer_state(buf, batches)
        if self.log_end_offset - self.recovery_point >= self.config["flush.messages"]:
            self.flush()
        return LogAppendInfo(first, last_header.last_offset, -1, self.log_start_offset,
                             records_count=sum(h.records_count for _, h in batches))

    def _update_producer_state(self, buf, batches: list[tuple[int, BatchHeader]]) -> None:
        """Producer state after an append; an ABORT marker's transaction goes to the active segment's
        ``.txnindex`` (Kafka's ``UnifiedLog.updateTransactionIndex``)."""
        for pos, header in batches:
            coordinator_epoch = -1
            if header.is_control:
                coordinator_epoch = marker_coordinator_epoch(memoryview(buf)[pos:pos + header.size])
            completed = self.producer_state.update(header, coordinator_epoch)
            if completed is None or control_record_type(memoryview(buf)[pos:pos + header.size]) != ABORT:
                continue
            unstable = self.producer_state.first_unstable_offset
            txn = AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset,
                             completed.last_offset + 1 if unstable is None else unstable)
            self.active_segment.txn_index.append(txn)
            self.aborted_txns.append(txn)

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the earliest open transaction, at most the high watermark."""
        unstable = self.producer_state.first_unstable_offset
        return self.high_watermark if unstable is None else min(unstable, self.high_watermark)

    def collect_aborted_transactions(self, start_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [start_offset, upper_bound) (Kafka's
        ``collectAbortedTransactions``), for a ``read_committed`` Fetch."""
        return [t for t in self.aborted_txns if t.last_offset >= start_offset and t.first_offset < upper_bound]

    def _maybe_roll(self, incoming: int, next_offset: int, max_offset: int | None = None,
                    max_timestamp: int = -1) -> None:
        seg = self.active_segment
        if seg.should_roll(segment_bytes=self.config["segment.bytes"], segment_ms=self.config["segment.ms"],
                           messages_size=incoming, max_timestamp_in_messages=max_timestamp,
                           max_offset_in_messages=next_offset if max_offset is None else max_offset,
                           now_ms=int(time.time() * 1000)):
            self.roll(next_offset)

    def roll(self, next_offset: int | None = None) -> LogSegment:
        """Close the active segment to writes and start a new one at the log end offset.

        The old segment gets its final time index entry now and its fsync
        later, in the background (Kafka schedules ``flushUptoOffsetExclusive``).
        """
        base = self.log_end_offset if next_offset is None else next_offset
        if self.active_segment.size == 0 and self.active_segment.base_offset == base:
            return self.active_segment
        old = self.active_segment
        old.on_become_inactive()
        if old.size == 0:  # an empty active segment is replaced, not kept (Kafka deletes it too)
            self.segments.pop()
            self._bases.pop()
            old.delete()
        seg = self._new_segment(base)
        self._add_segment(seg)
        # Kafka's roll: a producer-state snapshot named by the new segment's base offset, so a
        # recovery can start at this segment; fsynced later, with the rolled segment
        self.take_producer_snapshot(base, sync=False)
        self.pending_flush_offset = max(self.pending_flush_offset, base)
        log.debug("%s: rolled new segment at offset %d", self.name, base)
        return seg

    # -- reading ----------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> bytes:
        """Batches from ``offset`` on; OFFSET_OUT_OF_RANGE outside [log start, log end].

        The read starts at the batch holding ``offset``; if compaction removed
        that offset, at the next batch, which may sit in a later segment (a
        cleaned segment can end before the next one begins, or be empty).
        """
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}] "
                             f"of {self.name}")
        if offset == self.log_end_offset:   # nothing yet: a caught-up fetcher's read, the most frequent
            return b""
        for seg in self.segments[self.segment_for(offset):]:
            data, position = seg.read(offset, max_bytes, max_offset, min_one_message)
            if position is not None:  # the batch holding ``offset`` (or the next one) is here, even if it
                return data           # did not fit: never skip it for a later segment's batches
        return b""  # ``offset`` is the log end offset, or every batch after it was compacted away

    def fetch_offset_by_timestamp(self, timestamp: int, read_committed: bool = False) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) for a timestamp or one of the special values (LATEST is the LSO
        for ``read_committed``)."""
        if timestamp == EARLIEST_TIMESTAMP:
            return self.log_start_offset, -1
        if timestamp == LATEST_TIMESTAMP:
            return (self.last_stable_offset if read_committed else self.high_watermark), -1
        if timestamp == MAX_TIMESTAMP:  # KIP-734: the first record carrying the largest timestamp
            best = max(self.segments, key=lambda s: s.max_timestamp_so_far)
            return best.find_record_with_max_timestamp()
        for seg in self.segments:
            if seg.max_timestamp_so_far >= timestamp and seg.next_offset > self.log_start_offset:
                found = seg.find_offset_by_timestamp(timestamp, self.log_start_offset)
                if found is not None:
                    return found
        return None

    # -- maintenance ------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_start: int, reason: str = "DeleteRecords") -> bool:
        """DeleteRecords and retention move the log start offset forward, never back.

        Segments wholly below the new start are deleted by the next retention
        run (Kafka's ``deleteLogStartOffsetBreachedSegments``).
        """
        if new_start > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"cannot delete records up to {new_start}: high watermark is {self.high_watermark}")
        if new_start > self.log_start_offset:
            log.info("%s: log start offset %d -> %d (%s)", self.name, self.log_start_offset, new_start, reason)
            self.log_start_offset = new_start
            self.leader_epoch_cache.truncate_from_start(new_start)
            return True
        return False

    def delete_old_segments(self, now_ms: int | None = None) -> int:
        """Retention (Kafka's ``UnifiedLog.deleteOldSegments``); returns the number of segments deleted."""
        return retention.delete_old_segments(self, int(time.time() * 1000) if now_ms is None else now_ms)

    def delete_segments(self, doomed: list[LogSegment], reason: str) -> None:
        """Remove inactive segments from the log (and their files), moving the log start offset."""
        if not doomed:
            return
        assert self.active_segment not in doomed, "the active segment is never deleted"
        gone = set(id(s) for s in doomed)
        self.segments = [s for s in self.segments if id(s) not in gone]
        self._bases = [s.base_offset for s in self.segments]
        for seg in doomed:
            log.info("%s: deleting segment %d (%d bytes, offsets %d..%d): %s", self.name, seg.base_offset,
                     seg.size, seg.base_offset, seg.next_offset - 1, reason)
            _delete_segment_files(seg)
        delete_snapshots(self.dir, [seg.base_offset for seg in doomed])  # each segment's snapshot goes with it
        if self.segments[0].base_offset > self.log_start_offset:
            self.maybe_increment_log_start_offset(self.segments[0].base_offset, "segment deletion")

    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment]) -> None:
        """Swap a ``.cleaned`` segment in for the segments it replaces, crash-safely (Kafka's replaceSegments).

        1. ``.cleaned`` -> ``.swap``: from here on a restart completes the swap;
        2. the old segments' files are renamed ``.deleted`` and removed;
        3. ``.swap`` -> the final names.
        A crash before 1 leaves ``.cleaned`` files (deleted at load, nothing lost);
        after 1 the loader finishes steps 2 and 3 (see recovery.py).
        """
        new_segment.flush()
        new_segment.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
        _fsync_dir(self.dir)
        gone = set(id(s) for s in old_segments)
        self.segments = [s for s in self.segments if id(s) not in gone]
        self._bases = [s.base_offset for s in self.segments]
        self._add_segment(new_segment)
        for seg in old_segments:
            _delete_segment_files(seg)
        delete_snapshots(self.dir, [s.base_offset for s in old_segments if s.base_offset != new_segment.base_offset])
        new_segment.change_file_suffixes(SWAP_FILE_SUFFIX, "")
        _fsync_dir(self.dir)

    def truncate_to(self, offset: int) -> bool:
        """Drop everything at or after ``offset`` (a follower fencing off a diverged tail), as
        Kafka's ``UnifiedLog.truncateTo``; returns whether the log was cut.

        * ``offset`` at or past the log end offset: the log stays, but leader epochs starting
          at the log end are dropped from the leader epoch cache. A replica that was made leader
          and wrote nothing in its epoch before losing the leadership has such an entry; kept, it
          would make the follower send that epoch as its last fetched one again and again, and
          the leader would answer with the same diverging epoch forever.
        * below the first segment: the log starts over, empty, at ``offset``.
        * a batch is never split: one holding ``offset`` goes whole, and the log end offset is
          the end of the last batch kept (see ``LogSegment.truncate_to``).
        """
        if offset < 0:
            raise ValueError(f"{self.name}: cannot truncate to a negative offset ({offset})")
        if offset >= self.log_end_offset:
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if self.segments[0].base_offset > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
            self._bases.pop()
        self.active_segment.truncate_to(offset)
        end = self.log_end_offset   # == offset unless ``offset`` fell inside a batch
        self.aborted_txns = [t for t in self.aborted_txns if t.last_offset < end]
        self.leader_epoch_cache.truncate_from_end(end)
        self.log_start_offset = min(self.log_start_offset, end)
        rebuild_producer_state(self)  # snapshots past the new end go; the latest one left is reloaded
        self.high_watermark = min(self.high_watermark, end)
        self.recovery_point = min(self.recovery_point, end)
        self.pending_flush_offset = min(self.pending_flush_offset, end)
        return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and start the log empty at ``new_offset`` (Kafka's
        ``truncateFullyAndStartAt``): a follower whose log ends before the leader's log start offset."""
        for seg in self.segments:
            seg.delete()
        self.segments.clear()
        self._bases.clear()
        self._add_segment(self._new_segment(new_offset))
        self.log_start_offset = new_offset
        self.aborted_txns = []
        self.leader_epoch_cache.entries = []
        self.leader_epoch_cache.flush()
        self.producer_state.truncate()
        delete_snapshots(self.dir, list_snapshots(self.dir))
        self.high_watermark = new_offset
        self.recovery_point = new_offset
        self.pending_flush_offset = new_offset

    def flush(self) -> None:
        """fsync every segment not yet known flushed; the recovery point becomes the log end offset."""
        for seg in self.segments[self.segment_for(self.recovery_point):]:
            seg.flush()
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = int(time.time() * 1000)

    def rolled_segments_to_flush(self) -> tuple[int, list[LogSegment]]:
        """The segments that rolled since the last flush, and the recovery point once they are fsynced."""
        target = min(self.pending_flush_offset, self.active_segment.base_offset)
        if target <= self.recovery_point:
            return target, []
        return target, [seg for seg in self.segments[self.segment_for(self.recovery_point):]
                        if seg.base_offset < target]

    def flush_rolled_segments(self) -> None:
        """fsync segments that rolled since the last flush and move the recovery point past them
        (the background flusher does the same with the fsyncs in a worker thread)."""
        target, segments = self.rolled_segments_to_flush()
        for seg in segments:
            seg.flush()
        self.mark_flushed(target)

    def mark_flushed(self, offset: int) -> None:
        """Everything below ``offset`` is on disk: move the recovery point up to it (Kafka's
        ``markFlushed``), never back and never past the log end offset."""
        self.recovery_point = max(self.recovery_point, min(offset, self.log_end_offset))

    def maybe_flush_by_time(self, now_ms: int) -> None:
        """``flush.ms``: fsync the log when the last flush is that old and there is something new."""
        if self.log_end_offset > self.recovery_point and now_ms - self.last_flush_ms >= self.config["flush.ms"]:
            self.flush()

    def describe_segments(self) -> list[dict]:
        """One dict per segment (for notebooks): base offset, size, offsets, largest timestamp, active."""
        return [{"base_offset": s.base_offset, "size": s.size, "next_offset": s.next_offset,
                 "largest_timestamp": s.max_timestamp_so_far, "index_entries": len(s.offset_index),
                 "time_index_entries": len(s.time_index), "active": s is self.active_segment,
                 "file": os.path.basename(s.path)} for s in self.segments]

    def take_producer_snapshot(self, offset: int | None = None, sync: bool = True) -> str | None:
        """Write ``<offset>.snapshot`` (default: at the log end offset) unless it exists."""
        return take_snapshot(self.dir, self.log_end_offset if offset is None else offset,
                             self.producer_state.snapshot_entries(), sync)

    def close(self) -> None:
        """Close the files; a snapshot at the log end offset first, so a restart replays nothing."""
        if self.segments and os.path.isdir(self.dir):
            self.take_producer_snapshot()
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        for seg in self.segments:
            seg.delete()
        self.segments.clear()
        self._bases.clear()
        for f in os.listdir(self.dir):
            os.remove(os.path.join(self.dir, f))
        os.rmdir(self.dir)


def _delete_segment_files(seg: LogSegment) -> None:
    """Kafka renames a deleted segment's files ``.deleted`` and removes them later
    (``file.delete.delay.ms``); reads here run on the broker loop, never alongside, so they go now."""
    seg.close_handlers()
    for path in seg.files:
        if os.path.exists(path):
            os.replace(path, path + DELETED_FILE_SUFFIX)
    for path in seg.files:
        if os.path.exists(path + DELETED_FILE_SUFFIX):
            os.remove(path + DELETED_FILE_SUFFIX)


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
