"""``ShareGroup``, ``ShareGroupMember`` and the ``simple`` assignor: a share group of KIP-932 ("queues for Kafka").

Modelled on Kafka 4.x's ``org.apache.kafka.coordinator.group.modern.share.ShareGroup`` and
``ShareGroupMember``, and its ``SimpleAssignor``. A share group's membership works as a KIP-848 consumer group's
(one heartbeat request, a group epoch, a target assignment computed by the coordinator), with two differences
that come from what a share group is for:

* **a partition may be assigned to several members at once.** The members do not own partitions: the records
  of a partition are divided among the members fetching from it, record by record, by the partition's leader
  (:mod:`kafkalab.broker.server.share.share_partition`), which hands each record to one member at a time under
  an acquisition lock. So there is nothing to revoke first: a member moves to the new assignment at its next
  heartbeat, and the group has no Assigning or Reconciling state, only Empty and Stable (and Dead).
* the assignor is not chosen by the client (``simple``, Kafka's only share assignor).

``simple`` (kafkalab's version of Kafka 4.4's ``SimpleAssignor``, the default of ``group.share.assignors``):
every subscribed partition is assigned to at least one member subscribed to its topic. With at least as many
partitions as members, the partitions are dealt round-robin (member counts differ by at most one); with more
members than partitions, every member gets one partition, and the partitions are shared (partition *i* goes to
members *i*, *i + P*, *i + 2P*, ...). Both shapes are what Kafka 4.4 assigns (measured with ShareGroupDescribe:
2 members on 3 partitions, 4 on 2; ``test_simple_assignor_spreads_partitions``); which member gets which
partition may differ: Kafka's builders are also sticky across epochs, kafkalab's recomputes from the sorted
member ids.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

Assignment = dict[Any, set[int]]  # topic id -> partitions

#: member epochs with a meaning of their own in ShareGroupHeartbeat
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1


class ShareGroupState(str, enum.Enum):
    """Kafka's ``ShareGroup.ShareGroupState``."""
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass
class ShareGroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned_partitions: Assignment = field(default_factory=dict)
    session_handle: Any = None     # loop.call_later handle of group.share.session.timeout.ms

    def cancel_timers(self) -> None:
        if self.session_handle is not None:
            self.session_handle.cancel()
            self.session_handle = None


class ShareGroup:
    """One share group (Kafka's ``ShareGroup``): members, epochs and the target assignment."""

    group_type = "share"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target_assignment: dict[str, Assignment] = {}
        #: topic name -> partition count the last target assignment saw (a change bumps the group epoch)
        self.subscription_metadata: dict[str, int] = {}
        self.state = ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> set[str]:
        names: set[str] = set()
        for m in self.members.values():
            names.update(m.subscribed_topic_names)
        return names

    def remove_member(self, member_id: str) -> ShareGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            member.cancel_timers()
            self.target_assignment.pop(member_id, None)
        self.maybe_update_state()
        return member

    def is_empty(self) -> bool:
        return not self.members

    def maybe_update_state(self) -> None:
        self.state = ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY


def simple(members: dict[str, set[str]], topics: dict[str, tuple[Any, int]]) -> dict[str, Assignment]:
    """The ``simple`` share assignor (see the module docstring). ``members``: member id -> subscribed topic
    names; ``topics``: name -> (topic id, partition count). Returns member id -> assignment."""
    out: dict[str, Assignment] = {m: {} for m in members}
    for name, (topic_id, n) in sorted(topics.items()):
        subs = sorted(m for m, s in members.items() if name in s)
        if not subs or n <= 0:
            continue
        if n >= len(subs):
            for p in range(n):
                out[subs[p % len(subs)]].setdefault(topic_id, set()).add(p)
        else:
            for i, m in enumerate(subs):
                out[m].setdefault(topic_id, set()).add(i % n)
    return out
