"""``kafka-dump-log.sh --offsets-decoder``: the records of ``__consumer_offsets`` as Kafka 3.9 prints them.

Kafka 3.9's ``DumpLogSegments.OffsetsMessageParser`` reads a record with the group coordinator's
``CoordinatorRecordSerde`` (the key's int16 version is the record type: 0 and 1 an offset commit, 2 a
group's metadata, 3 to 8 the KIP-848 consumer group records) and prints the key and the value as JSON
made by the generated ``*JsonConverter`` classes, compact, fields in schema order, camelCase names::

    key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
      payload: {"version":"3","data":{"offset":5,"leaderEpoch":0,"metadata":"","commitTimestamp":1700000000000}}
    key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":"consumer",...}}

(the type and the version are JSON strings, as Kafka's ``TextNode`` makes them). A tombstone's payload
is ``<DELETE>``. In a group's metadata of protocol type ``consumer``, each member's ``subscription``
and ``assignment`` bytes are decoded as ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``
(their int16 version first); bytes that do not decode stay as base64, as Jackson writes a ``BinaryNode``.
An unknown record type prints ``Unknown record type N at offset O, skipping.``, a record that does not
decode ``Error at offset O, skipping. <why>``.

Record types 0 to 2 are read with :mod:`kafkalab.broker.coordinator.group.offsets_topic`; types 3 to 8 with
kafkalab's schemas of them (:mod:`kafkalab.broker.coordinator.group.consumer_group_records`), which are
Kafka 4.0's: a tagged field Kafka 3.9 does not know (e.g. ``metadataHash``, Kafka 4.1) is printed when set.
"""
from __future__ import annotations

import base64
import io
import json
import struct
import uuid

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from ..broker.coordinator.group import offsets_topic as ot
from ..broker.coordinator.group.consumer_group_records import RECORD_TYPES


def _compact(node) -> str:
    """Jackson's ``ObjectNode.toString``: no spaces, non-ASCII characters as they are."""
    return json.dumps(node, separators=(",", ":"), ensure_ascii=False)


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode("ascii")


def _camel(name: str) -> str:
    """Kafka's ``FieldSpec.camelCaseName``: the schema's name with its first letter in lower case."""
    return name[:1].lower() + name[1:]


def _field_json(field, value, version: int):
    if value is None:
        return None
    if field.is_struct():
        return _struct_json(field, value, version)
    if field.is_struct_array():
        return [_struct_json(field, v, version) for v in value]
    if isinstance(value, (list, tuple)):
        return [_scalar_json(v) for v in value]
    return _scalar_json(value)


