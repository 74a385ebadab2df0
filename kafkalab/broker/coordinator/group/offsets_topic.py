"""The record layouts of ``__consumer_offsets``, Kafka's internal compacted topic.

The group coordinator stores two kinds of records there, each keyed so that
log compaction keeps only the latest one per key (a record with a null
value, a *tombstone*, deletes the key):

* a committed offset, keyed by (group, topic, partition)
* a group's metadata (protocol, generation, leader, members and their
  assignments), keyed by group

Every key and value starts with an int16 *version* that says which schema
follows. These are Kafka's schemas (``OffsetCommitKey.json``,
``OffsetCommitValue.json``, ``GroupMetadataKey.json``,
``GroupMetadataValue.json`` in ``group-coordinator/src/main/resources``),
written with Kafka's primitive encodings — ``string``: int16 length + UTF-8
(-1 for null), ``bytes``: int32 length + data, arrays: int32 count::

    OffsetCommitKey (version 1)      group: string, topic: string, partition: int32
    OffsetCommitValue (version 3)    offset: int64, leader_epoch: int32,
                                     metadata: string, commit_timestamp: int64
    GroupMetadataKey (version 2)     group: string
    GroupMetadataValue (version 3)   protocol_type: string, generation: int32,
                                     protocol: nullable string, leader: nullable string,
                                     current_state_timestamp: int64,
                                     members: [member_id: string, group_instance_id: nullable string,
                                               client_id: string, client_host: string,
                                               rebalance_timeout: int32, session_timeout: int32,
                                               subscription: bytes, assignment: bytes]

Key versions 0 and 1 are both offset commits (0 was written by very old
brokers) and 2 is group metadata; newer Kafka versions also write
OffsetCommitValue v4 and GroupMetadataValue v4 (flexible, with tagged
fields), which this module reads but never writes. kafka-python has no codec
for these (they are not API messages), so they are encoded here with
``struct`` — a student can dump ``__consumer_offsets`` with
:func:`decode_key`/:func:`decode_value` and see exactly what Kafka stores.

Which partition holds a group? ``partition_for(group_id, n)`` is Kafka's
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` with Java's
``String.hashCode``; the leader of that partition is the group's coordinator.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


# -- which partition ----------------------------------------------------------

def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()``: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed int32."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``Utils.abs`` maps MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


# -- the records ----------------------------------------------------------------

@dataclass
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass
class GroupMetadataKey:
    group: str


@dataclass
class OffsetAndMetadata:
    """A committed offset (OffsetCommitValue)."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None  # only in value versions 1 (old)


@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


# -- primitive encoders ---------------------------------------------------------

def _string(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    data = s.encode("utf-8")
    return struct.pack(">h", len(data)) + data


def _bytes(b: bytes | None) -> bytes:
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + bytes(b)


class _Reader:
    def __init__(self, data: bytes, flexible: bool = False):
        self.data = memoryview(data)
        self.pos = 0
        self.flexible = flexible  # compact strings/bytes/arrays (varint length + 1)

    def _unpack(self, fmt: str):
        (v,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return v

    def int16(self) -> int:
        return self._unpack(">h")

    def int32(self) -> int:
        return self._unpack(">i")

    def int64(self) -> int:
        return self._unpack(">q")

    def _length(self, fmt: str) -> int:
        if self.flexible:
            n, self.pos = decode_varint_unsigned(self.data, self.pos)
            return n - 1
        return self._unpack(fmt)

    def string(self) -> str | None:
        n = self._length(">h")
        if n < 0:
            return None
        s = bytes(self.data[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def bytes(self) -> bytes | None:
        n = self._length(">i")
        if n < 0:
            return None
        b = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return b

    def array_length(self) -> int:
        return self._length(">i")

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        count, self.pos = decode_varint_unsigned(self.data, self.pos)
        for _ in range(count):
            _tag, self.pos = decode_varint_unsigned(self.data, self.pos)
            size, self.pos = decode_varint_unsigned(self.data, self.pos)
            self.pos += size


def decode_varint_unsigned(buf, pos: int) -> tuple[int, int]:
    """An unsigned varint (the lengths of flexible versions), not zig-zag like record varints."""
    value, shift = 0, 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


# -- keys -----------------------------------------------------------------------

def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", OFFSET_COMMIT_KEY_VERSION) + _string(group) + _string(topic) + struct.pack(">i", partition)


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _string(group)


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key of a ``__consumer_offsets`` record; None for kinds the group coordinator does not use."""
    r = _Reader(data)
    version = r.int16()
    if version in (0, 1):
        return OffsetCommitKey(r.string(), r.string(), r.int32())
    if version == 2:
        return GroupMetadataKey(r.string())
    return None  # e.g. version 3+ keys of the consumer-group (KIP-848) records


# -- values ---------------------------------------------------------------------

def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    return (struct.pack(">hqi", OFFSET_COMMIT_VALUE_VERSION, om.offset, om.leader_epoch)
            + _string(om.metadata or "") + struct.pack(">q", om.commit_timestamp))


def decode_offset_commit_value(data: bytes) -> OffsetAndMetadata:
    r = _Reader(data)
    version = r.int16()
    r.flexible = version >= 4
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.string() or ""
    commit_ts = r.int64()
    expire = r.int64() if version == 1 else None
    return OffsetAndMetadata(offset, epoch, metadata, commit_ts, expire)


def group_metadata_value(g: GroupMetadataValue) -> bytes:
    out = bytearray(struct.pack(">h", GROUP_METADATA_VALUE_VERSION))
    out += _string(g.protocol_type or "")
    out += struct.pack(">i", g.generation)
    out += _string(g.protocol)
    out += _string(g.leader)
    out += struct.pack(">q", g.current_state_timestamp)
    out += struct.pack(">i", len(g.members))
    for m in g.members:
        out += _string(m.member_id) + _string(m.group_instance_id) + _string(m.client_id) + _string(m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout, m.session_timeout)
        out += _bytes(m.subscription) + _bytes(m.assignment)
    return bytes(out)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data)
    version = r.int16()
    r.flexible = version >= 4
    protocol_type = r.string() or ""
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    state_ts = r.int64() if version >= 2 else -1
    members = []
    for _ in range(r.array_length()):
        member_id = r.string()
        instance_id = r.string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription = r.bytes() or b""
        assignment = r.bytes() or b""
        r.skip_tagged_fields()
        members.append(MemberRecord(member_id, instance_id, client_id, client_host,
                                    rebalance_timeout if rebalance_timeout >= 0 else session_timeout,
                                    session_timeout, subscription, assignment))
    return GroupMetadataValue(protocol_type, generation, protocol, leader, state_ts, members)


def decode_value(key, data: bytes | None):
    """Decode the value that belongs with ``key``; None for a tombstone."""
    if data is None:
        return None
    if isinstance(key, OffsetCommitKey):
        return decode_offset_commit_value(data)
    if isinstance(key, GroupMetadataKey):
        return decode_group_metadata_value(data)
    return None


__all__ = [
    "OFFSETS_TOPIC", "partition_for", "java_string_hash", "OffsetCommitKey", "GroupMetadataKey",
    "OffsetAndMetadata", "MemberRecord", "GroupMetadataValue", "offset_commit_key", "group_metadata_key",
    "offset_commit_value", "group_metadata_value", "decode_key", "decode_value",
]
