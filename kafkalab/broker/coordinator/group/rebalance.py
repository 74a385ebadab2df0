"""Rebalancing: from PreparingRebalance to a new generation, and the timers that end each phase.

Kafka's ``kafka.coordinator.group.GroupCoordinator`` steps a group through a
rebalance in ``maybePrepareRebalance`` / ``prepareRebalance``,
``tryCompleteJoin`` / ``onCompleteJoin`` and ``onExpirePendingSync``; the
waits are delayed operations in a purgatory (``DelayedJoin.scala``,
``DelayedSync.scala``):

* **prepareRebalance**: a join, leave or expired session moves the group to
  PreparingRebalance. A group still in CompletingRebalance first answers its
  waiting SyncGroups with REBALANCE_IN_PROGRESS
  (``resetAndPropagateAssignmentError``).
* **InitialDelayedJoin**: an Empty group's first rebalance waits
  ``group.initial.rebalance.delay.ms`` for more members to arrive, again for
  each newcomer, at most the rebalance timeout in all.
* **DelayedJoin**: the join phase ends as soon as every member has rejoined
  (``tryCompleteJoin``), at the latest after the rebalance timeout (the
  largest ``max.poll.interval.ms`` among the members). ``onCompleteJoin`` then
  removes members that did not rejoin, makes sure the leader is one that did,
  selects the protocol (assignor), opens the next generation and answers
  every waiting JoinGroup: the group is CompletingRebalance (or Empty, when
  nobody is left, and that is written to ``__consumer_offsets``).
* **DelayedSync**: members that got the new generation but send no SyncGroup
  within the rebalance timeout are removed, and the group rebalances again.
* **removeMemberAndUpdateGroup**: a member that left or whose session expired
  is removed; a Stable or CompletingRebalance group rebalances without it.

Kafka's delayed operations become ``loop.call_later`` handles kept on the
group: ``join_timer`` (DelayedJoin / InitialDelayedJoin) and ``sync_timer``
(DelayedSync).

:class:`Rebalancing` is a part of ``GroupCoordinator`` (a mixin): its methods
run on the coordinator and use its ``config``, ``loop`` and ``manager``, the
JoinGroup / SyncGroup answers of :class:`.join_sync.JoinSyncHandlers` and the
session timers of :class:`.heartbeats.MemberSessions`.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from .group_metadata import GroupMetadata, MemberMetadata
from .join_sync import COMPLETING, EMPTY, PREPARING, STABLE, join_result, sync_result

log = logging.getLogger(__name__)


class Rebalancing:
    """GroupCoordinator's rebalance steps and their timers (a mixin; see the module's docstring)."""

    # -- group.initial.rebalance.delay.ms -------------------------------------------

    @property
    def initial_rebalance_delay_ms(self) -> int:
        return self.config["group.initial.rebalance.delay.ms"]

    # -- prepareRebalance -----------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        """Kafka's maybePrepareRebalance: start a rebalance unless one is already preparing (or Dead)."""
        if group.is_(STABLE, COMPLETING, EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        """Kafka's prepareRebalance: to PreparingRebalance, with an InitialDelayedJoin for an Empty group,
        else a DelayedJoin of the rebalance timeout."""
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

    # -- InitialDelayedJoin, DelayedJoin -----------------------------------------------

    def _on_initial_delay_expired(self, group: GroupMetadata) -> None:
        """Kafka's InitialDelayedJoin.onComplete: wait again if members arrived (while delay is left),
        else complete the join."""
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

    # -- DelayedSync ----------------------------------------------------------------

    def _on_expire_pending_sync(self, group: GroupMetadata, generation: int) -> None:
        """Kafka's DelayedSync.onExpiration (onExpirePendingSync): members that got the new generation but
        never sent SyncGroup within the rebalance timeout leave."""
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

    # -- shared steps ---------------------------------------------------------------

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        """Kafka's resetAndPropagateAssignmentError: waiting SyncGroups get ``error``, assignments go."""
        for member in group.members.values():
            member.assignment = b""
            self._answer_sync(member, sync_result(error))

    def _store_group_quietly(self, group: GroupMetadata) -> None:
        try:
            self.manager.store_group(group)
        except KafkaError as exc:
            log.warning("group %s: could not store group metadata: %s", group.group_id, exc)

    def _remove_member_and_update_group(self, group: GroupMetadata, member: MemberMetadata, reason: str) -> None:
        """Kafka's removeMemberAndUpdateGroup (LeaveGroup, an expired session): the rest rebalance."""
        # a removed member still waiting gets UNKNOWN_MEMBER_ID, so a live consumer rejoins as new
        self._answer_join(member, join_result(member.member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        self._answer_sync(member, sync_result(ErrorCode.UNKNOWN_MEMBER_ID))
        self._remove_heartbeat(member)
        group.remove(member.member_id)
        if group.is_(STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(PREPARING):
            self._try_complete_join(group)
