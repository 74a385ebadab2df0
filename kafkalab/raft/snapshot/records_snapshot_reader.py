"""``RecordsSnapshotReader``: a snapshot's records back (Kafka's ``org.apache.kafka.snapshot.RecordsSnapshotReader``).

It checks what makes a file a snapshot: the first record is a SnapshotHeader control record, the last a
SnapshotFooter, every batch whole and its CRC right; anything else is a :class:`SnapshotFormatError`
naming what is wrong (a controller refuses to load such a file rather than start from a wrong state).
Control records in between (KRaftVersion, KRaftVoters, which Kafka 4.x writes for a dynamic quorum)
are skipped; the metadata records are decoded with the dump tool's schemas.
"""
from __future__ import annotations

import struct

from ...broker.common.errors import KafkaError
from ...broker.common.records import iter_batches, iter_records, validate_batch
from ...metadata.metadata_records import MetadataParseError, MetadataRecord, decode_metadata_record, message_class
from .snapshots import OffsetAndEpochId, parse

SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 3, 4


class SnapshotFormatError(ValueError):
    pass


class RecordsSnapshotReader:
    def __init__(self, path: str, data: bytes | None = None):
        self.path = path
        parsed = parse(path)
        self.snapshot_id: OffsetAndEpochId | None = parsed[0] if parsed else None
        if data is None:
            with open(path, "rb") as f:
                data = f.read()
        self.size = len(data)
        self.records: list[MetadataRecord] = []
        self.last_contained_log_timestamp = -1
        self.batches = 0
        self._read(data)

    def _read(self, data: bytes) -> None:
        try:
            self._read_batches(data)
        except KafkaError as exc:   # a cut or corrupt batch
            raise SnapshotFormatError(f"{self.path}: {exc.message}") from None

    def _read_batches(self, data: bytes) -> None:
        controls: list[int] = []
        consumed = 0
        for pos, header in iter_batches(data, strict=True):
            self.batches += 1
            validate_batch(data, pos, header)
            consumed = pos + header.size
            for record in iter_records(memoryview(data)[pos:pos + header.size]):
                if header.is_control:
                    if record.key is None or len(record.key) < 4:
                        raise SnapshotFormatError(f"{self.path}: control record at {record.offset} has no type")
                    _, type_id = struct.unpack_from(">hh", record.key)
                    controls.append(type_id)
                    if type_id == SNAPSHOT_HEADER:
                        if len(controls) != 1 or self.records:
                            raise SnapshotFormatError(f"{self.path}: SnapshotHeader at {record.offset} is not first")
                        cls = message_class("SnapshotHeaderRecord")
                        self.last_contained_log_timestamp = cls.decode(bytes(record.value), version=0,
                                                                       header=False).last_contained_log_timestamp
                elif not controls or controls[0] != SNAPSHOT_HEADER:
                    raise SnapshotFormatError(f"{self.path}: the first record is not a SnapshotHeader")
                elif controls[-1] == SNAPSHOT_FOOTER:
                    raise SnapshotFormatError(f"{self.path}: records after the SnapshotFooter")
                else:
                    try:
                        self.records.append(decode_metadata_record(record.value))
                    except MetadataParseError as exc:
                        raise SnapshotFormatError(f"{self.path}: record at {record.offset}: {exc}") from None
        if consumed != len(data):
            raise SnapshotFormatError(f"{self.path}: {len(data) - consumed} bytes after the last whole batch")
        if not controls or controls[0] != SNAPSHOT_HEADER:
            raise SnapshotFormatError(f"{self.path}: no SnapshotHeader")
        if controls[-1] != SNAPSHOT_FOOTER:
            raise SnapshotFormatError(f"{self.path}: no SnapshotFooter (an incomplete snapshot)")
