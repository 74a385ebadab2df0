"""GroupCoordinator's state machine and error codes, driven directly on a broker's loop.

Each test talks to the coordinator as the JoinGroup/SyncGroup/... handlers do, so
the error codes Kafka returns can be checked without a client library in between.
"""
from __future__ import annotations

import asyncio
import struct
import types

import pytest

import kafkalab
from kafkalab.broker.coordinator.group.offsets_topic import OFFSETS_TOPIC, GroupMetadataKey, OffsetAndMetadata, OffsetCommitKey, decode_key, decode_value, group_metadata_value, GroupMetadataValue, MemberRecord, java_string_hash, offset_commit_key, offset_commit_value, partition_for
from kafkalab.broker.common.errors import ErrorCode as E

SESSION, REBALANCE = 6000, 5000
PROTOCOLS = [("range", b"range-meta"), ("roundrobin", b"rr-meta")]


@pytest.fixture
def gb(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"group.initial.rebalance.delay.ms": 0,
                                                      "offsets.topic.num.partitions": 3,
                                                      "num.partitions": 2}) as b:
        b.call(b.server.admin_manager.create_topic, "t")
        yield b


def run(b, coro, timeout=30):
    return asyncio.run_coroutine_threadsafe(coro, b._loop).result(timeout)


def start(b, coro):
    """Start a coroutine that waits (a JoinGroup in a rebalance); returns a concurrent future."""
    return asyncio.run_coroutine_threadsafe(coro, b._loop)


def coord(b):
    return b.server.group_coordinator


def join(b, group, member_id="", instance_id=None, protocols=PROTOCOLS, session=SESSION, v4=True,
         protocol_type="consumer", client_id="c"):
    return coord(b).join_group(group, member_id, instance_id, client_id, "127.0.0.1", REBALANCE, session,
                               protocol_type, protocols, require_known_member_id=v4)


def join_new(b, group, **kw):
    """The KIP-394 dance: MEMBER_ID_REQUIRED, then join with the id given."""
    first = run(b, join(b, group, **kw))
    if first["error_code"] != E.MEMBER_ID_REQUIRED:
        return first
    return run(b, join(b, group, member_id=first["member_id"], **kw))


def sync(b, group, generation, member_id, assignments=None, instance_id=None):
    return run(b, coord(b).sync_group(group, generation, member_id, instance_id, None, None, assignments or {}))


def state(b, group):
    return b.call(lambda: str(coord(b).groups[group].state))


# --- the __consumer_offsets record layouts ----------------------------------------------------------

def test_java_string_hash_and_partition():
    assert java_string_hash("hello") == 99162322            # "hello".hashCode() in Java
    assert java_string_hash("polygenelubricants") == -2**31  # the famous Integer.MIN_VALUE hash
    assert partition_for("polygenelubricants", 50) == 0       # Utils.abs(MIN_VALUE) is 0
    assert partition_for("hello", 50) == 99162322 % 50
    assert java_string_hash("é€") == (31 * 0xE9 + 0x20AC)    # UTF-16 code units, not bytes


def test_offset_commit_record_layout():
    key = offset_commit_key("g", "t", 3)
    assert key == struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 3)
    value = offset_commit_value(OffsetAndMetadata(42, 7, "meta", 1000))
    assert value == struct.pack(">hqih", 3, 42, 7, 4) + b"meta" + struct.pack(">q", 1000)
    assert decode_key(key) == OffsetCommitKey("g", "t", 3)
    assert decode_value(decode_key(key), value) == OffsetAndMetadata(42, 7, "meta", 1000)
    assert decode_value(decode_key(key), None) is None  # tombstone


def test_group_metadata_record_roundtrip():
    v = GroupMetadataValue("consumer", 5, "range", "m1", 1234,
                           [MemberRecord("m1", "i1", "client", "/127.0.0.1", 300000, 45000, b"sub", b"asg")])
    key = struct.pack(">hh", 2, 1) + b"g"
    assert decode_key(key) == GroupMetadataKey("g")
    assert decode_value(GroupMetadataKey("g"), group_metadata_value(v)) == v


# --- joining ------------------------------------------------------------------------------------------

def test_first_join_needs_member_id_then_single_member_becomes_leader(gb):
    first = run(gb, join(gb, "g"))
    assert first["error_code"] == E.MEMBER_ID_REQUIRED and first["member_id"].startswith("c-")
    res = run(gb, join(gb, "g", member_id=first["member_id"]))
    assert res["error_code"] == E.NONE and res["generation_id"] == 1
    assert res["leader"] == res["member_id"] and res["protocol_name"] == "range"
    assert res["members"] == [{"member_id": res["member_id"], "group_instance_id": None, "metadata": b"range-meta"}]
    assert state(gb, "g") == "CompletingRebalance"
    out = sync(gb, "g", 1, res["member_id"], {res["member_id"]: b"assignment"})
    assert out["error_code"] == E.NONE and out["assignment"] == b"assignment"
    assert state(gb, "g") == "Stable"
    # before v4 there is no MEMBER_ID_REQUIRED round
    assert run(gb, join(gb, "g-old", v4=False))["error_code"] == E.NONE