def _scalar_json(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _b64(value)
    if isinstance(value, uuid.UUID):    # Kafka's Uuid.toString: URL-safe base64 without padding
        return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")
    return value


def _struct_json(struct_field, obj, version: int) -> dict:
    """What a generated ``JsonConverter.write(obj, version)`` makes of a kafka-python ``ApiData`` value: the
    fields of ``version`` in schema order, a tagged field only when it is not its default."""
    node: dict[str, object] = {}
    for f in struct_field._fields:
        if not f.for_version_q(version):
            continue
        value = getattr(obj, f.name)
        if f.tagged_field_q(version) and value == f.default:
            continue
        node[_camel(f._name)] = _field_json(f, value, version)
    return node


def _offset_commit_value(value: bytes, version: int) -> dict:
    om = ot.decode_offset_commit_value(value)
    node: dict[str, object] = {"offset": om.offset}
    if version >= 3:
        node["leaderEpoch"] = om.leader_epoch
    node["metadata"] = om.metadata
    node["commitTimestamp"] = om.commit_timestamp
    if version == 1:
        node["expireTimestamp"] = om.expire_timestamp
    return node


def _embedded(data: bytes, cls):
    """A member's subscription or assignment as Kafka's ``replace`` decodes it; None to keep the bytes."""
    try:
        (version,) = struct.unpack_from(">h", data)
        if not 0 <= version <= cls.max_version:
            return None
        return _struct_json(cls._struct, cls.decode(bytes(data)), version)
    except Exception:   # noqa: BLE001 - Kafka swallows any RuntimeException here and keeps the bytes
        return None


def _group_metadata_value(value: bytes, version: int) -> dict:
    g = ot.decode_group_metadata_value(value)
    node: dict[str, object] = {"protocolType": g.protocol_type, "generation": g.generation,
                               "protocol": g.protocol, "leader": g.leader}
    if version >= 2:
        node["currentStateTimestamp"] = g.current_state_timestamp
    members = []
    for m in g.members:
        member: dict[str, object] = {"memberId": m.member_id}
        if version >= 3:
            member["groupInstanceId"] = m.group_instance_id
        member.update(clientId=m.client_id, clientHost=m.client_host)
        if version >= 1:
            member["rebalanceTimeout"] = m.rebalance_timeout
        member.update(sessionTimeout=m.session_timeout, subscription=_b64(m.subscription),
                      assignment=_b64(m.assignment))
        if g.protocol_type == "consumer":
            for name, data, cls in (("subscription", m.subscription, ConsumerProtocolSubscription),
                                    ("assignment", m.assignment, ConsumerProtocolAssignment)):
                decoded = _embedded(data, cls)
                if decoded is not None:
                    member[name] = decoded
        members.append(member)
    node["members"] = members
    return node


def _key_json(key: bytes, record_type: int) -> dict:
    if record_type in (0, 1, 2):
        k = ot.decode_key(key)
        if record_type == 2:
            return {"group": k.group}
        return {"group": k.group, "topic": k.topic, "partition": k.partition}
    cls = RECORD_TYPES[record_type][0]
    return _struct_json(cls._struct, cls.decode(io.BytesIO(key)), record_type)


def _value_json(value: bytes, record_type: int) -> tuple[int, dict]:
    (version,) = struct.unpack_from(">h", value)
    try:
        if record_type in (0, 1, 2):
            if not 0 <= version <= 4:    # OffsetCommitValue and GroupMetadataValue: versions 0-4 in Kafka 3.9
                raise ValueError("unsupported version")
            return version, (_offset_commit_value if record_type < 2 else _group_metadata_value)(value, version)
        cls = RECORD_TYPES[record_type][1]
        return version, _struct_json(cls._struct, cls.decode(io.BytesIO(value)), version)
    except Exception as exc:   # noqa: BLE001 - CoordinatorRecordSerde.readMessage's wording
        raise ValueError(f"Could not read record with version {version} from value's buffer due to: {exc}.") from exc


def parse(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """(key, payload) as ``OffsetsMessageParser.parse`` gives them; None is printed as nothing."""
    if key is None:   # Kafka throws here, which ends the dump
        return (f"Failed to decode message at offset {offset} using offset topic decoder (message had a missing key)",
                None)
    try:
        (record_type,) = struct.unpack_from(">h", key)
        if record_type not in (0, 1, 2) and record_type not in RECORD_TYPES:
            return f"Unknown record type {record_type} at offset {offset}, skipping.", None
        key_text = _compact({"type": str(record_type), "data": _key_json(key, record_type)})
        if value is None:
            return key_text, "<DELETE>"
        version, data = _value_json(value, record_type)
        return key_text, _compact({"version": str(version), "data": data})
    except Exception as exc:   # noqa: BLE001 - as Kafka: any failure is printed, the dump goes on
        return f"Error at offset {offset}, skipping. {exc}", None


def format_record(key: bytes | None, value: bytes | None, offset: int) -> str:
    """``key: ... payload: ...`` of a record line, as ``kafka-dump-log.sh --offsets-decoder`` prints it."""
    k, payload = parse(key, value, offset)
    return " ".join(part for part in ((f"key: {k}" if k is not None else None),
                                      (f"payload: {payload}" if payload is not None else None)) if part)


__all__ = ["parse", "format_record"]
