"""``KafkaController``: the ZooKeeper-mode controller (Kafka 3.9's ``kafka.controller.KafkaController``).

Every broker runs one; exactly one is *active*: the broker that created the
ephemeral ``/controller`` znode. Becoming controller bumps ``/controller_epoch``;
every request the controller sends carries that epoch, and brokers refuse an
older one (STALE_CONTROLLER_EPOCH), so a deposed controller cannot undo its
successor's decisions. Its ZooKeeper writes are fenced by the same epoch (they
are conditional on the version of ``/controller_epoch``).

Everything the controller does is an *event* on one queue, processed in order
(:mod:`.controller_event_manager`). This module holds the events; the work on
partitions and replicas is done by the state machines, as in Kafka:

* **startup / controller change / reelect / expire**: the election through
  ``/controller``, failover (:meth:`KafkaController._on_controller_failover`: read
  brokers, topics, assignments and partition states into the
  :class:`ControllerContext`; UpdateMetadata to every broker; the replica and
  partition state machines' startup) and resignation.
* **broker change** (``/brokers/ids`` children): a new broker gets the metadata
  and LeaderAndIsr for its replicas; a dead broker's partitions get new leaders
  and its replicas leave the ISRs.
* **topic change** (``/brokers/topics``) and **partition modifications** (a topic
  znode's data): new partitions go online (leader = first live replica).
* **topic deletion** (``/admin/delete_topics``): :mod:`.topic_deletion_manager`.
* **AlterPartition** (an ISR change from a leader), **ControlledShutdown** (a
  stopping broker hands its leaderships over), **ElectLeaders**, the
  ``/admin/preferred_replica_election`` znode, and the periodic **auto leader
  rebalance** (``auto.leader.rebalance.enable``, first check 5 s after failover,
  then every ``leader.imbalance.check.interval.seconds``).
* **session expiry**: a controller whose ZooKeeper session expired resigns at
  once; with the new session the broker registers again and stands for election.

The modules:

* :mod:`.controller_event_manager`   the event queue (``ControllerEventManager``)
* :mod:`.partition_state_machine`    new/offline partitions go online; leader elections; state znode writes
* :mod:`.replica_state_machine`      replicas go online (LeaderAndIsr) or offline (out of the ISR)
* :mod:`.topic_deletion_manager`     topic deletion
* :mod:`.election`                   the leader election algorithms
* :mod:`.controller_context`         the controller's picture of the cluster
* :mod:`.controller_channel_manager` the connections to the brokers and the request batch

Simplified: no partition reassignment, no log-dir failures, no ISR change
notifications (AlterPartition only), no feature versioning, no KRaft migration,
no metrics.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace

from ..common.errors import ErrorCode
from ..zk import zk_data as zd
from ..zk.kafka_zk_client import ControllerMovedError, EventType
from ..zk.zk_data import LeaderIsrAndControllerEpoch, TopicAssignment
from . import election
from . import partition_state_machine as psm
from .controller_channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager
from .controller_context import ControllerContext
from .controller_event_manager import ControllerEventManager, NotControllerError
from .partition_state_machine import PartitionStateMachine, StateChangeFailed
from .replica_state_machine import ReplicaStateMachine
from .topic_deletion_manager import TopicDeletionManager

log = logging.getLogger("kafkalab.controller")
state_change_log = logging.getLogger("kafkalab.state.change")

PREFERRED, UNCLEAN = 0, 1       # ElectionType
AUTO_REBALANCE_FIRST_DELAY_S = 5.0   # Kafka schedules the first check 5 s after failover


class KafkaController:
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.broker_id: int = broker.broker_id
        self.context = ControllerContext()
        self.active_controller_id = -1
        self.channel_manager: ControllerChannelManager | None = None
        self.batch: ControllerBrokerRequestBatch | None = None
        self.event_manager = ControllerEventManager(self.broker_id, self._maybe_resign, self._on_zookeeper_unavailable)
        self.partition_state_machine = PartitionStateMachine(self)
        self.replica_state_machine = ReplicaStateMachine(self)
        self.topic_deletion_manager = TopicDeletionManager(self)
        self._rebalance_task: asyncio.Task | None = None
        self._generation = 0           # bumped on failover and resignation: watches of an older term are ignored
        self._watches_may_be_lost = False   # an event failed for want of ZooKeeper: re-read on reconnection

    # -- public ---------------------------------------------------------------------

    @property
    def zk_client(self):
        return self.broker.zk_client

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id and not self.event_manager.closed

    @property
    def epoch(self) -> int:
        return self.context.epoch

    async def startup(self) -> None:
        """Start the event queue and try to become controller (returns once the attempt is done)."""
        self.event_manager.start()
        self.zk_client.add_state_listener(self._on_zk_state)
        await self.event_manager.put("Startup", self._process_startup)

    async def shutdown(self) -> None:
        """Stop acting as controller (the broker is stopping; its session goes with it)."""
        if self.event_manager.closed:
            return
        self.event_manager.closed = True
        self.zk_client.remove_state_listener(self._on_zk_state)
        await self.event_manager.close()
        await self._on_controller_resignation()
        self.event_manager.fail_pending_events()

    async def handle_alter_partition(self, broker_id: int, broker_epoch: int, topics: list) -> dict:
        """An AlterPartition request (v1 fields, as dicts or codec objects); returns the response dict."""
        try:
            return await self.event_manager.put("AlterPartitionReceived", self._process_alter_partition, broker_id,
                                                broker_epoch, topics)
        except NotControllerError:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}

    async def handle_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[int, list]:
        """(error code, [(topic, partition) with more than one replica still led by the broker])."""
        try:
            return await self.event_manager.put("ControlledShutdown", self._process_controlled_shutdown, broker_id,
                                                broker_epoch)
        except NotControllerError:
            return ErrorCode.NOT_CONTROLLER, []

    async def elect_leaders(self, election_type: int, partitions: list | None) -> dict:
        """ElectLeaders: (topic, partition) -> (error code, message or None); ``partitions`` None = all.

        Raises nothing: when this controller is not active the result is
        ``{None: (NOT_CONTROLLER, ...)}``.
        """
        try:
            return await self.event_manager.put("ReplicaLeaderElection", self._process_replica_leader_election,
                                                election_type, partitions)
        except NotControllerError:
            return {None: (ErrorCode.NOT_CONTROLLER, "This broker is not the controller")}

    async def on_new_session(self) -> None:
        """Called by the broker once it registered again with a new ZooKeeper session (after an
        expiry): stand for election again (the second half of Kafka's ``RegisterBrokerAndReelect``)."""
        try:
            await self.event_manager.put("Reelect", self._process_reelect)
        except NotControllerError:
            pass

    # -- what the state machines and the deletion manager use -------------------------------

    def send(self) -> None:
        """Send what the current event queued in the batch (LeaderAndIsr, UpdateMetadata, StopReplica)."""
        if self.batch is not None:
            self.batch.send_requests_to_brokers(self.context.epoch)

    # -- ZooKeeper watches become events -----------------------------------------------------

    def _watcher(self, name: str, handler, *args):
        """A kazoo watch callback that queues ``handler`` as an event, if this term is still current."""
        generation = self._generation
        loop = self.event_manager.loop

        def callback(event):
            if event is not None and event.type == EventType.NONE:
                return   # kazoo tells watches that the session ended: not a change
            if loop is None or loop.is_closed():
                return
            loop.call_soon_threadsafe(self._watched_event, generation, name, handler, args)
        return callback

    def _watched_event(self, generation, name, handler, args) -> None:
        if generation == self._generation:
            self.event_manager.put_nowait(name, handler, *args)

    def _on_zk_state(self, state: str) -> None:
        """Kazoo's thread: session expired -> resign; reconnected -> re-read what may have been missed."""
        if state == "EXPIRED":
            self.event_manager.put_threadsafe("Expire", self._process_expire)
        elif state == "CONNECTED":   # the same session after a dropped connection
            self.event_manager.put_threadsafe("Reconnected", self._process_reconnected)
        # NEW_SESSION: the broker registers itself again (KafkaServer), then calls on_new_session()

    def _on_zookeeper_unavailable(self, event_name: str) -> None:
        self._watches_may_be_lost = True

    async def _process_reconnected(self) -> None:
        """An event that failed while ZooKeeper was unreachable may have consumed a watch without
        setting it again: the active controller re-reads (and re-watches) brokers, topics and deletions."""
        if not self._watches_may_be_lost:
            return
        self._watches_may_be_lost = False
        await self._process_controller_change(deleted=self.zk_client.get_controller_id() is None)
        if not self.is_active:
            return
        log.info("controller %d: reconnected to ZooKeeper: re-reading brokers, topics and deletions", self.broker_id)
        await self._process_broker_change()
        await self._process_topic_change()
        await self._process_topic_deletion()

    # -- election and resignation ---------------------------------------------------------

    async def _process_startup(self) -> None:
        self.zk_client.exists_and_watch(zd.CONTROLLER, self._controller_watch())
        await self._elect()

    def _controller_watch(self):
        # not tied to a term: /controller is watched whether or not this broker is the controller
        def callback(event):
            if event.type == EventType.NONE:
                return
            self.event_manager.put_threadsafe("ControllerChange", self._process_controller_change,
                                              event.type == EventType.DELETED)
        return callback

    async def _process_controller_change(self, deleted: bool) -> None:
        self.zk_client.exists_and_watch(zd.CONTROLLER, self._controller_watch())
        if deleted:    # Kafka's Reelect
            await self._maybe_resign()
            await self._elect()
        else:
            await self._maybe_resign()

    async def _elect(self) -> None:
        controller_id = self.zk_client.get_controller_id()
        self.active_controller_id = controller_id if controller_id is not None else -1
        if controller_id is not None:
            log.debug("broker %d: controller is broker %d", self.broker_id, controller_id)
            return
        try:
            epoch, epoch_zk_version = self.zk_client.register_controller_and_increment_controller_epoch(self.broker_id)
        except ControllerMovedError:
            controller_id = self.zk_client.get_controller_id()
            self.active_controller_id = controller_id if controller_id is not None else -1
            log.debug("broker %d: lost the controller election to %s", self.broker_id, controller_id)
            return
        self.context.reset()
        self.context.epoch, self.context.epoch_zk_version = epoch, epoch_zk_version
        self.active_controller_id = self.broker_id
        log.info("broker %d: became the controller, epoch %d", self.broker_id, epoch)
        try:
            await self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: failover failed, resigning", self.broker_id)
            await self._on_controller_resignation()
            try:
                self.zk_client.delete_controller(self.context.epoch_zk_version)
            except Exception:
                pass
            self.active_controller_id = -1

    async def _maybe_resign(self) -> None:
        was_active = self.is_active
        controller_id = self.zk_client.get_controller_id()
        self.active_controller_id = controller_id if controller_id is not None else -1
        if was_active and not self.is_active:
            log.info("controller %d: controller moved to %s, resigning", self.broker_id, controller_id)
            await self._on_controller_resignation()

    async def _process_expire(self) -> None:
        was_active = self.active_controller_id == self.broker_id
        self.active_controller_id = -1
        if was_active:
            log.info("controller %d: ZooKeeper session expired, resigning", self.broker_id)
            await self._on_controller_resignation()

    async def _process_reelect(self) -> None:
        self._watches_may_be_lost = False    # a new session: everything is watched (and read) again
        self.zk_client.exists_and_watch(zd.CONTROLLER, self._controller_watch())
        await self._maybe_resign()     # as Kafka's processReelect: never carry on with an old term's state
        await self._elect()

    async def _on_controller_resignation(self) -> None:
        self._generation += 1
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
            self._rebalance_task = None
        if self.channel_manager is not None:
            await self.channel_manager.shutdown()
            self.channel_manager = None
        self.batch = None
        self.context.reset()

    # -- failover ------------------------------------------------------------------------

    async def _on_controller_failover(self) -> None:
        ctx, zk = self.context, self.zk_client
        self._generation += 1
        self.channel_manager = ControllerChannelManager(self.broker_id, self.config["controller.socket.timeout.ms"])
        self.batch = ControllerBrokerRequestBatch(self.broker_id, ctx, self.channel_manager,
                                                  self._on_leader_and_isr_response, self._on_stop_replica_response)
        # watches first, then the reads (a change in between shows up as an event)
        zk.get_children_and_watch(zd.BROKER_IDS, self._watcher("BrokerChange", self._process_broker_change))
        for broker_id, (info, broker_epoch) in zk.get_all_broker_and_epochs_in_cluster().items():
            ctx.add_live_broker(info, broker_epoch)
            self.channel_manager.add_broker(info)
        ctx.all_topics = zk.get_all_topics_in_cluster(self._watcher("TopicChange", self._process_topic_change))
        for topic in sorted(ctx.all_topics):
            self._load_topic(topic)
        ctx.leadership.update(zk.get_partition_states(ctx.all_partitions()))
        marked = zk.get_topic_deletions(self._watcher("TopicDeletion", self._process_topic_deletion))
        zk.get_preferred_replica_election(self._watcher("PreferredReplicaElection",
                                                        self._process_preferred_replica_election_znode))
        log.info("controller %d: %d live brokers %s, %d topics, %d partitions", self.broker_id,
                 len(ctx.live_brokers), sorted(ctx.live_brokers), len(ctx.all_topics), len(ctx.leadership))

        self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        self.send()
        # every live replica learns the state (and this epoch); replicas on dead brokers leave the ISRs
        self.replica_state_machine.startup(excluded_topics=marked)
        # leaders for new and offline partitions
        self.partition_state_machine.trigger_online_partition_state_change()
        await self.topic_deletion_manager.enqueue_topics_for_deletion(marked)
        pending = zk.get_preferred_replica_election()
        if pending:
            await self._on_replica_election(pending, PREFERRED)
            zk.delete_preferred_replica_election(ctx.epoch_zk_version)
        if self.config["auto.leader.rebalance.enable"]:
            self._rebalance_task = self.event_manager.loop.create_task(self._auto_rebalance_loop(self._generation))

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

    # -- brokers coming and going -------------------------------------------------------------------

    async def _process_broker_change(self) -> None:
        if not self.is_active:
            return
        ctx, zk = self.context, self.zk_client
        zk.get_children_and_watch(zd.BROKER_IDS, self._watcher("BrokerChange", self._process_broker_change))
        current = zk.get_all_broker_and_epochs_in_cluster()
        known = set(ctx.live_brokers)
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        bounced = sorted(b for b in set(current) & known if current[b][1] != ctx.broker_epochs.get(b))
        if not (new or dead or bounced):
            return
        log.info("controller %d: brokers changed: new %s, dead %s, bounced %s", self.broker_id, new, dead, bounced)
        for b in new:
            self.channel_manager.add_broker(current[b][0])
        for b in bounced:
            self.channel_manager.remove_broker(b)
            self.channel_manager.add_broker(current[b][0])
        for b in dead:
            self.channel_manager.remove_broker(b)
        if new:
            for b in new:
                ctx.add_live_broker(*current[b])
            await self._on_broker_startup(new)
        if bounced:
            for b in bounced:
                ctx.remove_live_broker(b)
            await self._on_broker_failure(bounced)
            for b in bounced:
                ctx.add_live_broker(*current[b])
            await self._on_broker_startup(bounced)
        if dead:
            for b in dead:
                ctx.remove_live_broker(b)
            await self._on_broker_failure(dead)

    async def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.context
        existing = ctx.live_or_shutting_down_broker_ids - set(new_brokers)
        self.batch.add_update_metadata(existing)
        self.send()
        self.batch.add_update_metadata(new_brokers, ctx.partitions_with_leaders())
        self.send()
        # the new brokers' replicas go online; deletion of their topics being deleted resumes
        resume_deletion = set()
        online = []
        for b in new_brokers:
            for tp in ctx.partitions_on_broker(b):
                if self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0]):
                    resume_deletion.add(tp[0])
                else:
                    online.append((tp, b))
        self.replica_state_machine.handle_online_replicas(online)
        self.send()
        self.partition_state_machine.trigger_online_partition_state_change()
        if resume_deletion:
            await self.topic_deletion_manager.try_topic_deletion()

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        ctx = self.context
        for b in dead_brokers:
            ctx.shutting_down_broker_ids.discard(b)
        # partitions whose leader is gone: a new leader (OfflinePartition -> OnlinePartition)
        self.partition_state_machine.trigger_online_partition_state_change()
        # the dead replicas leave the ISRs (OfflineReplica)
        self.replica_state_machine.handle_offline_replicas(
            [(tp, b) for b in sorted(set(dead_brokers)) for tp in ctx.partitions_on_broker(b)
             if not self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0])])
        self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        self.send()
        self.topic_deletion_manager.fail_replica_deletion(dead_brokers)   # resumed when the broker is back

    # -- topics --------------------------------------------------------------------------------------

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

    # -- responses from the brokers ------------------------------------------------------------------

    def _on_stop_replica_response(self, broker_id: int, response) -> None:
        self.event_manager.put_nowait("TopicDeletionStopReplicaResponseReceived",
                                      self._process_stop_replica_response, broker_id, response, self._generation)

    async def _process_stop_replica_response(self, broker_id: int, response, generation: int) -> None:
        if not self.is_active or generation != self._generation:
            return
        await self.topic_deletion_manager.on_stop_replica_response(broker_id, response)

    def _on_leader_and_isr_response(self, broker_id: int, response) -> None:
        if response.error_code:
            log.warning("controller %d: LeaderAndIsr refused by broker %d: error %d", self.broker_id, broker_id,
                        response.error_code)
            return
        for topic in response.topics or []:
            for pe in topic.partition_errors or []:
                if pe.error_code:
                    # STALE_CONTROLLER_EPOCH for a leader epoch the broker already has is routine after a
                    # failover (the new controller tells every replica the state again), as in Kafka
                    level = logging.INFO if pe.error_code == ErrorCode.STALE_CONTROLLER_EPOCH else logging.WARNING
                    log.log(level, "controller %d: broker %d: LeaderAndIsr answered %s for partition %d of "
                            "topic id %s", self.broker_id, broker_id, ErrorCode(pe.error_code).name,
                            pe.partition_index, topic.topic_id)

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

    # -- controlled shutdown ----------------------------------------------------------------------

    async def _process_controlled_shutdown(self, broker_id: int, broker_epoch: int):
        """Kafka's ``doControlledShutdown``: move the broker's leaderships away, take it out of the ISRs.

        Only partitions with more than one replica are acted on (and reported as
        remaining): a single replica cannot hand its leadership to anyone.
        """
        if not self.is_active:
            raise NotControllerError()
        ctx = self.context
        if broker_epoch != -1:
            known = ctx.broker_epochs.get(broker_id)
            if known is not None and broker_epoch < known:
                log.info("controller %d: ControlledShutdown from broker %d with old broker epoch %d (now %d)",
                         self.broker_id, broker_id, broker_epoch, known)
                return ErrorCode.STALE_BROKER_EPOCH, []
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        log.info("controller %d: controlled shutdown of broker %d", self.broker_id, broker_id)
        ctx.shutting_down_broker_ids.add(broker_id)
        to_act_on = [tp for tp in ctx.partitions_on_broker(broker_id)
                     if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership
                     and not self.topic_deletion_manager.is_topic_queued_up_for_deletion(tp[0])]
        led = [tp for tp in to_act_on if ctx.leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act_on if ctx.leadership[tp].leader != broker_id]
        # leadership moves to another ISR member (ControlledShutdownPartitionLeaderElectionStrategy)
        if led:
            self.partition_state_machine.elect_leader_for_partitions(led, psm.CONTROLLED_SHUTDOWN)
        # the partitions it follows: it stops fetching and leaves their ISR (OfflineReplica)
        for tp in followed:
            self.batch.add_stop_replica([broker_id], tp, delete=False)
        self.send()
        self.replica_state_machine.handle_offline_replicas([(tp, broker_id) for tp in followed])
        self.send()
        remaining = ctx.partition_leaders_on_broker(broker_id)
        log.info("controller %d: broker %d still leads %d partitions", self.broker_id, broker_id, len(remaining))
        return 0, remaining

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
            except Exception:   # not controller any more, or a failed event: next round
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
