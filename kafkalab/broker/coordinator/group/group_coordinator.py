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
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from ...common.errors import ErrorCode, KafkaError
from .group_metadata import GroupMetadata, GroupState, MemberMetadata, now_ms
from .group_metadata_manager import GroupMetadataManager
from .offsets_topic import OffsetAndMetadata

log = logging.getLogger("kafkalab.broker.coordinator")

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                                              GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
                                              GroupState.DEAD)
UNKNOWN_MEMBER_ID = ""


def join_result(member_id: str, error: ErrorCode = ErrorCode.NONE, **fields) -> dict:
    """A JoinGroup response body (an error one unless ``fields`` say otherwise)."""
    out = {"error_code": error, "generation_id": -1, "protocol_type": None, "protocol_name": None,
           "leader": "", "skip_assignment": False, "member_id": member_id, "members": []}
    out.update(fields)
    return out


def sync_result(error: ErrorCode = ErrorCode.NONE, assignment: bytes = b"", protocol_type=None,
                protocol_name=None) -> dict:
    return {"error_code": error, "assignment": assignment, "protocol_type": protocol_type,
            "protocol_name": protocol_name}


class GroupCoordinator:
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.groups: dict[str, GroupMetadata] = {}
        self.manager = GroupMetadataManager(broker)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._cleanup_handle: asyncio.TimerHandle | None = None
        #: cluster mode: the __consumer_offsets partitions this broker leads (loaded) and is loading
        self.zk_mode: bool = getattr(broker, "zk_mode", False)
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()

    # -- lifecycle ------------------------------------------------------------

    async def start(self) -> None:
        """Load groups and offsets from ``__consumer_offsets``; members loaded must heartbeat again."""
        self.loop = asyncio.get_running_loop()
        if self.zk_mode:  # groups are loaded partition by partition, as this broker becomes their leader
            rm = self.broker.replica_manager
            if not hasattr(rm, "leadership_listeners"):
                rm.leadership_listeners = []
            rm.leadership_listeners.append(self.on_leadership_change)
            self._schedule_cleanup()
            return
        self.groups = self.manager.load()
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_heartbeat(group, member)
        if self.groups:
            log.info("loaded %d groups from __consumer_offsets", len(self.groups))
        self._schedule_cleanup()

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
            loaded = self.manager.load(only_partition=index)
        except Exception:
            log.exception("loading __consumer_offsets-%d failed", index)
            loaded = {}
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
        if not self.zk_mode or not group_id:
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

    async def stop(self) -> None:
        if self._cleanup_handle is not None:
            self._cleanup_handle.cancel()
        for group in self.groups.values():
            self._cancel_group_timers(group)
            for member in group.members.values():
                if member.heartbeat_handle is not None:
                    member.heartbeat_handle.cancel()
                self._answer_join(member, join_result(member.member_id, ErrorCode.NOT_COORDINATOR))
                self._answer_sync(member, sync_result(ErrorCode.NOT_COORDINATOR))

    def _cancel_group_timers(self, group: GroupMetadata) -> None:
        for handle in [group.join_timer, group.sync_timer, *group.pending_members.values()]:
            if handle is not None:
                handle.cancel()
        group.join_timer = group.sync_timer = None

    # -- config -----------------------------------------------------------------

    @property
    def initial_rebalance_delay_ms(self) -> int:
        return self.config["group.initial.rebalance.delay.ms"]

    # -- helpers ------------------------------------------------------------------

    def _future(self, value=None) -> asyncio.Future:
        fut = self.loop.create_future()
        if value is not None:
            fut.set_result(value)
        return fut

    @staticmethod
    def _answer_join(member: MemberMetadata, result: dict) -> None:
        if member.is_awaiting_join:
            member.join_future.set_result(result)
        member.join_future = None

    @staticmethod
    def _answer_sync(member: MemberMetadata, result: dict) -> None:
        if member.is_awaiting_sync:
            member.sync_future.set_result(result)
        member.sync_future = None

    @staticmethod
    def validate_current_member(group: GroupMetadata, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka's validateCurrentMember: an instance id must map to this member id; the member must exist."""
        if instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
            return None
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    # -- heartbeats and session timeouts ------------------------------------------

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        """Kafka's completeAndScheduleNextHeartbeatExpiration: the member is alive now; expire it after
        ``session.timeout.ms`` of silence."""
        if member.heartbeat_handle is not None:
            member.heartbeat_handle.cancel()
        member.heartbeat_handle = self.loop.call_later(member.session_timeout_ms / 1000, self._on_expire_heartbeat,
                                                       group, member)

    def _on_expire_heartbeat(self, group: GroupMetadata, member: MemberMetadata) -> None:
        member.heartbeat_handle = None
        if group.members.get(member.member_id) is not member:
            return
        if member.is_awaiting_join or member.is_awaiting_sync:
            self._schedule_heartbeat(group, member)  # waiting on the coordinator is not silence
            return
        log.info("group %s: member %s has failed (session.timeout.ms=%d), removing it", group.group_id,
                 member.member_id, member.session_timeout_ms)
        self._remove_member_and_update_group(group, member,
                                             f"removing member {member.member_id} on heartbeat expiration")

    def _remove_heartbeat(self, member: MemberMetadata) -> None:
        if member.heartbeat_handle is not None:
            member.heartbeat_handle.cancel()
            member.heartbeat_handle = None

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        """A member id handed out with MEMBER_ID_REQUIRED that never came back (KIP-394)."""
        if member_id in group.pending_members:
            log.info("group %s: pending member %s expired", group.group_id, member_id)
            self._remove_pending_member(group, member_id)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        """Forget a pending member id; a rebalance that was waiting for it may complete now."""
        handle = group.pending_members.pop(member_id, None)
        if handle is not None:
            handle.cancel()
        if group.is_(PREPARING):
            self._try_complete_join(group)

    # -- JoinGroup ----------------------------------------------------------------

    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                         protocol_type: str, protocols: list[tuple[str, bytes]],
                         require_known_member_id: bool, reason: str | None = None) -> dict:
        if not group_id:
            return join_result(member_id, ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return join_result(member_id, status)
        if not (self.config["group.min.session.timeout.ms"] <= session_timeout_ms
                <= self.config["group.max.session.timeout.ms"]):
            return join_result(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        group = self.groups.get(group_id)
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        if group is None:
            if not is_unknown:
                return join_result(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            group = self.groups[group_id] = GroupMetadata(group_id)
        if group.is_(DEAD):
            # a group being deleted: the client retries and finds (or creates) it again
            return join_result(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        # group.max.size: a join that would add a member (a restarted static member takes over its entry)
        adds_member = (member_id in group.pending_members
                       or (is_unknown and group.static_member_id(group_instance_id) is None))
        if adds_member and len(group.members) >= self.config["group.max.size"]:
            if member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
            return join_result(UNKNOWN_MEMBER_ID, ErrorCode.GROUP_MAX_SIZE_REACHED)
        args = (group_instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                protocol_type, protocols)
        if is_unknown:
            fut = self._join_new_member(group, *args, require_known_member_id=require_known_member_id,
                                        reason=reason)
        else:
            fut = self._join_current_member(group, member_id, *args, reason=reason)
        if group.is_(PREPARING):
            self._try_complete_join(group)
        return await fut

    def _join_new_member(self, group, instance_id, client_id, client_host, rebalance_timeout_ms,
                         session_timeout_ms, protocol_type, protocols, *, require_known_member_id,
                         reason) -> asyncio.Future:
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            return self._future(join_result(UNKNOWN_MEMBER_ID, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        new_id = f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is not None:
                return self._update_static_member_and_rebalance(
                    group, old_id, new_id, instance_id, rebalance_timeout_ms, session_timeout_ms, protocols)
        elif require_known_member_id:
            # KIP-394: hand out the id first; the member only counts once it joins again with it
            group.pending_members[new_id] = self.loop.call_later(
                session_timeout_ms / 1000, self._expire_pending_member, group, new_id)
            return self._future(join_result(new_id, ErrorCode.MEMBER_ID_REQUIRED))
        return self._add_member_and_rebalance(group, new_id, instance_id, client_id, client_host,
                                              rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                              reason or f"new member {new_id} joined")

    def _join_current_member(self, group, member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                             session_timeout_ms, protocol_type, protocols, *, reason) -> asyncio.Future:
        if member_id in group.pending_members:
            if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
                return self._future(join_result(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return self._add_member_and_rebalance(group, member_id, instance_id, client_id, client_host,
                                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                                  reason or f"pending member {member_id} joined")
        error = self.validate_current_member(group, member_id, instance_id)
        if error is not None:
            return self._future(join_result(member_id, error))
        if not group.supports_protocols(protocol_type, [n for n, _ in protocols]):
            return self._future(join_result(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        member = group.members[member_id]
        if group.is_(PREPARING):
            return self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                     session_timeout_ms, reason or f"member {member_id} rejoined")
        if group.is_(COMPLETING):
            if member.matches(protocols):
                # a retried join: answer with the generation it already belongs to
                return self._future(self._current_join_result(group, member))
            return self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                                     session_timeout_ms,
                                                     reason or f"member {member_id} changed its metadata")
        if group.is_(STABLE):
            if group.is_leader(member_id) or not member.matches(protocols):
                # the leader rejoining, or a changed subscription (e.g. cooperative-sticky's
                # owned partitions after a revocation), starts a rebalance
                return self._update_member_and_rebalance(
                    group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                    reason or (f"leader {member_id} rejoined" if group.is_leader(member_id)
                               else f"member {member_id} rejoined with new metadata"))
            self._schedule_heartbeat(group, member)
            return self._future(self._current_join_result(group, member))
        return self._future(join_result(member_id, ErrorCode.UNKNOWN_MEMBER_ID))  # Empty or Dead

    def _current_join_result(self, group: GroupMetadata, member: MemberMetadata) -> dict:
        leader = group.is_leader(member.member_id)
        return join_result(member.member_id, ErrorCode.NONE, generation_id=group.generation_id,
                           protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                           leader=group.leader_id or "",
                           members=group.current_member_metadata() if leader else [])

    def _add_member_and_rebalance(self, group, member_id, instance_id, client_id, client_host,
                                  rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols,
                                  reason) -> asyncio.Future:
        handle = group.pending_members.pop(member_id, None)
        if handle is not None:
            handle.cancel()
        member = MemberMetadata(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                                session_timeout_ms, protocol_type, [(n, bytes(m)) for n, m in protocols])
        member.join_future = fut = self._future()
        if group.is_(PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        self._maybe_prepare_rebalance(group, reason)
        self._schedule_heartbeat(group, member)
        return fut

    def _update_member_and_rebalance(self, group, member, protocols, rebalance_timeout_ms, session_timeout_ms,
                                     reason) -> asyncio.Future:
        self._answer_join(member, join_result(member.member_id, ErrorCode.REBALANCE_IN_PROGRESS))  # a stale retry
        member.supported_protocols = [(n, bytes(m)) for n, m in protocols]
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_future = fut = self._future()
        self._maybe_prepare_rebalance(group, reason)
        return fut

    def _update_static_member_and_rebalance(self, group, old_id, new_id, instance_id, rebalance_timeout_ms,
                                            session_timeout_ms, protocols) -> asyncio.Future:
        """KIP-345: a known ``group.instance.id`` rejoined without its member id (it restarted)."""
        current_leader = group.leader_id
        member = group.members[old_id]
        old_protocols = member.supported_protocols
        # whoever still holds the old member id is a zombie now
        self._answer_join(member, join_result(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self._answer_sync(member, sync_result(ErrorCode.FENCED_INSTANCE_ID))
        group.replace_static_member(instance_id, old_id, new_id)
        member.supported_protocols = [(n, bytes(m)) for n, m in protocols]
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_future = fut = self._future()
        self._schedule_heartbeat(group, member)
        log.info("group %s: static member %s restarted, member id %s replaces %s", group.group_id, instance_id,
                 new_id, old_id)
        if group.is_(STABLE):
            if group.select_protocol() == group.protocol_name:
                # no rebalance: persist the new member id and hand back the current generation. The leader id
                # returned is the *old* one, so a restarted leader does not compute a new assignment that a
                # Stable group would never propagate (KIP-814's skip_assignment says the same for v9+).
                try:
                    self.manager.store_group(group)
                except KafkaError as exc:
                    member.supported_protocols = old_protocols
                    group.replace_static_member(instance_id, new_id, old_id)
                    self._answer_join(member, join_result(UNKNOWN_MEMBER_ID, exc.code))
                    return fut
                is_leader = group.is_leader(new_id)
                self._answer_join(member, join_result(
                    new_id, ErrorCode.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name, leader=current_leader or "", skip_assignment=is_leader,
                    members=group.current_member_metadata() if is_leader else []))
            else:
                self._maybe_prepare_rebalance(group, f"static member {instance_id} rejoined with a protocol "
                                                     "that changes the group's selected protocol")
        elif group.is_(COMPLETING):
            # the leader may be assigning to the old member id: rebalance so the new id gets its share
            self._prepare_rebalance(group, f"static member {instance_id} rejoined during CompletingRebalance")
        return fut

    # -- rebalancing --------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(STABLE, COMPLETING, EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.is_(COMPLETING):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None
        group.pending_sync_members.clear()
        initial = group.is_(EMPTY)
        group.transition_to(PREPARING)
        log.info("group %s: preparing to rebalance (generation %d): %s", group.group_id, group.generation_id,
                 reason)
        if group.join_timer is not None:
            group.join_timer.cancel()
        if initial:
            # group.initial.rebalance.delay.ms: let more members of a starting group arrive first
            delay = self.initial_rebalance_delay_ms
            group.initial_delay_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            group.new_member_added = False
            group.join_deadline = -1  # no early completion during the initial delay
            group.join_timer = self.loop.call_later(delay / 1000, self._on_initial_delay_expired, group)
        else:
            group.join_deadline = self.loop.time() + group.rebalance_timeout_ms / 1000
            group.join_timer = self.loop.call_later(group.rebalance_timeout_ms / 1000, self._complete_join, group)
            self._try_complete_join(group)  # e.g. the last member left: nobody to wait for

    def _on_initial_delay_expired(self, group: GroupMetadata) -> None:
        group.join_timer = None
        if not group.is_(PREPARING):
            return
        if group.new_member_added and group.initial_delay_remaining_ms > 0:
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms = max(group.initial_delay_remaining_ms - delay, 0)
            group.join_timer = self.loop.call_later(delay / 1000, self._on_initial_delay_expired, group)
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        """Kafka's DelayedJoin.tryComplete: finish the join phase as soon as every member has rejoined."""
        if group.is_(PREPARING) and group.join_deadline >= 0 and group.all_members_joined:
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        """Kafka's onCompleteJoin: drop members that did not rejoin, start the next generation."""
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        if not group.is_(PREPARING):
            return
        for member in group.not_yet_rejoined():
            log.info("group %s: member %s did not rejoin within the rebalance timeout (max.poll.interval.ms), "
                     "removing it", group.group_id, member.member_id)
            self._remove_heartbeat(member)
            self._answer_sync(member, sync_result(ErrorCode.UNKNOWN_MEMBER_ID))
            group.remove(member.member_id)
        # a leader that did not rejoin was replaced by group.remove(); make sure it is a joined member
        leader = group.members.get(group.leader_id) if group.leader_id is not None else None
        if group.members and (leader is None or not leader.is_awaiting_join):
            group.leader_id = next(m.member_id for m in group.members.values() if m.is_awaiting_join)
        group.generation_id += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(EMPTY)
            log.info("group %s: generation %d is empty", group.group_id, group.generation_id)
            self._store_group_quietly(group)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(COMPLETING)
        group.pending_sync_members = set(group.members)
        log.info("group %s: generation %d with %d members, leader %s, protocol %s", group.group_id,
                 group.generation_id, len(group.members), group.leader_id, group.protocol_name)
        for member in group.members.values():
            result = self._current_join_result(group, member)
            self._answer_join(member, result)
            self._schedule_heartbeat(group, member)
        generation = group.generation_id
        group.sync_timer = self.loop.call_later(group.rebalance_timeout_ms / 1000, self._on_expire_pending_sync,
                                                group, generation)

    def _on_expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        """Members that got the new generation but never sent SyncGroup within the rebalance timeout leave."""
        group.sync_timer = None
        if generation != group.generation_id or not group.is_(COMPLETING, STABLE) or not group.pending_sync_members:
            return
        for member_id in list(group.pending_sync_members):
            member = group.members.get(member_id)
            if member is not None:
                log.info("group %s: member %s did not send SyncGroup in time, removing it", group.group_id,
                         member_id)
                self._remove_heartbeat(member)
                group.remove(member_id)
        group.pending_sync_members.clear()
        self._prepare_rebalance(group, "members failed to sync within the rebalance timeout")

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
            self._answer_sync(member, sync_result(error))

    def _store_group_quietly(self, group: GroupMetadata) -> None:
        try:
            self.manager.store_group(group)
        except KafkaError as exc:
            log.warning("group %s: could not store group metadata: %s", group.group_id, exc)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        # a removed member still waiting gets UNKNOWN_MEMBER_ID, so a live consumer rejoins as new
        self._answer_join(member, join_result(member.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        self._answer_sync(member, sync_result(ErrorCode.UNKNOWN_MEMBER_ID))
        self._remove_heartbeat(member)
        group.remove(member.member_id)
        if group.is_(STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(PREPARING):
            self._try_complete_join(group)

    # -- SyncGroup ----------------------------------------------------------------

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> dict:
        group = self.groups.get(group_id)
        if not group_id:
            return sync_result(ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return sync_result(status)
        if group is None:
            return sync_result(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(DEAD):
            return sync_result(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if member_id in group.pending_members:
            return sync_result(ErrorCode.REBALANCE_IN_PROGRESS)
        error = self.validate_current_member(group, member_id, instance_id)
        if error is not None:
            return sync_result(error)
        if generation_id != group.generation_id:
            return sync_result(ErrorCode.ILLEGAL_GENERATION)
        if ((protocol_type is not None and protocol_type != group.protocol_type)
                or (protocol_name is not None and protocol_name != group.protocol_name)):
            return sync_result(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members[member_id]
        if group.is_(EMPTY):
            return sync_result(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(PREPARING):
            return sync_result(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync_members.discard(member_id)
        self._schedule_heartbeat(group, member)
        if group.is_(STABLE):
            return self._sync_ok(group, member.assignment)
        # CompletingRebalance: wait for the leader's assignment
        self._answer_sync(member, sync_result(ErrorCode.REBALANCE_IN_PROGRESS))  # a stale retry
        member.sync_future = fut = self._future()
        if group.is_leader(member_id):
            for m in group.members.values():
                m.assignment = bytes(assignments.get(m.member_id, b""))
            try:
                self.manager.store_group(group)
            except KafkaError as exc:
                self._reset_and_propagate_assignment_error(group, exc.code)
                self._maybe_prepare_rebalance(group, "error when storing group assignment during SyncGroup")
            else:
                group.transition_to(STABLE)
                log.info("group %s: generation %d is Stable", group.group_id, group.generation_id)
                for m in group.members.values():
                    self._answer_sync(m, self._sync_ok(group, m.assignment))
        return await fut

    @staticmethod
    def _sync_ok(group: GroupMetadata, assignment: bytes) -> dict:
        return sync_result(ErrorCode.NONE, assignment, group.protocol_type, group.protocol_name)

    # -- Heartbeat ----------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if (status := self.group_status_error(group_id)) is not None:
            return status
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self.validate_current_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        member = group.members[member_id]
        if group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, member)
        if group.is_(PREPARING):
            return ErrorCode.REBALANCE_IN_PROGRESS  # rejoin
        return ErrorCode.NONE  # Stable, or CompletingRebalance (still alive while the leader assigns)

    # -- LeaveGroup ---------------------------------------------------------------

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]],
                    reason: str | None = None) -> tuple[ErrorCode, list[ErrorCode]]:
        """Remove members (member id, or group.instance.id with an empty member id for an admin removal)."""
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        if (status := self.group_status_error(group_id)) is not None:
            return status, []
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors = []
        for member_id, instance_id in leaving:
            why = f"member {member_id or instance_id} left the group" + (f": {reason}" if reason else "")
            if member_id == UNKNOWN_MEMBER_ID:
                current = group.static_member_id(instance_id)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                self._remove_member_and_update_group(group, group.members[current], why)
                errors.append(ErrorCode.NONE)
            elif member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
                errors.append(ErrorCode.NONE)
            else:
                error = self.validate_current_member(group, member_id, instance_id)
                if error is None:
                    self._remove_member_and_update_group(group, group.members[member_id], why)
                    error = ErrorCode.NONE
                errors.append(error)
        return ErrorCode.NONE, errors

    # -- offsets ------------------------------------------------------------------

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                       offsets: dict[tuple[str, int], OffsetAndMetadata]) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit: one error code per partition."""
        prepared = self._prepare_commit(group_id, generation_id, member_id, instance_id, offsets)
        if isinstance(prepared, dict):
            return prepared
        result, group, to_store = prepared
        try:
            self.manager.store_offsets(group, to_store)
        except KafkaError as exc:
            code = exc.code
        else:
            code = ErrorCode.NONE
        for tp in to_store:
            result[tp] = code
        return result

    async def commit_offsets_and_wait(self, group_id: str, generation_id: int, member_id: str,
                                      instance_id: str | None,
                                      offsets: dict[tuple[str, int], OffsetAndMetadata]) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit as the handler calls it: in cluster mode the commit waits for the ISR of its
        ``__consumer_offsets`` partition (acks=all); a standalone broker is its own ISR."""
        if not (self.zk_mode and hasattr(self.broker.replica_manager, "append_records_and_wait")):
            return self.commit_offsets(group_id, generation_id, member_id, instance_id, offsets)
        prepared = self._prepare_commit(group_id, generation_id, member_id, instance_id, offsets)
        if isinstance(prepared, dict):
            return prepared
        result, group, to_store = prepared
        try:
            await self.manager.store_offsets_and_wait(group, to_store)
        except KafkaError as exc:
            code = exc.code
        else:
            code = ErrorCode.NONE
        for tp in to_store:
            result[tp] = code
        return result

    def _prepare_commit(self, group_id, generation_id, member_id, instance_id, offsets):
        """The checks of a commit: a dict of errors for every partition, or (partial result, group, to store)."""
        def all_(code):
            return {tp: code for tp in offsets}

        if not group_id:
            return all_(ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return all_(status)
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                # a generation of a group that does not exist (any more): reject, as Kafka does
                return all_(ErrorCode.ILLEGAL_GENERATION)
            # not managed by the coordinator (assign() + commit): the group exists only for its offsets
            group = self.groups[group_id] = GroupMetadata(group_id)
        if group.is_(DEAD):
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            error = self.validate_current_member(group, member_id, instance_id)
            if error is not None:
                return all_(error)
            if generation_id != group.generation_id:
                return all_(ErrorCode.ILLEGAL_GENERATION)
        elif not group.is_(EMPTY):
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)  # only members may commit for a group with members
        if group.is_(COMPLETING):
            # valid member and generation, but the assignment is not known yet: let it sync first
            return all_(ErrorCode.REBALANCE_IN_PROGRESS)
        member = group.members.get(member_id)
        if member is not None:
            self._schedule_heartbeat(group, member)
        result, to_store = {}, {}
        max_metadata = self.config["offset.metadata.max.bytes"]
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode()) > max_metadata:
                result[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                to_store[tp] = om
        return result, group, to_store

    def fetch_offsets(self, group_id: str,
                      partitions: list[tuple[str, int]] | None) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        """OffsetFetch: the committed offset per partition (None: nothing committed); all when ``partitions``
        is None. In cluster mode KafkaError NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a group
        this broker does not coordinate."""
        self.check_group_status(group_id)
        group = self.groups.get(group_id)
        offsets = group.offsets if group is not None and not group.is_(DEAD) else {}
        if partitions is None:
            return dict(offsets)
        return {tp: offsets.get(tp) for tp in partitions}

    def delete_offsets_of_topic(self, topic: str) -> None:
        """A deleted topic's committed offsets go too (Kafka's handleDeletedPartitions)."""
        for group in self.groups.values():
            gone = [tp for tp in group.offsets if tp[0] == topic]
            if gone:
                try:
                    self.manager.delete_offsets(group, gone)
                except KafkaError:
                    for tp in gone:
                        group.offsets.pop(tp, None)

    # -- admin --------------------------------------------------------------------

    def describe_group(self, group_id: str) -> dict | None:
        """Kafka's GroupMetadata.summary; None when the group does not exist (cluster mode: KafkaError
        NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a group this broker does not coordinate)."""
        self.check_group_status(group_id)
        group = self.groups.get(group_id)
        if group is None:
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
        for group in self.groups.values():
            if group.is_(DEAD):
                continue
            if wanted_states is not None and str(group.state).lower() not in wanted_states:
                continue
            if wanted_types is not None and "classic" not in wanted_types:
                continue
            out.append({"group_id": group.group_id, "protocol_type": group.protocol_type or "",
                        "group_state": str(group.state), "group_type": "classic"})
        return out

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        out = {}
        for group_id in group_ids:
            if not group_id:
                out[group_id] = ErrorCode.INVALID_GROUP_ID
                continue
            if (status := self.group_status_error(group_id)) is not None:
                out[group_id] = status
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_(DEAD):
                out[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_(EMPTY) or group.members:
                out[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                try:
                    self.manager.delete_group(group)
                except KafkaError as exc:
                    out[group_id] = exc.code
                    continue
                self._cancel_group_timers(group)
                group.transition_to(DEAD)
                del self.groups[group_id]
                out[group_id] = ErrorCode.NONE
        return out

    # -- offsets.retention.minutes ------------------------------------------------

    def _schedule_cleanup(self) -> None:
        interval = self.config["offsets.retention.check.interval.ms"]
        self._cleanup_handle = self.loop.call_later(interval / 1000, self._cleanup_group_metadata)

    def _cleanup_group_metadata(self) -> None:
        """Kafka's cleanupGroupMetadata: expire old offsets of Empty groups; drop Empty groups left with none.

        KIP-211: a consumer group's offsets expire ``offsets.retention.minutes`` after the group became
        Empty; offsets of a group without a protocol (simple commits) each expire that long after their
        commit."""
        try:
            retention_ms = self.config["offsets.retention.minutes"] * 60_000
            now = now_ms()
            for group in list(self.groups.values()):
                if not group.is_(EMPTY):
                    continue
                if group.protocol_type:
                    expired = list(group.offsets) if group.state_timestamp_ms + retention_ms <= now else []
                else:
                    expired = [tp for tp, om in group.offsets.items() if om.commit_timestamp + retention_ms <= now]
                if expired:
                    log.info("group %s: %d committed offsets expired (offsets.retention.minutes)", group.group_id,
                             len(expired))
                    self.manager.delete_offsets(group, expired)
                if not group.offsets and not group.members and not group.pending_members:
                    self.manager.delete_group(group)
                    self._cancel_group_timers(group)
                    group.transition_to(DEAD)
                    del self.groups[group.group_id]
        except KafkaError as exc:
            log.warning("offsets cleanup failed: %s", exc)
        finally:
            self._schedule_cleanup()
