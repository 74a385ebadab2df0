"""KIP-848's online migration, driven directly on a broker's coordinator: the error codes and epochs of classic
members inside a consumer group, the upgrade and the downgrade, and what a restart replays."""
from __future__ import annotations

import asyncio
import types
import uuid

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

import kafkalab
from kafkalab.broker.common.errors import ErrorCode as E

SESSION, REBALANCE = 6000, 5000


def subscription(topics, owned=()):
    s = ConsumerProtocolSubscription(version=1, topics=list(topics), user_data=None, owned_partitions=[
        ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=list(p)) for t, p in owned])
    return s.encode(version=1)


def assigned(blob: bytes) -> dict:
    a = ConsumerProtocolAssignment.decode(blob)
    return {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}


@pytest.fixture
def gb(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"group.initial.rebalance.delay.ms": 0,
                                                      "offsets.topic.num.partitions": 3,
                                                      "group.consumer.heartbeat.interval.ms": 500}) as b:
        b.call(b.server.admin_manager.create_topic, "t", 4)
        yield b


def run(b, coro, timeout=30):
    return asyncio.run_coroutine_threadsafe(coro, b._loop).result(timeout)


def coord(b):
    return b.server.group_coordinator


def classic_join(b, group, member_id="", topics=("t",), owned=()):
    first = run(b, coord(b).join_group(group, member_id, None, "classic", "127.0.0.1", REBALANCE, SESSION, "consumer",
                                       [("range", subscription(topics, owned))], require_known_member_id=True))
    if first["error_code"] == E.MEMBER_ID_REQUIRED:
        return classic_join(b, group, first["member_id"], topics, owned)
    return first


def consumer_heartbeat(b, group, member_id, epoch, topics=("t",), owned=None):
    r = types.SimpleNamespace(group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                              rebalance_timeout_ms=REBALANCE if epoch == 0 else -1, server_assignor=None,
                              subscribed_topic_names=list(topics) if epoch == 0 else None,
                              subscribed_topic_regex=None,
                              topic_partitions=[] if epoch == 0 else owned)
    return b.call(coord(b).consumer_group_heartbeat, r, 1, "new", "127.0.0.1")


