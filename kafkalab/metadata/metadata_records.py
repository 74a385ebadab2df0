"""The records of KRaft's metadata log, ``__cluster_metadata``, decoded as ``kafka-dump-log.sh
--cluster-metadata-decoder``.

In KRaft mode there is no ZooKeeper: everything ZooKeeper held (brokers,
topics, partitions with their leader and ISR, configs, producer-id blocks,
feature levels) is a **record** in one replicated log, the single partition
``__cluster_metadata-0`` that every controller and broker keeps in its
``metadata.log.dir``. Its segments are ordinary ``.log`` files (record batch
format v2), and its snapshots are ``<offset>-<epoch>.checkpoint`` files in the
same format. A record's key is null; its value is

    frame version (unsigned varint, always 1) | record type (unsigned varint)
    | record version (unsigned varint) | the record's fields, flexible format

(Kafka's ``MetadataRecordSerde``). The record types and their fields are in
``kafkalab/metadata/schemas/*.json``, decoded with kafka-python's codec
(compact strings and arrays, tagged fields). Kafka's tool prints each record as
JSON::

    payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"AmrDHa7ySWyTq8xF59N4Tg"}}

with the field names in lower camel case, a tagged field only when it is not
its default (a PartitionChangeRecord names only what changed), uuids as Kafka
prints them (base64url, 22 characters) and bytes as base64; :func:`payload_text`
prints the same. A record of a type this module does not know, or one that
cannot be read, prints ``Error at <offset>, skipping. ...`` as Kafka's does
and the dump goes on.

Control batches carry the Raft quorum's own records: ``LeaderChange`` (type 2,
the first record a new leader writes in its epoch), ``SnapshotHeader`` /
``SnapshotFooter`` (3, 4: the first and last records of a snapshot),
``KRaftVersion`` and ``KRaftVoters`` (5, 6: KIP-853's dynamic quorum);
:func:`control_text` prints them as Kafka 4.4's tool does.
"""
from __future__ import annotations

import base64
import io
import json
import os
import re
import struct
import types
import uuid
from dataclasses import dataclass
from decimal import Decimal

from kafka.protocol.api_data import ApiData

from . import schemas

#: Kafka's ControlRecordType ids (the key of a record in a control batch)
CONTROL_RECORD_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER",
                        4: "SNAPSHOT_FOOTER", 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
#: Kafka's MetadataRecordType: type id -> record name (the schema file's name)
METADATA_RECORD_TYPES = {
    0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord",
    4: "ConfigRecord", 5: "PartitionChangeRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord", 10: "DelegationTokenRecord", 11: "UserScramCredentialRecord", 12: "FeatureLevelRecord",
    14: "ClientQuotaRecord", 15: "ProducerIdsRecord", 17: "BrokerRegistrationChangeRecord",
    18: "AccessControlEntryRecord", 19: "RemoveAccessControlEntryRecord", 20: "NoOpRecord",
    21: "ZkMigrationStateRecord", 22: "RemoveUserScramCredentialRecord", 23: "BeginTransactionRecord",
    24: "EndTransactionRecord", 25: "AbortTransactionRecord", 26: "RemoveDelegationTokenRecord",
    27: "RegisterControllerRecord", 28: "ClearElrRecord", 29: "UnregisterControllerRecord",
}
#: control record type id -> (schema name, how Kafka 4.4's tool labels it)
CONTROL_SCHEMAS = {2: ("LeaderChangeMessage", "LeaderChange:"), 3: ("SnapshotHeaderRecord", "SnapshotHeader"),
                   4: ("SnapshotFooterRecord", "SnapshotFooter"), 5: ("KRaftVersionRecord", "KRaftVersion"),
                   6: ("VotersRecord", "KRaftVoters")}
FRAME_VERSION = 1
#: a KRaft snapshot of ``__cluster_metadata``: ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``
CHECKPOINT_SUFFIX = ".checkpoint"
ZERO_UUID_TEXT = "AAAAAAAAAAAAAAAAAAAAAA"


def type_name(record_name: str) -> str:
    """``TopicRecord`` -> ``TOPIC_RECORD`` (Kafka's MetadataRecordType names; ``NoOpRecord`` -> ``NO_OP_RECORD``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", record_name).upper()


def _message_class(name: str):
    """A kafka-python ApiData class for the schema ``schemas/<name>.json``."""
    return types.new_class(name, (ApiData,), {"load_json": schemas})


_CLASSES: dict[str, type] = {}


def message_class(name: str):
    if name not in _CLASSES:
        _CLASSES[name] = _message_class(name)
    return _CLASSES[name]


def snapshot_id(path: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a snapshot file ``<offset>-<epoch>.checkpoint``; None for any other name."""
    name = os.path.basename(path)
    parts = name[:-len(CHECKPOINT_SUFFIX)].split("-") if name.endswith(CHECKPOINT_SUFFIX) else []
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 and all(p.isdigit() for p in parts) else None


