"""``ConsumerGroup`` and ``ConsumerGroupMember``: a group of the KIP-848 consumer protocol.

Modelled on Kafka 4.x's ``org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroup``,
``ConsumerGroupMember`` and ``modern.MemberState``. Three epochs drive the protocol:

* the **group epoch** goes up whenever what the assignment depends on changes: a
  member joins or leaves, a subscription changes, a subscribed topic gains partitions;
* the **target assignment epoch** is the group epoch the target assignment (what
  the server-side assignor computed, :mod:`.assignors`) was computed for;
* each member's **member epoch** is the target assignment epoch it has reconciled to
  (:mod:`.current_assignment_builder`): a member revokes the partitions the target
  takes away before it moves to the new epoch, and gets a partition only once its
  previous owner has released it.

The group's state follows (``ConsumerGroup.maybeUpdateGroupState``): Empty (no
members), Assigning (group epoch > target assignment epoch), Reconciling (some
member is not at the target assignment epoch, or not STABLE), Stable.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

#: member epochs with a meaning of their own in ConsumerGroupHeartbeat (Kafka's ConsumerGroupHeartbeatRequest)
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = dict[Any, set[int]]  # topic id -> partitions


class ConsumerGroupState(str, enum.Enum):
    """Kafka's ``ConsumerGroup.ConsumerGroupState`` (its toString is what ListGroups and describes show)."""
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


class MemberState(str, enum.Enum):
    """Kafka's ``modern.MemberState``: where a member is in its reconciliation."""
    STABLE = "stable"                                  # has its whole target assignment
    UNREVOKED_PARTITIONS = "unrevoked_partitions"      # must revoke partitions first
    UNRELEASED_PARTITIONS = "unreleased_partitions"    # waits for partitions other members still own
    UNKNOWN = "unknown"


@dataclass
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = -1
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    #: (topic id, partition) -> the member epoch at which the member got it (Kafka 4.4: an OffsetCommit with an
    #: older member epoch is accepted for partitions the member has held since that epoch)
    assignment_epochs: dict = field(default_factory=dict)
    # timers (loop.call_later handles): session.timeout and the rebalance timeout of a revocation
    session_handle: Any = None
    rebalance_handle: Any = None

    def assignment_epoch(self, topic_id, partition: int) -> int | None:
        """The epoch at which the member got the partition (assigned or pending revocation); None if it has not."""
        if partition in self.assigned_partitions.get(topic_id, ()) or \
                partition in self.partitions_pending_revocation.get(topic_id, ()):
            return self.assignment_epochs.get((topic_id, partition), self.member_epoch)
        return None

    def update_member_epoch(self, epoch: int) -> None:
        self.previous_member_epoch, self.member_epoch = self.member_epoch, epoch

    def cancel_timers(self) -> None:
        for h in (self.session_handle, self.rebalance_handle):
            if h is not None:
                h.cancel()
        self.session_handle = self.rebalance_handle = None


class ConsumerGroup:
    """One group of ``group.protocol=consumer`` members (Kafka's ``ConsumerGroup``)."""

    group_type = "consumer"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0            # the target assignment epoch
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}       # instance id -> member id
        self.target_assignment: dict[str, Assignment] = {}
        #: (topic id, partition) -> epoch of the member that owns it (assigned or pending revocation)
        self.partition_epochs: dict[tuple[Any, int], int] = {}
        #: topic name -> partition count the last target assignment saw (a change bumps the group epoch)
        self.subscription_metadata: dict[str, int] = {}
        self.assignor_name: str | None = None
        self.state = ConsumerGroupState.EMPTY

    # -- members ------------------------------------------------------------------------

    def update_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._remove_partition_epochs(old)
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self._add_partition_epochs(member)
        self.maybe_update_state()

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._remove_partition_epochs(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target_assignment.pop(member_id, None)
        member.cancel_timers()
        self.maybe_update_state()
        return member

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return self.members.get(member_id) if member_id is not None else None

    def current_partition_epoch(self, topic_id, partition: int) -> int:
        """The epoch of the member owning the partition, -1 if nobody does (it may be assigned)."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def _add_partition_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, parts in assignment.items():
                for p in parts:
                    self.partition_epochs[(topic_id, p)] = member.member_epoch

    def _remove_partition_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned_partitions, member.partitions_pending_revocation):
            for topic_id, parts in assignment.items():
                for p in parts:
                    self.partition_epochs.pop((topic_id, p), None)

    # -- subscriptions and state ---------------------------------------------------------

    def subscribed_topic_names(self) -> set[str]:
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
        return names

    def is_empty(self) -> bool:
        return not self.members

    def maybe_update_state(self) -> None:
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        elif any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE
                 for m in self.members.values()):
            self.state = ConsumerGroupState.RECONCILING
        else:
            self.state = ConsumerGroupState.STABLE
