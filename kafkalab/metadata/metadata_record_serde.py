"""Writing the metadata log's records in Kafka's format (``MetadataRecordSerde``, ``ControlRecordUtils``).

The schemas are kafkalab's own, the ones ``kafkalab dump-log --cluster-metadata-decoder`` reads
with (:mod:`kafkalab.metadata.metadata_records`), so whatever the quorum writes, the dump tool — and
Kafka's ``kafka-dump-log.sh`` — read back:

* a metadata record: key null, value ``frame version 1 | type | version | fields`` (unsigned varints,
  then the record in the flexible format), e.g. NoOpRecord (type 20), which Kafka's active
  controller appends when the log has been idle for ``metadata.max.idle.interval.ms``;
* a control record (in a batch with the control bit set): key ``(version 0: int16, type: int16)``,
  value the control message, its version as its first field, e.g. LeaderChange (type 2), the
  first record a leader writes in its epoch.
"""
from __future__ import annotations

import struct

from kafka.protocol.schemas.fields.codecs import UnsignedVarInt32

from .metadata_records import FRAME_VERSION, METADATA_RECORD_TYPES, message_class

LEADER_CHANGE = 2
_CONTROL_KEY = struct.Struct(">hh")
_TYPE_IDS = {name: type_id for type_id, name in METADATA_RECORD_TYPES.items()}
#: records without fields: the value ends with the empty tagged-field section
_NO_FIELDS = ("NoOpRecord", "EndTransactionRecord")


def encode_metadata_record(name: str, data: dict | None = None, version: int = 0) -> bytes:
    """The value of a metadata record ``name`` (e.g. ``"NoOpRecord"``) with ``data`` (snake_case fields)."""
    head = b"".join(UnsignedVarInt32.encode(v) for v in (FRAME_VERSION, _TYPE_IDS[name], version))
    if name in _NO_FIELDS:
        return head + UnsignedVarInt32.encode(0)
    cls = message_class(name)
    return head + bytes(cls(**(data or {})).encode(version=version, header=False))


def control_key(type_id: int) -> bytes:
    return _CONTROL_KEY.pack(0, type_id)


def encode_leader_change(leader_id: int, voters: list[int], granting_voters: list[int]) -> bytes:
    """LeaderChangeMessage version 0: the new leader, the voters, and those that voted for it."""
    cls = message_class("LeaderChangeMessage")
    message = cls(value_version=0, leader_id=leader_id, voters=[cls.Voter(voter_id=v) for v in sorted(voters)],
                  granting_voters=[cls.Voter(voter_id=v) for v in sorted(granting_voters)])
    return bytes(message.encode(version=0, header=False))
