"""The KIP-848 consumer group records (``__consumer_offsets`` record types 3-8): written, replayed, and read as
Apache Kafka 4.4 writes them (bytes captured from a 4.4 KRaft broker's ``__consumer_offsets``)."""
from __future__ import annotations

import uuid

from kafkalab.broker.coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState
from kafkalab.broker.coordinator.group.consumer_group_records import changes, decode, group_records, replay

TOPIC = uuid.UUID("c25df4ef-3848-4622-9327-7e3ff46c3d69")
MEMBER = "X+nwLCQjRWS6LmSTrVv5iw"
# captured from Kafka 4.4.0 (group "g1", a static member "static-1" subscribed to topic "t" of 3 partitions)
KAFKA_44 = {
    "member": ("0005000267310016582b6e774c43516a525753364c6d5354725676356977",
               "0000097374617469632d31000872646b61666b610b2f3132372e302e302e3102027401000493e00001000100"),
    "epoch": ("000300026731", "00000000000201000800172422f8df9b51"),
    "unrevoked": ("0008000267310016582b6e774c43516a525753364c6d5354725676356977",
                  "000000000002000000020102c25df4ef3848462293277e3ff46c3d690200000000010005020000000202c25df4ef"
                  "3848462293277e3ff46c3d6903000000010000000201000903000000020000000200"),
    "static_left": ("0008000267310016582b6e774c43516a525753364c6d5354725676356977",
                    "0000fffffffe000000040002c25df4ef3848462293277e3ff46c3d6903000000000000000101000903000000000000"
                    "00000100"),
}


def kafka(name):
    key, value = KAFKA_44[name]
    return bytes.fromhex(key), bytes.fromhex(value)


def test_reads_what_kafka_44_writes():
    kind, key, value = decode(*kafka("member"))
    assert (kind, key.group_id, key.member_id) == (5, "g1", MEMBER)
    assert (value.instance_id, value.client_id, value.subscribed_topic_names, value.rebalance_timeout_ms) == (
        "static-1", "rdkafka", ["t"], 300000)   # its tagged ClassicMemberMetadata (null) is skipped
    kind, key, value = decode(*kafka("epoch"))
    assert (kind, key.group_id, value.epoch) == (3, "g1", 2)
    assert value.metadata_hash != 0           # Kafka 4.1+ (KIP-1101): a hash of the subscribed topics' metadata
    kind, key, value = decode(*kafka("unrevoked"))
    assert (kind, value.member_epoch, value.previous_member_epoch, value.state) == (8, 2, 2, 1)
    assert [(t.topic_id, t.partitions) for t in value.assigned_partitions] == [(TOPIC, [0])]
    assert [(t.topic_id, t.partitions) for t in value.partitions_pending_revocation] == [(TOPIC, [1, 2])]
    # Kafka 4.4's tagged AssignmentEpochs: the epoch at which the member got each partition
    assert value.assigned_partitions[0].assignment_epochs == [2]
    assert value.partitions_pending_revocation[0].assignment_epochs == [2, 2]
    assert decode(kafka("epoch")[0], None)[2] is None   # a tombstone


def test_replays_kafka_44_records_into_a_group():
    records = dict([kafka("member"), kafka("epoch"), kafka("unrevoked")])
    group = replay("g1", records)
    member = group.members[MEMBER]
    assert group.group_epoch == 2 and member.instance_id == "static-1" and group.static_member("static-1") is member
    assert member.state == MemberState.UNREVOKED_PARTITIONS and member.subscribed_topic_regex is None
    assert member.partitions_pending_revocation == {TOPIC: {1, 2}}
    assert group.current_partition_epoch(TOPIC, 1) == 2
    assert member.assignment_epoch(TOPIC, 0) == 2 and member.assignment_epoch(TOPIC, 5) is None
    records = dict([kafka("member"), kafka("epoch"), kafka("static_left")])
    assert replay("g1", records).members[MEMBER].member_epoch == -2
    assert replay("g1", {kafka("member")[0]: kafka("member")[1]}) is None   # no group epoch record: no group


