"""The ``ReplicaManager``'s metrics, as Kafka's ``ReplicaManager`` registers them (``metricsGroup.newGauge`` /
``newMeter`` in ``ReplicaManager.scala``), with the purgatories' sizes (``DelayedOperationPurgatory``):

* ``kafka.server:type=ReplicaManager``: ``PartitionCount`` (the partitions hosted), ``LeaderCount`` (of them, those
  this broker leads), ``UnderReplicatedPartitions`` (led here with an ISR smaller than the replicas),
  ``UnderMinIsrPartitionCount`` / ``AtMinIsrPartitionCount`` (led here with an ISR below / at ``min.insync.replicas``,
  at most the replication factor), ``OfflineReplicaCount`` (always 0: the mini broker has one log directory and no
  log directory failure), and the meters ``IsrExpandsPerSec`` / ``IsrShrinksPerSec`` (an ISR change this leader
  proposed and the controller committed: Kafka's ``AlterPartitionListener.markIsrExpand/markIsrShrink``) and
  ``FailedIsrUpdatesPerSec`` (an AlterPartition answered with an error or stale: ``markFailed``). An ISR the
  controller changes itself (a broker gone, LeaderAndIsr) is not an expand or shrink here, nor in Kafka;
* ``kafka.server:type=DelayedOperationPurgatory,delayedOperation=Produce|Fetch``: ``PurgatorySize`` (the watches:
  one per partition an operation waits on) and ``NumDelayedOperations`` (the operations).

The gauges are read when the metrics are (on the broker's loop).
"""
from __future__ import annotations

from ..common.metrics import KafkaMetricsGroup, Meter, MetricsRegistry


class AlterPartitionListener:
    """Kafka's ``AlterPartitionListener`` of a partition: the ReplicaManager's ISR meters."""
    __slots__ = ("expands", "shrinks", "failed")

    def __init__(self, expands: Meter, shrinks: Meter, failed: Meter):
        self.expands, self.shrinks, self.failed = expands, shrinks, failed

    def mark_isr_expand(self) -> None:
        self.expands.mark()

    def mark_isr_shrink(self) -> None:
        self.shrinks.mark()

    def mark_failed(self) -> None:
        self.failed.mark()


def register(rm, registry: MetricsRegistry) -> AlterPartitionListener:
    """``rm``: the ``ReplicaManager`` (not imported: it imports this module)."""
    group = KafkaMetricsGroup(registry, "kafka.server", "ReplicaManager")

    def leaders():
        return [p for p in list(rm.partitions.values()) if p.is_leader]

    group.new_gauge("PartitionCount", lambda: len(rm.partitions))
    group.new_gauge("LeaderCount", lambda: len(leaders()))
    group.new_gauge("OfflineReplicaCount", lambda: 0)
    group.new_gauge("UnderReplicatedPartitions",
                    lambda: sum(1 for p in leaders() if len(p.replicas) - len(p.partition_state.isr) > 0))
    group.new_gauge("UnderMinIsrPartitionCount", lambda: sum(1 for p in leaders() if p.is_under_min_isr()))
    group.new_gauge("AtMinIsrPartitionCount",
                    lambda: sum(1 for p in leaders() if len(p.partition_state.isr) == p.effective_min_isr()))
    listener = AlterPartitionListener(group.new_meter("IsrExpandsPerSec"), group.new_meter("IsrShrinksPerSec"),
                                      group.new_meter("FailedIsrUpdatesPerSec"))

    purgatory = KafkaMetricsGroup(registry, "kafka.server", "DelayedOperationPurgatory")
    produce = {"delayedOperation": "Produce"}
    fetch = {"delayedOperation": "Fetch"}
    purgatory.new_gauge("PurgatorySize", lambda: rm.produce_purgatory.watched(), produce)
    purgatory.new_gauge("NumDelayedOperations", lambda: len(rm.produce_purgatory), produce)
    # a Fetch parked with an incremental session watches each of its partitions as one
    purgatory.new_gauge("PurgatorySize", lambda: sum(len(w) for w in list(rm._fetch_waiters.values()))
                        + sum(len(s.partitions) for s in list(rm.parked_sessions)), fetch)
    purgatory.new_gauge("NumDelayedOperations",
                        lambda: len({f for w in list(rm._fetch_waiters.values()) for f in w})
                        + len(rm.parked_sessions), fetch)
    return listener
