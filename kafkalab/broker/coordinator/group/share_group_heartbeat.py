"""ShareGroupHeartbeat and ShareGroupDescribe: the group coordinator's side of KIP-932 share groups.

Modelled on Kafka 4.x's ``GroupMetadataManager.shareGroupHeartbeat`` (and ``shareGroupDescribe``). A share
consumer (confluent-kafka's ``ShareConsumer``, Java's ``KafkaShareConsumer``) finds its coordinator with
FindCoordinator (key type GROUP) and sends ShareGroupHeartbeat every ``group.share.heartbeat.interval.ms``:

* **member epoch 0** joins (the client generates its member id, a UUID); **-1** leaves. A member silent for
  ``group.share.session.timeout.ms`` is removed. Either way the group epoch goes up; the records the member
  acquired stay acquired: as in Kafka 4.4, only the end of the member's *share session* on a partition's leader
  releases them (ShareFetch/ShareAcknowledge with epoch -1, its connection closing; Kafka's
  ``ShareGroupListener.onMemberLeave`` is called by the share session cache, not by the group coordinator),
  else their locks expire. A closing librdkafka 2.16 consumer sends its leave heartbeat and its final
  ShareAcknowledge (epoch -1, with the last poll's acknowledgements) concurrently, in either order: those
  acknowledgements must still count.
* the group epoch goes up when a member joins or leaves, a subscription changes or a subscribed topic gains
  partitions; the ``simple`` assignor (:mod:`.share_group`) then computes the target assignment, and each
  member takes it at its next heartbeat (its member epoch becomes the assignment epoch; there is no
  revocation step, see :mod:`.share_group`).
* an epoch other than the member's is FENCED_MEMBER_EPOCH; an unknown member UNKNOWN_MEMBER_ID; a group id
  used by a classic or consumer group GROUP_ID_NOT_FOUND ("not a share group"); more members than
  ``group.share.max.size`` GROUP_MAX_SIZE_REACHED.

Share groups are kept in memory only (Kafka writes ShareGroupMetadata, ...MemberMetadata, ...TargetAssignment
records to ``__consumer_offsets``): after a restart members rejoin (UNKNOWN_MEMBER_ID makes them). What must
survive a restart, each share-partition's delivery state, is kept by the share coordinator in
``__share_group_state``.

:class:`ShareGroupHeartbeats` is a part of ``GroupCoordinator`` (a mixin) using its ``share_groups``,
``groups``, ``consumer_groups``, ``config``, ``loop`` and ``broker``.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from .share_group import (JOIN_GROUP_MEMBER_EPOCH, LEAVE_GROUP_MEMBER_EPOCH, ShareGroup, ShareGroupMember,
                          ShareGroupState, simple)
from .group_config import group_config_of
from .group_coordinator_metrics import SHARE_GROUP_REBALANCES_SENSOR_NAME

log = logging.getLogger(__name__)

ASSIGNOR = "simple"


def _err(code: ErrorCode, message: str) -> KafkaError:
    return KafkaError(code, message)


class ShareGroupHeartbeats:
    """GroupCoordinator's KIP-932 share groups (a mixin; see the module's docstring)."""

    def share_group_heartbeat(self, request, client_id: str, client_host: str) -> dict:
        """The response body of a ShareGroupHeartbeat (errors as ``error_code`` and ``error_message``)."""
        try:
            return self._share_group_heartbeat(request, client_id or "", client_host)
        except KafkaError as exc:
            return {"error_code": exc.code, "error_message": exc.message, "member_id": None, "member_epoch": 0,
                    "heartbeat_interval_ms": 0, "assignment": None}

    @staticmethod
    def _validate_share_heartbeat(r) -> None:
        """Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``."""
        def bad(msg):
            raise _err(ErrorCode.INVALID_REQUEST, msg)
        if not r.group_id:
            bad("GroupId can't be empty.")
        if not r.member_id:
            bad("MemberId can't be empty.")
        if r.rack_id is not None and not r.rack_id:
            bad("RackId can't be empty.")
        if r.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if not r.subscribed_topic_names:
                bad("SubscribedTopicNames must be set in first request.")
        elif r.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            bad(f"MemberEpoch is {r.member_epoch}, but must be greater than or equal to -1.")

    def _share_group_heartbeat(self, r, client_id: str, client_host: str) -> dict:
        if (status := self.group_status_error(r.group_id)) is not None:
            raise _err(status, f"not the coordinator of group {r.group_id}")
        self._validate_share_heartbeat(r)
        if r.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            group = self.share_groups.get(r.group_id)
            member = group.members.get(r.member_id) if group is not None else None
            if member is None:
                raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
            self._remove_share_member(group, member, "left the group")
            return {"error_code": ErrorCode.NONE, "member_id": r.member_id, "member_epoch": LEAVE_GROUP_MEMBER_EPOCH,
                    "heartbeat_interval_ms": 0, "assignment": None}
        group = self._get_or_create_share_group(r.group_id, create=r.member_epoch == JOIN_GROUP_MEMBER_EPOCH)
        bump = False
        member = group.members.get(r.member_id)
        if r.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if member is None:
                if len(group.members) >= self.config["group.share.max.size"]:
                    raise _err(ErrorCode.GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum "
                               f"capacity of {self.config['group.share.max.size']} members.")
                member = group.members[r.member_id] = ShareGroupMember(r.member_id)
                bump = True
        elif member is None:
            raise _err(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {group.group_id}.")
        elif r.member_epoch != member.member_epoch:
            which = "greater" if r.member_epoch > member.member_epoch else "smaller"
            raise _err(ErrorCode.FENCED_MEMBER_EPOCH, f"The share group member has a {which} "
                       f"member epoch ({r.member_epoch}) than the one known by the group coordinator "
                       f"({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        member.client_id, member.client_host = client_id, client_host
        if r.rack_id is not None:
            member.rack_id = r.rack_id
        if r.subscribed_topic_names is not None and sorted(r.subscribed_topic_names) != member.subscribed_topic_names:
            member.subscribed_topic_names = sorted(r.subscribed_topic_names)
            bump = True
        group.maybe_update_state()
        topics = self._share_subscribed_topics(group)
        metadata = {name: n for name, (_, n) in topics.items()}
        if metadata != group.subscription_metadata:
            group.subscription_metadata = metadata
            bump = True
        if bump:
            group.group_epoch += 1
            self.coordinator_metrics.record(SHARE_GROUP_REBALANCES_SENSOR_NAME)
            log.info("share group %s: epoch %d", group.group_id, group.group_epoch)
        if group.group_epoch > group.assignment_epoch:
            members = {m.member_id: set(m.subscribed_topic_names) & set(topics) for m in group.members.values()}
            group.target_assignment = simple(members, topics)
            group.assignment_epoch = group.group_epoch
        send_assignment = r.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
            member.assigned_partitions = group.target_assignment.get(member.member_id, {})
            send_assignment = True
        self._schedule_share_session(group, member)
        interval = group_config_of(self.broker, group.group_id, "share.heartbeat.interval.ms")
        response = {"error_code": ErrorCode.NONE, "member_id": member.member_id, "member_epoch": member.member_epoch,
                    "heartbeat_interval_ms": interval, "assignment": None}
        if send_assignment:
            response["assignment"] = {"topic_partitions": [
                {"topic_id": t, "partitions": sorted(p)}
                for t, p in sorted(member.assigned_partitions.items(), key=lambda kv: str(kv[0])) if p]}
        return response

    def _get_or_create_share_group(self, group_id: str, create: bool) -> ShareGroup:
        group = self.share_groups.get(group_id)
        if group is not None:
            return group
        classic = self.groups.get(group_id)
        if group_id in self.consumer_groups or (classic is not None and classic.members):
            raise _err(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise _err(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = self.share_groups[group_id] = ShareGroup(group_id)
        return group

    def _share_subscribed_topics(self, group: ShareGroup) -> dict[str, tuple[object, int]]:
        cache = self.broker.metadata_cache
        out = {}
        for name in group.subscribed_topic_names():
            meta = cache.get(name)
            if meta is not None and meta.num_partitions > 0:
                out[name] = (meta.topic_id, meta.num_partitions)
        return out

    def _remove_share_member(self, group: ShareGroup, member: ShareGroupMember, why: str) -> None:
        if group.members.get(member.member_id) is not member:
            return
        group.remove_member(member.member_id)
        group.group_epoch += 1
        log.info("share group %s: member %s %s; epoch %d", group.group_id, member.member_id, why, group.group_epoch)

    def _schedule_share_session(self, group: ShareGroup, member: ShareGroupMember) -> None:
        member.cancel_timers()
        timeout = group_config_of(self.broker, group.group_id, "share.session.timeout.ms") / 1000
        member.session_handle = self.loop.call_later(timeout, self._on_share_session_expired, group, member.member_id)

    def _on_share_session_expired(self, group: ShareGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is not None:
            member.session_handle = None
            self._remove_share_member(group, member, "session timed out (group.share.session.timeout.ms)")

    def stop_share_groups(self) -> None:
        for group in self.share_groups.values():
            for member in group.members.values():
                member.cancel_timers()

    # -- ShareGroupDescribe, listings -------------------------------------------------------

    def share_group_describe(self, group_id: str) -> dict:
        """One DescribedGroup of ShareGroupDescribe."""
        entry = {"group_id": group_id, "error_code": ErrorCode.NONE, "error_message": None, "group_state": "",
                 "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}
        if not group_id:
            return {**entry, "error_code": ErrorCode.INVALID_GROUP_ID}
        if (status := self.group_status_error(group_id)) is not None:
            return {**entry, "error_code": status}
        group = self.share_groups.get(group_id)
        if group is None:
            other = group_id in self.groups or group_id in self.consumer_groups
            msg = f"Group {group_id} is not a share group." if other else f"Group {group_id} not found."
            return {**entry, "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": msg}
        cache = self.broker.metadata_cache

        def described(assignment):
            out = []
            for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0])):
                meta = cache.by_id(topic_id)
                if parts and meta is not None:
                    out.append({"topic_id": topic_id, "topic_name": meta.name, "partitions": sorted(parts)})
            return {"topic_partitions": out}
        members = [{"member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.member_epoch,
                    "client_id": m.client_id, "client_host": m.client_host,
                    "subscribed_topic_names": m.subscribed_topic_names, "assignment": described(m.assigned_partitions)}
                   for m in group.members.values()]
        return {**entry, "group_state": str(group.state), "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch, "assignor_name": ASSIGNOR, "members": members}

    def share_group_listing(self, group: ShareGroup) -> dict:
        return {"group_id": group.group_id, "protocol_type": "share", "group_state": str(group.state),
                "group_type": "share"}

    def is_share_group(self, group_id: str) -> bool:
        group = self.share_groups.get(group_id)
        return group is not None and group.state != ShareGroupState.DEAD
