"""The KIP-848 consumer group records in ``__consumer_offsets``: how a consumer group survives its coordinator.

Kafka 4's group coordinator keeps a consumer group (:mod:`.consumer_group`) as six kinds of records in the
group's ``__consumer_offsets`` partition, beside the committed offsets. The key's int16 version is the
*record type*; every value is a flexible version 0 (schemas in :mod:`.schemas`, read and written by
kafka-python's ``ApiData``)::

    type  key                         value
    3     group                       ConsumerGroupMetadata: the group epoch
    4     group                       ConsumerGroupPartitionMetadata: subscribed topics' partition counts
    5     group, member               ConsumerGroupMemberMetadata: instance id, rack, client, subscription,
                                      rebalance timeout, server assignor; for a member using the classic
                                      protocol (online migration) its session timeout and JoinGroup protocols
    6     group                       ConsumerGroupTargetAssignmentMetadata: the target assignment epoch
    7     group, member               ConsumerGroupTargetAssignmentMember: the member's target partitions
    8     group, member               ConsumerGroupCurrentMemberAssignment: member epoch, previous epoch,
                                      state, assigned partitions, partitions pending revocation

A member leaving writes tombstones for its 8, 7 and 5 records (in that order) and a new 3; a group
that is deleted, tombstones for its 6, 4 and 3. The coordinator that loads the partition (after a
restart, or as the new leader in a cluster) replays them and gets the same group back: its epochs,
members and their assignments; members keep heartbeating with their epochs, without a rebalance.

Kafka writes the records of a heartbeat as the heartbeat's result (``CoordinatorResult``) and answers
once they are committed. Here :class:`ConsumerGroupPersister` compares the group with what it last
wrote and appends the records that changed, after the change is made in memory (a failed write is
retried with the next change). Since Kafka 4.1 (KIP-1101) the group epoch record carries a hash of the
subscribed topics' metadata instead of a type-4 record; kafkalab writes type 4 (as Kafka 4.0) and
reads both.
"""
from __future__ import annotations

import io
import logging
import struct

from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs import UnsignedVarInt32

from . import schemas
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState

log = logging.getLogger(__name__)


class ConsumerGroupMetadataKey(ApiData, load_json=schemas): pass
class ConsumerGroupMetadataValue(ApiData, load_json=schemas): pass
class ConsumerGroupPartitionMetadataKey(ApiData, load_json=schemas): pass
class ConsumerGroupPartitionMetadataValue(ApiData, load_json=schemas): pass
class ConsumerGroupMemberMetadataKey(ApiData, load_json=schemas): pass
class ConsumerGroupMemberMetadataValue(ApiData, load_json=schemas): pass
class ConsumerGroupTargetAssignmentMetadataKey(ApiData, load_json=schemas): pass
class ConsumerGroupTargetAssignmentMetadataValue(ApiData, load_json=schemas): pass
class ConsumerGroupTargetAssignmentMemberKey(ApiData, load_json=schemas): pass
class ConsumerGroupTargetAssignmentMemberValue(ApiData, load_json=schemas): pass
class ConsumerGroupCurrentMemberAssignmentKey(ApiData, load_json=schemas): pass
class ConsumerGroupCurrentMemberAssignmentValue(ApiData, load_json=schemas): pass


class ConsumerGroupClassicMemberMetadata(ApiData, load_json=schemas): pass


def with_classic_member_metadata(value: bytes, classic: ClassicMemberMetadata | None) -> bytes:
    """A type-5 value with its tagged field 0 as Kafka 4.4 writes it: always present, the varint 0 for a member of
    the consumer protocol, else the varint 1 and the ClassicMemberMetadata struct. ``value`` ends with an empty
    tagged-field section (one byte 0), which this replaces."""
    assert value[-1:] == b"\x00"
    payload = b"\x00" if classic is None else b"\x01" + ConsumerGroupClassicMemberMetadata(
        version=0, session_timeout_ms=classic.session_timeout_ms,
        supported_protocols=[ConsumerGroupClassicMemberMetadata.ClassicProtocol(name=n, metadata=bytes(meta))
                             for n, meta in classic.supported_protocols]).encode(version=0, header=False)
    return value[:-1] + UnsignedVarInt32.encode(1) + UnsignedVarInt32.encode(0) + \
        UnsignedVarInt32.encode(len(payload)) + payload


