"""Sparse indexes of a log segment: ``OffsetIndex`` (.index) and ``TimeIndex`` (.timeindex).

Kafka's layouts (storage/.../OffsetIndex.java, TimeIndex.java), big-endian:

* ``.index``: 8-byte entries ``(relativeOffset: int32, position: int32)``;
  relativeOffset = offset - segment base offset, position = byte position of
  the batch in the ``.log`` file. An entry is added about every
  ``index.interval.bytes`` of log, so the index is *sparse*: to find an
  offset, take the last entry at or below it and scan the log forward.
* ``.timeindex``: 12-byte entries ``(timestamp: int64, relativeOffset: int32)``;
  an entry is added only when the timestamp grows, so timestamps in the file
  are increasing and a lookup by time is a binary search.

Which entries get written (our LogSegment.append, per batch; Kafka's adds at
most one entry per append call, which may hold many batches: docs/differences.md,
*Storage*): when more than
``index.interval.bytes`` were appended since the last entry, the offset index
gets ``(last offset of the batch, position of the batch)`` and the time index
gets ``(largest timestamp so far, offset of that batch)`` if the timestamp
grew. When a segment rolls (or the broker closes it) the time index gets one
final entry for the segment's largest timestamp, which retention reads.

Kafka preallocates index files to ``segment.index.bytes``, memory-maps them,
and trims them to their real length when the segment rolls or closes. These
classes keep the entries in a Python list and append them to the file, so
the files always look like Kafka's trimmed ones. Reading a file written by a
Kafka broker that was killed, the zero-filled preallocated tail is ignored.
A segment whose offset index reaches ``segment.index.bytes`` rolls
(``is_full``); a time index is full one entry earlier, as in Kafka, keeping
a slot for the entry written at roll.

``_load`` raises :class:`CorruptIndexException` for a file that cannot be
right (a size that is not a whole number of entries, entries that do not
increase, offsets below the base offset); the log then rebuilds the index
from the ``.log`` file (see :mod:`kafkalab.broker.log.recovery`).
"""
from __future__ import annotations

import bisect
import os
import struct

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexException(Exception):
    """An index file whose contents cannot be right (Kafka's CorruptIndexException)."""


class _Index:
    entry: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_size: int):
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_size // self.entry.size)
        self._keys: list[int] = []     # what lookups search (offset or timestamp)
        self._values: list[int] = []
        if os.path.exists(path):
            self._load()
        self._file = open(path, "ab")

    def _load(self) -> None:
        with open(self.path, "rb") as f:
            data = f.read()
        if len(data) % self.entry.size:
            raise CorruptIndexException(
                f"{self.path}: size {len(data)} is not a multiple of the {self.entry.size}-byte entry")
        entries = list(self.entry.iter_unpack(data))
        zero = (0, 0)
        n = len(entries)
        while n > 1 and entries[n - 1] == zero:  # Kafka's preallocated, never written slots
            n -= 1
        if n == 1 and entries[0] == zero:  # a lone all-zero entry is unwritten space too
            n = 0
        if n < len(entries):
            os.truncate(self.path, n * self.entry.size)
        for fields in entries[:n]:
            self._add(*fields)
        self.sanity_check()

    def _add(self, a: int, b: int) -> None:
        raise NotImplementedError

    def sanity_check(self) -> None:
        """Kafka's checks (OffsetIndex/TimeIndex.sanityCheck), plus: every entry increases."""
        keys, values = self._keys, self._values
        if any(k2 <= k1 for k1, k2 in zip(keys, keys[1:])):
            raise CorruptIndexException(f"{self.path}: entries are not increasing")
        offsets = values if isinstance(self, TimeIndex) else keys
        if offsets and min(offsets) < self.base_offset:
            raise CorruptIndexException(f"{self.path}: an entry's offset is below the base offset {self.base_offset}")
        if any(o2 < o1 for o1, o2 in zip(offsets, offsets[1:])):
            raise CorruptIndexException(f"{self.path}: offsets of the entries decrease")

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return len(self._keys) >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return len(self._keys) * self.entry.size

    def _write(self, *fields) -> None:
        self._file.write(self.entry.pack(*fields))

    def flush(self) -> None:
        self._file.flush()

    def fsync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def dup_fd(self) -> int:
        """A duplicate descriptor with everything written, for an fsync off the event loop."""
        self._file.flush()
        return os.dup(self._file.fileno())

    def truncate_to_entries(self, n: int) -> None:
        del self._keys[n:]
        del self._values[n:]
        self._file.flush()
        os.truncate(self.path, n * self.entry.size)

    def reset(self) -> None:
        self.truncate_to_entries(0)

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class OffsetIndex(_Index):
    """``<base>.index``: maps offsets to byte positions in the segment's ``.log``."""

    entry = _OFFSET_ENTRY

    def _add(self, relative_offset: int, position: int) -> None:
        self._keys.append(self.base_offset + relative_offset)
        self._values.append(position)

    def sanity_check(self) -> None:
        super().sanity_check()
        if any(p2 <= p1 for p1, p2 in zip(self._values, self._values[1:])):
            raise CorruptIndexException(f"{self.path}: positions of the entries do not increase")

    @property
    def last_offset(self) -> int:
        return self._keys[-1] if self._keys else self.base_offset

    @property
    def last_position(self) -> int:
        return self._values[-1] if self._values else 0

    def append(self, offset: int, position: int) -> None:
        if self._keys and offset <= self._keys[-1]:
            return  # Kafka refuses out-of-order entries; they add nothing to a sparse index
        self._add(offset - self.base_offset, position)
        self._write(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The last entry at or below ``offset``, as (offset, position); (base, 0) if none."""
        i = bisect.bisect_right(self._keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset`` (after the log itself is truncated)."""
        self.truncate_to_entries(bisect.bisect_left(self._keys, offset))

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values))


class TimeIndex(_Index):
    """``<base>.timeindex``: maps timestamps to the offset of the batch that reached them."""

    entry = _TIME_ENTRY

    def _add(self, timestamp: int, relative_offset: int) -> None:
        self._keys.append(timestamp)
        self._values.append(self.base_offset + relative_offset)

    @property
    def is_full(self) -> bool:
        """One slot is kept for the final entry written when the segment rolls (as Kafka does)."""
        return len(self._keys) >= self.max_entries - 1

    @property
    def last_entry(self) -> tuple[int, int]:
        if not self._keys:
            return -1, self.base_offset
        return self._keys[-1], self._values[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        if self._keys and timestamp <= self._keys[-1]:
            return
        self._add(timestamp, offset - self.base_offset)
        self._write(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The last entry with a timestamp at or below ``timestamp``: (timestamp, offset)."""
        i = bisect.bisect_right(self._keys, timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self._values[i]

    def truncate_to(self, offset: int) -> None:
        n = len(self._values)
        while n and self._values[n - 1] >= offset:
            n -= 1
        self.truncate_to_entries(n)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values))
