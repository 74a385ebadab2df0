"""KIP-848's online migration: classic members inside a consumer group, and a group changing protocol.

Modelled on Kafka 4.x's ``GroupMetadataManager`` (``convertToConsumerGroup``, ``convertToClassicGroup``,
``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup``, ``classicGroupLeaveToConsumerGroup``), ``ConsumerGroup.fromClassicGroup``
and ``ClassicGroup.fromConsumerGroup``. It lets a running group move from ``group.protocol=classic`` to
``group.protocol=consumer`` (and back) one consumer at a time, with no stop:

* **upgrade**: the first ConsumerGroupHeartbeat for a classic group with members (all of
  ``protocol_type=consumer``) turns it into a consumer group. Each classic member becomes a consumer group
  member at the classic generation, keeping its partitions; the joining member bumps the group epoch, the
  server-side assignor runs, and the classic members learn of it on their next Heartbeat
  (REBALANCE_IN_PROGRESS).
* **classic members in a consumer group** keep speaking JoinGroup / SyncGroup / Heartbeat / LeaveGroup. A
  JoinGroup is answered at once (no waiting for the others): it updates the member's subscription, runs the
  reconciliation of the consumer protocol with the partitions the subscription says the member owns, and
  returns the member epoch as the generation, without a leader: the client does not assign. SyncGroup returns
  the partitions the coordinator gave the member. A Heartbeat returns REBALANCE_IN_PROGRESS while the member
  is behind the group epoch, must revoke partitions, or may now get partitions another member released: the
  member rejoins (within its rebalance timeout, else it is fenced; a JoinGroup not followed by a SyncGroup
  within the rebalance timeout too).
* **downgrade**: when the last member using the consumer protocol leaves (or is fenced) and the others all
  use the classic protocol, the group becomes a classic group again: Stable at the group epoch as its
  generation, each member with its target partitions, and a rebalance starts at once. When a classic static
  member (``group.instance.id``) takes the place of the last consumer-protocol member, the group is downgraded
  too, Stable, with no rebalance: the new member holds the old one's partitions.
* an upgrade is refused (GROUP_ID_NOT_FOUND) when a classic member's assignment carries user data: the state
  of a client-side assignor, which a consumer group (the broker assigns) would lose.

``group.consumer.migration.policy`` (``bidirectional`` by default, ``upgrade``, ``downgrade``, ``disabled``)
says which conversions of a group *with members* happen; an empty group is always replaced by the other kind.
With ``disabled``, Kafka 4.4 also refuses a classic JoinGroup for a consumer group with members
(INCONSISTENT_GROUP_PROTOCOL, "... because the group migration is disabled."), as here.
What a conversion changes is written to ``__consumer_offsets``: the classic group's metadata record is
tombstoned and the consumer group's records written (a classic member's type-5 record carries its session
timeout and JoinGroup protocols, Kafka's ``ClassicMemberMetadata``), or the other way round.

:class:`ConsumerGroupMigration` is a part of ``GroupCoordinator`` (a mixin).
"""
from __future__ import annotations

import logging
import uuid

from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from ...common.errors import ErrorCode, KafkaError
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, MemberState
from .group_metadata import GroupMetadata, GroupState, MemberMetadata
from .join_sync import join_result, sync_result

log = logging.getLogger(__name__)

CONSUMER_PROTOCOL_TYPE = "consumer"


def _err(code: ErrorCode, message: str) -> KafkaError:
    return KafkaError(code, message)


def decode_subscription(metadata: bytes) -> ConsumerProtocolSubscription:
    return ConsumerProtocolSubscription.decode(bytes(metadata))


def subscription_version(metadata: bytes) -> int:
    """Kafka's ``ConsumerProtocol.deserializeVersion``: the assignment is written in the subscription's version."""
    return min(int.from_bytes(bytes(metadata)[:2], "big", signed=True), ConsumerProtocolAssignment.max_version) \
        if len(metadata) >= 2 else 0


