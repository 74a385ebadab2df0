"""Heartbeats and member sessions: Kafka's ``DelayedHeartbeat`` and ``handleHeartbeat``.

Kafka's ``kafka.coordinator.group.GroupCoordinator`` keeps one
``DelayedHeartbeat`` per member in its heartbeat purgatory:

* **Sessions**: every sign of life (Heartbeat, JoinGroup, SyncGroup,
  OffsetCommit) pushes the member's deadline ``session.timeout.ms`` further
  (``completeAndScheduleNextHeartbeatExpiration``). A member silent that long
  is removed and the group rebalances (``onExpireHeartbeat``,
  ``removeMemberAndUpdateGroup``); one waiting for its JoinGroup or SyncGroup
  answer is not silent (compare ``MemberMetadata.shouldKeepAlive``). A member
  that leaves or fails to rejoin loses its timer
  (``removeHeartbeatForLeavingMember``).
* **Bounds**: JoinGroup refuses a ``session.timeout.ms`` outside
  [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``] with
  INVALID_SESSION_TIMEOUT.
* **Heartbeat** (``handleHeartbeat``): checks group, member and generation;
  REBALANCE_IN_PROGRESS in PreparingRebalance tells the member to rejoin.
* **Pending members** (KIP-394): a member id handed out with
  MEMBER_ID_REQUIRED expires if not used to join within
  ``session.timeout.ms`` (``addPendingMemberExpiration``, a DelayedHeartbeat of
  a pending member; ``removePendingMemberAndUpdateGroup``).

Each ``DelayedHeartbeat`` here is a ``loop.call_later`` handle: the member's
``heartbeat_handle``, or the group's ``pending_members`` entry.

:class:`MemberSessions` is a part of ``GroupCoordinator`` (a mixin): its
methods run on the coordinator and use its ``groups``, ``config`` and
``loop``, its ``group_status_error``, ``validate_current_member`` of
:class:`.join_sync.JoinSyncHandlers` and the rebalance steps of
:class:`.rebalance.Rebalancing`.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode
from .group_metadata import GroupMetadata, MemberMetadata
from .join_sync import DEAD, EMPTY, PREPARING

log = logging.getLogger(__name__)


class MemberSessions:
    """GroupCoordinator's heartbeats and member session timeouts (a mixin; see the module's docstring)."""

    # -- session.timeout.ms -------------------------------------------------------

    def _valid_session_timeout(self, session_timeout_ms: int) -> bool:
        """JoinGroup's check (else INVALID_SESSION_TIMEOUT): ``session.timeout.ms`` lies within
        [``group.min.session.timeout.ms``, ``group.max.session.timeout.ms``]."""
        return (self.config["group.min.session.timeout.ms"] <= session_timeout_ms
                <= self.config["group.max.session.timeout.ms"])

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
        """Kafka's removeHeartbeatForLeavingMember: a member that is gone has no session to expire."""
        if member.heartbeat_handle is not None:
            member.heartbeat_handle.cancel()
            member.heartbeat_handle = None

    def _expire_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        """The pending member's DelayedHeartbeat expired: a member id handed out with MEMBER_ID_REQUIRED
        that never came back (KIP-394)."""
        if member_id in group.pending_members:
            log.info("group %s: pending member %s expired", group.group_id, member_id)
            self._remove_pending_member(group, member_id)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        """Kafka's removePendingMemberAndUpdateGroup: forget a pending member id; a rebalance that was
        waiting for it may complete now."""
        handle = group.pending_members.pop(member_id, None)
        if handle is not None:
            handle.cancel()
        if group.is_(PREPARING):
            self._try_complete_join(group)

    # -- Heartbeat ----------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation_id: int) -> ErrorCode:
        """Kafka's handleHeartbeat: the member's error code; its session starts again when it is valid."""
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        if (status := self.group_status_error(group_id)) is not None:
            return status
        if (cgroup := self.consumer_groups.get(group_id)) is not None:   # a classic member of a consumer group
            return self.classic_group_heartbeat_to_consumer_group(cgroup, member_id, instance_id, generation_id)
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
