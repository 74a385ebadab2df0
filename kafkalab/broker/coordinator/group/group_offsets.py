"""Committed offsets and group deletion: OffsetCommit, OffsetFetch, DeleteGroups, offset expiry.

Kafka's ``kafka.coordinator.group.GroupCoordinator`` handles them in
``handleCommitOffsets``, ``handleFetchOffsets``, ``handleDeleteGroups`` and
``handleDeletedPartitions``; expiry is ``GroupMetadataManager.cleanupGroupMetadata``.
The records themselves are written by :mod:`.group_metadata_manager`.

* **OffsetCommit** stores (offset, leader epoch, metadata) per partition for
  a member of the current generation (else ILLEGAL_GENERATION,
  UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID), or for anyone when the group is
  Empty and the commit carries generation -1 (a "simple" consumer using
  ``assign()``; such a group exists only for its offsets). In
  CompletingRebalance it is REBALANCE_IN_PROGRESS; metadata longer than
  ``offset.metadata.max.bytes`` is OFFSET_METADATA_TOO_LARGE. A member's
  commit counts as a heartbeat. In cluster mode the handler's commit waits
  for the ISR of the group's ``__consumer_offsets`` partition (acks=all).
* **OffsetFetch**: the committed offsets, per partition or all of them.
* A deleted topic's offsets are deleted with it.
* **DeleteGroups**: only an Empty group can go (else NON_EMPTY_GROUP;
  GROUP_ID_NOT_FOUND for none); its offsets and metadata get tombstones and
  the group is Dead.
* **Offset expiry** (KIP-211), every ``offsets.retention.check.interval.ms``:
  a consumer group's offsets expire ``offsets.retention.minutes`` after the
  group became Empty, those of a group without a protocol (simple commits)
  each that long after its commit; an Empty group left with nothing is dropped.

:class:`GroupOffsets` is a part of ``GroupCoordinator`` (a mixin): its methods
run on the coordinator and use its ``groups``, ``config``, ``loop``,
``manager``, ``in_cluster`` and ``broker``, its group status checks,
``_cancel_group_timers`` and ``validate_current_member``, and the session
timers of :class:`.heartbeats.MemberSessions`. The coordinator's ``start``
schedules the first expiry run.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from .group_coordinator_metrics import OFFSET_COMMITS_SENSOR_NAME, OFFSET_EXPIRED_SENSOR_NAME
from .group_metadata import GroupMetadata, now_ms
from .join_sync import COMPLETING, DEAD, EMPTY, UNKNOWN_MEMBER_ID
from .offsets_topic import OffsetAndMetadata

log = logging.getLogger(__name__)


class GroupOffsets:
    """GroupCoordinator's offsets, DeleteGroups and offset expiry (a mixin; see the module's docstring)."""

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
                                      instance_id: str | None, offsets: dict[tuple[str, int], OffsetAndMetadata]
                                      ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit as the handler calls it: in cluster mode the commit waits for the ISR of its
        ``__consumer_offsets`` partition (acks=all); a standalone broker is its own ISR."""
        if not self.in_cluster:
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
        """The checks of a commit: a dict of errors for every partition, or (partial result, group, to store);
        the offsets to store are counted (``offset-commit-count``, as Kafka's ``commitOffset`` counts the records
        it makes, before they are written)."""
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
        if generation_id < 0 and group.is_(EMPTY):
            pass   # the group only stores offsets in Kafka: a simple commit, whatever member id it names (Kafka's
            #        GroupCoordinator.doCommitOffsets: "generationId < 0 && group.is(Empty)")
        elif generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
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
        self.coordinator_metrics.record(OFFSET_COMMITS_SENSOR_NAME, len(to_store))
        return result, group, to_store

    def commit_transactional_offsets(self, group_id: str, producer_id: int, generation_id: int, member_id: str,
                                     offsets: dict[tuple[str, int], OffsetAndMetadata]
                                     ) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit (Kafka's ``handleTxnCommitOffsets``): the offsets wait, per producer id, for the
        transaction's marker in the group's ``__consumer_offsets`` partition; OffsetFetch does not see them
        before the COMMIT marker, and an ABORT marker drops them.

        The caller writes them to ``__consumer_offsets`` at once, in a transactional batch
        (``GroupMetadataManager.store_transactional_offsets``), as Kafka does, so a coordinator that
        loads the partition later knows them."""
        def all_(code):
            return {tp: code for tp in offsets}

        if not group_id:
            return all_(ErrorCode.INVALID_GROUP_ID)
        if (status := self.group_status_error(group_id)) is not None:
            return all_(status)
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = GroupMetadata(group_id)
        if group.is_(DEAD):
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if member_id and member_id != UNKNOWN_MEMBER_ID and member_id not in group.members:
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id >= 0 and generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        result, pending = {}, group.pending_transactional_offsets.setdefault(producer_id, {})
        max_metadata = self.config["offset.metadata.max.bytes"]
        for tp, om in offsets.items():
            if om.metadata is not None and len(om.metadata.encode()) > max_metadata:
                result[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                pending[tp] = om
                result[tp] = ErrorCode.NONE
        staged = sum(1 for code in result.values() if code == ErrorCode.NONE)
        self.coordinator_metrics.record(OFFSET_COMMITS_SENSOR_NAME, staged)   # as Kafka's commitTransactionalOffset
        return result

    def complete_transactional_offsets(self, offsets_partition: int, producer_id: int, committed: bool) -> None:
        """A marker in ``__consumer_offsets-<offsets_partition>``: commit or drop the producer's pending
        offsets of the groups in that partition (Kafka's ``handleTxnCompletion``)."""
        for group in list(self.groups.values()):
            pending = group.pending_transactional_offsets.pop(producer_id, None)
            if not pending or self.manager.partition_for(group.group_id) != offsets_partition:
                if pending:
                    group.pending_transactional_offsets[producer_id] = pending
                continue
            if committed:   # already in the log, in the transaction's batch: from now on they count
                group.offsets.update(pending)

    def drop_transactional_offsets(self, group_id: str, producer_id: int,
                                   offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        """Forget staged transactional offsets whose write to ``__consumer_offsets`` failed."""
        group = self.groups.get(group_id)
        pending = group.pending_transactional_offsets.get(producer_id, {}) if group is not None else {}
        for tp in offsets:
            pending.pop(tp, None)

    def has_pending_transactional_offsets(self, group_id: str, tp: tuple[str, int]) -> bool:
        """OffsetFetch ``require_stable`` (KIP-447): is an offset of ``tp`` waiting for a marker?"""
        group = self.groups.get(group_id)
        return group is not None and any(tp in p for p in group.pending_transactional_offsets.values())

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

    # -- DeleteGroups -------------------------------------------------------------

    def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """Kafka's handleDeleteGroups: one error code per group id; only Empty groups can go."""
        out = {}
        for group_id in group_ids:
            if not group_id:
                out[group_id] = ErrorCode.INVALID_GROUP_ID
                continue
            if (status := self.group_status_error(group_id)) is not None:
                out[group_id] = status
                continue
            if group_id in self.consumer_groups:   # a KIP-848 group: its records and its offsets go
                out[group_id] = self.delete_consumer_group(group_id)
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
        """The next expiry run, ``offsets.retention.check.interval.ms`` from now."""
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
                    self.coordinator_metrics.record(OFFSET_EXPIRED_SENSOR_NAME, len(expired))
                if not group.offsets and not group.members and not group.pending_members:
                    self.manager.delete_group(group)
                    self._cancel_group_timers(group)
                    group.transition_to(DEAD)
                    del self.groups[group.group_id]
        except KafkaError as exc:
            log.warning("offsets cleanup failed: %s", exc)
        finally:
            self._schedule_cleanup()
