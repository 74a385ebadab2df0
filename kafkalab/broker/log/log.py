"""``UnifiedLog``: one partition's log — an ordered list of segments.

Kafka's ``UnifiedLog`` (storage/.../UnifiedLog.java, once ``kafka.log.Log``)
owns the partition directory ``<log.dirs>/<topic>-<partition>/`` and keeps:

* ``log_start_offset``: the first offset a consumer may read. It moves up
  when retention deletes old segments or DeleteRecords is called.
* ``log_end_offset`` (LEO): the offset the next appended record gets.
* ``high_watermark`` (HW): the offset up to which records are replicated to
  the whole ISR, so consumers may see them. A single replica's HW is its LEO;
  the ``Partition`` moves it when followers catch up.

``append_as_leader`` validates each batch, gives it offsets, and writes it to
the active segment, rolling a new segment first when ``segment.bytes``,
``segment.ms`` or a full index says so.
"""
from __future__ import annotations

import bisect
import os
import time
from dataclasses import dataclass

from ..config import LogConfig
from ..errors import ErrorCode, KafkaError
from ..records import BatchHeader, assign_offsets, iter_batches, iter_records, validate_batch
from .producer_state import ProducerStateManager
from .segment import LOG_SUFFIX, LogSegment

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


@dataclass
class FetchDataInfo:
    records: bytes
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``"orders-3"`` -> ``("orders", 3)``; None for anything else."""
    topic, sep, part = name.rpartition("-")
    if not sep or not topic or not part.isdigit():
        return None
    return topic, int(part)


class UnifiedLog:
    def __init__(self, directory: str, topic: str, partition: int, config: LogConfig,
                 log_start_offset: int = 0, recovery_point: int = 0):
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.producer_state = ProducerStateManager()
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        os.makedirs(directory, exist_ok=True)
        self._load()
        self.high_watermark = self.log_end_offset

    # -- loading ----------------------------------------------------------------

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment(self.dir, base_offset,
                          index_interval_bytes=self.config["index.interval.bytes"],
                          max_index_size=self.config["segment.index.bytes"])

    def _load(self) -> None:
        """Open the segments on disk; truncate a torn tail; rebuild producer state.

        The full recovery (from the recovery point, with CRC checks and index
        rebuilds) lives in ``recovery.py``; this is the part every load does.
        """
        bases = sorted(int(f[:-len(LOG_SUFFIX)]) for f in os.listdir(self.dir)
                       if f.endswith(LOG_SUFFIX) and f[:-len(LOG_SUFFIX)].isdigit())
        for base in bases:
            self._add_segment(self._new_segment(base))
        if not self.segments:
            self._add_segment(self._new_segment(self.log_start_offset))
        for seg in self.segments:
            end = 0
            for pos, header in seg.batches_from(0):
                self.producer_state.update(header)
                seg.next_offset = header.next_offset
                if header.max_timestamp > seg.max_timestamp_so_far:
                    seg.max_timestamp_so_far = header.max_timestamp
                    seg.offset_of_max_timestamp_so_far = header.last_offset
                end = pos + header.size
            if end < seg.size:  # a torn write at the tail
                os.ftruncate(seg._fd, end)
                seg.size = end
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)

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
        batches = list(iter_batches(records, strict=True))
        if not batches:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "produce request carries no record batch")
        max_bytes = self.config["max.message.bytes"]
        compacted = self.config.compact
        for pos, header in batches:
            if header.size > max_bytes:
                raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                                 f"batch of {header.size} bytes is larger than max.message.bytes={max_bytes}")
            validate_batch(records, pos, header)
            if compacted:
                for record in iter_records(memoryview(records)[pos:pos + header.size]):
                    if record.key is None:
                        raise KafkaError(ErrorCode.INVALID_RECORD,
                                         "compacted topic cannot accept a record without a key")
        return batches

    def append_as_leader(self, records: bytes, leader_epoch: int = 0) -> LogAppendInfo:
        batches = self.analyze_and_validate(records)
        for _, header in batches:  # duplicates and sequence gaps, before anything is written
            dup = self.producer_state.check(header)
            if dup is not None:
                if len(batches) > 1:
                    raise KafkaError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER, "duplicate batch in a multi-batch request")
                return LogAppendInfo(dup.first_offset, dup.last_offset, -1, self.log_start_offset, duplicate=True)
        buf = bytearray(records)
        log_append_time = None
        if self.config["message.timestamp.type"] == "LogAppendTime":
            log_append_time = int(time.time() * 1000)
        offset = first = self.log_end_offset
        for pos, header in batches:
            view = memoryview(buf)[pos:pos + header.size]
            assign_offsets(view, offset, log_append_time)
            header.base_offset = offset
            if log_append_time is not None:
                header.max_timestamp = log_append_time
            struct_epoch = leader_epoch  # partitionLeaderEpoch is outside the CRC
            buf[pos + 12:pos + 16] = struct_epoch.to_bytes(4, "big", signed=True)
            offset = header.next_offset
        self._maybe_roll(len(buf), first)
        self.active_segment.append(buf, batches)
        for _, header in batches:
            self.producer_state.update(header)
        count = offset - first
        return LogAppendInfo(first, offset - 1, log_append_time if log_append_time is not None else -1,
                             self.log_start_offset, records_count=count)

    def _maybe_roll(self, incoming: int, next_offset: int) -> None:
        seg = self.active_segment
        now = int(time.time() * 1000)
        if seg.size == 0:
            return
        if (seg.size + incoming > self.config["segment.bytes"]
                or now - seg.created_ms > self.config["segment.ms"] - self.config["segment.jitter.ms"]
                or seg.offset_index.is_full or seg.time_index.is_full
                or next_offset - seg.base_offset > 2**31 - 1):
            self.roll(next_offset)

    def roll(self, next_offset: int | None = None) -> LogSegment:
        """Close the active segment to writes and start a new one at the log end offset."""
        base = self.log_end_offset if next_offset is None else next_offset
        if self.active_segment.size == 0 and self.active_segment.base_offset == base:
            return self.active_segment
        self.active_segment.on_become_inactive()
        seg = self._new_segment(base)
        self._add_segment(seg)
        return seg

    # -- reading ----------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> bytes:
        """Batches from ``offset`` on; OFFSET_OUT_OF_RANGE outside [log start, log end]."""
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}] "
                             f"of {self.name}")
        i = self.segment_for(offset)
        while i < len(self.segments):
            data, _ = self.segments[i].read(offset, max_bytes, max_offset, min_one_message)
            if data:
                return data
            i += 1
        return b""

    def fetch_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) for a timestamp or one of the special values."""
        if timestamp == EARLIEST_TIMESTAMP:
            return self.log_start_offset, -1
        if timestamp == LATEST_TIMESTAMP:
            return self.high_watermark, -1
        if timestamp == MAX_TIMESTAMP:
            best = max(self.segments, key=lambda s: s.max_timestamp_so_far)
            if best.max_timestamp_so_far < 0:
                return None
            return best.offset_of_max_timestamp_so_far, best.max_timestamp_so_far
        for seg in self.segments:
            if seg.max_timestamp_so_far >= timestamp:
                found = seg.find_offset_by_timestamp(timestamp)
                if found is not None:
                    offset, ts = found
                    return max(offset, self.log_start_offset), ts
        return None

    # -- maintenance ------------------------------------------------------------

    def maybe_increment_log_start_offset(self, new_start: int) -> None:
        """DeleteRecords and retention move the log start offset forward, never back."""
        if new_start > self.high_watermark:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"cannot delete records up to {new_start}: high watermark is {self.high_watermark}")
        if new_start > self.log_start_offset:
            self.log_start_offset = new_start

    def truncate_to(self, offset: int) -> None:
        """Drop everything at or after ``offset`` (a follower fencing off a diverged tail)."""
        while len(self.segments) > 1 and self.segments[-1].base_offset >= offset:
            self.segments.pop().delete()
            self._bases.pop()
        self.active_segment.truncate_to(offset)
        self.producer_state.truncate()
        for seg in self.segments:
            for _, header in seg.batches_from(0):
                self.producer_state.update(header)
        self.high_watermark = min(self.high_watermark, self.log_end_offset)

    def flush(self) -> None:
        for seg in self.segments:
            seg.flush()
        self.recovery_point = self.log_end_offset

    def close(self) -> None:
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
