"""``KafkaController``: the ZooKeeper-mode controller (Kafka 3.9's ``kafka.controller.KafkaController``).

Every broker runs one; exactly one is *active*: the broker that created the
ephemeral ``/controller`` znode. Becoming controller bumps ``/controller_epoch``;
every request the controller sends carries that epoch, and brokers refuse an
older one (STALE_CONTROLLER_EPOCH), so a deposed controller cannot undo its
successor's decisions. Its ZooKeeper writes are fenced by the same epoch.

What the active controller does, each as one *event* on a single queue,
processed in order (Kafka's ``ControllerEventManager``):

* **failover** (it was just elected): read brokers, topics, assignments and
  partition states into the :class:`ControllerContext`; UpdateMetadata to every
  broker, LeaderAndIsr for every replica; elect leaders for partitions that have none.
* **broker change** (``/brokers/ids`` children): a new broker gets the metadata and
  LeaderAndIsr for its replicas, and may become leader of leaderless partitions;
  a dead broker's partitions get a new leader from the ISR (leader epoch + 1) and it
  leaves the ISR of the partitions it followed.
* **topic change** (``/brokers/topics``) and **partition modifications** (a topic
  znode's data): create the state znodes of new partitions (leader = first live
  replica, ISR = live replicas) and send LeaderAndIsr ``is_new``.
* **topic deletion** (``/admin/delete_topics``): StopReplica(delete) to the replicas,
  then remove the topic's znodes.
* **AlterPartition** (an ISR change from a leader), **ControlledShutdown** (a
  stopping broker hands its leaderships over), **ElectLeaders**, the
  ``/admin/preferred_replica_election`` znode, and the periodic **auto
  leader rebalance** (``auto.leader.rebalance.enable``).
* **session expiry**: a controller whose ZooKeeper session expired stops acting
  (resigns); with the new session the broker registers again and tries
  again to become controller.

Simplified: no partition reassignment, no log-dir failures, no ISR change
notifications (AlterPartition only), no KRaft migration, no metrics. Kafka's
partition and replica state machines are folded into the event handlers.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace

from ..errors import ErrorCode
from ..zk import zk_data as zd
from ..zk.kafka_zk_client import ControllerMovedError, EventType, NodeExistsError
from ..zk.zk_data import LeaderIsrAndControllerEpoch, TopicAssignment
from . import election
from .controller_channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager
from .controller_context import ControllerContext

log = logging.getLogger("kafkalab.controller")
state_change_log = logging.getLogger("kafkalab.state.change")

PREFERRED, UNCLEAN = 0, 1       # ElectionType
AUTO_REBALANCE_FIRST_DELAY_S = 5.0   # Kafka schedules the first check 5 s after failover
MAX_STATE_WRITE_ATTEMPTS = 3


class KafkaController:
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.broker_id: int = broker.broker_id
        self.context = ControllerContext()
        self.active_controller_id = -1
        self.channel_manager: ControllerChannelManager | None = None
        self.batch: ControllerBrokerRequestBatch | None = None
        self._queue: asyncio.Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event_task: asyncio.Task | None = None
        self._rebalance_task: asyncio.Task | None = None
        self._generation = 0           # bumped when resigning: watches of an older term are ignored
        self._stopped = False
        self._pending_session_event: str | None = None

    # -- public ---------------------------------------------------------------------

    @property
    def zk_client(self):
        return self.broker.zk_client

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id and not self._stopped

    @property
    def epoch(self) -> int:
        return self.context.epoch

    async def startup(self) -> None:
        """Start the event loop and try to become controller (returns once the attempt is done)."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._event_task = self._loop.create_task(self._process_events())
        self.zk_client.add_state_listener(self._on_zk_state)
        await self._put("Startup", self._process_startup)

    async def shutdown(self) -> None:
        """Stop acting as controller (the broker is stopping; its session goes with it)."""
        if self._stopped:
            return
        self._stopped = True
        self.zk_client.remove_state_listener(self._on_zk_state)
        if self._event_task is not None:
            self._event_task.cancel()
            await asyncio.gather(self._event_task, return_exceptions=True)
        await self._on_controller_resignation()
        self._fail_pending_events()

    async def handle_alter_partition(self, broker_id: int, broker_epoch: int, topics: list) -> dict:
        """An AlterPartition request (v1 fields, as dicts or codec objects); returns the response dict."""
        try:
            return await self._put("AlterPartitionReceived", self._process_alter_partition, broker_id,
                                   broker_epoch, topics)
        except _NotController:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NOT_CONTROLLER, "topics": []}

    async def handle_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[int, list]:
        """(error code, [(topic, partition) still led by the broker])."""
        try:
            return await self._put("ControlledShutdown", self._process_controlled_shutdown, broker_id, broker_epoch)
        except _NotController:
            return ErrorCode.NOT_CONTROLLER, []

    async def elect_leaders(self, election_type: int, partitions: list | None) -> dict:
        """ElectLeaders: (topic, partition) -> (error code, message or None); ``partitions`` None = all.

        Raises nothing: when this controller is not active the result is
        ``{None: (NOT_CONTROLLER, ...)}``.
        """
        try:
            return await self._put("ReplicaLeaderElection", self._process_replica_leader_election,
                                   election_type, partitions)
        except _NotController:
            return {None: (ErrorCode.NOT_CONTROLLER, "This broker is not the controller")}

    async def on_new_session(self) -> None:
        """Called by the broker once it registered again with a new ZooKeeper session (after an
        expiry): stand for election again (the second half of Kafka's ``RegisterBrokerAndReelect``)."""
        try:
            await self._put("Reelect", self._process_reelect)
        except _NotController:
            pass

    # -- the event queue ---------------------------------------------------------------

    def _put(self, name: str, handler, *args) -> asyncio.Future:
        future = self._loop.create_future()
        if self._stopped:        # the event loop is gone: nobody would ever answer
            future.set_exception(_NotController())
        else:
            self._queue.put_nowait((name, handler, args, future))
        return future

    def _put_nowait(self, name: str, handler, *args) -> None:
        if self._stopped or self._queue is None:
            return
        future = self._put(name, handler, *args)
        future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)

    async def _process_events(self) -> None:
        while True:
            name, handler, args, future = await self._queue.get()
            if future.done():
                continue
            try:
                result = await handler(*args)
            except asyncio.CancelledError:
                future.cancel()
                raise
            except _NotController as exc:
                future.set_exception(exc)
                continue
            except ControllerMovedError as exc:
                log.info("controller %d: %s during %s: resigning", self.broker_id, exc, name)
                await self._maybe_resign()
                future.set_exception(_NotController())
                continue
            except Exception as exc:
                log.exception("controller %d: error processing %s", self.broker_id, name)
                future.set_exception(exc)
                continue
            future.set_result(result)

    def _fail_pending_events(self) -> None:
        while self._queue is not None and not self._queue.empty():
            _, _, _, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(_NotController())

    def _watcher(self, name: str, handler, *args):
        """A kazoo watch callback that queues ``handler`` as an event, if this term is still current."""
        generation = self._generation

        def callback(event):
            if event is not None and event.type == EventType.NONE:
                return   # kazoo tells watches that the session ended: not a change
            if self._loop is None or self._loop.is_closed():
                return
            self._loop.call_soon_threadsafe(self._watched_event, generation, name, handler, args)
        return callback

    def _watched_event(self, generation, name, handler, args) -> None:
        if generation == self._generation:
            self._put_nowait(name, handler, *args)

    def _on_zk_state(self, state: str) -> None:
        """Kazoo's thread: session expired -> resign; new session -> register again and re-elect."""
        if self._loop is None or self._loop.is_closed():
            return
        if state == "EXPIRED":
            self._loop.call_soon_threadsafe(self._put_nowait, "Expire", self._process_expire)
        # NEW_SESSION: the broker registers itself again (KafkaServer), then calls on_new_session()

    # -- election and resignation ---------------------------------------------------------

    async def _process_startup(self) -> None:
        self.zk_client.exists_and_watch(zd.CONTROLLER, self._controller_watch())
        await self._elect()

    def _controller_watch(self):
        # not tied to a term: /controller is watched whether or not this broker is the controller
        def callback(event):
            if event.type == EventType.NONE or self._loop is None or self._loop.is_closed():
                return
            self._loop.call_soon_threadsafe(self._put_nowait, "ControllerChange", self._process_controller_change,
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
        self.zk_client.exists_and_watch(zd.CONTROLLER, self._controller_watch())
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
        brokers = zk.get_children_and_watch(zd.BROKER_IDS, self._watcher("BrokerChange", self._process_broker_change))
        del brokers
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
        self.batch.send_requests_to_brokers(ctx.epoch)
        # the replica state machine's startup: every live replica learns the state (and this epoch)
        for tp, state in ctx.leadership.items():
            if tp[0] not in marked:
                self.batch.add_leader_and_isr(ctx.online_replicas(tp, include_shutting_down=True), tp)
        self.batch.send_requests_to_brokers(ctx.epoch)
        # ... and every replica on a dead broker leaves its ISR (OfflineReplica), as Kafka's
        # ReplicaStateMachine.startup does: brokers that died with the old controller are seen here
        self._remove_replicas_from_isr([(tp, b) for tp in sorted(ctx.leadership) if tp[0] not in marked
                                        for b in ctx.offline_replicas(tp)])
        self._send()
        # the partition state machine's startup: leaders for new and offline partitions
        await self._trigger_online_partition_state_change()
        await self._handle_topic_deletion_markers(marked)
        pending = zk.get_preferred_replica_election()
        if pending:
            await self._on_replica_election(pending, PREFERRED)
            zk.delete_preferred_replica_election(ctx.epoch_zk_version)
        if self.config["auto.leader.rebalance.enable"]:
            self._rebalance_task = self._loop.create_task(self._auto_rebalance_loop(self._generation))

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

    # -- writing partition states -----------------------------------------------------------

    def _write_states(self, new_states: dict) -> dict:
        """Write states conditionally on their zk_version; update the context; return what was written.

        A bad version (someone wrote the znode since the controller read it) makes
        the controller re-read that partition; the caller's decision is then not
        applied (it will be remade on the next event about that partition).
        """
        ok, failed = self.zk_client.update_partition_states(new_states, self.context.epoch_zk_version)
        written = {}
        for tp, version in ok.items():
            state = replace(new_states[tp], zk_version=version)
            self.context.leadership[tp] = state
            written[tp] = state
            state_change_log.info("controller %d epoch %d: %s-%d -> leader %d, leader epoch %d, isr %s, "
                                  "partition epoch %d", self.broker_id, self.context.epoch, tp[0], tp[1],
                                  state.leader, state.leader_epoch, state.isr, version)
        for tp, exc in failed.items():
            log.warning("controller %d: could not write the state of %s-%d (%s); re-reading it",
                        self.broker_id, tp[0], tp[1], type(exc).__name__)
            fresh = self.zk_client.get_partition_state(*tp)
            if fresh is not None:
                self.context.leadership[tp] = fresh
        return written

    def _unclean_enabled(self, topic: str) -> bool:
        override = self.zk_client.get_topic_config(topic).get("unclean.leader.election.enable")
        if override is not None:
            return str(override).strip().lower() == "true"
        return bool(self.config["unclean.leader.election.enable"])

    def _send(self) -> None:
        if self.batch is not None:
            self.batch.send_requests_to_brokers(self.context.epoch)

    # -- partitions coming online ---------------------------------------------------------------

    async def _trigger_online_partition_state_change(self, partitions=None, allow_unclean=None) -> dict:
        """Elect leaders for new partitions (no state znode) and offline ones (no live leader).

        Returns (topic, partition) -> new state or None (no leader could be elected).
        """
        ctx = self.context
        candidates = partitions if partitions is not None else ctx.all_partitions()
        new = [tp for tp in candidates if tp not in ctx.leadership and tp[0] not in ctx.topics_to_be_deleted]
        offline = [tp for tp in candidates if tp in ctx.leadership and not ctx.has_live_leader(tp)
                   and tp[0] not in ctx.topics_to_be_deleted]
        results = {}
        if new:
            results.update(self._initialize_new_partitions(new))
        if offline:
            results.update(self._elect_offline_partitions(offline, allow_unclean))
        self._send()
        return results

    def _initialize_new_partitions(self, partitions) -> dict:
        ctx = self.context
        to_create, results = {}, {}
        for tp in partitions:
            live = ctx.online_replicas(tp)
            if not live:
                log.error("controller %d: cannot elect a leader for new partition %s-%d: no live replica of %s",
                          self.broker_id, tp[0], tp[1], ctx.replicas(tp))
                results[tp] = None
                continue
            to_create[tp] = LeaderIsrAndControllerEpoch(live[0], 0, list(live), ctx.epoch, 0)
        for tp, outcome in self.zk_client.create_partition_states(to_create, ctx.epoch_zk_version).items():
            if isinstance(outcome, Exception):
                log.warning("controller %d: state znode of %s-%d not created (%s)", self.broker_id, tp[0], tp[1],
                            type(outcome).__name__)
                existing = self.zk_client.get_partition_state(*tp) if isinstance(outcome, NodeExistsError) else None
                if existing is not None:
                    ctx.leadership[tp] = existing
                results[tp] = existing
                continue
            state = replace(to_create[tp], zk_version=outcome)
            ctx.leadership[tp] = state
            results[tp] = state
            state_change_log.info("controller %d epoch %d: new partition %s-%d -> leader %d, isr %s",
                                  self.broker_id, ctx.epoch, tp[0], tp[1], state.leader, state.isr)
            self.batch.add_leader_and_isr(ctx.online_replicas(tp), tp, is_new=True)
        return results

    def _elect_offline_partitions(self, partitions, allow_unclean=None) -> dict:
        ctx = self.context
        new_states, results, unclean_ones = {}, {}, set()
        for tp in partitions:
            state = ctx.leadership[tp]
            live = set(ctx.online_replicas(tp))
            clean_state, _ = election.elect_offline(state, ctx.replicas(tp), live, False, ctx.epoch)
            if clean_state is None:
                unclean = self._unclean_enabled(tp[0]) if allow_unclean is None else allow_unclean
                clean_state, was_unclean = election.elect_offline(state, ctx.replicas(tp), live, unclean, ctx.epoch)
                if was_unclean:
                    unclean_ones.add(tp)
            if clean_state is None:
                log.error("controller %d: no leader for %s-%d: no live replica in the ISR %s (live replicas %s, "
                          "unclean.leader.election.enable is false)", self.broker_id, tp[0], tp[1], state.isr,
                          sorted(live))
                results[tp] = None
                continue
            new_states[tp] = clean_state
        written = self._write_states(new_states) if new_states else {}
        for tp in new_states:
            results[tp] = written.get(tp)
            if tp in written:
                if tp in unclean_ones:
                    log.warning("controller %d: UNCLEAN leader election for %s-%d: broker %d, not in the ISR, "
                                "is the leader now; records it did not have are lost", self.broker_id, tp[0], tp[1],
                                written[tp].leader)
                self.batch.add_leader_and_isr(ctx.online_replicas(tp), tp)
        return results

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
        self._send()
        self.batch.add_update_metadata(new_brokers, ctx.partitions_with_leaders())
        self._send()
        resume_deletion = set()
        for b in new_brokers:
            for tp in ctx.partitions_on_broker(b):
                if tp[0] in ctx.topics_to_be_deleted:
                    resume_deletion.add(tp[0])
                elif tp in ctx.leadership:
                    self.batch.add_leader_and_isr([b], tp)
        self._send()
        await self._trigger_online_partition_state_change()
        if resume_deletion:
            await self._try_topic_deletion()

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        ctx = self.context
        for b in dead_brokers:
            ctx.shutting_down_broker_ids.discard(b)
        dead = set(dead_brokers)
        # partitions whose leader is gone: a new leader (OfflinePartition -> OnlinePartition)
        await self._trigger_online_partition_state_change()
        # the dead replicas leave the ISRs (OfflineReplica)
        self._remove_replicas_from_isr([(tp, b) for b in sorted(dead) for tp in ctx.partitions_on_broker(b)
                                        if tp[0] not in ctx.topics_to_be_deleted])
        self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        self._send()
        for topic in sorted(ctx.topics_to_be_deleted):   # deletion waits for the replica to come back
            pending = ctx.deletion_pending.get(topic, set())
            ctx.deletion_in_flight -= {r for r in pending if r[2] in dead}

    def _remove_replicas_from_isr(self, replicas) -> None:
        """Take each (partition, broker) out of the partition's ISR (Kafka's OfflineReplica transition)."""
        ctx = self.context
        remaining = list(replicas)
        for _ in range(MAX_STATE_WRITE_ATTEMPTS):
            new_states = {}
            for tp, b in remaining:
                base = new_states.get(tp, ctx.leadership.get(tp))
                if base is None:
                    continue
                changed = election.remove_replica_from_isr(base, b, ctx.epoch)
                if changed is not None:
                    new_states[tp] = changed
            if not new_states:
                return
            written = self._write_states(new_states)
            for tp in written:
                gone = {b for t, b in replicas if t == tp}
                self.batch.add_leader_and_isr([r for r in ctx.online_replicas(tp, True) if r not in gone], tp)
            remaining = [(tp, b) for tp, b in remaining if tp in new_states and tp not in written]
            if not remaining:
                return

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
            await self._on_new_partition_creation(new_partitions)

    async def _process_partition_modifications(self, topic: str) -> None:
        if not self.is_active or topic not in self.context.all_topics:
            return
        ctx = self.context
        before = set(ctx.assignments.get(topic, {}))
        if topic in ctx.topics_to_be_deleted:
            log.info("controller %d: skipping partition changes of %s, which is being deleted", self.broker_id, topic)
            return
        if self._load_topic(topic) is None:
            return
        added = [(topic, p) for p in sorted(set(ctx.assignments[topic]) - before)]
        if added:
            log.info("controller %d: new partitions %s", self.broker_id, added)
            await self._on_new_partition_creation(added)

    async def _on_new_partition_creation(self, partitions) -> None:
        await self._trigger_online_partition_state_change(partitions)

    # -- topic deletion -----------------------------------------------------------------------------

    async def _process_topic_deletion(self) -> None:
        if not self.is_active:
            return
        marked = self.zk_client.get_topic_deletions(self._watcher("TopicDeletion", self._process_topic_deletion))
        await self._handle_topic_deletion_markers(marked)

    async def _handle_topic_deletion_markers(self, marked: set[str]) -> None:
        ctx = self.context
        unknown = marked - ctx.all_topics
        if unknown:
            self.zk_client.delete_topic_deletions(unknown, ctx.epoch_zk_version)
        marked = marked & ctx.all_topics
        if not marked:
            return
        if not self.config["delete.topic.enable"]:
            log.info("controller %d: delete.topic.enable is false: ignoring deletion of %s", self.broker_id,
                     sorted(marked))
            self.zk_client.delete_topic_deletions(marked, ctx.epoch_zk_version)
            return
        newly = marked - ctx.topics_to_be_deleted
        if newly:
            log.info("controller %d: deleting topics %s", self.broker_id, sorted(newly))
            ctx.topics_to_be_deleted |= newly
            for topic in newly:
                ctx.deletion_pending[topic] = {(t, p, b) for t, p in ctx.partitions_for_topic(topic)
                                               for b in ctx.replicas((t, p))}
            # every broker drops the topic from its metadata (leader -2 = "being deleted")
            partitions = [tp for t in newly for tp in ctx.partitions_for_topic(t)]
            self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, partitions)
            self._send()
        await self._try_topic_deletion()

    async def _try_topic_deletion(self) -> None:
        ctx = self.context
        for topic in sorted(ctx.topics_to_be_deleted):
            pending = ctx.deletion_pending.get(topic, set())
            if not pending:
                self._complete_delete_topic(topic)
                continue
            for t, p, b in sorted(pending - ctx.deletion_in_flight):
                if ctx.is_replica_online(b, include_shutting_down=True):
                    self.batch.add_stop_replica([b], (t, p), delete=True)
                    ctx.deletion_in_flight.add((t, p, b))
        self._send()

    def _complete_delete_topic(self, topic: str) -> None:
        ctx, zk = self.context, self.zk_client
        zk.delete_topic_znode(topic, ctx.epoch_zk_version)
        zk.delete_topic_configs([topic], ctx.epoch_zk_version)
        zk.delete_topic_deletions([topic], ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        log.info("controller %d: deletion of topic %s completed", self.broker_id, topic)
        self.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        self._send()

    def _on_stop_replica_response(self, broker_id: int, response) -> None:
        self._put_nowait("TopicDeletionStopReplicaResponseReceived", self._process_stop_replica_response,
                         broker_id, response, self._generation)

    async def _process_stop_replica_response(self, broker_id: int, response, generation: int) -> None:
        if not self.is_active or generation != self._generation:
            return
        ctx = self.context
        changed = False
        for pe in response.partition_errors or []:
            key = (pe.topic_name, pe.partition_index, broker_id)
            if key not in ctx.deletion_in_flight:
                continue
            ctx.deletion_in_flight.discard(key)
            if response.error_code == 0 and pe.error_code == 0:
                ctx.deletion_pending.get(pe.topic_name, set()).discard(key)
                changed = True
            else:
                log.warning("controller %d: StopReplica(delete) of %s-%d on broker %d failed: %s", self.broker_id,
                            pe.topic_name, pe.partition_index, broker_id, pe.error_code or response.error_code)
        if changed or response.error_code:
            if response.error_code:   # a top-level error: the whole request failed; try again later
                ctx.deletion_in_flight = {r for r in ctx.deletion_in_flight if r[2] != broker_id}
                await asyncio.sleep(0.1)
            await self._try_topic_deletion()

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
            raise _NotController()
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
                if current is None or topic in ctx.topics_to_be_deleted:
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
        self._send()
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
        if not self.is_active:
            raise _NotController()
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
                     if len(ctx.replicas(tp)) > 1 and tp in ctx.leadership and tp[0] not in ctx.topics_to_be_deleted]
        led = [tp for tp in to_act_on if ctx.leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act_on if ctx.leadership[tp].leader != broker_id]
        # leadership moves to another ISR member (ControlledShutdownPartitionLeaderElectionStrategy)
        new_states = {}
        for tp in led:
            new = election.elect_for_controlled_shutdown(ctx.leadership[tp], ctx.replicas(tp),
                                                         set(ctx.online_replicas(tp, include_shutting_down=True)),
                                                         ctx.shutting_down_broker_ids, ctx.epoch)
            if new is not None:
                new_states[tp] = new
        for tp in self._write_states(new_states) if new_states else {}:
            self.batch.add_leader_and_isr(ctx.online_replicas(tp, include_shutting_down=True), tp)
        # the partitions it follows: it stops fetching and leaves their ISR (OfflineReplica)
        for tp in followed:
            self.batch.add_stop_replica([broker_id], tp, delete=False)
        self._send()
        self._remove_replicas_from_isr([(tp, broker_id) for tp in followed])
        self._send()
        remaining = ctx.partition_leaders_on_broker(broker_id)
        log.info("controller %d: broker %d still leads %d partitions", self.broker_id, broker_id, len(remaining))
        return 0, remaining

    # -- preferred and unclean elections ---------------------------------------------------------

    async def _process_replica_leader_election(self, election_type: int, partitions):
        if not self.is_active:
            raise _NotController()
        return await self._on_replica_election(partitions, election_type)

    async def _on_replica_election(self, partitions, election_type: int) -> dict:
        ctx = self.context
        if partitions is None:
            partitions = ctx.all_partitions()
        results: dict = {}
        electable = []
        for tp in (tuple(x) for x in partitions):
            if tp not in ctx.leadership:
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The partition {tp[0]}-{tp[1]} does not exist.")
            elif tp[0] in ctx.topics_to_be_deleted:
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
        new_states = {}
        for tp in electable:
            state = ctx.leadership[tp]
            live = set(ctx.online_replicas(tp))
            if election_type == PREFERRED:
                new = election.elect_preferred(state, ctx.replicas(tp), live, ctx.epoch)
                if new is None:
                    results[tp] = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                                   f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                                   f"PreferredReplicaPartitionLeaderElectionStrategy")
                    continue
            else:
                new, unclean = election.elect_offline(state, ctx.replicas(tp), live, True, ctx.epoch)
                if new is None:
                    results[tp] = (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                                   f"Failed to elect leader for partition {tp[0]}-{tp[1]}: no live replica")
                    continue
                if unclean:
                    log.warning("controller %d: UNCLEAN leader election for %s-%d (requested): broker %d",
                                self.broker_id, tp[0], tp[1], new.leader)
            new_states[tp] = new
        written = self._write_states(new_states) if new_states else {}
        for tp in new_states:
            if tp in written:
                results[tp] = (ErrorCode.NONE, None)
                self.batch.add_leader_and_isr(ctx.online_replicas(tp, include_shutting_down=True), tp)
            else:
                results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, "The partition state changed meanwhile")
        self._send()
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
        while generation == self._generation and not self._stopped:
            await asyncio.sleep(delay)
            delay = self.config["leader.imbalance.check.interval.seconds"]
            if generation != self._generation:
                return
            try:
                await self._put("AutoPreferredReplicaLeaderElection", self._check_and_trigger_auto_leader_rebalance)
            except Exception:   # not controller any more, or a failed event: next round
                pass

    async def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """Per preferred broker: if too many of the partitions it should lead are led elsewhere, move them back."""
        if not self.is_active:
            return
        ctx = self.context
        by_preferred: dict[int, list] = {}
        for tp in ctx.all_partitions():
            if tp[0] in ctx.topics_to_be_deleted or tp not in ctx.leadership or not ctx.replicas(tp):
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


class _NotController(Exception):
    """The event reached a controller that is not (or no longer) active."""


def _get(obj, name):
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)
