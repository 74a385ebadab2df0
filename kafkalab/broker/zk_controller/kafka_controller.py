"""``KafkaController``: the ZooKeeper-mode controller (Kafka 3.9's ``kafka.controller.KafkaController``).

Every broker runs one; exactly one is *active*: the broker that created the
ephemeral ``/controller`` znode. Becoming controller bumps ``/controller_epoch``;
every request the controller sends carries that epoch, and brokers refuse an
older one (STALE_CONTROLLER_EPOCH), so a deposed controller cannot undo its
successor's decisions. Its ZooKeeper writes are fenced by the same epoch (they
are conditional on the version of ``/controller_epoch``).

Everything the controller does is an *event* on one queue, processed in order
(:mod:`.controller_event_manager`). Kafka's ``KafkaController.scala`` is one
class; here :class:`KafkaController` is that class too, but its event handlers
live in three modules, one per kind of change (mixins the class is made of);
the work on partitions and replicas is done by the state machines, as in Kafka:

* **startup / controller change / reelect / expire**: the election through
  ``/controller``, failover (``_on_controller_failover``: read brokers, topics,
  assignments and partition states into the :class:`ControllerContext`;
  UpdateMetadata to every broker; the replica and partition state machines'
  startup) and resignation: :mod:`.controller_failover`.
* **broker change** (``/brokers/ids`` children): a new broker gets the metadata
  and LeaderAndIsr for its replicas; a dead broker's partitions get new leaders
  and its replicas leave the ISRs. **ControlledShutdown** (a stopping broker
  hands its leaderships over): :mod:`.broker_changes`.
* **topic change** (``/brokers/topics``) and **partition modifications** (a topic
  znode's data): new partitions go online (leader = first live replica).
  **AlterPartition** (an ISR change from a leader), **ElectLeaders**, the
  ``/admin/preferred_replica_election`` znode, and the periodic **auto leader
  rebalance** (``auto.leader.rebalance.enable``, first check 5 s after failover,
  then every ``leader.imbalance.check.interval.seconds``): :mod:`.partition_changes`.
* **topic deletion** (``/admin/delete_topics``): :mod:`.topic_deletion_manager`.
* **session expiry**: a controller whose ZooKeeper session expired resigns at
  once; with the new session the broker registers again and stands for election.

This module keeps what the others share: the public entry points (the
requests the broker hands over, startup and shutdown), ``send``, the
ZooKeeper watches that become events, and the brokers' responses.

The modules:

* :mod:`.controller_failover`        election through ``/controller``, failover, resignation
* :mod:`.broker_changes`             brokers starting, failing and shutting down (``onBrokerStartup`` ...)
* :mod:`.partition_changes`          new topics and partitions, AlterPartition, preferred / unclean elections
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

from ..common.errors import ErrorCode
from ..zk.kafka_zk_client import EventType
from .broker_changes import BrokerChanges
from .controller_channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager
from .controller_context import ControllerContext
from .controller_metrics import ControllerStats, register_controller_gauges
from .controller_event_manager import ControllerEventManager, NotControllerError
from .controller_failover import ControllerFailover
from .partition_changes import AUTO_REBALANCE_FIRST_DELAY_S, PREFERRED, UNCLEAN, PartitionChanges
from .partition_state_machine import PartitionStateMachine
from .replica_state_machine import ReplicaStateMachine
from .topic_deletion_manager import TopicDeletionManager

log = logging.getLogger(__name__)

__all__ = ["KafkaController", "PREFERRED", "UNCLEAN", "AUTO_REBALANCE_FIRST_DELAY_S"]


class KafkaController(ControllerFailover, BrokerChanges, PartitionChanges):
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.broker_id: int = broker.broker_id
        self.context = ControllerContext()
        self.active_controller_id = -1
        self.channel_manager: ControllerChannelManager | None = None
        self.batch: ControllerBrokerRequestBatch | None = None
        #: Kafka's ControllerStats (None: the broker keeps no metrics); the KafkaController gauges beside it
        registry = broker.metrics
        self.stats: ControllerStats | None = ControllerStats(registry) if registry is not None else None
        if registry is not None:
            register_controller_gauges(self, registry)
        self.event_manager = ControllerEventManager(self.broker_id, self._maybe_resign, self._on_zookeeper_unavailable,
                                                    self.stats.event_timers if self.stats is not None else None)
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