def test_join_errors(gb):
    assert run(gb, join(gb, "g", session=1000))["error_code"] == E.INVALID_SESSION_TIMEOUT      # < group.min
    assert run(gb, join(gb, "g", session=3_600_000))["error_code"] == E.INVALID_SESSION_TIMEOUT  # > group.max
    assert run(gb, join(gb, ""))["error_code"] == E.INVALID_GROUP_ID
    assert run(gb, join(gb, "nope", member_id="ghost"))["error_code"] == E.UNKNOWN_MEMBER_ID
    leader = join_new(gb, "g")
    assert run(gb, join(gb, "g", member_id="ghost"))["error_code"] == E.UNKNOWN_MEMBER_ID
    assert run(gb, join(gb, "g", protocols=[("sticky", b"")]))["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert run(gb, join(gb, "g", protocol_type="connect"))["error_code"] == E.INCONSISTENT_GROUP_PROTOCOL
    assert leader["error_code"] == E.NONE


def test_second_member_triggers_rebalance_and_protocol_vote(gb):
    a = join_new(gb, "g")
    sync(gb, "g", 1, a["member_id"], {a["member_id"]: b"all"})
    # b prefers roundrobin but both support range and roundrobin: a votes range, b roundrobin -> a tie
    b_first = run(gb, join(gb, "g", protocols=[("roundrobin", b"rr-b"), ("range", b"range-b")]))
    b_join = start(gb, join(gb, "g", member_id=b_first["member_id"],
                            protocols=[("roundrobin", b"rr-b"), ("range", b"range-b")]))
    assert gb.call(coord(gb).heartbeat, "g", a["member_id"], None, 1) == E.REBALANCE_IN_PROGRESS
    assert sync(gb, "g", 1, a["member_id"])["error_code"] == E.REBALANCE_IN_PROGRESS
    a2 = run(gb, join(gb, "g", member_id=a["member_id"]))
    b2 = b_join.result(30)
    assert a2["generation_id"] == b2["generation_id"] == 2
    assert a2["leader"] == b2["leader"] == a["member_id"]
    assert len(a2["members"]) == 2 and b2["members"] == []
    assert a2["protocol_name"] in ("range", "roundrobin")
    assert gb.call(coord(gb).heartbeat, "g", a["member_id"], None, 1) == E.ILLEGAL_GENERATION
    follower = start(gb, coord(gb).sync_group("g", 2, b2["member_id"], None, None, None, {}))
    out = sync(gb, "g", 2, a["member_id"], {a["member_id"]: b"A", b2["member_id"]: b"B"})
    assert out["assignment"] == b"A" and follower.result(30)["assignment"] == b"B"
    assert gb.call(coord(gb).heartbeat, "g", b2["member_id"], None, 2) == E.NONE
    # b leaves: a must rejoin; a alone completes the rebalance
    assert gb.call(coord(gb).leave_group, "g", [(b2["member_id"], None)]) == (E.NONE, [E.NONE])
    assert state(gb, "g") == "PreparingRebalance"
    a3 = run(gb, join(gb, "g", member_id=a["member_id"]))
    assert a3["generation_id"] == 3 and [m["member_id"] for m in a3["members"]] == [a["member_id"]]
    assert gb.call(coord(gb).leave_group, "g", [("ghost", None)]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])


def test_static_member_rejoin_keeps_generation_and_fences_old_id(gb):
    a = join_new(gb, "g", instance_id="i-a")  # static members get no MEMBER_ID_REQUIRED round
    assert a["error_code"] == E.NONE and a["member_id"].startswith("i-a-")
    sync(gb, "g", 1, a["member_id"], {a["member_id"]: b"mine"})
    again = run(gb, join(gb, "g", instance_id="i-a"))    # restarted: no member id
    assert again["error_code"] == E.NONE and again["generation_id"] == 1
    assert again["member_id"] != a["member_id"]
    assert again["leader"] == a["member_id"]          # the old leader id: do not reassign
    assert state(gb, "g") == "Stable"
    out = sync(gb, "g", 1, again["member_id"], instance_id="i-a")
    assert out["assignment"] == b"mine"
    # the old process is a zombie now
    assert gb.call(coord(gb).heartbeat, "g", a["member_id"], "i-a", 1) == E.FENCED_INSTANCE_ID
    assert gb.call(coord(gb).commit_offsets, "g", 1, a["member_id"], "i-a",
                                    {("t", 0): OffsetAndMetadata(1)}) == {("t", 0): E.FENCED_INSTANCE_ID}
    assert gb.call(coord(gb).heartbeat, "g", again["member_id"], "i-a", 1) == E.NONE
    # an admin removes a static member by instance id alone
    assert gb.call(coord(gb).leave_group, "g", [("", "i-a")]) == (E.NONE, [E.NONE])
    assert b_members(gb, "g") == []


