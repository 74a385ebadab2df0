"""The controller's election, failover and resignation (Kafka 3.9's ``KafkaController``).

Every broker stands for election by creating the ephemeral ``/controller`` znode
(Kafka's ``KafkaZkClient.registerControllerAndIncrementControllerEpoch``): the
one that succeeds also bumps ``/controller_epoch`` and is the *active*
controller; the others watch ``/controller`` and stand again when it goes.

The events, as in ``KafkaController.scala``:

* ``Startup`` (``processStartup``): watch ``/controller``, then ``elect``;
* ``ControllerChange`` (``processControllerChange``): the znode changed, so
  ``maybeResign``; when it was deleted, ``Reelect`` as well;
* ``Reelect`` (the second half of ``processRegisterBrokerAndReelect``, after a
  new ZooKeeper session) and ``Expire`` (``processExpire``: the session expired).

Then the two halves of a controller's term:

* ``onControllerFailover``: watch and read ``/brokers/ids``, ``/brokers/topics``,
  the assignments and partition states into the :class:`.ControllerContext`
  (Kafka's ``initializeControllerContext``) and the pending topic deletions and
  preferred replica elections; UpdateMetadata to every broker; the replica and
  partition state machines' ``startup``; the auto leader rebalance task
  (``auto.leader.rebalance.enable``). Connections to the brokers time out after
  ``controller.socket.timeout.ms``.
* ``onControllerResignation``: watches of the old term are ignored from now on
  (``_generation``), the rebalance task stops, the connections to the brokers
  close and the context is emptied.

:class:`ControllerFailover` is a part of ``KafkaController`` (a mixin): its
methods run on the controller and use its ``zk_client``, ``context``,
``config``, ``event_manager``, state machines and ``_watcher``.
"""
from __future__ import annotations

import logging

from ..zk import zk_data as zd
from ..zk.kafka_zk_client import ControllerMovedError, EventType
from .controller_channel_manager import ControllerBrokerRequestBatch, ControllerChannelManager
from .partition_changes import PREFERRED

log = logging.getLogger(__name__)


class ControllerFailover:
    """``KafkaController``'s election through ``/controller``, failover and resignation."""

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
            except Exception:   # noqa: BLE001 - the controller survives: it resigns, another wins
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
        self.channel_manager = ControllerChannelManager(
            self.broker_id, self.config["controller.socket.timeout.ms"],
            self.config.listener_configs.inter_broker_listener_name,
            self.config.listener_configs.inter_broker_client_security())
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