def test_upgrade_classic_members_rejoin_and_downgrade(gb):
    # a classic group of one member, Stable with all four partitions
    j = classic_join(gb, "g")
    assert j["error_code"] == E.NONE and j["leader"] == j["member_id"]
    a, gen = j["member_id"], j["generation_id"]
    blob = ConsumerProtocolAssignment(version=0, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[0, 1, 2, 3])], user_data=None).encode(version=0)
    s = run(gb, coord(gb).sync_group("g", gen, a, None, "consumer", "range", {a: blob}))
    assert assigned(s["assignment"]) == {"t": [0, 1, 2, 3]}
    # a consumer-protocol member joins: the group is upgraded; it gets nothing a classic member still owns
    n = str(uuid.uuid4())
    h = consumer_heartbeat(gb, "g", n, 0)
    assert h["error_code"] == E.NONE, h
    assert gb.call(lambda: "g" in coord(gb).consumer_groups and not coord(gb).groups["g"].members)
    assert gb.call(lambda: coord(gb).consumer_groups["g"].members[a].uses_classic_protocol)
    # the classic member hears of it on its heartbeat, and rejoins: eager, it owns nothing any more
    assert gb.call(coord(gb).heartbeat, "g", a, None, gen) == E.REBALANCE_IN_PROGRESS
    assert gb.call(coord(gb).heartbeat, "g", a, None, gen + 5) == E.ILLEGAL_GENERATION
    j2 = classic_join(gb, "g", a)
    assert j2["error_code"] == E.NONE and j2["leader"] == "" and j2["generation_id"] > gen
    assert j2["protocol_name"] == "range" and j2["members"] == []
    assert run(gb, coord(gb).sync_group("g", j2["generation_id"], a, None, "consumer", "other", {}))["error_code"] \
        == E.INCONSISTENT_GROUP_PROTOCOL
    s2 = run(gb, coord(gb).sync_group("g", j2["generation_id"], a, None, "consumer", "range", {}))
    assert s2["error_code"] == E.NONE and len(assigned(s2["assignment"])["t"]) == 2
    assert gb.call(coord(gb).heartbeat, "g", a, None, j2["generation_id"]) == E.NONE
    # the consumer-protocol member gets the two partitions released
    h = consumer_heartbeat(gb, "g", n, h["member_epoch"], owned=[])
    assert h["error_code"] == E.NONE and sum(len(t["partitions"]) for t in h["assignment"]["topic_partitions"]) == 2
    # a classic member's commit uses its generation (the member epoch)
    assert gb.call(coord(gb).validate_consumer_group_commit, "g", a, j2["generation_id"], 8, []) == E.NONE
    assert gb.call(coord(gb).validate_consumer_group_commit, "g", a, j2["generation_id"] - 1, 8, []) \
        == E.ILLEGAL_GENERATION
    # the consumer-protocol member leaves: the group is classic again, Stable at the group epoch, then rebalances
    epoch = gb.call(lambda: coord(gb).consumer_groups["g"].group_epoch)
    assert consumer_heartbeat(gb, "g", n, -1)["error_code"] == E.NONE
    assert gb.call(lambda: "g" not in coord(gb).consumer_groups)
    group = gb.call(lambda: coord(gb).groups["g"])
    assert list(group.members) == [a] and group.protocol_type == "consumer" and group.generation_id == epoch
    assert str(group.state) == "PreparingRebalance"
    assert gb.call(coord(gb).heartbeat, "g", a, None, epoch) == E.REBALANCE_IN_PROGRESS
    j3 = classic_join(gb, "g", a)
    assert j3["error_code"] == E.NONE and j3["generation_id"] == epoch + 1 and j3["leader"] == a


def test_classic_leave_and_unknown_members(gb):
    n = str(uuid.uuid4())
    assert consumer_heartbeat(gb, "g", n, 0)["error_code"] == E.NONE
    j = classic_join(gb, "g")
    a = j["member_id"]
    assert a.startswith("classic-")   # the client id and a UUID, as Kafka 4.4 names it
    # a consumer-protocol member is not a classic one
    assert gb.call(coord(gb).heartbeat, "g", n, None, 1) == E.UNKNOWN_MEMBER_ID
    assert gb.call(coord(gb).heartbeat, "g", "nobody", None, 1) == E.UNKNOWN_MEMBER_ID
    # another protocol type cannot join
    other = run(gb, coord(gb).join_group("g", "", None, "x", "h", REBALANCE, SESSION, "connect", [("p", b"")], True))
    assert other["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    epoch = gb.call(lambda: coord(gb).consumer_groups["g"].group_epoch)
    assert gb.call(coord(gb).leave_group, "g", [(a, None), ("nobody", None)]) == (E.NONE, [E.NONE, E.UNKNOWN_MEMBER_ID])
    assert gb.call(lambda: coord(gb).consumer_groups["g"].group_epoch) == epoch + 1
    assert gb.call(lambda: list(coord(gb).consumer_groups["g"].members)) == [n]


def test_a_restart_keeps_classic_members(tmp_path):
    """The type-5 records with ClassicMemberMetadata are replayed: the classic member keeps its epoch and
    assignment, and heartbeats on at its generation."""
    d = str(tmp_path / "b")
    cfg = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 3}
    with kafkalab.mini(log_dir=d, **cfg) as b:
        b.call(b.server.admin_manager.create_topic, "t", 4)
        n = str(uuid.uuid4())
        assert consumer_heartbeat(b, "g", n, 0)["error_code"] == E.NONE
        j = classic_join(b, "g")
        a, gen = j["member_id"], j["generation_id"]
    with kafkalab.mini(log_dir=d, **cfg) as b:
        member = b.call(lambda: coord(b).consumer_groups["g"].members[a])
        assert member.uses_classic_protocol and member.classic.session_timeout_ms == SESSION
        assert member.member_epoch == gen
        assert b.call(coord(b).heartbeat, "g", a, None, gen) in (E.NONE, E.REBALANCE_IN_PROGRESS)


