"""``LogSegment``: one ``.log`` file of record batches plus its two indexes.

A partition's log is a sequence of segments named by their *base offset*
(the first offset they hold), zero-padded to 20 digits as Kafka does::

    00000000000000000000.log        record batches, exactly as produced
    00000000000000000000.index      OffsetIndex: offset -> file position
    00000000000000000000.timeindex  TimeIndex: timestamp -> offset

Only the last segment (the *active* one) is written to; the others are
immutable until retention deletes them or the cleaner rewrites them.
"""
from __future__ import annotations

import os
import time

from ..records import HEADER_SIZE, BatchHeader, iter_batches
from .index import OffsetIndex, TimeIndex

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"
_READ_CHUNK = 64 * 1024


def filename_prefix(base_offset: int) -> str:
    return f"{base_offset:020d}"


class LogSegment:
    def __init__(self, directory: str, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_size: int = 10 * 1024 * 1024, created_ms: int | None = None):
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        prefix = os.path.join(directory, filename_prefix(base_offset))
        self.path = prefix + LOG_SUFFIX
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        self.offset_index = OffsetIndex(prefix + INDEX_SUFFIX, base_offset, max_index_size)
        self.time_index = TimeIndex(prefix + TIME_INDEX_SUFFIX, base_offset, max_index_size)
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = base_offset
        self.next_offset = base_offset
        #: when the segment got its first batch (Kafka's rollingBasedTimestamp), for segment.ms
        self.created_ms = created_ms if created_ms is not None else int(time.time() * 1000)

    # -- writing --------------------------------------------------------------

    def append(self, batches: bytes | bytearray, headers: list[tuple[int, BatchHeader]]) -> None:
        """Append already offset-stamped batches; ``headers`` are (position in ``batches``, header)."""
        if self.size == 0:
            self.created_ms = int(time.time() * 1000)
        start = self.size
        os.pwrite(self._fd, batches, start)
        for pos, h in headers:
            if h.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = h.max_timestamp
                self.offset_of_max_timestamp_so_far = h.last_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(h.last_offset, start + pos)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += h.size
        self.size = start + len(batches)
        self.next_offset = headers[-1][1].next_offset

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.fsync()
        self.time_index.fsync()

    def on_become_inactive(self) -> None:
        """When a segment rolls, its time index gets a final entry for its largest timestamp."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        self.offset_index.flush()
        self.time_index.flush()

    # -- reading --------------------------------------------------------------

    def read_at(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def batches_from(self, position: int = 0):
        """Yield (position, header) for the whole batches from ``position`` to the end of the file."""
        pos = position
        while pos < self.size:
            chunk = os.pread(self._fd, min(_READ_CHUNK, self.size - pos), pos)
            advanced = False
            for rel, header in iter_batches(chunk, strict=False):
                yield pos + rel, header
                last = rel + header.size
                advanced = True
            if not advanced:
                if len(chunk) < HEADER_SIZE:
                    return
                header = BatchHeader.parse(chunk)  # one batch larger than the chunk
                if header.batch_length <= 0 or pos + header.size > self.size:
                    return
                yield pos, header
                pos += header.size
            else:
                pos += last

    def translate_offset(self, offset: int, start_position: int = 0) -> tuple[int, BatchHeader] | None:
        """The position and header of the first batch whose last offset is >= ``offset``."""
        _, pos = self.offset_index.lookup(offset)
        for position, header in self.batches_from(max(pos, start_position)):
            if header.last_offset >= offset:
                return position, header
        return None

    def read(self, offset: int, max_bytes: int, max_offset: int | None = None,
             min_one_message: bool = True) -> tuple[bytes, int | None]:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        Stops before a batch starting at or after ``max_offset`` (the high
        watermark). With ``min_one_message`` the first batch is returned even
        if it is larger than ``max_bytes`` (KIP-74), so a consumer never stalls.
        Returns (bytes, position of the first batch or None).
        """
        found = self.translate_offset(offset)
        if found is None:
            return b"", None
        start, _ = found
        end = start
        for pos, header in self.batches_from(start):
            if max_offset is not None and header.base_offset >= max_offset:
                break
            if pos + header.size - start > max_bytes and not (min_one_message and pos == start):
                break
            end = pos + header.size
        return self.read_at(start, end - start), start

    def find_offset_by_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch with max timestamp >= ``timestamp``."""
        _, offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(offset)
        for _, header in self.batches_from(pos):
            if header.max_timestamp >= timestamp:
                return header.base_offset, header.max_timestamp
        return None

    # -- maintenance ----------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove batches at or after ``offset``; return the bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.next_offset = max(self.base_offset, offset)
        self.bytes_since_last_index_entry = 0
        return removed

    @property
    def largest_timestamp(self) -> int:
        return self.max_timestamp_so_far

    def close(self) -> None:
        if self._fd >= 0:
            self.on_become_inactive()
            os.close(self._fd)
            self._fd = -1
            self.offset_index.close()
            self.time_index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.path, self.offset_index.path, self.time_index.path):
            if os.path.exists(path):
                os.remove(path)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
