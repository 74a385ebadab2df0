"""The group coordinator's metrics: Kafka 3.9's classic ``GroupMetadataManager`` gauges (:func:`register`), and
Kafka 4's ``org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics`` (:class:`GroupCoordinatorMetrics`).

**Yammer gauges** (``kafka.coordinator.group:type=GroupMetadataManager``, ``recreateGauge`` in Kafka 3.9's
``GroupMetadataManager.scala``; Kafka 4.4's ``GroupCoordinatorMetrics`` registers the same MBeans), on every broker:

* ``NumGroups``: the classic groups this broker coordinates (those of the ``__consumer_offsets`` partitions it leads);
* ``NumGroupsPreparingRebalance``, ``NumGroupsCompletingRebalance``, ``NumGroupsStable``, ``NumGroupsEmpty``,
  ``NumGroupsDead``: of them, those in each state (a classic group's states: ``group_metadata.GroupState``);
* ``NumOffsets``: the committed offsets those groups hold, one per group and partition.

KIP-848 (``group.protocol=consumer``) and KIP-932 (share) groups are not counted there; their committed offsets
are in ``NumOffsets``. The prometheus names: ``kafka_coordinator_group_groupmetadatamanager_numgroups`` and so on.

**Kafka metrics** (``kafka.server:type=group-coordinator-metrics[,tag=value]``: one MBean per tag set, one attribute
each), only on a KRaft broker: Kafka 4's ``BrokerServer`` builds them with the new group coordinator; Kafka 3.9's
ZooKeeper-mode ``KafkaServer`` always runs the old coordinator (``GroupCoordinatorAdapter``) and its ``KafkaConfig``
refuses the ``consumer`` protocol without ``process.roles``, so a 3.9 ZooKeeper broker never has them, and neither
does a mini ZooKeeper-mode or standalone broker (which stand for 3.9). Registered by
:class:`kafkalab.kraft.broker_server.BrokerServer` (:meth:`GroupCoordinatorMetrics.register`):

* ``offset-count``: as ``NumOffsets``;
* ``group-count`` with ``protocol=classic|consumer|share``: the groups of each type (``Group.GroupType``'s names);
* ``classic-group-count`` (``state=PreparingRebalance|CompletingRebalance|Stable|Dead|Empty``),
  ``consumer-group-count`` (``state=Empty|Assigning|Reconciling|Stable|Dead``) and ``share-group-count``
  (``state=Empty|Stable|Dead``): of each type, the groups in each state (the states' ``toString()``);
* the sensors' totals (Kafka's ``Meter``: a ``-rate`` and a ``-count`` each; the ``-rate`` is not kept, Prometheus
  computes rates from the totals): ``offset-commit-count`` (the offsets OffsetCommit and TxnOffsetCommit stored, one
  per partition, as Kafka's ``OffsetMetadataManager.commitOffset`` counts the records it makes),
  ``offset-expiration-count`` (offsets expired by ``offsets.retention.minutes``), ``group-completed-rebalance-count``
  (a classic group made Stable by its leader's SyncGroup), ``consumer-group-rebalance-count`` and
  ``share-group-rebalance-count`` (a heartbeat, a classic member joining a consumer group or a regex resolved
  bumping the group epoch; a member leaving or fenced bumps it uncounted, as in Kafka).

Served as ``kafka_server_group_coordinator_metrics_group_count{protocol="consumer"}``,
``..._classic_group_count{state="Stable"}``, ``..._offset_commit_count`` (untyped, as kafkalab's exporter rules export
real Kafka's). Not there: streams groups (the mini broker has none: ``group-count{protocol=streams}``,
``streams-group-count``, ``streams-group-rebalance-count``, the streams topology-description counts) and
``offset-deletion-count`` (offsets deleted by OffsetDelete, an API the mini broker does not serve).

Simplified: the group counts are read when scraped; Kafka 4.4 recounts them every 60 s
(``GroupCoordinatorShard``'s ``group-size-counter`` timer), so its values lag a change by up to a minute.
"""
from __future__ import annotations

import enum
from typing import Callable

from ...common.metrics import KafkaMetricsGroup, Meter, MetricName, MetricsRegistry
from .consumer_group import ConsumerGroupState
from .group_metadata import GroupState
from .share_group import ShareGroupState

STATE_GAUGES = {"NumGroupsPreparingRebalance": GroupState.PREPARING_REBALANCE,
                "NumGroupsCompletingRebalance": GroupState.COMPLETING_REBALANCE,
                "NumGroupsStable": GroupState.STABLE, "NumGroupsDead": GroupState.DEAD,
                "NumGroupsEmpty": GroupState.EMPTY}