def snapshot_header(path: str) -> str | None:
    """The line DumpLogSegments prints before a snapshot's batches (None for a file that is no snapshot)."""
    if os.path.basename(path) == "bootstrap.checkpoint":   # the metadata a node was formatted with
        return "KRaft bootstrap snapshot"
    found = snapshot_id(path)
    return None if found is None else f"Snapshot end offset: {found[0]}, epoch: {found[1]}"


# --- reading --------------------------------------------------------------------------

class MetadataParseError(ValueError):
    """A value that is not a metadata record this module can read."""


def _unsigned_varint(buf: io.BytesIO, what: str) -> int:
    value, shift = 0, 0
    while True:
        b = buf.read(1)
        if not b:
            raise MetadataParseError(f"the value ends inside its {what}")
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return value
        shift += 7
        if shift > 28:
            raise MetadataParseError(f"its {what} is not a valid unsigned varint")


@dataclass
class MetadataRecord:
    """One decoded ``__cluster_metadata`` record: ``type_id`` (Kafka's apiKey), ``name`` (``TopicRecord``),
    ``type`` (``TOPIC_RECORD``), ``version``, ``data`` (the fields, as Kafka's JSON converter writes them)."""

    type_id: int
    name: str
    version: int
    data: dict

    @property
    def type(self) -> str:
        return type_name(self.name)

    def to_json(self) -> str:
        return java_json({"type": self.type, "version": self.version, "data": self.data})


def decode_metadata_record(value: bytes | None) -> MetadataRecord:
    """Decode a metadata record's value (frame version, type, version, fields); MetadataParseError if it cannot."""
    if value is None:
        raise MetadataParseError("the record has no value")
    buf = io.BytesIO(bytes(value))
    frame = _unsigned_varint(buf, "frame version")
    if frame != FRAME_VERSION:
        raise MetadataParseError(f"unknown frame version {frame} (only frame version {FRAME_VERSION} is supported)")
    type_id = _unsigned_varint(buf, "record type")
    version = _unsigned_varint(buf, "record version")
    name = METADATA_RECORD_TYPES.get(type_id)
    if name is None:
        raise MetadataParseError(f"unknown metadata record type {type_id} (version {version}, "
                                 f"{len(value)} bytes): not a record type of Kafka 4.4")
    if name in _NO_FIELDS:   # kafka-python's codec wants at least one field: read the tagged-field section here
        _skip_tagged_fields(buf, name)
        data = {}
    else:
        cls = message_class(name)
        if version > cls.max_version:
            raise MetadataParseError(f"{name} version {version} is newer than the versions known here "
                                     f"(0-{cls.max_version})")
        try:
            message = cls.decode(buf, version=version, header=False)
        except Exception as exc:   # noqa: BLE001 - damaged bytes fail the codec in many ways: reported
            raise MetadataParseError(f"{name} v{version} cannot be read: {type(exc).__name__}: {exc}") from None
        data = fields_json(cls._struct, message, version)
    left = len(buf.read())
    if left:
        raise MetadataParseError(f"found {left} byte(s) of garbage after {name}")
    return MetadataRecord(type_id, name, version, data)


#: records without fields (their value is only the empty tagged-field section)
_NO_FIELDS = ("NoOpRecord", "EndTransactionRecord")


def _skip_tagged_fields(buf: io.BytesIO, name: str) -> None:
    for _ in range(_unsigned_varint(buf, f"{name}'s tagged-field count")):
        _unsigned_varint(buf, "tag")
        size = _unsigned_varint(buf, "tagged field's size")
        if len(buf.read(size)) < size:
            raise MetadataParseError(f"{name}: the value ends inside a tagged field")


def decode_control_record(type_id: int, value: bytes | None) -> tuple[str, int, dict]:
    """A KRaft control record's value (types 2-6) -> (schema name, version, fields as JSON)."""
    name, _ = CONTROL_SCHEMAS[type_id]
    if value is None or len(value) < 2:
        raise MetadataParseError(f"{name}: the value is too short")
    cls = message_class(name)
    version = min(max(struct.unpack_from(">h", value)[0], 0), cls.max_version)   # its first field is its version
    try:
        message = cls.decode(io.BytesIO(bytes(value)), version=version, header=False)
    except Exception as exc:   # noqa: BLE001 - damaged bytes can fail the codec in many ways: reported
        raise MetadataParseError(f"{name} cannot be read: {type(exc).__name__}: {exc}") from None
    return name, version, fields_json(cls._struct, message, version)