def sample_group() -> ConsumerGroup:
    g = ConsumerGroup("g")
    g.group_epoch = g.assignment_epoch = 4
    g.subscription_metadata = {"t": 3}
    for name, parts, pending in (("a", {0, 1}, {2}), ("b", set(), set())):
        m = ConsumerGroupMember(name, instance_id="i-" + name if name == "a" else None, subscribed_topic_names=["t"],
                                rebalance_timeout_ms=30000, member_epoch=4, previous_member_epoch=3,
                                state=MemberState.UNREVOKED_PARTITIONS if pending else MemberState.UNRELEASED_PARTITIONS,
                                assigned_partitions={TOPIC: parts}, partitions_pending_revocation={TOPIC: pending},
                                assignment_epochs={(TOPIC, p): 3 for p in parts})
        g.update_member(m)
    g.target_assignment = {"a": {TOPIC: {0, 1}}, "b": {TOPIC: {2}}}
    return g


def test_a_group_written_and_replayed_is_the_same_group():
    g = sample_group()
    back = replay("g", group_records(g, {"t": TOPIC}))
    assert (back.group_epoch, back.assignment_epoch, back.subscription_metadata) == (4, 4, {"t": 3})
    assert back.target_assignment == g.target_assignment
    for name, m in g.members.items():
        r = back.members[name]
        assert (r.member_epoch, r.previous_member_epoch, r.state, r.instance_id, r.rebalance_timeout_ms) == (
            m.member_epoch, m.previous_member_epoch, m.state, m.instance_id, m.rebalance_timeout_ms)
        assert {t: p for t, p in r.assigned_partitions.items() if p} == {t: p for t, p in m.assigned_partitions.items() if p}
        assert r.assignment_epochs == {(TOPIC, p): m.assignment_epoch(TOPIC, p)
                                       for p in m.assigned_partitions[TOPIC] | m.partitions_pending_revocation[TOPIC]}
    assert back.partition_epochs == g.partition_epochs and back.state == g.state


def test_only_what_changed_is_written_and_a_leaving_member_is_tombstoned_first():
    g = sample_group()
    before = group_records(g, {"t": TOPIC})
    assert changes(before, before) == []
    g.remove_member("b")
    g.group_epoch += 1
    written = changes(before, group_records(g, {"t": TOPIC}))
    kinds = [(decode(k, v)[0], v is None) for k, v in written]
    # member b's current assignment (8), target (7) and subscription (5) tombstoned, then the new group epoch (3)
    assert kinds == [(8, True), (7, True), (5, True), (3, False)]
    assert changes(before, {})[-3:] == [(k, None) for k in sorted(
        (k for k in before if decode(k, None)[0] in (3, 4, 6)), key=lambda k: -decode(k, None)[0])]


# captured from Kafka 4.4.0: a librdkafka consumer with group.protocol=classic inside consumer group "g1" (topic "t");
# its member id is the client id and a UUID, as a classic group names members
CLASSIC_MEMBER = "rdkafka-aba5b0c6-e05b-48a6-acff-84dde0ae3b00"
KAFKA_44_CLASSIC = (
    "000500026731002c72646b61666b612d61626135623063362d653035622d343861362d616366662d383464646530616533623030",
    "000000000872646b61666b610b2f3132372e302e302e3102027401000493e00001004a010000afc8030672616e67651800030000000100"
    "01740000000000000000ffffffff0000000b726f756e64726f62696e180003000000010001740000000000000000ffffffff00000000")


def test_reads_and_writes_a_classic_member_as_kafka_44():
    """KIP-848's online migration: a classic member's type-5 record carries ClassicMemberMetadata (tagged field 0);
    a consumer-protocol member's carries the tag with a null (the varint 0). Both written byte for byte as 4.4."""
    from kafkalab.broker.coordinator.group.consumer_group import ClassicMemberMetadata
    key, value = bytes.fromhex(KAFKA_44_CLASSIC[0]), bytes.fromhex(KAFKA_44_CLASSIC[1])
    group = replay("g1", {key: value, **dict([kafka("epoch")])})
    member = group.members[CLASSIC_MEMBER]
    assert member.uses_classic_protocol and member.classic.session_timeout_ms == 45000
    assert [n for n, _ in member.classic.supported_protocols] == ["range", "roundrobin"]
    assert group_records(group, {})[key] == value
    static = replay("g1", dict([kafka("member"), kafka("epoch")]))
    assert not static.members[MEMBER].uses_classic_protocol
    assert group_records(static, {})[kafka("member")[0]] == kafka("member")[1]
    member.classic = ClassicMemberMetadata(10000, [("cooperative-sticky", b"\x00\x03")])
    again = replay("g1", {key: group_records(group, {})[key], **dict([kafka("epoch")])})
    assert again.members[CLASSIC_MEMBER].classic == member.classic