def classic_member_metadata(value) -> ClassicMemberMetadata | None:
    """The tagged field 0 of a decoded type-5 value (kafka-python keeps it raw, as an unknown tag)."""
    raw = (value.unknown_tags or {}).get("_0")
    if not raw or raw[0] == 0:
        return None
    c = ConsumerGroupClassicMemberMetadata.decode(io.BytesIO(bytes(raw[1:])), version=0, header=False)
    return ClassicMemberMetadata(c.session_timeout_ms, [(p.name, bytes(p.metadata)) for p in c.supported_protocols])


#: record type (the key's version) -> (key class, value class)
RECORD_TYPES = {
    3: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    7: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    8: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
}
#: the record types keyed by (group, member)
MEMBER_RECORD_TYPES = (5, 7, 8)
#: Kafka's ``MemberState`` bytes
STATE_BYTES = {MemberState.STABLE: 0, MemberState.UNREVOKED_PARTITIONS: 1, MemberState.UNRELEASED_PARTITIONS: 2,
               MemberState.UNKNOWN: 127}
STATES = {v: k for k, v in STATE_BYTES.items()}


def record_type(key: bytes) -> int:
    return struct.unpack_from(">h", key)[0]


def decode(key: bytes, value: bytes | None):
    """(record type, decoded key, decoded value or None for a tombstone) of a consumer group record."""
    kind = record_type(key)
    key_cls, value_cls = RECORD_TYPES[kind]
    k = key_cls.decode(io.BytesIO(key))
    v = None if value is None else value_cls.decode(io.BytesIO(value))
    return kind, k, v


def _key(kind: int, group_id: str, member_id: str | None = None) -> bytes:
    cls = RECORD_TYPES[kind][0]
    return (cls(version=kind, group_id=group_id) if member_id is None
            else cls(version=kind, group_id=group_id, member_id=member_id)).encode(version=kind)


def _value(kind: int, **fields) -> bytes:
    return RECORD_TYPES[kind][1](version=0, **fields).encode(version=0)


def _partitions(assignment, cls) -> list:
    return [cls(topic_id=t, partitions=sorted(p))
            for t, p in sorted(assignment.items(), key=lambda kv: str(kv[0])) if p]


def _with_epochs(member: ConsumerGroupMember, assignment, cls) -> list:
    return [cls(topic_id=t, partitions=sorted(p), assignment_epochs=[member.assignment_epoch(t, q) for q in sorted(p)])
            for t, p in sorted(assignment.items(), key=lambda kv: str(kv[0])) if p]


def group_records(group: ConsumerGroup, topic_ids: dict[str, object]) -> dict[bytes, bytes]:
    """Every record (key -> value) that describes ``group`` now, in Kafka's write order."""
    gid = group.group_id
    out: dict[bytes, bytes] = {}
    for m in group.members.values():
        out[_key(5, gid, m.member_id)] = with_classic_member_metadata(_value(
            5, instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex or "",   # Kafka 4.4 writes "" for no regex
            rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor), m.classic)
    tm = ConsumerGroupPartitionMetadataValue.TopicMetadata
    out[_key(4, gid)] = _value(4, topics=[tm(topic_id=topic_ids[name], topic_name=name, num_partitions=n,
                                             partition_metadata=[])
                                          for name, n in sorted(group.subscription_metadata.items())
                                          if name in topic_ids])
    out[_key(3, gid)] = _value(3, epoch=group.group_epoch)
    tp7 = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    for member_id, target in group.target_assignment.items():
        if member_id in group.members:
            out[_key(7, gid, member_id)] = _value(7, topic_partitions=_partitions(target, tp7))
    out[_key(6, gid)] = _value(6, assignment_epoch=group.assignment_epoch)
    tp8 = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    for m in group.members.values():
        out[_key(8, gid, m.member_id)] = _value(
            8, member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=STATE_BYTES[m.state],
            assigned_partitions=_with_epochs(m, m.assigned_partitions, tp8),
            partitions_pending_revocation=_with_epochs(m, m.partitions_pending_revocation, tp8))
    return out


def changes(before: dict[bytes, bytes], now: dict[bytes, bytes]) -> list[tuple[bytes, bytes | None]]:
    """The records to append to go from ``before`` to ``now``: tombstones of a member's records first
    (8, 7, 5 as Kafka's ``removeMember``), then the new or changed records; the group's own tombstones
    (6, 4, 3) when it is gone."""
    gone = [k for k in before if k not in now]
    gone.sort(key=lambda k: (record_type(k) not in MEMBER_RECORD_TYPES, -record_type(k)))
    return [(k, None) for k in gone] + [(k, v) for k, v in now.items() if before.get(k) != v]


