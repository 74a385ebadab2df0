"""kafka.server ReplicaManager gauges and ISR meters, BrokerTopicMetrics and the purgatory sizes, as Kafka counts them
(ReplicaManager.scala, Partition.scala's AlterPartitionListener, KafkaRequestHandler.scala's BrokerTopicStats)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalab.broker.cluster.partition import Partition, PendingExpandIsr, PendingShrinkIsr
from kafkalab.broker.cluster.partition_state import LeaderAndIsrPartitionState
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.metrics import MetricName, MetricsRegistry
from kafkalab.broker.common.metrics.prometheus import snapshot
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.server.broker_topic_stats import BrokerTopicStats
from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.server.replica_manager import ReplicaManager


def values(registry: MetricsRegistry, group: str = "kafka.server", type_: str = "ReplicaManager") -> dict:
    return {(n.name, n.tags): v for n, _, v in snapshot(registry) if n.group == group and n.type == type_}


@pytest.fixture
def replica_manager(tmp_path):
    registry = MetricsRegistry()
    config = BrokerConfig({"log.dirs": str(tmp_path)})
    rm = ReplicaManager(1, SimpleNamespace(metrics=registry, config=config))
    logs = []

    def partition(name, isr, replicas=(1, 2, 3), leader=1, min_isr=2) -> Partition:
        log = UnifiedLog(str(tmp_path / f"{name}-0"), name, 0, LogConfig(config, {"min.insync.replicas": min_isr}))
        logs.append(log)
        p = Partition(name, 0, log, 1, standalone=False)
        rm.add_partition(p)
        p.alter_partition = lambda part, pending: None
        state = LeaderAndIsrPartitionState(name, 0, controller_epoch=1, leader=leader, leader_epoch=1,
                                           isr=list(isr), partition_epoch=0, replicas=list(replicas))
        (p.make_leader if leader == 1 else p.make_follower)(state)
        return p

    rm.partition = partition
    rm.registry = registry
    yield rm
    for log in logs:
        log.close()


def test_replica_manager_gauges_count_what_kafka_counts(replica_manager):
    rm = replica_manager
    rm.partition("full", isr=(1, 2, 3))                 # led here, fully replicated
    rm.partition("at-min", isr=(1, 2))                  # led here, under-replicated, ISR == min.insync.replicas
    rm.partition("under-min", isr=(1,))                 # led here, under-replicated, below min.insync.replicas
    rm.partition("rf1", isr=(1,), replicas=(1,))        # one replica: its effective min ISR is 1, so at min
    rm.partition("followed", isr=(2, 1), leader=2)      # a follower here: counted in PartitionCount only
    got = {name: v for (name, _), v in values(rm.registry).items()}
    assert got["PartitionCount"] == 5 and got["LeaderCount"] == 4
    assert got["UnderReplicatedPartitions"] == 2
    assert got["UnderMinIsrPartitionCount"] == 1
    assert got["AtMinIsrPartitionCount"] == 2
    assert got["OfflineReplicaCount"] == 0
    rm.remove_partition("under-min", 0)
    got = {name: v for (name, _), v in values(rm.registry).items()}
    assert got["PartitionCount"] == 4 and got["UnderReplicatedPartitions"] == 1
    assert got["UnderMinIsrPartitionCount"] == 0


def test_isr_meters_count_committed_changes_and_failed_updates(replica_manager):
    rm = replica_manager
    p = rm.partition("t", isr=(1, 2))
    listener = rm.alter_partition_listener

    def answer(pending, error=0, isr=None):
        return p.handle_alter_partition_response(pending, error, leader_epoch=p.leader_epoch,
                                                 isr=list(pending.sent_isr if isr is None else isr),
                                                 partition_epoch=p.partition_epoch + 1)

    expand = PendingExpandIsr(3, (1, 2, 3), p.partition_state)
    p.partition_state = expand
    answer(expand)
    assert (listener.expands.count, listener.shrinks.count, listener.failed.count) == (1, 0, 0)
    shrink = PendingShrinkIsr(frozenset({3}), (1, 2), p.partition_state)
    p.partition_state = shrink
    answer(shrink, error=ErrorCode.OPERATION_NOT_ATTEMPTED)   # refused: not a shrink, a failed update
    assert (listener.expands.count, listener.shrinks.count, listener.failed.count) == (1, 0, 1)
    shrink = PendingShrinkIsr(frozenset({3}), (1, 2), p.partition_state)
    p.partition_state = shrink
    answer(shrink)
    assert (listener.expands.count, listener.shrinks.count, listener.failed.count) == (1, 1, 1)
    got = {name: v for (name, _), v in values(rm.registry).items()}
    assert (got["IsrExpandsPerSec"], got["IsrShrinksPerSec"], got["FailedIsrUpdatesPerSec"]) == (1, 1, 1)


def test_broker_topic_stats_per_topic_and_in_total():
    registry = MetricsRegistry()
    stats = BrokerTopicStats(registry)
    for topic in ("a", "a", "b"):
        stats.produce_tried(topic)
        stats.produce_appended(topic, 10, 100)
    stats.produce_tried("a")
    stats.produce_failed("a", ErrorCode.NOT_LEADER_OR_FOLLOWER)   # expected by Kafka: not a failed request
    stats.produce_tried("a")
    stats.produce_failed("a", ErrorCode.NOT_ENOUGH_REPLICAS)      # counted as failed
    stats.fetch_read("b", ErrorCode.OFFSET_OUT_OF_RANGE)
    stats.fetch_read("b", ErrorCode.UNKNOWN_SERVER_ERROR)
    stats.bytes_out("b", 7)
    got = values(registry, "kafka.server", "BrokerTopicMetrics")

    def v(name, topic=None):
        return got[(name, (("topic", topic),) if topic else ())]
    assert (v("MessagesInPerSec"), v("MessagesInPerSec", "a"), v("MessagesInPerSec", "b")) == (30, 20, 10)
    assert (v("BytesInPerSec"), v("BytesInPerSec", "a")) == (300, 200)
    assert (v("TotalProduceRequestsPerSec", "a"), v("FailedProduceRequestsPerSec", "a")) == (4, 1)
    assert (v("TotalFetchRequestsPerSec", "b"), v("FailedFetchRequestsPerSec")) == (2, 1)
    assert (v("BytesOutPerSec"), v("BytesOutPerSec", "b")) == (7, 7)
    stats.remove_metrics("a")
    assert not any(dict(n.tags).get("topic") == "a" for n, _, _ in snapshot(registry))
    assert MetricName.of("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec") in registry   # totals stay


def test_purgatory_sizes(replica_manager):
    rm = replica_manager
    key = MetricName.of("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", {"delayedOperation": "Fetch"})
    assert rm.registry.get(key).value == 0
    rm._fetch_waiters[("t", 0)].add(object())
    rm._fetch_waiters[("t", 1)].add(object())
    assert rm.registry.get(key).value == 2


def test_without_a_registry_nothing_is_kept(tmp_path):
    rm = ReplicaManager(1, SimpleNamespace(metrics=None, config=BrokerConfig({"log.dirs": str(tmp_path)})))
    assert rm.broker_topic_stats is None and rm.alter_partition_listener is None


def test_a_topic_s_meters_are_created_at_their_first_mark_the_totals_at_once():
    # Kafka's BrokerTopicMetrics.MeterWrapper: a topic only produced to has no BytesOut, no Failed* meters
    registry = MetricsRegistry()
    stats = BrokerTopicStats(registry)
    totals = {n.name for n, _, _ in snapshot(registry) if n.type == "BrokerTopicMetrics"}
    assert len(totals) == 7 and not any(n.tags for n, _, _ in snapshot(registry))
    stats.produce_tried("t")
    stats.produce_appended("t", 3, 30)
    stats.produce_failed("t", ErrorCode.NOT_LEADER_OR_FOLLOWER)   # expected: no failed meter
    stats.fetch_read("t", ErrorCode.NONE)
    per_topic = {n.name for n, _, _ in snapshot(registry) if n.tags == (("topic", "t"),)}
    assert per_topic == {"TotalProduceRequestsPerSec", "MessagesInPerSec", "BytesInPerSec", "TotalFetchRequestsPerSec"}