# --- Kafka's JSON ------------------------------------------------------------------------

def kafka_uuid(value) -> str:
    """A uuid as Kafka's ``Uuid.toString()`` prints it: its 16 bytes in base64url, without padding."""
    raw = value.bytes if isinstance(value, uuid.UUID) else bytes(16)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


def _default(field_json: dict):
    """The value a tagged field has when it is not written (Kafka's defaults for each type)."""
    default = field_json.get("default", "")
    kind = field_json["type"]
    if default == "null":
        return None
    if kind.startswith("[]"):
        return []
    if kind in ("int8", "int16", "int32", "int64", "uint16"):
        return int(default, 0) if default else 0
    if kind == "bool":
        return str(default).lower() == "true"
    if kind == "float64":
        return float(default) if default else 0.0
    if kind == "uuid":
        return ZERO_UUID_TEXT
    if kind == "string":
        return default
    return None


def _simple_json(kind: str, value):
    if kind == "uuid":
        return kafka_uuid(value)
    if kind in ("bytes", "records"):
        return None if value is None else base64.b64encode(bytes(value)).decode()
    if kind == "float64":
        return float(value)
    return value


def _value_json(field, value, version: int):
    kind = field._json["type"]
    if kind.startswith("[]"):
        if value is None:
            return None
        if "fields" in field._json:
            return [fields_json(field, item, version) for item in value]
        return [_simple_json(kind[2:], v) for v in value]
    if "fields" in field._json:
        return None if value is None else fields_json(field, value, version)
    return _simple_json(kind, value)


def fields_json(struct_field, message, version: int) -> dict:
    """The fields of ``message`` present in ``version``, as Kafka's generated ``*JsonConverter.write`` writes them:
    every untagged field; a tagged field only if it differs from its default."""
    out = {}
    for field in struct_field._fields:
        if not field.for_version_q(version):
            continue
        value = _value_json(field, getattr(message, field.name), version)
        if field.tagged_field_q(version) and value == _default(field._json):
            continue
        out[_camel(field._json.get("kafkaName", field._json["name"]))] = value
    return out


def _java_double(x: float) -> str:
    """A float64 as Java's ``Double.toString`` prints it (``1048576.0``, ``1.0E7``, ``1.0E-4``)."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(float(x))
    sign, digits, exp = Decimal(repr(float(x))).as_tuple()
    text = "".join(map(str, digits))
    exponent = len(text) + exp - 1
    text = text.rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{exponent}"


def _json_string(text: str) -> str:
    return re.sub(r"\\u00([0-9a-f]{2})", lambda m: "\\u00" + m.group(1).upper(),
                  json.dumps(text, ensure_ascii=False))


def java_json(obj) -> str:
    """Compact JSON as Jackson writes it (no spaces, non-ASCII kept, control characters as ``\\u00XX``)."""
    if obj is None:
        return "null"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    if isinstance(obj, float):
        return _java_double(obj)
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, str):
        return _json_string(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(f"{_json_string(k)}:{java_json(v)}" for k, v in obj.items()) + "}"
    return "[" + ",".join(java_json(v) for v in obj) + "]"


# --- the lines of kafka-dump-log.sh ---------------------------------------------------------

def payload_text(offset: int, value: bytes | None) -> str:
    """What ``--cluster-metadata-decoder`` prints after ``payload: `` for one record."""
    try:
        return decode_metadata_record(value).to_json()
    except MetadataParseError as exc:
        return f"Error at {offset}, skipping. {exc}"


def control_text(key: bytes | None, value: bytes | None) -> str:
    """The end of a control record's line, as Kafka 4.4's DumpLogSegments prints it (a leading space included):
    `` endTxnMarker: COMMIT coordinatorEpoch: 0``, `` LeaderChange: {...}``, `` SnapshotHeader {...}`` ..."""
    if key is None or len(key) < 4:
        return " controlType: UNKNOWN(-1)"
    _, type_id = struct.unpack_from(">hh", key)
    name = CONTROL_RECORD_TYPES.get(type_id, "UNKNOWN")
    if type_id in (0, 1) and value is not None and len(value) >= 6:
        _, coordinator_epoch = struct.unpack_from(">hi", value)
        return f" endTxnMarker: {name} coordinatorEpoch: {coordinator_epoch}"
    if type_id in CONTROL_SCHEMAS:
        label = CONTROL_SCHEMAS[type_id][1]
        try:
            _, _, data = decode_control_record(type_id, value)
        except MetadataParseError as exc:
            return f" {label} (cannot be read: {exc})"
        return f" {label} {java_json(data)}"
    return f" controlType: {name}({type_id})"
