"""KIP-848 on the coordinator, without a socket: the server-side assignors and CurrentAssignmentBuilder."""
from __future__ import annotations

import uuid

import pytest

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.coordinator.group import current_assignment_builder
from kafkalab.broker.coordinator.group.assignors import range_, uniform
from kafkalab.broker.coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(assignment):
    return {m: sum(len(p) for p in a.values()) for m, a in assignment.items()}


def every_partition_once(assignment, topics):
    owned = [(t, p) for a in assignment.values() for t, ps in a.items() for p in ps]
    assert sorted(owned) == sorted((tid, p) for tid, n in topics.values() for p in range(n))


def test_uniform_is_balanced_and_sticky():
    topics = {"a": (T1, 7), "b": (T2, 5)}
    subs = {"m1": {"a", "b"}, "m2": {"a", "b"}}
    first = uniform(subs, topics, {})
    every_partition_once(first, topics)
    assert sorted(counts(first).values()) == [6, 6]
    subs["m3"] = {"a", "b"}
    second = uniform(subs, topics, first)
    every_partition_once(second, topics)
    assert sorted(counts(second).values()) == [4, 4, 4]
    for m in ("m1", "m2"):  # m1 and m2 only give partitions away, to m3
        assert all(ps <= first[m].get(t, set()) for t, ps in second[m].items())


def test_uniform_heterogeneous_subscriptions_only_assign_subscribed_topics():
    topics = {"a": (T1, 4), "b": (T2, 4)}
    out = uniform({"m1": {"a"}, "m2": {"a", "b"}}, topics, {})
    every_partition_once(out, topics)
    assert T2 not in out["m1"]


def test_range_gives_contiguous_ranges_per_topic():
    out = range_({"m2": {"a"}, "m1": {"a"}}, {"a": (T1, 5)}, {})
    assert out == {"m1": {T1: {0, 1, 2}}, "m2": {T1: {3, 4}}}


def member(mid, epoch, assigned, state=MemberState.STABLE):
    return ConsumerGroupMember(mid, member_epoch=epoch, previous_member_epoch=epoch - 1, state=state,
                               assigned_partitions=assigned)


def test_revoke_before_assign_and_unreleased_partitions():
    group = ConsumerGroup("g")
    a = member("a", 1, {T1: {0, 1, 2, 3}})
    group.update_member(a)
    # the target (epoch 2) moves 2 and 3 to b: a must revoke them first, and stays at epoch 1
    a2 = current_assignment_builder.build(a, 2, {T1: {0, 1}}, group.current_partition_epoch, {T1: {0, 1, 2, 3}})
    assert (a2.state, a2.member_epoch, a2.assigned_partitions, a2.partitions_pending_revocation) == \
        (MemberState.UNREVOKED_PARTITIONS, 1, {T1: {0, 1}}, {T1: {2, 3}})
    group.update_member(a2)
    # b, new at epoch 2, gets nothing a still owns: UNRELEASED_PARTITIONS
    b = member("b", 0, {})
    b2 = current_assignment_builder.build(b, 2, {T1: {2, 3}}, group.current_partition_epoch, {})
    assert (b2.state, b2.member_epoch, b2.assigned_partitions) == (MemberState.UNRELEASED_PARTITIONS, 2, {})
    group.update_member(b2)
    # a heartbeats without 2 and 3: it moves to epoch 2, and the partitions are free
    a3 = current_assignment_builder.build(a2, 2, {T1: {0, 1}}, group.current_partition_epoch, {T1: {0, 1}})
    assert (a3.state, a3.member_epoch, a3.partitions_pending_revocation) == (MemberState.STABLE, 2, {})
    group.update_member(a3)
    b3 = current_assignment_builder.build(b2, 2, {T1: {2, 3}}, group.current_partition_epoch, {})
    assert (b3.state, b3.assigned_partitions) == (MemberState.STABLE, {T1: {2, 3}})


def test_a_member_in_an_unknown_state_owning_partitions_is_fenced():
    m = member("m", 1, {T1: {0}}, state=MemberState.UNKNOWN)
    with pytest.raises(KafkaError) as exc:
        current_assignment_builder.build(m, 2, {T1: {0}}, lambda t, p: -1, {T1: {0}})
    assert exc.value.code == ErrorCode.FENCED_MEMBER_EPOCH
