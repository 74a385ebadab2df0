"""Brokers joining, leaving and shutting down, as the controller sees them (Kafka 3.9's ``KafkaController``).

* ``BrokerChange`` (``processBrokerChange``, a watch on the children of
  ``/brokers/ids``): the registered brokers are compared with the context's.
  A *new* broker gets a connection, then ``onBrokerStartup``: UpdateMetadata
  (every partition for the new broker, the new broker list for the others),
  its replicas go online (LeaderAndIsr, :mod:`.replica_state_machine`), offline
  partitions get leaders, deletion of its topics being deleted resumes. A
  *dead* broker gets ``onBrokerFailure``: partitions it led get new leaders
  (:mod:`.partition_state_machine`), its replicas leave the ISRs
  (OfflineReplica), replica deletions waiting on it fail until it is back. A
  *bounced* broker (registered again, with a new broker epoch, between two
  looks) is both: it failed, then started up.
* ``ControlledShutdown`` (``processControlledShutdown`` / ``doControlledShutdown``):
  a stopping broker asks the controller to move its leaderships away first
  (``ControlledShutdownPartitionLeaderElectionStrategy``) and to take it out of
  the ISRs of the partitions it follows; the broker retries while it still
  leads partitions (``controlled.shutdown.max.retries``, on the broker side).

:class:`BrokerChanges` is a part of ``KafkaController`` (a mixin): its methods
run on the controller and use its ``zk_client``, ``context``,
``channel_manager``, ``batch``, state machines and ``topic_deletion_manager``.
"""
from __future__ import annotations

import logging

from ..common.errors import ErrorCode
from ..zk import zk_data as zd
from . import partition_state_machine as psm
from .controller_event_manager import NotControllerError

log = logging.getLogger(__name__)


class BrokerChanges:
    """``KafkaController``'s BrokerChange (``onBrokerStartup``, ``onBrokerFailure``) and ControlledShutdown."""

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
