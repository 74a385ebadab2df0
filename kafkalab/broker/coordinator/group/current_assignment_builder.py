"""``CurrentAssignmentBuilder``: one member's step towards its target assignment (KIP-848's reconciliation).

Modelled on Kafka 4.x's ``modern.consumer.CurrentAssignmentBuilder``. Given a
member, its target assignment at the target assignment epoch and the partitions
the member says it owns, :func:`build` returns the member's next state:

* partitions the target takes away must be **revoked first**: the member stays
  at its epoch in UNREVOKED_PARTITIONS, is told only the partitions it keeps,
  and moves on once a heartbeat shows it no longer owns the revoked ones;
* partitions the target gives it that another member still owns (assigned or
  pending revocation there) are held back: the member is UNRELEASED_PARTITIONS
  and gets them on a later heartbeat, once they are free;
* otherwise the member is STABLE at the target assignment epoch.

A member in an unknown state that still owns partitions is fenced
(FENCED_MEMBER_EPOCH). So no partition is ever owned by two members.
"""
from __future__ import annotations

import copy
from typing import Callable

from ...common.errors import ErrorCode, KafkaError
from .consumer_group import Assignment, ConsumerGroupMember, MemberState


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Kafka's ``ownsRevokedPartitions``: does the member (by its heartbeat) still own any of ``partitions``?
    A heartbeat without owned partitions (null: unchanged) counts as still owning them."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, parts in owned.items() for p in parts)


def build(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
          current_partition_epoch: Callable[[object, int], int],
          owned: Assignment | None) -> ConsumerGroupMember:
    """The member's next state (a copy when it changes; the member itself when not)."""
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, current_partition_epoch, owned)
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, target_epoch, target, current_partition_epoch, owned)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, current_partition_epoch, owned)
    if owned is None or any(owned.values()):
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                         "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, current_partition_epoch, owned)


def _next(member, member_epoch, target_epoch, target, current_partition_epoch, owned) -> ConsumerGroupMember:
    """Kafka's ``computeNextAssignment``."""
    unreleased = False
    assigned: Assignment = {}
    revoking: Assignment = {}
    pending: Assignment = {}
    for topic_id in set(target) | set(member.assigned_partitions):
        want = target.get(topic_id, set())
        have = member.assigned_partitions.get(topic_id, set())
        keep = have & want
        revoke = have - keep
        add = want - keep
        blocked = {p for p in add if current_partition_epoch(topic_id, p) != -1}
        if blocked:
            unreleased = True
            add -= blocked
        if keep:
            assigned[topic_id] = set(keep)
        if revoke:
            revoking[topic_id] = revoke
        if add:
            pending[topic_id] = add
    new = copy.copy(member)
    new.session_handle = member.session_handle
    if revoking and _owns_any(owned, revoking):
        new.state = MemberState.UNREVOKED_PARTITIONS
        new.update_member_epoch(member_epoch)
        new.assigned_partitions = assigned
        new.partitions_pending_revocation = revoking
        new.assignment_epochs = _assignment_epochs(member, new)
        return new
    for topic_id, parts in pending.items():
        assigned.setdefault(topic_id, set()).update(parts)
    new.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    new.update_member_epoch(target_epoch)
    new.assigned_partitions = assigned
    new.partitions_pending_revocation = {}
    new.assignment_epochs = _assignment_epochs(member, new)
    return new


def _assignment_epochs(old: ConsumerGroupMember, new: ConsumerGroupMember) -> dict:
    """A partition the member keeps keeps the epoch it was assigned at; a new one gets the member's new epoch."""
    out = {}
    for assignment in (new.assigned_partitions, new.partitions_pending_revocation):
        for topic_id, parts in assignment.items():
            for p in parts:
                before = old.assignment_epoch(topic_id, p)
                out[(topic_id, p)] = before if before is not None else new.member_epoch
    return out
