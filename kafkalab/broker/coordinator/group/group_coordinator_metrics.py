"""The group coordinator's gauges, as Kafka 3.9's ``GroupMetadataManager`` registers them
(``kafka.coordinator.group:type=GroupMetadataManager``, ``recreateGauge`` in ``GroupMetadataManager.scala``):

* ``NumGroups``: the classic groups this broker coordinates (those of the ``__consumer_offsets`` partitions it leads);
* ``NumGroupsPreparingRebalance``, ``NumGroupsCompletingRebalance``, ``NumGroupsStable``, ``NumGroupsEmpty``,
  ``NumGroupsDead``: of them, those in each state (a classic group's states: ``group_metadata.GroupState``);
* ``NumOffsets``: the committed offsets those groups hold, one per group and partition.

Kafka 3.9's classic coordinator has no KIP-848 (``group.protocol=consumer``) groups; the mini broker keeps those
beside the classic ones, and they are not counted here (Kafka 4's coordinator counts them under
``kafka.server:type=group-coordinator-metrics`` instead; their committed offsets are in ``NumOffsets``). The
prometheus names: ``kafka_coordinator_group_groupmetadatamanager_numgroups`` and so on.
"""
from __future__ import annotations

from ...common.metrics import KafkaMetricsGroup, MetricsRegistry
from .group_metadata import GroupState

STATE_GAUGES = {"NumGroupsPreparingRebalance": GroupState.PREPARING_REBALANCE,
                "NumGroupsCompletingRebalance": GroupState.COMPLETING_REBALANCE,
                "NumGroupsStable": GroupState.STABLE, "NumGroupsDead": GroupState.DEAD,
                "NumGroupsEmpty": GroupState.EMPTY}


def register(coordinator, registry: MetricsRegistry) -> None:
    """``coordinator``: the ``GroupCoordinator`` (not imported: it imports this module)."""
    group = KafkaMetricsGroup(registry, "kafka.coordinator.group", "GroupMetadataManager")

    def classic():
        return [g for gid, g in list(coordinator.groups.items()) if gid not in coordinator.consumer_groups]

    group.new_gauge("NumOffsets", lambda: sum(len(g.offsets) for g in list(coordinator.groups.values())))
    group.new_gauge("NumGroups", lambda: len(classic()))
    for name, state in STATE_GAUGES.items():
        group.new_gauge(name, lambda state=state: sum(1 for g in classic() if g.state is state))
