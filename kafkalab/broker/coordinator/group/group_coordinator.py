"""``GroupCoordinator``: consumer groups with the classic rebalance protocol, and committed offsets.

Modelled on Kafka's ``kafka.coordinator.group.GroupCoordinator`` (the
coordinator of ``group.protocol=classic``). A consumer finds its group's
coordinator (FindCoordinator), then:

1. **JoinGroup** with its subscription per assignor. A first JoinGroup without
   a member id gets MEMBER_ID_REQUIRED and a fresh id (KIP-394, v4+), and
   joins again with it. Every join, leave or expired session moves the group
   to PreparingRebalance; the coordinator then waits until every member has
   rejoined, or the rebalance timeout (the largest ``max.poll.interval.ms``)
   has passed, and removes members that did not rejoin. An Empty group's
   first rebalance waits ``group.initial.rebalance.delay.ms`` longer for more
   members (extended for each newcomer, up to the rebalance timeout).
2. The JoinGroup responses open a new **generation**; the leader (the first
   member to join) gets every member's subscription and computes the
   assignment client-side.
3. **SyncGroup**: the leader sends the assignment; every member gets its share
   and the group is Stable. Members that do not sync within the rebalance
   timeout are removed.
4. **Heartbeat** every ``heartbeat.interval.ms``; a member silent for
   ``session.timeout.ms`` is removed. REBALANCE_IN_PROGRESS tells a member to
   rejoin. ``session.timeout.ms`` must lie within
   [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``]
   (else INVALID_SESSION_TIMEOUT).
5. **LeaveGroup** on close.

Eager assignors revoke everything at each rebalance; cooperative-sticky
(KIP-429) keeps partitions and needs a second rebalance to move the revoked
ones — to the coordinator both are just join/sync rounds.

**Static membership** (KIP-345): a member with ``group.instance.id`` that
restarts with the same instance id takes over its old entry (and assignment)
under a new member id, without a rebalance; the old member id is then fenced
(FENCED_INSTANCE_ID). Static members do not send LeaveGroup on close, so
only the session timeout removes them.

**Offsets**: OffsetCommit stores (offset, leader epoch, metadata) per
partition for a member of the current generation (else ILLEGAL_GENERATION /
UNKNOWN_MEMBER_ID), or for anyone when the group is Empty and the commit
carries generation -1 (a "simple" consumer using ``assign()``). Offsets and
group metadata are written to ``__consumer_offsets`` (see
:mod:`.group_metadata_manager`) and replayed at start. Offsets of an Empty
group expire after ``offsets.retention.minutes``.

Everything runs on the broker's asyncio loop: timers are ``loop.call_later``
handles and waiting requests are futures, so no locks are needed.

**Cluster mode**: every broker runs a coordinator, and each serves only the
groups whose ``__consumer_offsets`` partition it leads. When the controller
makes this broker leader of such a partition (ReplicaManager's leadership
listeners, Kafka's ``onElection``), the coordinator loads the partition's
groups and offsets from its log; when leadership moves away
(``onResignation``) it unloads them, and members waiting on it hear
NOT_COORDINATOR and look for the new coordinator. A request for a group of
another partition gets NOT_COORDINATOR; one for a partition still loading,
COORDINATOR_LOAD_IN_PROGRESS.

**Where the code is.** Kafka writes the classic coordinator as one large
``GroupCoordinator.scala`` plus small delayed-operation classes. Here the
``GroupCoordinator`` class is made of parts (mixins), one module each, cut
along the same lines:

* :mod:`.join_sync`: JoinGroup, SyncGroup, LeaveGroup (``handleJoinGroup``,
  ``handleSyncGroup``, ``handleLeaveGroup``), static membership, and the group
  states and response bodies the other parts share;
* :mod:`.rebalance`: ``prepareRebalance``, ``InitialDelayedJoin``
  (``group.initial.rebalance.delay.ms``), ``DelayedJoin`` and
  ``onCompleteJoin``, ``DelayedSync``;
* :mod:`.heartbeats`: Heartbeat, ``DelayedHeartbeat`` (``session.timeout.ms``
  and its bounds ``group.min/max.session.timeout.ms``), pending member ids;
* :mod:`.group_offsets`: OffsetCommit, OffsetFetch, DeleteGroups, and offset
  expiry (``offsets.retention.minutes``);
* :mod:`.consumer_group_heartbeat` (KIP-848 consumer groups),
  :mod:`.consumer_group_regex` (their regex subscriptions) and
  :mod:`.consumer_group_migration` (classic members inside them, and a group
  changing protocol: ``group.consumer.migration.policy``).

This module keeps what ties them together: the coordinator's state, its
start and stop, which groups it coordinates (the cluster mode above:
``onElection`` / ``onResignation``, ``validateGroupStatus``), and
DescribeGroups / ListGroups.
"""
from __future__ import annotations

import asyncio
import logging