class ConsumerGroupMigration:
    """GroupCoordinator's classic members in consumer groups and conversions (a mixin; see the module)."""

    # -- group.consumer.migration.policy -----------------------------------------------------

    def _migration_policy(self) -> str:
        return str(self.config["group.consumer.migration.policy"]).lower()

    def _upgrade_enabled(self) -> bool:
        return self._migration_policy() in ("upgrade", "bidirectional")

    def _downgrade_enabled(self) -> bool:
        return self._migration_policy() in ("downgrade", "bidirectional")

    # -- topic names and ids -------------------------------------------------------------------

    def _by_ids(self, partitions) -> dict:
        """[(topic name, [partitions])] -> {topic id: set(partitions)} for the topics that exist."""
        out = {}
        for name, parts in partitions:
            meta = self.broker.metadata_cache.get(name)
            if meta is not None and parts:
                out.setdefault(meta.topic_id, set()).update(parts)
        return out

    def _serialize_assignment(self, assignment: dict, subscription: bytes) -> bytes:
        """Kafka's ``prepareAssignment``: the partitions in ConsumerProtocolAssignment, in the version of the
        member's subscription."""
        tps = []
        for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0])):
            meta = self.broker.metadata_cache.by_id(topic_id)
            if meta is not None and parts:
                tps.append(ConsumerProtocolAssignment.TopicPartition(topic=meta.name, partitions=sorted(parts)))
        version = subscription_version(subscription)
        return ConsumerProtocolAssignment(version=version, assigned_partitions=tps, user_data=None).encode(version)

    # -- upgrade: a classic group becomes a consumer group ---------------------------------------

    def validate_online_upgrade(self, classic: GroupMetadata) -> str | None:
        """Kafka's ``validateOnlineUpgrade``: None if the classic group may become a consumer group, else why not."""
        if not self._upgrade_enabled():
            return "online upgrade is disabled"   # Kafka 4.4's words
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return "the group does not use the consumer embedded protocol"
        if len(classic.members) > self.config["group.consumer.max.size"]:
            return "the group size exceeds the consumer group maximum size"
        return None

    def convert_to_consumer_group(self, classic: GroupMetadata) -> ConsumerGroup:
        """Kafka's ``convertToConsumerGroup``: waiting JoinGroups/SyncGroups hear REBALANCE_IN_PROGRESS, the
        classic group's metadata record is tombstoned (its offsets stay), and each member carries over."""
        group = ConsumerGroup(classic.group_id)
        group.group_epoch = group.assignment_epoch = classic.generation_id
        for m in classic.members.values():
            protocol = classic.protocol_name or m.protocols()[0]
            try:
                subscription = decode_subscription(m.metadata(protocol))
                decoded = ConsumerProtocolAssignment.decode(bytes(m.assignment)) if m.assignment else None
            except Exception as exc:
                raise _err(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} to "
                           "consumer group because the embedded consumer protocol is malformed.") from exc
            if decoded is not None and decoded.user_data:
                # Kafka 4.4 (ConsumerGroup.fromClassicGroup): "userData from a custom assignor would be lost"
                log.warning("Cannot upgrade classic group %s to consumer group: member %s's assignment carries "
                            "user data of a client-side assignor.", classic.group_id, m.member_id)
                raise _err(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} to "
                           "consumer group because an unsupported custom assignor is in use. Please refer to the "
                           "documentation or switch to a default assignor before re-attempting the upgrade.")
            assignment = decoded.assigned_partitions if decoded is not None else []
            assigned = self._by_ids((tp.topic, tp.partitions) for tp in assignment)
            member = ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=getattr(subscription, "rack_id", None),
                client_id=m.client_id, client_host=m.client_host,
                subscribed_topic_names=sorted(subscription.topics or []),
                rebalance_timeout_ms=m.rebalance_timeout_ms, member_epoch=classic.generation_id,
                previous_member_epoch=classic.generation_id, state=MemberState.STABLE, assigned_partitions=assigned,
                classic=ClassicMemberMetadata(m.session_timeout_ms, [(n, bytes(b)) for n, b in m.supported_protocols]))
            group.target_assignment[member.member_id] = {t: set(p) for t, p in assigned.items()}
            group.update_member(member)
        # the classic group is gone: whoever waits hears REBALANCE_IN_PROGRESS and rejoins the consumer group
        for m in classic.members.values():
            self._answer_join(m, join_result(m.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
            self._answer_sync(m, sync_result(ErrorCode.REBALANCE_IN_PROGRESS))
            self._remove_heartbeat(m)
        self._cancel_group_timers(classic)
        self.manager.delete_group_metadata(classic.group_id)
        holder = GroupMetadata(classic.group_id)   # from now on it only keeps the group's committed offsets
        holder.offsets, holder.pending_transactional_offsets = classic.offsets, classic.pending_transactional_offsets
        self.groups[classic.group_id] = holder
        self.consumer_groups[group.group_id] = group
        for member in group.members.values():
            self._schedule_consumer_session(group, member)
        log.info("group %s: upgraded from classic to consumer group at epoch %d with %d classic members",
                 group.group_id, group.group_epoch, len(group.members))
        return group

    # -- downgrade: a consumer group becomes a classic group -------------------------------------

    def validate_online_downgrade(self, group: ConsumerGroup, leaving_member_id: str) -> bool:
        """Kafka's ``validateOnlineDowngradeWithFencedMember``."""
        if not group.all_members_use_classic_protocol_except(leaving_member_id):
            return False
        if len(group.members) <= 1:
            return False
        if not self._downgrade_enabled():
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is "
                     "disabled.", group.group_id)
            return False
        if len(group.members) - 1 > self.config["group.max.size"]:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater "
                     "than classic group max size.", group.group_id)
            return False
        return True

    def validate_online_downgrade_with_replaced_member(self, group: ConsumerGroup,
                                                       replaced_uses_consumer: bool) -> bool:
        """Kafka's ``validateOnlineDowngradeWithReplacedMemberId``: a classic static member took the place of the
        last member using the consumer protocol (``group`` already holds the new member instead of the old)."""
        if not replaced_uses_consumer or len(group.classic_members()) != len(group.members):
            return False
        if not self._downgrade_enabled():
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is "
                     "disabled.", group.group_id)
            return False
        if len(group.members) > self.config["group.max.size"]:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater "
                     "than classic group max size.", group.group_id)
            return False
        return True

    def convert_to_classic_group(self, group: ConsumerGroup, leaving_member_id: str,
                                 rebalance: bool = True) -> GroupMetadata:
        """Kafka's ``convertToClassicGroup``: the consumer group's records are tombstoned, the classic group is
        Stable at the group epoch, each member holds its target partitions. A member leaving makes it rebalance;
        a classic static member replacing the last consumer-protocol one (``rebalance=False``) does not: the new
        member holds the partitions of the one it replaced."""
        for member in group.members.values():
            member.cancel_timers()
        del self.consumer_groups[group.group_id]
        self.consumer_group_persister.delete(group.group_id)
        holder = self.groups.get(group.group_id)
        classic = GroupMetadata(group.group_id, GroupState.STABLE)
        if holder is not None:
            classic.offsets = holder.offsets
            classic.pending_transactional_offsets = holder.pending_transactional_offsets
        classic.generation_id = group.group_epoch
        for m in group.members.values():
            if m.member_id == leaving_member_id:
                continue
            classic.add(MemberMetadata(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                       m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                                       list(m.classic.supported_protocols)))
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        classic.protocol_name = classic.select_protocol()
        for m in classic.members.values():
            m.assignment = self._serialize_assignment(group.target_assignment.get(m.member_id, {}),
                                                      m.metadata(classic.protocol_name))
        self.groups[group.group_id] = classic
        self.manager.store_group(classic)
        for m in classic.members.values():
            self._schedule_heartbeat(classic, m)
        log.info("group %s: downgraded from consumer to classic group at generation %d", classic.group_id,
                 classic.generation_id)
        if rebalance:
            self._prepare_rebalance(classic, f"Downgrade group {classic.group_id} from consumer to classic.")
        return classic

    # -- JoinGroup of a classic member ---------------------------------------------------------

    def classic_group_join_to_consumer_group(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                                             client_id: str, client_host: str, rebalance_timeout_ms: int,
                                             session_timeout_ms: int, protocol_type: str,
                                             protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> dict:
        """Kafka's ``classicGroupJoinToConsumerGroup``: the JoinGroup response body, at once."""
        if self._migration_policy() == "disabled":   # Kafka 4.4's throwIfClassicMemberCannotJoinConsumerGroup
            log.info("Cannot join the consumer group %s with the classic protocol because the group migration is "
                     "disabled.", group.group_id)
            return join_result(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        unknown = member_id == ""
        if unknown:   # Kafka 4.4 names it as a classic group does: the client id (or instance id) and a UUID
            member_id = f"{instance_id if instance_id is not None else client_id}-{uuid.uuid4()}"
        if member_id not in group.members and len(group.members) >= self.config["group.consumer.max.size"]:
            return join_result(member_id, ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not group.supports_classic_protocols(protocol_type, [n for n, _ in protocols]):
            return join_result(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if unknown and require_known_member_id and instance_id is None:
            log.info("group %s: a dynamic member joins the consumer group with the classic protocol; it is "
                     "asked to rejoin with member id %s", group.group_id, member_id)
            return join_result(member_id, ErrorCode.MEMBER_ID_REQUIRED)
        try:
            subscription = decode_subscription(protocols[0][1])
        except Exception:   # noqa: BLE001 - a client's bytes: any decode failure is its error
            return join_result(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        member = group.members.get(member_id)
        if member is not None and not member.uses_classic_protocol:
            return join_result(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        replaced_uses_consumer = None   # a static member replaced: did the old one use the consumer protocol
        if instance_id is not None:
            old = group.static_member(instance_id)
            if old is not None and old.member_id != member_id:
                replaced_uses_consumer = not old.uses_classic_protocol
                # the static member restarted (either protocol before): the new member id takes over its entry
                target = group.target_assignment.pop(old.member_id, {})   # (remove_member drops it)
                group.remove_member(old.member_id)
                member = ConsumerGroupMember(member_id, instance_id=instance_id,
                                             subscribed_topic_names=old.subscribed_topic_names,
                                             subscribed_topic_regex=old.subscribed_topic_regex,
                                             rebalance_timeout_ms=old.rebalance_timeout_ms, member_epoch=0,
                                             previous_member_epoch=0, state=old.state,
                                             assigned_partitions=old.assigned_partitions,
                                             partitions_pending_revocation=old.partitions_pending_revocation,
                                             assignment_epochs=dict(old.assignment_epochs))
                group.target_assignment[member_id] = target
        is_new = member is None   # (a restarted static member is not: it keeps its subscription and partitions)
        if member is None:
            log.info("group %s: member %s joins the consumer group using the classic protocol", group.group_id,
                     member_id)
            member = ConsumerGroupMember(member_id, member_epoch=0, previous_member_epoch=-1, state=MemberState.STABLE)
        member.instance_id = instance_id if instance_id is not None else member.instance_id
        rack = getattr(subscription, "rack_id", None)
        if rack is not None:
            member.rack_id = rack
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        member.client_id, member.client_host = client_id, client_host
        member.classic = ClassicMemberMetadata(session_timeout_ms, [(n, bytes(m)) for n, m in protocols])
        topics = sorted(subscription.topics or [])
        bump = is_new or topics != member.subscribed_topic_names
        member.subscribed_topic_names = topics
        group.update_member(member)
        # the partitions the subscription says it owns (eager assignors: none) stand for what a heartbeat reports
        owned = self._by_ids((tp.topic, tp.partitions)
                             for tp in (getattr(subscription, "owned_partitions", None) or []))
        updated = self._update_group_and_reconcile(group, member, bump, owned)
        group.maybe_update_state()
        if updated.join_handle is not None:
            updated.join_handle.cancel()
            updated.join_handle = None
        if replaced_uses_consumer is not None and self.validate_online_downgrade_with_replaced_member(
                group, replaced_uses_consumer):
            # the last consumer-protocol member was replaced by this classic static member: a classic group, Stable
            log.info("group %s: static member %s replaced the last consumer-protocol member", group.group_id,
                     updated.member_id)
            self.convert_to_classic_group(group, leaving_member_id="", rebalance=False)
            return join_result(updated.member_id, ErrorCode.NONE, generation_id=updated.member_epoch,
                               protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0])
        self._schedule_consumer_session(group, updated)
        self._schedule_classic_sync_timeout(group, updated)
        self.consumer_group_persister.persist(group)
        return join_result(updated.member_id, ErrorCode.NONE, generation_id=updated.member_epoch,
                           protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0])

    # -- SyncGroup, Heartbeat, LeaveGroup of a classic member --------------------------------------

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                           f"{group.group_id}.")
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Member with instance id {instance_id} is not a member of "
                           f"group {group.group_id}.")
            if member.member_id != member_id:
                raise _err(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                           f"{instance_id} is fenced by existing member {member.member_id}.")
        if not member.uses_classic_protocol:
            raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    def classic_group_sync_to_consumer_group(self, group: ConsumerGroup, generation_id: int, member_id: str,
                                             instance_id: str | None, protocol_type: str | None,
                                             protocol_name: str | None) -> dict:
        """Kafka's ``classicGroupSyncToConsumerGroup``: the member's partitions, as the coordinator assigned them."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except KafkaError as exc:
            return sync_result(exc.code)
        if generation_id != member.member_epoch:
            return sync_result(ErrorCode.ILLEGAL_GENERATION)
        chosen = member.classic.supported_protocols[0]
        if ((protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (protocol_name is not None and protocol_name != chosen[0])):
            return sync_result(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.group_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            self._schedule_classic_join_timeout(group, member)
            return sync_result(ErrorCode.REBALANCE_IN_PROGRESS)
        if member.sync_handle is not None:
            member.sync_handle.cancel()
            member.sync_handle = None
        self._schedule_consumer_session(group, member)
        return sync_result(ErrorCode.NONE, self._serialize_assignment(member.assigned_partitions, chosen[1]),
                           protocol_type, protocol_name)

    def classic_group_heartbeat_to_consumer_group(self, group: ConsumerGroup, member_id: str,
                                                  instance_id: str | None, generation_id: int) -> ErrorCode:
        """Kafka's ``classicGroupHeartbeatToConsumerGroup``: REBALANCE_IN_PROGRESS tells the member to rejoin."""
        try:
            member = self._classic_member(group, member_id, instance_id)
        except KafkaError as exc:
            return exc.code
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_consumer_session(group, member)
        if (member.member_epoch < group.group_epoch or member.state == MemberState.UNREVOKED_PARTITIONS
                or (member.state == MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._schedule_classic_join_timeout(group, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_group_leave_to_consumer_group(self, group: ConsumerGroup,
                                              leaving: list[tuple[str, str | None]]) -> list[ErrorCode]:
        """Kafka's ``classicGroupLeaveToConsumerGroup``: the members go, the group epoch goes up once."""
        errors, left = [], False
        for member_id, instance_id in leaving:
            try:
                if instance_id is not None and member_id == "":   # an admin's removal by instance id
                    member = group.static_member(instance_id)
                    if member is None:
                        raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    if not member.uses_classic_protocol:
                        raise _err(ErrorCode.UNKNOWN_MEMBER_ID, "not a classic member")
                else:
                    member = self._classic_member(group, member_id, instance_id)
            except KafkaError as exc:
                errors.append(exc.code)
                continue
            log.info("group %s: classic member %s left the consumer group", group.group_id, member.member_id)
            group.remove_member(member.member_id)
            errors.append(ErrorCode.NONE)
            left = True
        if left:
            group.group_epoch += 1
            group.maybe_update_state()
            self.consumer_group_persister.persist(group)
        return errors

    # -- a classic member's timers -----------------------------------------------------------------

    def _schedule_classic_join_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Kafka's ``scheduleConsumerGroupJoinTimeoutIfAbsent``: told to rejoin, it must within its rebalance
        timeout."""
        if member.join_handle is None:
            member.join_handle = self.loop.call_later(
                max(member.rebalance_timeout_ms, 0) / 1000, self._on_classic_timeout, group, member.member_id,
                "the classic member failed to join within the rebalance timeout")

    def _schedule_classic_sync_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Kafka's ``scheduleConsumerGroupSyncTimeout``: after its JoinGroup, a SyncGroup within the rebalance
        timeout."""
        if member.sync_handle is not None:
            member.sync_handle.cancel()
        member.sync_handle = self.loop.call_later(max(member.rebalance_timeout_ms, 0) / 1000, self._on_classic_timeout,
                                                  group, member.member_id, "the member failed to sync within timeout")

    def _on_classic_timeout(self, group: ConsumerGroup, member_id: str, why: str) -> None:
        member = group.members.get(member_id)
        if member is not None and self.consumer_groups.get(group.group_id) is group:
            member.join_handle = member.sync_handle = None
            self._fence_member(group, member, why)