#: Kafka's ``GroupCoordinatorMetrics.METRICS_GROUP``: the MBean type of its Kafka metrics
METRICS_GROUP = "group-coordinator-metrics"
OFFSET_COMMITS_SENSOR_NAME = "OffsetCommits"
OFFSET_EXPIRED_SENSOR_NAME = "OffsetExpired"
CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME = "CompletedRebalances"
CONSUMER_GROUP_REBALANCES_SENSOR_NAME = "ConsumerGroupRebalances"
SHARE_GROUP_REBALANCES_SENSOR_NAME = "ShareGroupRebalances"
#: each sensor's total (Kafka: ``new Meter(<x>-rate, <x>-count)``)
SENSORS = {OFFSET_COMMITS_SENSOR_NAME: "offset-commit-count",
           OFFSET_EXPIRED_SENSOR_NAME: "offset-expiration-count",
           CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME: "group-completed-rebalance-count",
           CONSUMER_GROUP_REBALANCES_SENSOR_NAME: "consumer-group-rebalance-count",
           SHARE_GROUP_REBALANCES_SENSOR_NAME: "share-group-rebalance-count"}
#: ``group-count``'s protocol tag (``Group.GroupType.toString()``) and the ``<type>-group-count`` states of each
GROUP_TYPES: dict[str, tuple[enum.Enum, ...]] = {
    "classic": (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD,
                GroupState.EMPTY),
    "consumer": tuple(ConsumerGroupState),
    "share": tuple(ShareGroupState)}


def classic_groups(coordinator) -> list:
    """The classic groups: ``coordinator.groups`` also holds a KIP-848 group's committed offsets, under its id."""
    return [g for gid, g in list(coordinator.groups.items()) if gid not in coordinator.consumer_groups]


def _groups_of(coordinator, protocol: str) -> list:
    if protocol == "classic":
        return classic_groups(coordinator)
    return list((coordinator.consumer_groups if protocol == "consumer" else coordinator.share_groups).values())


def _num_offsets(coordinator) -> int:
    return sum(len(g.offsets) for g in list(coordinator.groups.values()))


def _counter(coordinator, protocol: str, state: enum.Enum | None = None) -> Callable[[], int]:
    """A gauge's function: how many groups of ``protocol`` there are (in ``state``, if given)."""
    if state is None:
        return lambda: len(_groups_of(coordinator, protocol))
    return lambda: sum(1 for g in _groups_of(coordinator, protocol) if g.state == state)


def register(coordinator, registry: MetricsRegistry) -> None:
    """The Yammer gauges. ``coordinator``: the ``GroupCoordinator`` (not imported: it imports this module)."""
    group = KafkaMetricsGroup(registry, "kafka.coordinator.group", "GroupMetadataManager")
    group.new_gauge("NumOffsets", lambda: _num_offsets(coordinator))
    group.new_gauge("NumGroups", lambda: len(classic_groups(coordinator)))
    for name, state in STATE_GAUGES.items():
        group.new_gauge(name, _counter(coordinator, "classic", state))


class GroupCoordinatorMetrics:
    """Kafka 4's ``GroupCoordinatorMetrics`` of one coordinator: the sensors' totals are counted from the start
    (:meth:`record`, an integer add); :meth:`register` puts them and the gauges in a broker's registry."""

    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.sensors: dict[str, Meter] = {sensor: Meter() for sensor in SENSORS}

    def record(self, sensor: str, value: int = 1) -> None:
        """Kafka's ``GroupCoordinatorMetricsShard.record``: one sensor's events (e.g. the offsets of a commit)."""
        self.sensors[sensor].mark(value)

    def count(self, sensor: str) -> int:
        return self.sensors[sensor].count

    def register(self, registry: MetricsRegistry) -> None:
        """The Kafka metrics in ``registry`` (Kafka's ``GroupCoordinatorMetrics`` constructor and
        ``registerGauges``); what was counted before carries over."""
        coordinator = self.coordinator

        def name(metric: str, tags: dict | None = None) -> MetricName:
            return MetricName.of_kafka_metric("kafka.server", METRICS_GROUP, metric, tags)

        registry.new_gauge(name("offset-count"), lambda: _num_offsets(coordinator))
        for protocol, states in GROUP_TYPES.items():
            registry.new_gauge(name("group-count", {"protocol": protocol}), _counter(coordinator, protocol))
            for state in states:
                registry.new_gauge(name(f"{protocol}-group-count", {"state": str(state)}),
                                   _counter(coordinator, protocol, state))
        for sensor, metric in SENSORS.items():
            meter = registry.new_meter(name(metric))
            meter.mark(self.sensors[sensor].count)
            self.sensors[sensor] = meter


__all__ = ["GroupCoordinatorMetrics", "METRICS_GROUP", "SENSORS", "register"]
