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


@dataclass
class ClassicMemberMetadata:
    """What a member using the classic protocol inside a consumer group sent in its last JoinGroup
    (Kafka's ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``, KIP-848's online migration)."""
    session_timeout_ms: int
    supported_protocols: list[tuple[str, bytes]]   # (assignor name, ConsumerProtocolSubscription), preferred first


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
    #: set for a member that uses the classic protocol (JoinGroup, SyncGroup, Heartbeat); None for the others
    classic: ClassicMemberMetadata | None = None
    # timers (loop.call_later handles): session.timeout and the rebalance timeout of a revocation; a classic
    # member's join timeout (it must rejoin within its rebalance timeout once told REBALANCE_IN_PROGRESS) and
    # sync timeout (it must send SyncGroup within its rebalance timeout after its JoinGroup)
    session_handle: Any = None
    rebalance_handle: Any = None
    join_handle: Any = None
    sync_handle: Any = None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def assignment_epoch(self, topic_id, partition: int) -> int | None:
        """The epoch at which the member got the partition (assigned or pending revocation); None if it has not."""
        if partition in self.assigned_partitions.get(topic_id, ()) or \
                partition in self.partitions_pending_revocation.get(topic_id, ()):
            return self.assignment_epochs.get((topic_id, partition), self.member_epoch)
        return None

    def update_member_epoch(self, epoch: int) -> None:
        self.previous_member_epoch, self.member_epoch = self.member_epoch, epoch

    def cancel_timers(self) -> None:
        for h in (self.session_handle, self.rebalance_handle, self.join_handle, self.sync_handle):
            if h is not None:
                h.cancel()
        self.session_handle = self.rebalance_handle = self.join_handle = self.sync_handle = None


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
        #: regex subscriptions, resolved by the coordinator in the background (:mod:`.consumer_group_regex`):
        #: regex -> matching topic names, when they were last resolved (loop clock, ms), the topics seen then
        self.resolved_regexes: dict[str, set[str]] = {}
        self.regex_refreshed_ms = float("-inf")
        self.regex_topics_seen: set[str] = set()
        self.regex_refresh_pending = False

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

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.uses_classic_protocol]

    def supports_classic_protocols(self, protocol_type: str | None, protocols: list[str]) -> bool:
        """Kafka's ``ConsumerGroup.supportsClassicProtocols``: a classic member may join if it speaks the consumer
        protocol type and shares an assignor name with every classic member already in the group."""
        if protocol_type != "consumer":
            return False
        if self.is_empty():
            return bool(protocols)
        classic = self.classic_members()
        return any(all(name in (n for n, _ in m.classic.supported_protocols) for m in classic) for name in protocols)

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        """Kafka's ``allMembersUseClassicProtocolExcept``: the member uses the consumer protocol, the rest classic."""
        member = self.members.get(member_id)
        return (member is not None and not member.uses_classic_protocol
                and len(self.classic_members()) == len(self.members) - 1)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Kafka's ``waitingOnUnreleasedPartition``: a target partition of the member another member still owns."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, parts in self.target_assignment.get(member.member_id, {}).items():
            have = member.assigned_partitions.get(topic_id, set())
            if any(p not in have and self.current_partition_epoch(topic_id, p) != -1 for p in parts):
                return True
        return False

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
