"""Records of ``__cluster_metadata`` as the controller makes and reads them (Kafka's ``ApiMessageAndVersion``).

A control manager *generates* records (:class:`ApiMessageAndVersion`: a record type, its version
and its fields) and *replays* them once they are committed; the same replay runs on every
controller, so a standby's state equals the active one's. Values are written and read with the
schemas that ``kafkalab dump-log --cluster-metadata-decoder`` uses (:mod:`kafkalab.metadata.metadata_records`),
so a record is in Kafka's format by construction. Read back, a record's fields are Kafka's JSON names
(``topicId``, ``isr``, ...), tagged fields present only when not their default, uuids as Kafka prints them.
"""
from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field

from ..broker.common.records import iter_batches, iter_records
from .metadata_record_serde import encode_metadata_record
from .metadata_records import MetadataParseError, MetadataRecord, decode_metadata_record


@dataclass
class ApiMessageAndVersion:
    """One record to append: ``name`` (``"TopicRecord"``), ``version``, ``data`` (snake_case fields)."""

    name: str
    version: int = 0
    data: dict = field(default_factory=dict)

    def encode(self) -> bytes:
        return encode_metadata_record(self.name, self.data, self.version)


def uuid_of(text: str) -> uuid.UUID:
    """A uuid as Kafka prints it (22 base64url characters) -> ``uuid.UUID``."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def read_committed(metadata_log, start: int, end: int) -> list[tuple[int, MetadataRecord]]:
    """The metadata records of ``metadata_log`` (a KafkaMetadataLog) at offsets [start, end), control batches
    (LeaderChange) skipped. A record that cannot be read raises MetadataParseError: the log is corrupt."""
    out: list[tuple[int, MetadataRecord]] = []
    offset = start
    while offset < end:
        data = metadata_log.read(offset, 1 << 20)
        if not data:
            break
        moved = False
        for pos, header in iter_batches(data, strict=False):
            if header.base_offset >= end:
                return out
            if header.last_offset >= offset:
                if not header.is_control:
                    for record in iter_records(memoryview(data)[pos:pos + header.size]):
                        if offset <= record.offset < end:
                            out.append((record.offset, _decode(record.offset, record.value)))
                moved = True
            offset = max(offset, header.last_offset + 1)
        if not moved:
            break
    return out


def _decode(offset: int, value: bytes | None) -> MetadataRecord:
    try:
        return decode_metadata_record(value)
    except MetadataParseError as exc:
        raise MetadataParseError(f"metadata record at offset {offset}: {exc}") from None
