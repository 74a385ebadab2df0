"""JoinGroup, SyncGroup and LeaveGroup: the requests of the classic rebalance protocol.

Kafka's ``kafka.coordinator.group.GroupCoordinator`` answers them in
``handleJoinGroup`` (``doNewMemberJoinGroup``, ``doCurrentMemberJoinGroup``,
``addMemberAndRebalance``, ``updateMemberAndRebalance``,
``updateStaticMemberAndRebalance``), ``handleSyncGroup`` and
``handleLeaveGroup``. Every group request first checks the member with
``validateCurrentMember``: a ``group.instance.id`` must map to this member id
(else FENCED_INSTANCE_ID), and the member must exist (else UNKNOWN_MEMBER_ID).

* **JoinGroup** from a new member: INVALID_SESSION_TIMEOUT unless
  ``session.timeout.ms`` is within the broker's bounds (:mod:`.heartbeats`);
  GROUP_MAX_SIZE_REACHED past ``group.max.size``; INCONSISTENT_GROUP_PROTOCOL
  when it shares no assignor with the group. Without a member id (v4+) it gets
  MEMBER_ID_REQUIRED and a fresh id, a *pending member* until it joins again
  with it (KIP-394). Joining adds it and starts (or joins) a rebalance.
* **JoinGroup** from a known member: in PreparingRebalance it has rejoined; in
  CompletingRebalance a retry gets its generation again; in Stable the leader,
  or a member with changed metadata, starts a rebalance, anyone else just gets
  the current generation.
* **Static membership** (KIP-345): a known ``group.instance.id`` without a
  member id has restarted; it takes over its entry under a new member id,
  without a rebalance when the group is Stable, and the old id is fenced.
* **SyncGroup**: in CompletingRebalance every member waits for the leader's
  assignment; once it is stored in ``__consumer_offsets`` the group is Stable
  and each member gets its share. In Stable a SyncGroup gets the assignment
  again; in PreparingRebalance, REBALANCE_IN_PROGRESS.
* **LeaveGroup**: by member id, or by ``group.instance.id`` with an empty
  member id (an admin's ``removeMembersFromConsumerGroup``, KIP-345).
* For the id of a KIP-848 consumer group with members, all four are served
  as a classic member *inside* that group (:mod:`.consumer_group_migration`).

A JoinGroup or SyncGroup that must wait gets a future, answered when the
rebalance moves on (:mod:`.rebalance`) by ``_answer_join`` / ``_answer_sync``
(Kafka's ``awaitingJoinCallback`` / ``awaitingSyncCallback``).

This module also names what the coordinator's parts share: short names for
the group states (``GroupState``), ``UNKNOWN_MEMBER_ID`` (Kafka's
``JoinGroupRequest.UNKNOWN_MEMBER_ID``), and the JoinGroup / SyncGroup response
bodies ``join_result`` / ``sync_result`` (Kafka's ``JoinGroupResult``,
``SyncGroupResult``).

:class:`JoinSyncHandlers` is a part of ``GroupCoordinator`` (a mixin): its
methods run on the coordinator and use its ``groups``, ``config``, ``loop``
and ``manager`` and its ``group_status_error``, the rebalance steps of
:class:`.rebalance.Rebalancing` and the session timers of
:class:`.heartbeats.MemberSessions`.
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from ...common.errors import ErrorCode, KafkaError
from .group_coordinator_metrics import CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME
from .group_metadata import GroupMetadata, GroupState, MemberMetadata

log = logging.getLogger(__name__)

# the group states, by the short names every part of the coordinator uses
EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                                              GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
                                              GroupState.DEAD)
UNKNOWN_MEMBER_ID = ""  # Kafka's JoinGroupRequest.UNKNOWN_MEMBER_ID: a member that has no id yet


def join_result(member_id: str, error: ErrorCode = ErrorCode.NONE, **fields) -> dict:
    """A JoinGroup response body (an error one unless ``fields`` say otherwise)."""
    out = {"error_code": error, "generation_id": -1, "protocol_type": None, "protocol_name": None,
           "leader": "", "skip_assignment": False, "member_id": member_id, "members": []}
    out.update(fields)
    return out


def sync_result(error: ErrorCode = ErrorCode.NONE, assignment: bytes = b"", protocol_type=None,
                protocol_name=None) -> dict:
    """A SyncGroup response body."""
    return {"error_code": error, "assignment": assignment, "protocol_type": protocol_type,
            "protocol_name": protocol_name}


class JoinSyncHandlers:
    """GroupCoordinator's JoinGroup, SyncGroup and LeaveGroup handling (a mixin; see the module's docstring)."""

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

    # -- JoinGroup ----------------------------------------------------------------

    async def join_group(self, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                         client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                         protocol_type: str, protocols: list[tuple[str, bytes]],
                         require_known_member_id: bool, reason: str | None = None) -> dict:
        if not group_id:
            return join_result(member_id, ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return join_result(member_id, status)
        if not self._valid_session_timeout(session_timeout_ms):
            return join_result(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        if (cgroup := self.consumer_group_for_classic_request(group_id)) is not None:   # KIP-848 online migration
            return self.classic_group_join_to_consumer_group(
                cgroup, member_id, group_instance_id, client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                protocol_type, protocols, require_known_member_id)
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

    # -- SyncGroup ----------------------------------------------------------------

    async def sync_group(self, group_id: str, generation_id: int, member_id: str, instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> dict:
        group = self.groups.get(group_id)
        if not group_id:
            return sync_result(ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return sync_result(status)
        if (cgroup := self.consumer_groups.get(group_id)) is not None:   # a classic member of a consumer group
            return self.classic_group_sync_to_consumer_group(cgroup, generation_id, member_id, instance_id,
                                                             protocol_type, protocol_name)
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
                self.coordinator_metrics.record(CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME)
                log.info("group %s: generation %d is Stable", group.group_id, group.generation_id)
                for m in group.members.values():
                    self._answer_sync(m, self._sync_ok(group, m.assignment))
        return await fut

    @staticmethod
    def _sync_ok(group: GroupMetadata, assignment: bytes) -> dict:
        return sync_result(ErrorCode.NONE, assignment, group.protocol_type, group.protocol_name)

    # -- LeaveGroup ---------------------------------------------------------------

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]],
                    reason: str | None = None) -> tuple[ErrorCode, list[ErrorCode]]:
        """Remove members (member id, or group.instance.id with an empty member id for an admin removal)."""
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        if (status := self.group_status_error(group_id)) is not None:
            return status, []
        if (cgroup := self.consumer_groups.get(group_id)) is not None:   # classic members of a consumer group
            return ErrorCode.NONE, self.classic_group_leave_to_consumer_group(cgroup, leaving)
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
