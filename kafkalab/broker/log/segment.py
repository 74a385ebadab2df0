"""``LogSegment``: one ``.log`` file of record batches plus its two indexes.

A partition's log is a sequence of segments named by their *base offset*
(the first offset they hold), zero-padded to 20 digits as Kafka does::

    00000000000000000000.log        record batches, exactly as produced
    00000000000000000000.index      OffsetIndex: offset -> file position
    00000000000000000000.timeindex  TimeIndex: timestamp -> offset

Only the last segment (the *active* one) is written to; the others are
immutable until retention deletes them or the cleaner rewrites them.

Rolling (Kafka's ``LogSegment.shouldRoll``): the active segment is closed to
writes when the next append would take it past ``segment.bytes``, when
``segment.ms`` (minus this segment's random share of ``segment.jitter.ms``)
has passed since its first batch's timestamp (wall clock time since it was
created if the batches carry no timestamp), when an index is full
(``segment.index.bytes``), or when an offset would not fit the indexes'
32-bit relative offsets.

``recover()`` is Kafka's ``LogSegment.recover``: it re-reads the whole file,
checks every batch (length, magic, CRC-32C, offsets), rebuilds both indexes
and cuts the file at the first batch that is not valid.
"""
from __future__ import annotations

import logging
import os
import time

import crc32c

from ..common.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, iter_batches, iter_records
from .index import CorruptIndexException, OffsetIndex, TimeIndex
from .transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX = ".log", ".index", ".timeindex"
#: Kafka's suffixes for files in transit: the cleaner writes ``.cleaned`` files, renames
#: them ``.swap`` once complete, then swaps them in; deleted segments become ``.deleted``.
CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX, DELETED_FILE_SUFFIX = ".cleaned", ".swap", ".deleted"
_READ_CHUNK = 64 * 1024
_RECOVER_CHUNK = 1024 * 1024
#: the largest offset - base offset an index entry can hold (a 32-bit relative offset)
MAX_RELATIVE_OFFSET = 2**31 - 1

log = logging.getLogger(__name__)


def filename_prefix(base_offset: int) -> str:
    return f"{base_offset:020d}"


class InvalidBatch(Exception):
    """Why recovery stopped at a batch (the text goes to the broker log)."""