def test_a_static_classic_member_restarts_without_a_rebalance(gb):
    n = str(uuid.uuid4())
    assert consumer_heartbeat(gb, "g", n, 0)["error_code"] == E.NONE

    def static_join(member_id=""):
        return run(gb, coord(gb).join_group("g", member_id, "s1", "classic", "127.0.0.1", REBALANCE, SESSION,
                                            "consumer", [("range", subscription(["t"]))], require_known_member_id=True))
    first = static_join()
    assert first["error_code"] == E.NONE and first["member_id"].startswith("s1-")
    while True:   # let the two members settle (the consumer-protocol one releases what the static one gets)
        consumer_heartbeat(gb, "g", n, gb.call(lambda: coord(gb).consumer_groups["g"].members[n].member_epoch),
                               owned=[])
        if gb.call(coord(gb).heartbeat, "g", first["member_id"], "s1", first["generation_id"]) == E.NONE:
            break
        first = static_join(first["member_id"])
    before = gb.call(lambda: (coord(gb).consumer_groups["g"].group_epoch,
                              coord(gb).consumer_groups["g"].members[first["member_id"]].assigned_partitions))
    again = static_join()   # restarted: no member id, the same instance id
    assert again["error_code"] == E.NONE and again["member_id"] != first["member_id"]
    after = gb.call(lambda: (coord(gb).consumer_groups["g"].group_epoch,
                             coord(gb).consumer_groups["g"].members[again["member_id"]].assigned_partitions))
    assert after == before   # same group epoch, same partitions
    assert gb.call(coord(gb).heartbeat, "g", first["member_id"], "s1", first["generation_id"]) == E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("policy, upgraded, downgraded", [("upgrade", True, False), ("downgrade", False, True)])
def test_one_way_policies(tmp_path, policy, upgraded, downgraded):
    """``upgrade``: a consumer group whose last consumer-protocol member leaves stays a consumer group of classic
    members; ``downgrade``: a classic group with members is not upgraded (GROUP_ID_NOT_FOUND)."""
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"group.initial.rebalance.delay.ms": 0,
                                                      "offsets.topic.num.partitions": 3,
                                                      "group.consumer.migration.policy": policy}) as b:
        b.call(b.server.admin_manager.create_topic, "t", 4)
        classic_join(b, "up")
        h = consumer_heartbeat(b, "up", str(uuid.uuid4()), 0)
        assert (h["error_code"] == E.NONE) == upgraded, h
        if not upgraded:
            assert h["error_message"] == "Cannot upgrade classic group up to consumer group because online upgrade " \
                                         "is disabled."
        n = str(uuid.uuid4())
        assert consumer_heartbeat(b, "down", n, 0)["error_code"] == E.NONE
        assert classic_join(b, "down")["error_code"] == E.NONE   # only `disabled` refuses a classic member
        assert consumer_heartbeat(b, "down", n, -1)["error_code"] == E.NONE
        assert b.call(lambda: "down" not in coord(b).consumer_groups) == downgraded


