"""A KRaft controller's Yammer metrics under Kafka 4's names: ``QuorumControllerMetrics`` and
``ControllerMetadataMetrics`` (``org.apache.kafka.controller.metrics``), every one a gauge of
``kafka.controller:type=KafkaController``, read when scraped (nothing on the controller's paths but one integer add
when a heartbeat times out).

Every controller registers them, as in Kafka (the metadata ones from the image it has replayed):

* ``ActiveControllerCount``: 1 on the active controller, 0 on the others;
* ``ActiveBrokerCount`` / ``FencedBrokerCount``: registered brokers unfenced / fenced;
* ``GlobalTopicCount``, ``GlobalPartitionCount``, ``OfflinePartitionsCount`` (no leader),
  ``PreferredReplicaImbalanceCount`` (a leader that is not the first replica);
* ``LastAppliedRecordOffset`` (the last record replayed), ``LastCommittedRecordOffset`` (the last the quorum has
  committed: high watermark - 1);
* ``TimedOutBrokerHeartbeatCount``: brokers whose session expired, as this controller saw while active.

Left out: ``LastAppliedRecordTimestamp`` / ``LastAppliedRecordLagMs`` (the replay does not keep the batches'
timestamps), ``EventQueueTimeMs`` / ``EventQueueProcessingTimeMs`` (no event queue: the operations are asyncio
tasks under a lock), ``ControllerStats``' election meters.
"""
from __future__ import annotations

from ..broker.common.metrics import KafkaMetricsGroup, MetricsRegistry

GROUP, TYPE = "kafka.controller", "KafkaController"


class QuorumControllerMetrics:
    def __init__(self, registry: MetricsRegistry, controller):
        self.group = KafkaMetricsGroup(registry, GROUP, TYPE)
        self.timed_out_broker_heartbeats = 0
        c, raft = controller, controller.raft
        gauges = {
            "ActiveControllerCount": lambda: 1 if c.is_active else 0,
            "ActiveBrokerCount": lambda: sum(1 for r in c.cluster.registrations.values() if not r.fenced),
            "FencedBrokerCount": lambda: sum(1 for r in c.cluster.registrations.values() if r.fenced),
            "GlobalTopicCount": lambda: len(c.replication.topics),
            "GlobalPartitionCount": lambda: sum(len(t.partitions) for t in c.replication.topics.values()),
            "OfflinePartitionsCount": lambda: sum(1 for _ in c.replication.partitions_with_no_leader()),
            "PreferredReplicaImbalanceCount": lambda: sum(1 for _ in c.replication.imbalanced_partitions()),
            "LastAppliedRecordOffset": lambda: c.applied_offset - 1,
            "LastCommittedRecordOffset": lambda: -1 if raft.high_watermark is None else raft.high_watermark - 1,
            "TimedOutBrokerHeartbeatCount": lambda: self.timed_out_broker_heartbeats,
        }
        self.names = list(gauges)
        for name, fn in gauges.items():
            self.group.new_gauge(name, fn)

    def close(self) -> None:
        self.group.remove_metrics(self.names)