class ConsumerGroupPersister:
    """What the coordinator last wrote for each consumer group, and the appends that bring it up to date."""

    def __init__(self, manager, broker):
        self.manager = manager
        self.broker = broker
        self.written: dict[str, dict[bytes, bytes]] = {}

    def _topic_ids(self, group: ConsumerGroup) -> dict[str, object]:
        out = {}
        for name in group.subscription_metadata:
            meta = self.broker.metadata_cache.get(name)
            if meta is not None:
                out[name] = meta.topic_id
        return out

    def persist(self, group: ConsumerGroup) -> None:
        now = group_records(group, self._topic_ids(group))
        self._write(group.group_id, now)

    def delete(self, group_id: str) -> None:
        """Tombstones for every record of the group (it is replaced by a classic group, or deleted)."""
        self._write(group_id, {})
        self.written.pop(group_id, None)

    def forget(self, group_id: str) -> None:
        """The group is unloaded (another broker coordinates it now): nothing is written."""
        self.written.pop(group_id, None)

    def loaded(self, group_id: str, records: dict[bytes, bytes]) -> None:
        self.written[group_id] = dict(records)

    def _write(self, group_id: str, now: dict[bytes, bytes]) -> None:
        before = self.written.get(group_id, {})
        records = changes(before, now)
        if not records:
            return
        try:
            self.manager._append(group_id, records)
        except Exception as exc:   # noqa: BLE001 - the next change writes what is still missing
            log.warning("group %s: writing %d consumer group records failed: %s", group_id, len(records), exc)
            return
        self.written[group_id] = now


def replay(group_id: str, records: dict[bytes, bytes]) -> ConsumerGroup | None:
    """The consumer group the latest records (key -> value, no tombstones) describe; None without a
    group epoch record (Kafka creates the group on the first record and drops it with the epoch's tombstone)."""
    decoded = {}
    for key, value in records.items():
        try:
            decoded[key] = decode(key, value)
        except Exception as exc:   # noqa: BLE001 - never fatal: the record is skipped
            log.warning("group %s: skipping unreadable consumer group record: %r", group_id, exc)
    epochs = [v for kind, _, v in decoded.values() if kind == 3]
    if not epochs:
        return None
    group = ConsumerGroup(group_id)
    group.group_epoch = epochs[0].epoch
    members: dict[str, ConsumerGroupMember] = {}
    for kind, k, v in decoded.values():
        if kind == 4:
            group.subscription_metadata = {t.topic_name: t.num_partitions for t in v.topics}
        elif kind == 6:
            group.assignment_epoch = v.assignment_epoch
        elif kind == 7:
            group.target_assignment[k.member_id] = {t.topic_id: set(t.partitions) for t in v.topic_partitions}
        elif kind in (5, 8):
            m = members.setdefault(k.member_id, ConsumerGroupMember(k.member_id))
            if kind == 5:
                m.instance_id, m.rack_id, m.client_id, m.client_host = (v.instance_id, v.rack_id, v.client_id,
                                                                        v.client_host)
                m.subscribed_topic_names = sorted(v.subscribed_topic_names)
                m.subscribed_topic_regex = v.subscribed_topic_regex or None   # Kafka 4.4 writes "" for none
                m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
                m.classic = classic_member_metadata(v)
            else:
                m.member_epoch, m.previous_member_epoch = v.member_epoch, v.previous_member_epoch
                m.state = STATES.get(v.state, MemberState.UNKNOWN)
                m.assigned_partitions = {t.topic_id: set(t.partitions) for t in v.assigned_partitions}
                m.partitions_pending_revocation = {t.topic_id: set(t.partitions)
                                                   for t in v.partitions_pending_revocation}
                for t in [*v.assigned_partitions, *v.partitions_pending_revocation]:
                    if t.assignment_epochs and len(t.assignment_epochs) == len(t.partitions):   # Kafka 4.4's
                        m.assignment_epochs.update({(t.topic_id, p): e
                                                    for p, e in zip(t.partitions, t.assignment_epochs)})
    for m in members.values():
        group.update_member(m)
    group.maybe_update_state()
    return group