@pytest.mark.parametrize("policy, downgraded", [("bidirectional", True), ("upgrade", False)])
def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades(tmp_path, policy, downgraded):
    """Kafka's ``validateOnlineDowngradeWithReplacedMemberId``: the static consumer-protocol member leaves as a
    static member does (epoch -2, it stays), then its instance id joins with the classic protocol: the group is
    classic at once, Stable at the group epoch, no rebalance, the new member holding the old one's partitions."""
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"group.initial.rebalance.delay.ms": 0,
                                                      "offsets.topic.num.partitions": 3,
                                                      "group.consumer.migration.policy": policy}) as b:
        b.call(b.server.admin_manager.create_topic, "t", 4)
        n = str(uuid.uuid4())

        def static_heartbeat(epoch, owned=None):
            r = types.SimpleNamespace(group_id="g", member_id=n, member_epoch=epoch, instance_id="s1", rack_id=None,
                                      rebalance_timeout_ms=REBALANCE if epoch == 0 else -1, server_assignor=None,
                                      subscribed_topic_names=["t"] if epoch == 0 else None,
                                      subscribed_topic_regex=None, topic_partitions=[] if epoch == 0 else owned)
            return b.call(coord(b).consumer_group_heartbeat, r, 1, "new", "127.0.0.1")
        h = static_heartbeat(0)
        assert h["error_code"] == E.NONE, h
        a = classic_join(b, "g")["member_id"]
        for _ in range(50):   # settle: the static member releases what the classic one is to get
            epoch = b.call(lambda: coord(b).consumer_groups["g"].members[n].member_epoch)
            h = static_heartbeat(epoch, owned=[types.SimpleNamespace(topic_id=t, partitions=sorted(p)) for t, p in
                                              b.call(lambda: coord(b).consumer_groups["g"].members[n]
                                                     .assigned_partitions.items())])
            classic_join(b, "g", a)
            if b.call(lambda: str(coord(b).consumer_groups["g"].state)) == "Stable":
                break
        held = b.call(lambda: {t: set(p) for t, p in coord(b).consumer_groups["g"].members[n]
                               .assigned_partitions.items()})
        group_epoch = b.call(lambda: coord(b).consumer_groups["g"].group_epoch)
        assert held and static_heartbeat(-2)["error_code"] == E.NONE   # a static member's leave: it stays
        new = run(b, coord(b).join_group("g", "", "s1", "classic", "127.0.0.1", REBALANCE, SESSION, "consumer",
                                         [("range", subscription(["t"]))], require_known_member_id=True))
        assert new["error_code"] == E.NONE and new["member_id"] != n, new
        assert b.call(lambda: "g" not in coord(b).consumer_groups) == downgraded
        if not downgraded:
            return
        group = b.call(lambda: coord(b).groups["g"])
        assert sorted(group.members) == sorted([a, new["member_id"]]) and str(group.state) == "Stable"
        assert group.generation_id == group_epoch == new["generation_id"] and group.static_members == {
            "s1": new["member_id"]}
        s = run(b, coord(b).sync_group("g", new["generation_id"], new["member_id"], "s1", "consumer", "range", {}))
        assert s["error_code"] == E.NONE, s
        names = b.call(lambda: {t: b.server.metadata_cache.by_id(t).name for t in held})
        assert assigned(s["assignment"]) == {names[t]: sorted(p) for t, p in held.items()}
        assert b.call(coord(b).heartbeat, "g", a, None, group_epoch) == E.NONE   # no rebalance for the other


def test_upgrade_refused_when_an_assignment_carries_user_data(gb):
    """Kafka 4.4's ``ConsumerGroup.fromClassicGroup``: a client-side assignor's user data would be lost."""
    j = classic_join(gb, "g")
    a, gen = j["member_id"], j["generation_id"]
    blob = ConsumerProtocolAssignment(version=0, assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic="t", partitions=[0, 1, 2, 3])],
        user_data=b"assignor state").encode(version=0)
    assert run(gb, coord(gb).sync_group("g", gen, a, None, "consumer", "range", {a: blob}))["error_code"] == E.NONE
    h = consumer_heartbeat(gb, "g", str(uuid.uuid4()), 0)
    assert (h["error_code"], h["error_message"]) == (E.GROUP_ID_NOT_FOUND, (
        "Cannot upgrade classic group g to consumer group because an unsupported custom assignor is in use. Please "
        "refer to the documentation or switch to a default assignor before re-attempting the upgrade."))
    assert gb.call(lambda: "g" not in coord(gb).consumer_groups and list(coord(gb).groups["g"].members) == [a])
    assert gb.call(coord(gb).heartbeat, "g", a, None, gen) == E.NONE   # the classic group goes on untouched