class LogSegment:
    def __init__(self, directory: str, base_offset: int, *, index_interval_bytes: int = 4096,
                 max_index_size: int = 10 * 1024 * 1024, created_ms: int | None = None,
                 roll_jitter_ms: int = 0, file_suffix: str = ""):
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        prefix = os.path.join(directory, filename_prefix(base_offset))
        self.path = prefix + LOG_SUFFIX + file_suffix
        index_path = prefix + INDEX_SUFFIX + file_suffix
        time_index_path = prefix + TIME_INDEX_SUFFIX + file_suffix
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self._fd).st_size
        #: why the indexes cannot be trusted and must be rebuilt (None: they look fine)
        self.index_problem: str | None = None
        if self.size > 0 and not (os.path.exists(index_path) and os.path.exists(time_index_path)):
            self.index_problem = "an index file is missing"
        self.offset_index = self._open_index(OffsetIndex, index_path, max_index_size)
        self.time_index = self._open_index(TimeIndex, time_index_path, max_index_size)
        #: the aborted transactions whose ABORT marker is in this segment (``.txnindex``)
        self.txn_index = TransactionIndex(prefix + TXN_INDEX_SUFFIX + file_suffix)
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = self.time_index.last_entry
        self.next_offset = base_offset
        #: when the segment was created (Kafka's ``created``), for segment.ms without timestamps
        self.created_ms = created_ms if created_ms is not None else int(time.time() * 1000)
        #: the first batch's max timestamp (Kafka's rollingBasedTimestamp), for segment.ms
        self.rolling_based_timestamp: int | None = None

    def _open_index(self, cls, path: str, max_index_size: int):
        try:
            return cls(path, self.base_offset, max_index_size)
        except CorruptIndexException as exc:
            log.warning("Found a corrupt index file %s (%s); it will be rebuilt from the log", path, exc)
            self.index_problem = str(exc)
            os.remove(path)
            return cls(path, self.base_offset, max_index_size)

    # -- writing --------------------------------------------------------------

    def append(self, batches: bytes | bytearray, headers: list[tuple[int, BatchHeader]]) -> None:
        """Append already offset-stamped batches; ``headers`` are (position in ``batches``, header).

        Per batch: once more than ``index_interval_bytes`` were written since
        the last index entry, the offset index gets (batch last offset, batch
        position) and the time index (largest timestamp so far, its offset) if
        the timestamp grew. (Kafka's LogSegment.append adds at most one entry per
        call, pairing the call's largest offset with its first batch's position;
        docs/differences.md, *Storage*.)
        """
        start = self.size
        if start == 0:
            self.rolling_based_timestamp = max(h.max_timestamp for _, h in headers)
        os.pwrite(self._fd, batches, start)
        indexed = False
        for pos, h in headers:
            if h.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = h.max_timestamp
                self.offset_of_max_timestamp_so_far = h.last_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(h.last_offset, start + pos)
                self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                self.bytes_since_last_index_entry = 0
                indexed = True
            self.bytes_since_last_index_entry += h.size
        if indexed:  # Kafka's mmap'd indexes are visible to readers (a dumper) at once; so are ours
            self.offset_index.flush()
            self.time_index.flush()
        self.size = start + len(batches)
        self.next_offset = headers[-1][1].next_offset

    def flush(self) -> None:
        os.fsync(self._fd)
        self.offset_index.fsync()
        self.time_index.fsync()

    def dup_fds(self) -> list[int]:
        """Duplicates of the three files' descriptors, so a worker thread can fsync them
        while the loop goes on (and even if the segment is closed meanwhile)."""
        return [os.dup(self._fd), self.offset_index.dup_fd(), self.time_index.dup_fd()]

    def on_become_inactive(self) -> None:
        """When a segment rolls, its time index gets a final entry for its largest timestamp."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        self.offset_index.flush()
        self.time_index.flush()

    # -- rolling --------------------------------------------------------------

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Kafka's timeWaitedForRoll: record time since the first batch, else wall time since creation."""
        if self.rolling_based_timestamp is None and self.size > 0:
            first = next(self.batches_from(0), None)
            self.rolling_based_timestamp = first[1].max_timestamp if first else None
        ts = self.rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now_ms - self.created_ms

    def should_roll(self, *, segment_bytes: int, segment_ms: int, messages_size: int,
                    max_timestamp_in_messages: int, max_offset_in_messages: int, now_ms: int) -> bool:
        """Kafka's LogSegment.shouldRoll."""
        if self.size > segment_bytes - messages_size:
            return True
        if self.size > 0 and (self.time_waited_for_roll(now_ms, max_timestamp_in_messages)
                              > segment_ms - self.roll_jitter_ms):
            return True
        return (self.offset_index.is_full or self.time_index.is_full
                or max_offset_in_messages - self.base_offset > MAX_RELATIVE_OFFSET)

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
                if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > self.size:
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

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int = 0) -> tuple[int, int] | None:
        """(offset, timestamp) of the first *record* with timestamp >= ``timestamp`` (Kafka's
        findOffsetByTimestamp: time index, then offset index, then scan batches and records)."""
        _, offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(offset, starting_offset))
        for position, header in self.batches_from(pos):
            if header.max_timestamp >= timestamp and header.last_offset >= starting_offset:
                for record in iter_records(self.read_at(position, header.size)):
                    if record.timestamp >= timestamp and record.offset >= starting_offset:
                        return record.offset, record.timestamp
        return None

    def find_record_with_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record carrying this segment's largest timestamp (KIP-734)."""
        if self.max_timestamp_so_far < 0:
            return None
        found = self.translate_offset(self.offset_of_max_timestamp_so_far)
        if found is not None:
            position, header = found
            for record in iter_records(self.read_at(position, header.size)):
                if record.timestamp == self.max_timestamp_so_far:
                    return record.offset, record.timestamp
        return self.offset_of_max_timestamp_so_far, self.max_timestamp_so_far

    # -- recovery -------------------------------------------------------------

    def _valid_batches(self, min_offset: int = 0):
        """Yield (position, header) of each valid batch from the start; raise InvalidBatch at the first bad one."""
        pos, expected_offset = 0, max(self.base_offset, min_offset)
        while pos < self.size:
            chunk = os.pread(self._fd, min(_RECOVER_CHUNK, self.size - pos), pos)
            view = memoryview(chunk)
            rel = 0
            while rel < len(chunk):
                if self.size - (pos + rel) < HEADER_SIZE:
                    raise InvalidBatch(f"{self.size - pos - rel} bytes at the end are too few for a batch header")
                if len(chunk) - rel < HEADER_SIZE:
                    break  # the header straddles the chunk: read the next chunk from here
                header = BatchHeader.parse(chunk, rel)
                if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
                    raise InvalidBatch(f"batch length {header.batch_length} is too small")
                if pos + rel + header.size > self.size:
                    raise InvalidBatch(f"batch of {header.size} bytes runs past the end of the file (torn write)")
                if header.magic != 2:
                    raise InvalidBatch(f"magic byte {header.magic} (expected 2)")
                if header.base_offset < expected_offset or header.last_offset_delta < 0:
                    raise InvalidBatch(f"offsets {header.base_offset}..{header.last_offset} do not follow "
                                       f"offset {expected_offset - 1}")
                if header.last_offset - self.base_offset > MAX_RELATIVE_OFFSET:
                    raise InvalidBatch(f"offset {header.last_offset} does not fit this segment's index")
                if len(chunk) - rel < header.size:
                    if rel == 0:  # one batch larger than the chunk
                        batch = os.pread(self._fd, header.size, pos)
                        view_batch = memoryview(batch)
                    else:
                        break
                else:
                    view_batch = view[rel:rel + header.size]
                if crc32c.crc32c(view_batch[21:]) != header.crc:
                    raise InvalidBatch("CRC-32C does not match the batch's contents")
                yield pos + rel, header
                expected_offset = header.next_offset
                rel += header.size
            pos += rel

    def recover(self, min_offset: int = 0) -> tuple[int, str | None]:
        """Rebuild the indexes from the log, cutting it at the first invalid batch.

        Returns (bytes truncated, why). Like Kafka, every batch's CRC is
        checked; the final time index entry is written as at a roll. Offsets
        must increase from ``min_offset`` (the previous segment's end) on.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = -1, self.base_offset
        self.next_offset = self.base_offset
        self.rolling_based_timestamp = None
        valid = last_index_entry = 0
        problem = None
        try:
            for pos, header in self._valid_batches(min_offset):
                if self.rolling_based_timestamp is None:
                    self.rolling_based_timestamp = header.max_timestamp
                if header.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = header.max_timestamp
                    self.offset_of_max_timestamp_so_far = header.last_offset
                if valid - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(header.last_offset, pos)
                    self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
                    last_index_entry = valid
                valid = pos + header.size
                self.next_offset = header.next_offset
        except InvalidBatch as exc:
            problem = f"invalid batch at byte {valid}: {exc}"
        truncated = self.size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
            self.size = valid
        self.bytes_since_last_index_entry = valid - last_index_entry
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        self.offset_index.flush()
        self.time_index.flush()
        self.index_problem = None
        return truncated, problem

    # -- maintenance ----------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove the batches holding ``offset`` or later; return the bytes removed.

        Batches are never split: if ``offset`` falls inside a batch, the whole batch
        goes, and ``next_offset`` becomes the end of the last batch kept (the base
        offset if none is left), so that it always matches what is on disk. (Kafka's
        ``LogSegment.truncateTo`` cuts the same way but sets the log end offset to
        ``offset`` itself; its follower truncates at epoch boundaries, which are batch
        boundaries, so the two only differ after an unclean election.)"""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        removed = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.next_offset = self.base_offset
        self.bytes_since_last_index_entry = 0
        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far = -1, self.base_offset
        for _, header in self.batches_from(0):
            self.next_offset = header.next_offset
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset
        if self.size == 0:
            self.created_ms = int(time.time() * 1000)
            self.rolling_based_timestamp = None
        return removed

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp (Kafka's largestTimestamp: else the file's mtime), for retention.ms."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.path).st_mtime * 1000)

    @property
    def files(self) -> list[str]:
        files = [self.path, self.offset_index.path, self.time_index.path]
        return files + [self.txn_index.path] if os.path.exists(self.txn_index.path) else files

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename the files (and the ``.txnindex``, if any), e.g. ``.log.cleaned`` -> ``.log.swap`` (open handles
        stay valid)."""
        def renamed(path: str) -> str:
            assert path.endswith(old_suffix), (path, old_suffix)
            return path[:len(path) - len(old_suffix)] + new_suffix
        new_log = renamed(self.path)
        os.replace(self.path, new_log)
        self.path = new_log
        for index in (self.offset_index, self.time_index):
            new_path = renamed(index.path)
            index.flush()
            os.replace(index.path, new_path)
            index.path = new_path
        new_txn = renamed(self.txn_index.path)
        if os.path.exists(self.txn_index.path):
            os.replace(self.txn_index.path, new_txn)
        self.txn_index.path = new_txn

    def close(self) -> None:
        if self._fd >= 0:
            self.on_become_inactive()
            os.close(self._fd)
            self._fd = -1
            self.offset_index.close()
            self.time_index.close()

    def close_handlers(self) -> None:
        """Close the files without writing anything (the segment is about to be deleted)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            self.offset_index.close()
            self.time_index.close()

    def delete(self) -> None:
        self.close_handlers()
        for path in self.files:
            if os.path.exists(path):
                os.remove(path)

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset}, "
                f"largest_timestamp={self.max_timestamp_so_far})")
