"""Topics, partitions, ISRs and leaders changing, as the controller sees them (Kafka 3.9's ``KafkaController``).

* ``TopicChange`` (``processTopicChange``, a watch on the children of
  ``/brokers/topics``) and ``PartitionModifications`` (a watch on a topic
  znode's data: partitions added): the new partitions' assignments are read
  into the context (``_load_topic``; a topic without an id gets one) and
  ``onNewPartitionCreation`` makes them online (:mod:`.partition_state_machine`:
  leader = the first live replica).
* ``TopicDeletion`` (``processTopicDeletion``, ``/admin/delete_topics``): hands
  the marked topics to :mod:`.topic_deletion_manager`.
* ``AlterPartition`` (``processAlterPartition``, KIP-497): a leader proposes a
  new ISR. It is refused for a stale broker epoch, an unknown partition or
  one being deleted, a wrong leader or partition epoch, a replica that is not
  alive or is shutting down; else written to the partition's state znode
  (conditional on ``/controller_epoch``'s version, so a deposed controller
  fails), and every broker gets UpdateMetadata.
* ``ReplicaLeaderElection`` (``processReplicaLeaderElection``, ``onReplicaElection``):
  the ElectLeaders request (preferred or unclean) and the
  ``/admin/preferred_replica_election`` znode.
* ``AutoPreferredReplicaLeaderElection`` (``checkAndTriggerAutoLeaderRebalance``):
  first 5 s after failover, then every ``leader.imbalance.check.interval.seconds``,
  a broker leading less than it should (more than
  ``leader.imbalance.per.broker.percentage`` of its preferred partitions led
  elsewhere) gets a preferred replica election for those.

Simplified: no partition reassignment, no ISR change notifications
(``/isr_change_notification``: AlterPartition only).

:class:`PartitionChanges` is a part of ``KafkaController`` (a mixin): its
methods run on the controller and use its ``zk_client``, ``context``,
``config``, ``batch``, ``event_manager``, state machines and
``topic_deletion_manager``.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace

from ..common.errors import ErrorCode
from ..zk.zk_data import LeaderIsrAndControllerEpoch, TopicAssignment
from . import election
from . import partition_state_machine as psm
from .controller_event_manager import NotControllerError
from .partition_state_machine import StateChangeFailed

log = logging.getLogger(__name__)
#: Kafka's state-change logger (``state.change.logger``): one name across modules, not the module's
state_change_log = logging.getLogger("kafkalab.state.change")

PREFERRED, UNCLEAN = 0, 1       # ElectionType
AUTO_REBALANCE_FIRST_DELAY_S = 5.0   # Kafka schedules the first check 5 s after failover


class PartitionChanges:
    """``KafkaController``'s TopicChange, PartitionModifications, TopicDeletion, AlterPartition and
    leader elections (ElectLeaders, the preferred replica election znode, the auto leader rebalance)."""

    # -- topics --------------------------------------------------------------------------------------

    def _load_topic(self, topic: str) -> TopicAssignment | None:
        """Read a topic's assignment (and watch it for partition additions); give it an id if it has none."""
        ctx = self.context
        assignment = self.zk_client.get_topic_assignment(
            topic, watch=self._watcher("PartitionModifications", self._process_partition_modifications, topic))
        if assignment is None:
            return None
        if assignment.topic_id is None:   # a topic created by an old tool: Kafka gives it an id
            assignment.topic_id = uuid.uuid4()
            self.zk_client.set_topic_assignment(topic, assignment, ctx.epoch_zk_version)
        ctx.topic_ids[topic] = assignment.topic_id
        ctx.assignments[topic] = {p: list(r) for p, r in assignment.partitions.items()}
        return assignment

    async def _process_topic_change(self) -> None:
        if not self.is_active:
            return
        ctx = self.context
        topics = self.zk_client.get_all_topics_in_cluster(self._watcher("TopicChange", self._process_topic_change))
        new = sorted(topics - ctx.all_topics)
        deleted = ctx.all_topics - topics
        for topic in deleted:
            ctx.remove_topic(topic)
        ctx.all_topics |= set(new)
        new_partitions = []
        for topic in new:
            if self._load_topic(topic) is not None:
                new_partitions.extend(ctx.partitions_for_topic(topic))
        if new:
            log.info("controller %d: new topics %s", self.broker_id, new)
        if new_partitions:
            self._on_new_partition_creation(new_partitions)

    async def _process_partition_modifications(self, topic: str) -> None:
        if not self.is_active or topic not in self.context.all_topics:
            return
        ctx = self.context
        before = set(ctx.assignments.get(topic, {}))
        if self.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
            log.info("controller %d: skipping partition changes of %s, which is being deleted", self.broker_id, topic)
            return
        if self._load_topic(topic) is None:
            return
        added = [(topic, p) for p in sorted(set(ctx.assignments[topic]) - before)]
        if added:
            log.info("controller %d: new partitions %s", self.broker_id, added)
            self._on_new_partition_creation(added)

    def _on_new_partition_creation(self, partitions) -> None:
        self.partition_state_machine.trigger_online_partition_state_change(partitions)

    async def _process_topic_deletion(self) -> None:
        if not self.is_active:
            return
        marked = self.zk_client.get_topic_deletions(self._watcher("TopicDeletion", self._process_topic_deletion))
        await self.topic_deletion_manager.enqueue_topics_for_deletion(marked)

    # -- AlterPartition ---------------------------------------------------------------------------

    async def _process_alter_partition(self, broker_id: int, broker_epoch: int, topics: list) -> dict:
        if not self.is_active:
            raise NotControllerError()
        ctx = self.context
        known_epoch = ctx.broker_epochs.get(broker_id)
        if known_epoch is None or known_epoch != broker_epoch:
            log.info("controller %d: AlterPartition from broker %d with broker epoch %d (known: %s): refused",
                     self.broker_id, broker_id, broker_epoch, known_epoch)
            return {"throttle_time_ms": 0, "error_code": ErrorCode.STALE_BROKER_EPOCH, "topics": []}
        responses: dict = {}
        to_write: dict = {}
        for t in topics:
            topic = _get(t, "topic_name")
            for p in _get(t, "partitions"):
                tp = (topic, _get(p, "partition_index"))
                new_isr = list(_get(p, "new_isr"))
                leader_epoch, partition_epoch = _get(p, "leader_epoch"), _get(p, "partition_epoch")
                recovery = _get(p, "leader_recovery_state") or 0
                current = ctx.leadership.get(tp)
                if current is None or self.topic_deletion_manager.is_topic_queued_up_for_deletion(topic):
                    responses[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif partition_epoch > current.zk_version or leader_epoch > current.leader_epoch:
                    responses[tp] = ErrorCode.NOT_CONTROLLER   # the leader knows a newer controller
                elif leader_epoch < current.leader_epoch:
                    responses[tp] = ErrorCode.FENCED_LEADER_EPOCH
                elif (current.leader == broker_id and sorted(current.isr) == sorted(new_isr)
                      and current.leader_recovery_state == recovery):
                    responses[tp] = current                 # already so: idempotent
                elif partition_epoch < current.zk_version:
                    responses[tp] = ErrorCode.INVALID_UPDATE_VERSION
                elif recovery == election.RECOVERING and len(new_isr) > 1:
                    responses[tp] = ErrorCode.INVALID_REQUEST
                elif current.leader_recovery_state == election.RECOVERED and recovery == election.RECOVERING:
                    responses[tp] = ErrorCode.INVALID_REQUEST
                elif set(new_isr) - ctx.live_broker_ids:
                    log.info("controller %d: AlterPartition for %s-%d refused: ISR %s has ineligible replicas %s",
                             self.broker_id, tp[0], tp[1], new_isr, sorted(set(new_isr) - ctx.live_broker_ids))
                    # Kafka answers AlterPartition v0-v1 with OPERATION_NOT_ATTEMPTED here (INELIGIBLE_REPLICA from v2)
                    responses[tp] = ErrorCode.OPERATION_NOT_ATTEMPTED
                else:
                    # ZooKeeper mode: an ISR change keeps the leader epoch; the partition epoch (znode version) moves
                    to_write[tp] = replace(current, isr=new_isr, controller_epoch=ctx.epoch,
                                           leader_recovery_state=recovery)
        if to_write:
            ok, failed = self.zk_client.update_partition_states(to_write, ctx.epoch_zk_version)
            for tp, version in ok.items():
                state = replace(to_write[tp], zk_version=version)
                ctx.leadership[tp] = state
                responses[tp] = state
                state_change_log.info("controller %d epoch %d: %s-%d ISR -> %s (AlterPartition from %d), "
                                      "partition epoch %d", self.broker_id, ctx.epoch, tp[0], tp[1], state.isr,
                                      broker_id, version)
            for tp in failed:
                responses[tp] = ErrorCode.INVALID_UPDATE_VERSION
                fresh = self.zk_client.get_partition_state(*tp)
                if fresh is not None:
                    ctx.leadership[tp] = fresh
        self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids,
                                       [tp for tp in responses if tp in ctx.leadership])
        self.send()
        by_topic: dict = {}
        for (topic, index), result in responses.items():
            if isinstance(result, LeaderIsrAndControllerEpoch):
                entry = dict(partition_index=index, error_code=0, leader_id=result.leader,
                             leader_epoch=result.leader_epoch, isr=list(result.isr),
                             leader_recovery_state=result.leader_recovery_state, partition_epoch=result.zk_version)
            else:
                entry = dict(partition_index=index, error_code=int(result), leader_id=-1, leader_epoch=-1, isr=[],
                             leader_recovery_state=0, partition_epoch=-1)
            by_topic.setdefault(topic, []).append(entry)
        return {"throttle_time_ms": 0, "error_code": 0,
                "topics": [dict(topic_name=t, partitions=ps) for t, ps in by_topic.items()]}

    # -- preferred and unclean elections ---------------------------------------------------------

    async def _process_replica_leader_election(self, election_type: int, partitions):
        if not self.is_active:
            raise NotControllerError()
        return await self._on_replica_election(partitions, election_type)

    async def _on_replica_election(self, partitions, election_type: int) -> dict:
        """Kafka's ``onReplicaElection``: (topic, partition) -> (error code, message or None)."""
        ctx = self.context
        if partitions is None:
            partitions = ctx.all_partitions()
        results: dict = {}
        electable = []
        for tp in (tuple(x) for x in partitions):
            if tp not in ctx.leadership:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The partition {tp[0]}-{tp[1]} does not exist.")
            elif self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0]):
                results[tp] = (ErrorCode.INVALID_TOPIC_EXCEPTION, "Deleted topic")
            else:
                state = ctx.leadership[tp]
                if election_type == PREFERRED:
                    needed = state.leader != ctx.replicas(tp)[0]
                else:
                    needed = state.leader == -1 or state.leader not in ctx.live_broker_ids
                if needed:
                    electable.append(tp)
                else:
                    results[tp] = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
        strategy = psm.PREFERRED if election_type == PREFERRED else psm.UNCLEAN
        elected = self.partition_state_machine.elect_leader_for_partitions(electable, strategy) if electable else {}
        for tp, outcome in elected.items():
            if isinstance(outcome, StateChangeFailed):
                results[tp] = (outcome.error_code, outcome.message)
            else:
                results[tp] = (ErrorCode.NONE, None)
        self.send()
        return results

    async def _process_preferred_replica_election_znode(self) -> None:
        if not self.is_active:
            return
        partitions = self.zk_client.get_preferred_replica_election(
            self._watcher("PreferredReplicaElection", self._process_preferred_replica_election_znode))
        if partitions is None:
            return
        log.info("controller %d: preferred replica election requested for %s", self.broker_id, partitions)
        await self._on_replica_election(partitions, PREFERRED)
        self.zk_client.delete_preferred_replica_election(self.context.epoch_zk_version)

    # -- auto leader rebalance ---------------------------------------------------------------------

    async def _auto_rebalance_loop(self, generation: int) -> None:
        delay = AUTO_REBALANCE_FIRST_DELAY_S
        while generation == self._generation and not self.event_manager.closed:
            await asyncio.sleep(delay)
            delay = self.config["leader.imbalance.check.interval.seconds"]
            if generation != self._generation:
                return
            try:
                await self.event_manager.put("AutoPreferredReplicaLeaderElection",
                                             self._check_and_trigger_auto_leader_rebalance)
            except Exception:   # noqa: BLE001 - not controller any more, or a failed event: next round
                pass

    async def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """Per preferred broker: if too many of the partitions it should lead are led elsewhere, move them back."""
        if not self.is_active:
            return
        ctx = self.context
        by_preferred: dict[int, list] = {}
        for tp in ctx.all_partitions():
            if (self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0]) or tp not in ctx.leadership
                    or not ctx.replicas(tp)):
                continue
            by_preferred.setdefault(ctx.replicas(tp)[0], []).append(tp)
        threshold = self.config["leader.imbalance.per.broker.percentage"] / 100.0
        for broker, tps in sorted(by_preferred.items()):
            not_led = [tp for tp in tps if ctx.leadership[tp].leader != broker]
            ratio = len(not_led) / len(tps)
            log.debug("controller %d: leader imbalance of broker %d: %.2f", self.broker_id, broker, ratio)
            if ratio > threshold and broker in ctx.live_broker_ids:
                candidates = [tp for tp in not_led if broker in ctx.leadership[tp].isr]
                if candidates:
                    log.info("controller %d: leader imbalance %.0f%% on broker %d > %.0f%%: preferred replica "
                             "election for %s", self.broker_id, ratio * 100, broker, threshold * 100, candidates)
                    await self._on_replica_election(candidates, PREFERRED)


def _get(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)
