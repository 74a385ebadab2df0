"""``BrokerMetadataPublisher``: what a KRaft broker does with the metadata it applied (Kafka's
``kafka.server.metadata.BrokerMetadataPublisher``).

In ZooKeeper mode the controller *tells* brokers with two requests; in KRaft mode each broker reads
the same facts from the records and does the same work itself, through the same code paths:

* UpdateMetadata's work (``BaseBroker.apply_update_metadata``): the metadata cache gets the changed
  partitions' states (leader, leader epoch, ISR, replicas) and the live brokers, which in KRaft are
  the registered, *unfenced* ones; a topic's configs come from its ConfigRecords;
* StopReplica's work (``ReplicaManager.stop_replicas``) for a deleted topic (RemoveTopicRecord): its local
  replicas stop and their logs are deleted; the cache drops it (leader -2, as UpdateMetadata says it);
* the ACLs (AccessControlEntryRecords) to the broker's StandardAuthorizer (Kafka's ``AclPublisher``), which
  decides every request from then on and answers DescribeAcls;
* LeaderAndIsr's work (``ReplicaManager.become_leader_or_follower``): for every changed partition
  this broker is a replica of, become its leader or follower (a ReplicaFetcherThread to the leader).
  Unlike a ZooKeeper-mode LeaderAndIsr, a change keeps the leader epoch when only the ISR changed
  (metadata.version 3.6+), so a newer partition epoch at the same leader epoch is applied too.

Simplified: the Metadata response's controller id is an alive broker's id (Kafka's KRaft brokers
also answer with a random alive broker, since clients cannot reach the controllers), chosen here at
each publish, the lowest id.
"""
from __future__ import annotations

import logging

from ..broker.cluster.partition_state import LeaderAndIsrPartitionState
from ..broker.server.metadata_cache import LEADER_DURING_DELETE, BrokerEndpoint
from ..broker.server.replica_manager import EPOCH_DURING_DELETE

log = logging.getLogger(__name__)
GROUP_RESOURCE = 32


class BrokerMetadataPublisher:
    def __init__(self, broker):
        self.broker = broker

    def live_brokers(self, image, fenced: bool = False) -> list[BrokerEndpoint]:
        """The registered brokers that are unfenced (``fenced=True``: those that are fenced)."""
        out = []
        inter_broker = self.broker.config.listener_configs.inter_broker_listener_name
        for b, reg in sorted(image.cluster.registrations.items()):
            endpoint = reg.endpoint(inter_broker) or reg.endpoint("PLAINTEXT") or reg.endpoint()
            if bool(reg.fenced) == fenced and endpoint is not None:   # host/port: where other brokers reach it
                out.append(BrokerEndpoint(b, endpoint[0], endpoint[1], reg.rack,
                                          {e["name"]: (e["host"], e["port"]) for e in reg.listeners}))
        return out

    async def publish(self, image, delta) -> None:
        broker = self.broker
        rm = broker.replica_manager
        live = self.live_brokers(image)
        controller_id = live[0].id if live else -1
        topics = image.replication.topics
        by_topic: dict = {}
        for topic_id, index in sorted(delta.partitions, key=lambda k: (str(k[0]), k[1])):
            topic = topics.get(topic_id)
            part = topic.partitions.get(index) if topic is not None else None
            if part is None:
                continue
            by_topic.setdefault(topic_id, []).append(LeaderAndIsrPartitionState(
                topic.name, index, rm.controller_epoch, part.leader, part.leader_epoch, list(part.isr),
                part.partition_epoch, list(part.replicas)))
        topic_states = [(topics[t].name, t, states) for t, states in by_topic.items()]
        # a deleted topic: leader -2 (LeaderDuringDelete) takes it out of the cache, as UpdateMetadata does
        topic_states += [(name, topic_id, [LeaderAndIsrPartitionState(name, p, rm.controller_epoch,
                                                                      LEADER_DURING_DELETE, -1, [], -1, [])
                                           for p in parts])
                         for name, topic_id, parts in delta.removed]
        await broker.apply_update_metadata(controller_id, topic_states, live)
        for topic_id in delta.topics | set(by_topic):
            topic = topics.get(topic_id)
            meta = broker.metadata_cache.get(topic.name) if topic is not None else None
            if meta is not None:
                meta.configs = dict(topic.configs)
                broker.apply_topic_configs(topic.name, topic.configs)
        self._publish_group_configs(image)
        if delta.scram_changed:   # the SASL listeners authenticate against the new credentials at once
            broker.credential_provider.apply_scram_image(image.scram.credentials)
        if delta.acls_changed and broker.authorizer is not None:   # Kafka's AclPublisher: the StandardAuthorizer
            broker.authorizer.load_acls(image.acls.acls())
        # StopReplica's work for a deleted topic: the local replicas stop and their logs go
        gone = [(name, p, EPOCH_DURING_DELETE, True) for name, _, parts in delta.removed for p in parts
                if (name, p) in rm.partitions]
        if gone:
            rm.stop_replicas(-1, rm.controller_epoch, gone)
        for name, _, _ in delta.removed:
            broker.topic_configs.pop(name, None)
        mine = [s for states in by_topic.values() for s in states if broker.broker_id in s.replicas]
        if mine:
            errors = rm.become_leader_or_follower(-1, rm.controller_epoch, mine, {topics[t].name: t for t in by_topic},
                                                  {b.id: (b.host, b.port) for b in live}, kraft=True)
            failed = {k: e for k, e in errors.items() if e}
            if failed:
                log.info("broker %d: partitions not applied: %s", broker.broker_id, failed)

    def _publish_group_configs(self, image) -> None:
        """KIP-932 group configs (GROUP ConfigRecords) to the share partition manager."""
        shares = self.broker.share_partition_manager
        if shares is None:
            return
        configuration = image.configuration
        wanted = {name: dict(c) for (kind, name), c in configuration.config_data.items() if kind == GROUP_RESOURCE}
        for group in set(wanted) | set(shares.group_configs):
            if shares.group_configs.get(group, {}) != wanted.get(group, {}):
                shares._set_group_configs(group, wanted.get(group, {}))
