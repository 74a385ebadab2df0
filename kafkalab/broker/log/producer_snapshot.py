"""Producer-state snapshots: the ``<20-digit offset>.snapshot`` files of a partition directory.

Rebuilding producer state (:mod:`kafkalab.broker.log.producer_state`) means reading
batch headers; a Kafka broker avoids reading the whole log for it by writing the state
to a file: at every segment roll (named by the new segment's base offset) and at a
clean shutdown (named by the log end offset). At start-up it loads the latest snapshot
and replays only the batches after it.

The file (Kafka's ``ProducerSnapshot`` data schema, version 1, big-endian)::

    Version int16 (1) | Crc uint32 | ProducerEntries: int32 count, then per producer:
        ProducerId int64 | Epoch int16 | LastSequence int32 | LastOffset int64 |
        OffsetDelta int32 | Timestamp int64 | CoordinatorEpoch int32 | CurrentTxnFirstOffset int64

``Crc`` is the CRC-32C of every byte after it. Only the producer's *last* batch is kept
(last sequence, last offset, its offset delta and max timestamp), so after a restart
only a retry of that batch is recognised as a duplicate. ``CurrentTxnFirstOffset`` is
-1 when the producer has no transaction open in this partition. A file whose CRC does
not match is deleted with a warning and the next older one is tried.

Kafka keeps one snapshot per segment (plus the latest one above the last segment's
base offset, from a clean shutdown); a snapshot goes with the segment whose base offset
names it, and there is no separate count limit.
"""
from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass

import crc32c

from ..common.records import coordinator_epoch_of, iter_records

log = logging.getLogger(__name__)

PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
PRODUCER_SNAPSHOT_VERSION = 1
_VERSION = struct.Struct(">h")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes per producer
_ENTRIES_START = _VERSION.size + _CRC.size  # the CRC covers everything from here on
_INT32_MAX = 2**31 - 1


class CorruptSnapshotError(Exception):
    """Kafka's ``CorruptSnapshotException``: unknown version, short file or wrong CRC."""


@dataclass
class SnapshotEntry:
    producer_id: int
    epoch: int
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def first_sequence(self) -> int:
        """The last batch's first sequence (sequences wrap at 2^31 - 1, as Kafka's ``decrementSequence``)."""
        if self.last_sequence < self.offset_delta:
            return _INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta

    @property
    def has_batch(self) -> bool:
        return self.last_offset >= 0


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{PRODUCER_SNAPSHOT_SUFFIX}"


def offset_of_snapshot(name: str) -> int | None:
    stem = os.path.basename(name)
    if not stem.endswith(PRODUCER_SNAPSHOT_SUFFIX):
        return None
    digits = stem[:-len(PRODUCER_SNAPSHOT_SUFFIX)]
    return int(digits) if digits.isdigit() else None


def list_snapshots(directory: str) -> dict[int, str]:
    """offset -> path of every ``.snapshot`` file in a partition directory, by offset."""
    found = {}
    for name in os.listdir(directory):
        offset = offset_of_snapshot(name)
        if offset is not None and os.path.isfile(os.path.join(directory, name)):
            found[offset] = os.path.join(directory, name)
    return dict(sorted(found.items()))


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
                            e.coordinator_epoch, e.current_txn_first_offset)
    return _VERSION.pack(PRODUCER_SNAPSHOT_VERSION) + _CRC.pack(crc32c.crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes) -> list[SnapshotEntry]:
    if len(data) < _VERSION.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes, no version")
    (version,) = _VERSION.unpack_from(data)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    if len(data) < _ENTRIES_START + _COUNT.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes, no entry count")
    (crc,) = _CRC.unpack_from(data, _VERSION.size)
    (count,) = _COUNT.unpack_from(data, _ENTRIES_START)
    start = _ENTRIES_START + _COUNT.size
    if count < 0 or start + count * _ENTRY.size > len(data):
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries do not fit in "
                                   f"{len(data)} bytes")
    computed = crc32c.crc32c(data[_ENTRIES_START:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    return [SnapshotEntry(*_ENTRY.unpack_from(data, start + i * _ENTRY.size)) for i in range(count)]


def read_snapshot(path: str) -> list[SnapshotEntry]:
    with open(path, "rb") as f:
        return decode_snapshot(f.read())


def write_snapshot(path: str, entries: list[SnapshotEntry], sync: bool = True) -> None:
    data = encode_snapshot(entries)
    with open(path, "wb") as f:
        f.write(data)
        if sync:
            f.flush()
            os.fsync(f.fileno())


def marker_coordinator_epoch(batch) -> int:
    """The coordinator epoch written in a COMMIT/ABORT marker batch (-1 if it cannot be read)."""
    try:
        record = next(iter_records(batch), None)
    except Exception:   # noqa: BLE001 - a control batch we cannot decode: keep the default, as for a missing value
        return -1
    epoch = coordinator_epoch_of(record.value) if record is not None else None
    return -1 if epoch is None else epoch


def take_snapshot(directory: str, offset: int, entries: list[SnapshotEntry], sync: bool = True) -> str | None:
    """Write ``<offset>.snapshot`` unless one exists for that offset already (Kafka's ``takeSnapshot``)."""
    path = os.path.join(directory, snapshot_file_name(offset))
    if os.path.exists(path):
        return None
    write_snapshot(path, entries, sync)
    log.debug("%s: wrote producer snapshot at offset %d with %d producer ids", directory, offset, len(entries))
    return path


def delete_snapshots(directory: str, offsets) -> None:
    """Remove the snapshots named by these offsets (a deleted segment's), if they exist."""
    for offset in offsets:
        path = os.path.join(directory, snapshot_file_name(offset))
        if os.path.exists(path):
            os.remove(path)


def remove_stray_snapshots(directory: str, segment_bases: list[int]) -> None:
    """Snapshots whose offset is no segment's base offset are removed, except the largest one above
    the last base offset, which a clean shutdown wrote (Kafka's ``removeStraySnapshots``)."""
    bases = set(segment_bases)
    strays = [offset for offset in list_snapshots(directory) if offset not in bases]
    keep = strays[-1] if strays and segment_bases and strays[-1] > max(segment_bases) else None
    delete_snapshots(directory, [o for o in strays if o != keep])
