"""``GroupMetadata`` and ``MemberMetadata``: one consumer group's state (the classic protocol).

Kafka's ``kafka.coordinator.group.GroupMetadata`` keeps a group's state
machine, its members, the generation and the selected protocol. The states
and the moves between them::

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
      ▲                ▲       │                                              │ leader's SyncGroup
      │                │       └──no member left──▶ Empty                     ▼
      │                └──────── join, leave, session timeout ───────────── Stable
      └─ every member gone                                       (DeleteGroups / expiry ─▶ Dead)

* **Empty**: no members (maybe committed offsets).
* **PreparingRebalance**: a join, leave or timeout started a rebalance; the
  coordinator waits (up to the rebalance timeout, ``max.poll.interval.ms``)
  for every member to send JoinGroup again.
* **CompletingRebalance**: the new generation exists; the coordinator waits
  for the leader's SyncGroup carrying the assignment.
* **Stable**: every member has its assignment and heartbeats.
* **Dead**: the group is gone (deleted, or its metadata moved away).

The coordinator never computes an assignment: the *leader* (the first member
to join) gets every member's subscription in its JoinGroup response, runs the
client-side assignor (range, round-robin, sticky, cooperative-sticky) and
sends the result in SyncGroup. The broker only picks a protocol (assignor)
every member supports and relays bytes.
"""
from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass, field

from .offsets_topic import OffsetAndMetadata


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


#: Kafka's GroupMetadata.validPreviousStates
VALID_PREVIOUS_STATES = {
    GroupState.DEAD: {GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                      GroupState.EMPTY, GroupState.DEAD},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class MemberMetadata:
    """One member of a group (Kafka's ``MemberMetadata``)."""

    member_id: str
    group_instance_id: str | None      # group.instance.id of a static member (KIP-345)
    client_id: str
    client_host: str
    rebalance_timeout_ms: int           # max.poll.interval.ms
    session_timeout_ms: int             # session.timeout.ms
    protocol_type: str                  # "consumer" for consumers
    supported_protocols: list[tuple[str, bytes]]  # (assignor name, subscription), in preference order
    assignment: bytes = b""
    join_future: asyncio.Future | None = None   # a JoinGroup waiting for the rebalance
    sync_future: asyncio.Future | None = None   # a SyncGroup waiting for the leader
    heartbeat_handle: asyncio.TimerHandle | None = field(default=None, repr=False)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None and not self.join_future.done()

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None and not self.sync_future.done()

    def protocols(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols with the same metadata, in the same order (a rejoin that changes nothing)."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.supported_protocols]

    def vote(self, candidates: set[str]) -> str:
        """The first protocol this member prefers among ``candidates``."""
        for name in self.protocols():
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {candidates}")


class GroupMetadata:
    """One group: state, generation, protocol, leader, members, committed offsets."""

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY):
        self.group_id = group_id
        self.state = state
        self.state_timestamp_ms = now_ms()
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, MemberMetadata] = {}
        self.static_members: dict[str, str] = {}      # group.instance.id -> member id
        self.pending_members: dict[str, asyncio.TimerHandle | None] = {}  # KIP-394: ids handed out, not joined yet
        self.pending_sync_members: set[str] = set()   # members yet to SyncGroup in this generation
        self.new_member_added = False                 # for group.initial.rebalance.delay.ms
        self.join_timer: asyncio.TimerHandle | None = None
        self.join_deadline: float = 0.0
        self.initial_delay_remaining_ms = 0
        self.sync_timer: asyncio.TimerHandle | None = None
        self.offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        #: TxnOffsetCommit: producer id -> offsets waiting for their transaction's marker
        #: (Kafka's ``pendingTransactionalOffsetCommits``)
        self.pending_transactional_offsets: dict[int, dict[tuple[str, int], OffsetAndMetadata]] = {}

    def __repr__(self) -> str:
        return (f"<GroupMetadata {self.group_id!r} {self.state} generation={self.generation_id} "
                f"protocol={self.protocol_name} members={len(self.members)}>")

    # -- state ------------------------------------------------------------------

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise RuntimeError(f"group {self.group_id} should be in {VALID_PREVIOUS_STATES[target]} "
                               f"before moving to {target}, but is {self.state}")
        self.state = target
        self.state_timestamp_ms = now_ms()

    # -- members ----------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.is_static and self.static_members.get(member.group_instance_id) == member_id:
            del self.static_members[member.group_instance_id]
        self.pending_sync_members.discard(member_id)
        if self.is_leader(member_id):
            # a member already rejoined this round is the better leader
            joined = [m for m in self.members.values() if m.is_awaiting_join]
            self.leader_id = (joined[0] if joined else next(iter(self.members.values()), None))
            self.leader_id = self.leader_id.member_id if self.leader_id is not None else None
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """KIP-345: a restarted static member takes over its old entry under a new member id."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        self.static_members[instance_id] = new_id
        if self.is_leader(old_id):
            self.leader_id = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    @property
    def all_members_joined(self) -> bool:
        return (all(m.is_awaiting_join for m in self.members.values()) and not self.pending_members)

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        sets = [set(m.protocols()) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def supports_protocols(self, protocol_type: str, protocols: list[str]) -> bool:
        """Kafka's GroupMetadata.supportsProtocols: can a member with these protocols join?"""
        if self.is_(GroupState.EMPTY) or not self.members:
            return bool(protocol_type) and bool(protocols)
        return protocol_type == self.protocol_type and any(
            all(p in m.protocols() for m in self.members.values()) for p in protocols)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol that all members support; most votes wins."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"no protocol is supported by all members of {self.group_id}")
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda p: votes[p])  # ties: the first one voted for

    def current_member_metadata(self) -> list[dict]:
        """What the leader gets in its JoinGroup response: every member's subscription."""
        return [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "metadata": m.metadata(self.protocol_name)} for m in self.members.values()]
