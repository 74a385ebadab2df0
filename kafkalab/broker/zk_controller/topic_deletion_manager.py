"""Topic deletion (Kafka's ``kafka.controller.TopicDeletionManager``).

How Kafka's ZooKeeper-mode controller deletes a topic:

1. An admin (DeleteTopics, or ``kafka-topics --delete``) creates
   ``/admin/delete_topics/<topic>``; the controller watches that znode's children.
2. The topic is *queued up for deletion*: every broker is told, with an
   UpdateMetadata whose leader is -2 (``LeaderDuringDelete``), that it is going;
   the controller stops electing leaders or accepting ISR changes for it.
3. Each replica gets StopReplica(delete = true) (ReplicaDeletionStarted). A
   successful answer marks it ReplicaDeletionSuccessful; an error, or its broker
   dying, makes it ineligible until its broker is back, when deletion resumes.
4. When every replica is deleted the topic's znodes are removed
   (``/brokers/topics/<t>``, ``/config/topics/<t>``, the ``/admin/delete_topics`` marker)
   and the brokers get a fresh UpdateMetadata.

With ``delete.topic.enable=false`` the marker is simply removed.

Where kafkalab simplifies: the replica deletion states live in two sets of the
:class:`ControllerContext` (``deletion_pending``: not confirmed yet;
``deletion_in_flight``: StopReplica sent, no answer yet) instead of the replica
state machine; no "ineligible because of a reassignment" (no reassignment).
"""
from __future__ import annotations

import asyncio
import logging

from .controller_context import ControllerComponent

log = logging.getLogger(__name__)

STOP_REPLICA_RETRY_BACKOFF_S = 0.1


class TopicDeletionManager(ControllerComponent):
    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.context.topics_to_be_deleted

    async def enqueue_topics_for_deletion(self, marked: set[str]) -> None:
        """The topics marked under ``/admin/delete_topics``: start (or go on with) deleting them."""
        ctx = self.context
        unknown = marked - ctx.all_topics
        if unknown:
            self.zk_client.delete_topic_deletions(unknown, ctx.epoch_zk_version)
        marked = marked & ctx.all_topics
        if not marked:
            return
        if not self.controller.config["delete.topic.enable"]:
            log.info("controller %d: delete.topic.enable is false: ignoring deletion of %s", self.controller_id,
                     sorted(marked))
            self.zk_client.delete_topic_deletions(marked, ctx.epoch_zk_version)
            return
        newly = marked - ctx.topics_to_be_deleted
        if newly:
            log.info("controller %d: deleting topics %s", self.controller_id, sorted(newly))
            ctx.topics_to_be_deleted |= newly
            for topic in newly:
                ctx.deletion_pending[topic] = {(t, p, b) for t, p in ctx.partitions_for_topic(topic)
                                               for b in ctx.replicas((t, p))}
            # every broker drops the topic from its metadata (leader -2 = "being deleted")
            partitions = [tp for t in newly for tp in ctx.partitions_for_topic(t)]
            self.controller.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, partitions)
            self.controller.send()
        await self.try_topic_deletion()

    async def try_topic_deletion(self) -> None:
        """StopReplica(delete) to every live replica not yet deleted; finish topics with none left."""
        ctx = self.context
        for topic in sorted(ctx.topics_to_be_deleted):
            pending = ctx.deletion_pending.get(topic, set())
            if not pending:
                self.complete_delete_topic(topic)
                continue
            for t, p, b in sorted(pending - ctx.deletion_in_flight):
                if ctx.is_replica_online(b, include_shutting_down=True):
                    self.controller.batch.add_stop_replica([b], (t, p), delete=True)
                    ctx.deletion_in_flight.add((t, p, b))
        self.controller.send()

    def fail_replica_deletion(self, dead_brokers) -> None:
        """Brokers died: their StopReplica(delete) will never be answered; it is sent again when they return."""
        ctx = self.context
        dead = set(dead_brokers)
        for topic in sorted(ctx.topics_to_be_deleted):
            pending = ctx.deletion_pending.get(topic, set())
            ctx.deletion_in_flight -= {r for r in pending if r[2] in dead}

    def complete_delete_topic(self, topic: str) -> None:
        ctx, zk = self.context, self.zk_client
        zk.delete_topic_znode(topic, ctx.epoch_zk_version)
        zk.delete_topic_configs([topic], ctx.epoch_zk_version)
        zk.delete_topic_deletions([topic], ctx.epoch_zk_version)
        ctx.remove_topic(topic)
        log.info("controller %d: deletion of topic %s completed", self.controller_id, topic)
        self.controller.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids)
        self.controller.send()

    async def on_stop_replica_response(self, broker_id: int, response) -> None:
        """A StopReplica(delete) answer (an event: Kafka's ``TopicDeletionStopReplicaResponseReceived``)."""
        ctx = self.context
        changed = False
        for pe in response.partition_errors or []:
            key = (pe.topic_name, pe.partition_index, broker_id)
            if key not in ctx.deletion_in_flight:
                continue
            ctx.deletion_in_flight.discard(key)
            if response.error_code == 0 and pe.error_code == 0:
                ctx.deletion_pending.get(pe.topic_name, set()).discard(key)    # ReplicaDeletionSuccessful
                changed = True
            else:
                log.warning("controller %d: StopReplica(delete) of %s-%d on broker %d failed: %s",
                            self.controller_id, pe.topic_name, pe.partition_index, broker_id,
                            pe.error_code or response.error_code)
        if changed or response.error_code:
            if response.error_code:   # a top-level error: the whole request failed; try again later
                ctx.deletion_in_flight = {r for r in ctx.deletion_in_flight if r[2] != broker_id}
                await asyncio.sleep(STOP_REPLICA_RETRY_BACKOFF_S)
            await self.try_topic_deletion()
