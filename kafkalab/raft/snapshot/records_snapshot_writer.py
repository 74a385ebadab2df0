"""``RecordsSnapshotWriter`` and ``RawSnapshotWriter`` (Kafka's ``org.apache.kafka.snapshot``).

A snapshot file is record batches in the log's own format, every batch stamped with the snapshot's
epoch, offsets counted from 0 within the snapshot:

1. a control batch with one **SnapshotHeader** record (control type 3): version 0 and
   ``lastContainedLogTimestamp``, the append time of the last log record the snapshot covers;
2. the data: metadata records (key null, value ``frame version | type | version | fields``), in batches
   of at most ``max_batch_records``;
3. a control batch with one **SnapshotFooter** record (control type 4).

Everything is written to ``<id>.checkpoint.part``; :meth:`freeze` appends the footer, fsyncs, and renames
the file to ``<id>.checkpoint`` (then fsyncs the directory): a crash leaves either no snapshot or a whole
one, never a torn one. ``RawSnapshotWriter`` is the same ``.part``-then-rename for a snapshot that
arrives as bytes (a follower fetching it with FetchSnapshot).
"""
from __future__ import annotations

import os
import struct
import time

from ...broker.common.records import CONTROL_MASK, Record, build_batch
from ...metadata.metadata_records import message_class
from .snapshots import OffsetAndEpochId, fsync_dir, partial_path, snapshot_path

SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4
#: records per data batch (Kafka bounds batches by bytes, ``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``)
MAX_BATCH_RECORDS = 500


class RawSnapshotWriter:
    """Bytes appended to ``<id>.checkpoint.part``; :meth:`freeze` makes it ``<id>.checkpoint``."""

    def __init__(self, log_dir: str, snapshot_id: OffsetAndEpochId):
        self.log_dir = log_dir
        self.snapshot_id = snapshot_id
        self.part = partial_path(log_dir, snapshot_id)
        self._file = open(self.part, "wb")
        self.size = 0
        self.frozen = False

    def append(self, data: bytes) -> None:
        if self.frozen:
            raise RuntimeError(f"snapshot {self.snapshot_id} is frozen: nothing more can be appended")
        self._file.write(data)
        self.size += len(data)

    def freeze(self) -> str:
        """fsync, rename ``.part`` -> ``.checkpoint``, fsync the directory; returns the snapshot's path."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        path = snapshot_path(self.log_dir, self.snapshot_id)
        os.replace(self.part, path)
        fsync_dir(self.log_dir)
        self.frozen = True
        return path

    def close(self) -> None:
        """Abandon an unfrozen snapshot (its ``.part`` file is removed)."""
        if not self.frozen:
            self._file.close()
            if os.path.exists(self.part):
                os.remove(self.part)


class RecordsSnapshotWriter:
    def __init__(self, log_dir: str, snapshot_id: OffsetAndEpochId, last_contained_log_timestamp: int,
                 max_batch_records: int = MAX_BATCH_RECORDS):
        self.raw = RawSnapshotWriter(log_dir, snapshot_id)
        self.snapshot_id = snapshot_id
        self.max_batch_records = max_batch_records
        self.next_offset = 0
        self.records = 0
        header = message_class("SnapshotHeaderRecord")(value_version=0,
                                                      last_contained_log_timestamp=last_contained_log_timestamp)
        self._append_control(SNAPSHOT_HEADER, bytes(header.encode(version=0, header=False)))

    def _batch(self, pairs: list[tuple[bytes | None, bytes]], control: bool) -> None:
        now = int(time.time() * 1000)
        records = [Record(self.next_offset + i, now, key, value, []) for i, (key, value) in enumerate(pairs)]
        self.raw.append(build_batch(records, partition_leader_epoch=self.snapshot_id.epoch,
                                    attributes_extra=CONTROL_MASK if control else 0))
        self.next_offset += len(pairs)

    def _append_control(self, type_id: int, value: bytes) -> None:
        self._batch([(struct.pack(">hh", 0, type_id), value)], control=True)   # key: version 0, control type

    def append(self, values: list[bytes]) -> None:
        """Metadata record values, in order."""
        for i in range(0, len(values), self.max_batch_records):
            self._batch([(None, v) for v in values[i:i + self.max_batch_records]], control=False)
        self.records += len(values)

    def freeze(self) -> int:
        """Append the SnapshotFooter and make the snapshot visible; returns its size in bytes."""
        footer = message_class("SnapshotFooterRecord")(value_version=0)
        self._append_control(SNAPSHOT_FOOTER, bytes(footer.encode(version=0, header=False)))
        self.raw.freeze()
        return self.raw.size

    def close(self) -> None:
        self.raw.close()