def b_members(b, group):
    return b.call(lambda: list(coord(b).groups[group].members))


# --- offsets -----------------------------------------------------------------------------------------

def test_offset_commit_rules(gb):
    c = coord(gb)
    om = {("t", 0): OffsetAndMetadata(10, -1, "m")}
    assert gb.call(c.commit_offsets, "none", 3, "x", None, om) == {("t", 0): E.ILLEGAL_GENERATION}
    assert gb.call(c.commit_offsets, "simple", -1, "", None, om) == {("t", 0): E.NONE}   # assign() + commit
    fetched = gb.call(c.fetch_offsets, "simple", [("t", 0), ("t", 1)])
    assert (fetched[("t", 0)].offset, fetched[("t", 0)].metadata, fetched[("t", 1)]) == (10, "m", None)
    a = join_new(gb, "g")
    assert gb.call(c.commit_offsets, "g", 1, a["member_id"], None, om) == {("t", 0): E.REBALANCE_IN_PROGRESS}
    sync(gb, "g", 1, a["member_id"], {})
    assert gb.call(c.commit_offsets, "g", 1, a["member_id"], None, om) == {("t", 0): E.NONE}
    assert gb.call(c.commit_offsets, "g", 0, a["member_id"], None, om) == {("t", 0): E.ILLEGAL_GENERATION}
    assert gb.call(c.commit_offsets, "g", 1, "ghost", None, om) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert gb.call(c.commit_offsets, "g", -1, "", None, om) == {("t", 0): E.UNKNOWN_MEMBER_ID}  # group has members
    big = {("t", 1): OffsetAndMetadata(1, -1, "x" * 5000)}
    assert gb.call(c.commit_offsets, "g", 1, a["member_id"], None, big) == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    # the member leaves: the group is Empty, the offsets stay, simple commits are allowed again
    gb.call(c.leave_group, "g", [(a["member_id"], None)])
    assert state(gb, "g") == "Empty"  # nobody left to wait for: the rebalance completes at once
    assert gb.call(c.fetch_offsets, "g", None)[("t", 0)].offset == 10
    assert gb.call(c.commit_offsets, "g", -1, "", None, {("t", 1): OffsetAndMetadata(5)}) == {("t", 1): E.NONE}


def test_offsets_and_groups_are_records_in_consumer_offsets(gb):
    c = coord(gb)
    a = join_new(gb, "g")
    sync(gb, "g", 1, a["member_id"], {a["member_id"]: b"A"})
    gb.call(c.commit_offsets, "g", 1, a["member_id"], None, {("t", 1): OffsetAndMetadata(7, 0, "hi", 99)})
    records = gb.call(lambda: [(decode_key(k), v) for k, v in c.manager.read_records()])
    decoded = [(k, decode_value(k, v)) for k, v in records]
    assert (OffsetCommitKey("g", "t", 1), OffsetAndMetadata(7, 0, "hi", 99)) in decoded
    groups = [v for k, v in decoded if k == GroupMetadataKey("g")]
    assert groups[-1].generation == 1 and groups[-1].members[0].assignment == b"A"
    topic = gb.call(lambda: gb.server.metadata_cache.get(OFFSETS_TOPIC))
    assert topic.is_internal and topic.num_partitions == 3
    assert gb.call(lambda: gb.server.log_config_for(topic).compact)
    # only the group's own partition holds its records
    part = partition_for("g", 3)
    logs = {i: gb.call(lambda i=i: gb.server.replica_manager.partitions[(OFFSETS_TOPIC, i)].log.log_end_offset)
            for i in range(3)}
    assert logs[part] >= 2 and all(n == 0 for i, n in logs.items() if i != part)