from ...common.errors import ErrorCode, KafkaError
from . import group_coordinator_metrics
from .consumer_group import ConsumerGroup
from .consumer_group_heartbeat import ConsumerGroupHeartbeats
from .consumer_group_migration import ConsumerGroupMigration
from .consumer_group_regex import ConsumerGroupRegexes
from .consumer_group_records import ConsumerGroupPersister
from .group_metadata import GroupMetadata
from .group_metadata_manager import GroupMetadataManager
from .group_offsets import GroupOffsets
from .heartbeats import MemberSessions
# the group states, UNKNOWN_MEMBER_ID and the response bodies stay importable from here, as before the split
from .join_sync import (COMPLETING, DEAD, EMPTY, PREPARING, STABLE, UNKNOWN_MEMBER_ID, JoinSyncHandlers,  # noqa: F401
                        join_result, sync_result)
from .rebalance import Rebalancing
from .share_group import ShareGroup
from .share_group_heartbeat import ShareGroupHeartbeats

log = logging.getLogger(__name__)


class GroupCoordinator(JoinSyncHandlers, Rebalancing, MemberSessions, GroupOffsets, ConsumerGroupHeartbeats,
                       ConsumerGroupMigration, ConsumerGroupRegexes, ShareGroupHeartbeats):
    """The coordinator the API handlers call (``broker.group_coordinator``); its request handling is in
    the parts it inherits, listed in the module's docstring."""

    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.groups: dict[str, GroupMetadata] = {}
        #: KIP-848 groups (group.protocol=consumer), beside the classic ones; their offsets stay in ``groups``
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        #: KIP-932 share groups (kept in memory; their share-partitions' state is the share coordinator's)
        self.share_groups: dict[str, ShareGroup] = {}
        self.manager = GroupMetadataManager(broker)
        #: writes each KIP-848 group's records (types 3-8) to __consumer_offsets when it changes
        self.consumer_group_persister = ConsumerGroupPersister(self.manager, broker)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._cleanup_handle: asyncio.TimerHandle | None = None
        #: cluster mode: the __consumer_offsets partitions this broker leads (loaded) and is loading
        self.in_cluster: bool = broker.in_cluster
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        if broker.metrics is not None:
            group_coordinator_metrics.register(self, broker.metrics)
        #: Kafka 4's GroupCoordinatorMetrics (sensors counted always; a KRaft broker registers them)
        self.coordinator_metrics = group_coordinator_metrics.GroupCoordinatorMetrics(self)

    # -- lifecycle ------------------------------------------------------------

    async def start(self) -> None:
        """Load groups and offsets from ``__consumer_offsets``; members loaded must heartbeat again."""
        self.loop = asyncio.get_running_loop()
        if self.in_cluster:  # groups are loaded partition by partition, as this broker becomes their leader
            self.broker.replica_manager.leadership_listeners.append(self.on_leadership_change)
            self._schedule_cleanup()
            return
        self.groups, consumer_records = self.manager.load_all()
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        self.load_consumer_groups(consumer_records)
        if self.groups or self.consumer_groups:
            log.info("loaded %d groups and %d consumer groups from __consumer_offsets", len(self.groups),
                     len(self.consumer_groups))
        self._schedule_cleanup()

    async def stop(self) -> None:
        if self._cleanup_handle is not None:
            self._cleanup_handle.cancel()
        self.stop_consumer_groups()
        self.stop_share_groups()
        for group in self.groups.values():
            self._cancel_group_timers(group)
            for member in group.members.values():
                if member.heartbeat_handle is not None:
                    member.heartbeat_handle.cancel()
                self._answer_join(member, join_result(member.member_id, ErrorCode.NOT_COORDINATOR))
                self._answer_sync(member, sync_result(ErrorCode.NOT_COORDINATOR))

    def _cancel_group_timers(self, group: GroupMetadata) -> None:
        """Stop a group's rebalance timers (join, sync, pending members): it is unloaded, deleted or gone."""
        for handle in [group.join_timer, group.sync_timer, *group.pending_members.values()]:
            if handle is not None:
                handle.cancel()
        group.join_timer = group.sync_timer = None

    # -- cluster mode: which groups this broker coordinates ---------------------------

    def on_leadership_change(self, topic: str, index: int, is_leader: bool, leader_epoch: int) -> None:
        """ReplicaManager's leadership listener: load a ``__consumer_offsets`` partition's groups when
        this broker becomes its leader (Kafka's ``onElection``), unload them when it stops being it
        (``onResignation``)."""
        if topic != "__consumer_offsets":
            return
        if is_leader:
            if index in self.owned_partitions or index in self.loading_partitions:
                return
            self.loading_partitions.add(index)
            self.loop.call_soon(self._load_partition, index, leader_epoch)
        else:
            self._unload_partition(index)

    def _load_partition(self, index: int, leader_epoch: int) -> None:
        if index not in self.loading_partitions:
            return  # resigned before the load ran
        try:
            loaded, consumer_records = self.manager.load_all(only_partition=index)
        except Exception:
            log.exception("loading __consumer_offsets-%d failed", index)
            loaded, consumer_records = {}, {}
        self.load_consumer_groups({g: r for g, r in consumer_records.items() if g not in self.consumer_groups})
        for group_id, group in loaded.items():
            if group_id in self.groups:
                continue
            self.groups[group_id] = group
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        self.loading_partitions.discard(index)
        self.owned_partitions.add(index)
        log.info("loaded %d groups of __consumer_offsets-%d (leader epoch %d)", len(loaded), index, leader_epoch)

    def _unload_partition(self, index: int) -> None:
        self.loading_partitions.discard(index)
        if index not in self.owned_partitions:
            return
        self.owned_partitions.discard(index)
        gone = [g for g in self.groups.values() if self.manager.partition_for(g.group_id) == index]
        for group in gone:
            self._unload_group(group)
            del self.groups[group.group_id]
        for cgroup in [g for g in self.consumer_groups.values() if self.manager.partition_for(g.group_id) == index]:
            for member in cgroup.members.values():  # the new coordinator loads them from the partition
                member.cancel_timers()
            del self.consumer_groups[cgroup.group_id]
            self.consumer_group_persister.forget(cgroup.group_id)
        for sgroup in [g for g in self.share_groups.values() if self.manager.partition_for(g.group_id) == index]:
            for member in sgroup.members.values():
                member.cancel_timers()
            del self.share_groups[sgroup.group_id]
        log.info("unloaded %d groups of __consumer_offsets-%d: no longer its leader", len(gone), index)

    def _unload_group(self, group: GroupMetadata) -> None:
        """Kafka's ``onGroupUnloaded``: the group is Dead here; waiting members hear NOT_COORDINATOR."""
        self._cancel_group_timers(group)
        for member in group.members.values():
            if member.heartbeat_handle is not None:
                member.heartbeat_handle.cancel()
                member.heartbeat_handle = None
            self._answer_join(member, join_result(member.member_id, ErrorCode.NOT_COORDINATOR))
            self._answer_sync(member, sync_result(ErrorCode.NOT_COORDINATOR))
        group.transition_to(DEAD)

    def group_status_error(self, group_id: str) -> ErrorCode | None:
        """Kafka's ``validateGroupStatus``: COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR, else None."""
        if not self.in_cluster or not group_id:
            return None
        partition = self.manager.partition_for(group_id)
        if partition in self.loading_partitions:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self.owned_partitions:
            return ErrorCode.NOT_COORDINATOR
        return None

    def check_group_status(self, group_id: str) -> None:
        error = self.group_status_error(group_id)
        if error is not None:
            raise KafkaError(error, f"broker {self.broker.broker_id} is not the coordinator of group {group_id}"
                             if error == ErrorCode.NOT_COORDINATOR else f"group {group_id} is loading")

    # -- admin --------------------------------------------------------------------

    def describe_group(self, group_id: str) -> dict | None:
        """Kafka's GroupMetadata.summary; None when the group does not exist (cluster mode: KafkaError
        NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a group this broker does not coordinate)."""
        self.check_group_status(group_id)
        group = self.groups.get(group_id)
        if group is None or group_id in self.consumer_groups or group_id in self.share_groups:  # "not a classic group"
            return None
        stable = group.is_(STABLE)
        members = []
        for m in group.members.values():
            members.append({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id, "client_host": m.client_host,
                            "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                            "member_assignment": m.assignment if stable else b""})
        return {"group_id": group_id, "group_state": str(group.state), "protocol_type": group.protocol_type or "",
                "protocol_data": group.protocol_name if stable and group.protocol_name else "",
                "members": members, "generation_id": group.generation_id}

    def list_groups(self, states: list[str] | None = None, types: list[str] | None = None) -> list[dict]:
        wanted_states = {s.lower() for s in states} if states else None
        wanted_types = {t.lower() for t in types} if types else None
        out = []
        for cgroup in self.consumer_groups.values():
            if wanted_states is not None and str(cgroup.state).lower() not in wanted_states:
                continue
            if wanted_types is None or "consumer" in wanted_types:
                out.append(self.consumer_group_listing(cgroup))
        for sgroup in self.share_groups.values():
            if wanted_states is not None and str(sgroup.state).lower() not in wanted_states:
                continue
            if wanted_types is None or "share" in wanted_types:
                out.append(self.share_group_listing(sgroup))
        for group in self.groups.values():
            if group.is_(DEAD) or group.group_id in self.consumer_groups:
                continue
            if wanted_states is not None and str(group.state).lower() not in wanted_states:
                continue
            if wanted_types is not None and "classic" not in wanted_types:
                continue
            out.append({"group_id": group.group_id, "protocol_type": group.protocol_type or "",
                        "group_state": str(group.state), "group_type": "classic"})
        return out