def test_groups_and_offsets_reload_after_restart(tmp_path):
    configs = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 2, "num.partitions": 2}
    with kafkalab.mini(log_dir=str(tmp_path / "r"), **configs) as b:
        b.call(b.server.admin_manager.create_topic, "t")
        a = join_new(b, "g")
        sync(b, "g", 1, a["member_id"], {a["member_id"]: b"A"})
        b.call(coord(b).commit_offsets, "g", 1, a["member_id"], None, {("t", 0): OffsetAndMetadata(3, -1, "x", 1)})
        b.call(coord(b).leave_group, "g", [(a["member_id"], None)])
        b.call(coord(b).commit_offsets, "simple", -1, "", None, {("t", 1): OffsetAndMetadata(9)})
        b.call(coord(b).commit_offsets, "gone", -1, "", None, {("t", 1): OffsetAndMetadata(9)})
        assert b.call(coord(b).delete_groups, ["gone"]) == {"gone": E.NONE}
        # the latest record per key wins: a later commit over an earlier one, a commit after a tombstone
        for offset in (1, 2):
            b.call(coord(b).commit_offsets, "again", -1, "", None, {("t", 0): OffsetAndMetadata(offset)})
        assert b.call(coord(b).delete_groups, ["again"]) == {"again": E.NONE}
        b.call(coord(b).commit_offsets, "again", -1, "", None, {("t", 1): OffsetAndMetadata(5)})
        b.call(coord(b).commit_offsets, "again", -1, "", None, {("t", 1): OffsetAndMetadata(6)})
    with kafkalab.mini(log_dir=str(tmp_path / "r"), **configs) as b:
        groups = b.call(lambda: {g: (str(m.state), m.generation_id, dict(m.offsets))
                                 for g, m in coord(b).groups.items()})
        assert groups["g"] == ("Empty", 2, {("t", 0): OffsetAndMetadata(3, -1, "x", 1)})
        assert groups["simple"][2][("t", 1)].offset == 9
        assert "gone" not in groups
        assert {tp: om.offset for tp, om in groups["again"][2].items()} == {("t", 1): 6}


def test_describe_list_delete(gb):
    c = coord(gb)
    a = join_new(gb, "g", client_id="cli")
    sync(gb, "g", 1, a["member_id"], {a["member_id"]: b"A"})
    d = gb.call(c.describe_group, "g")
    assert (d["group_state"], d["protocol_type"], d["protocol_data"]) == ("Stable", "consumer", "range")
    assert d["members"][0]["client_id"] == "cli" and d["members"][0]["member_assignment"] == b"A"
    assert d["members"][0]["member_metadata"] == b"range-meta"
    assert gb.call(c.describe_group, "nope") is None
    assert [g["group_id"] for g in gb.call(c.list_groups, ["stable"])] == ["g"]
    assert gb.call(c.list_groups, ["Empty"]) == []
    assert gb.call(c.delete_groups, ["g", "nope"]) == {"g": E.NON_EMPTY_GROUP, "nope": E.GROUP_ID_NOT_FOUND}
    gb.call(c.leave_group, "g", [(a["member_id"], None)])
    assert gb.call(c.delete_groups, ["g"]) == {"g": E.NONE}
    assert gb.call(c.describe_group, "g") is None


def test_group_max_size_counts_new_static_and_pending_members(tmp_path):
    configs = {"group.initial.rebalance.delay.ms": 0, "offsets.topic.num.partitions": 1, "group.max.size": 1}
    with kafkalab.mini(log_dir=str(tmp_path / "m"), **configs) as b:
        b.call(b.server.admin_manager.create_topic, "t")
        s = join_new(b, "static", instance_id="i-1")
        sync(b, "static", 1, s["member_id"], {s["member_id"]: b"A"})
        # a new member, static or not, would be the second one
        for instance_id in ("i-2", None):
            res = run(b, join(b, "static", instance_id=instance_id))
            assert (res["error_code"], res["member_id"]) == (E.GROUP_MAX_SIZE_REACHED, "")
        # a restarted static member takes over its own entry
        assert run(b, join(b, "static", instance_id="i-1"))["error_code"] == E.NONE
        # two member ids handed out (KIP-394) while the group was empty: the second to come back is refused
        # and forgotten, so no rebalance waits for it
        first, second = run(b, join(b, "d")), run(b, join(b, "d"))
        assert run(b, join(b, "d", member_id=first["member_id"]))["generation_id"] == 1
        res = run(b, join(b, "d", member_id=second["member_id"]))
        assert (res["error_code"], res["member_id"]) == (E.GROUP_MAX_SIZE_REACHED, "")
        assert b.call(lambda: dict(coord(b).groups["d"].pending_members)) == {}


def test_delete_groups_answers_a_group_named_twice_once(gb):
    from kafka.protocol.admin.groups import DeleteGroupsRequest

    from kafkalab.broker.apis.delete_groups import handle_delete_groups
    gb.call(coord(gb).commit_offsets, "x", -1, "", None, {("t", 0): OffsetAndMetadata(1)})
    ctx = types.SimpleNamespace(broker=gb.server, api_version=2)
    out = run(gb, handle_delete_groups(ctx, DeleteGroupsRequest(version=2, groups_names=["x", "nope", "x"])))
    assert out["results"] == [{"group_id": "x", "error_code": E.NONE},
                              {"group_id": "nope", "error_code": E.GROUP_ID_NOT_FOUND}]
