"""The group coordinator's Kafka 4 metrics (``group_coordinator_metrics.GroupCoordinatorMetrics``), driven on an
in-process standalone broker as ``test_group_coordinator.py`` drives the coordinator:

* a standalone broker (Kafka 3.9's ``KafkaServer``, as a ZooKeeper-mode one) registers the ``GroupMetadataManager``
  gauges and none of ``kafka.server:type=group-coordinator-metrics``, but its coordinator counts the sensors;
* ``register`` puts Kafka 4.4's names and tags in a registry (the gauges read the coordinator's groups, the totals
  carry over what was counted before);
* the sensors count what Kafka's do: the offsets a commit stores (not those refused), a classic rebalance the
  leader's SyncGroup completes, and offsets expired by ``offsets.retention.minutes``.

The same metrics on a mini KRaft broker and on Kafka 4.4: ``tests/integration/test_group_coordinator_metrics.py``.
"""
from __future__ import annotations

import pytest

import kafkalab
from kafkalab.broker.common.errors import ErrorCode as E
from kafkalab.broker.common.metrics import Gauge, Meter, MetricName, MetricsRegistry
from kafkalab.broker.coordinator.group.group_coordinator_metrics import (
    CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME, METRICS_GROUP, OFFSET_COMMITS_SENSOR_NAME,
    OFFSET_EXPIRED_SENSOR_NAME)
from kafkalab.broker.coordinator.group.offsets_topic import OffsetAndMetadata

from test_group_coordinator import coord, join_new, sync


@pytest.fixture
def gb(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"group.initial.rebalance.delay.ms": 0,
                                                      "offsets.topic.num.partitions": 3, "num.partitions": 2,
                                                      "offset.metadata.max.bytes": 10}) as b:
        b.call(b.server.admin_manager.create_topic, "t")
        yield b


def counts(b) -> dict[str, int]:
    metrics = coord(b).coordinator_metrics
    return b.call(lambda: {s: metrics.count(s) for s in (OFFSET_COMMITS_SENSOR_NAME, OFFSET_EXPIRED_SENSOR_NAME,
                                                          CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME)})


def test_a_standalone_broker_serves_the_classic_gauges_not_kafka_4s(gb):
    names = {n for n, _ in gb.server.metrics.items()}
    assert MetricName.of("kafka.coordinator.group", "GroupMetadataManager", "NumGroups") in names
    assert not [n for n in names if n.type == METRICS_GROUP]


def test_the_sensors_count_commits_completed_rebalances_and_expired_offsets(gb):
    assert counts(gb) == {OFFSET_COMMITS_SENSOR_NAME: 0, OFFSET_EXPIRED_SENSOR_NAME: 0,
                          CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME: 0}
    joined = join_new(gb, "g")
    assert joined["error_code"] == E.NONE
    member, generation = joined["member_id"], joined["generation_id"]
    assert counts(gb)[CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME] == 0   # not before the leader's SyncGroup
    assert sync(gb, "g", generation, member, {member: b"a"})["error_code"] == E.NONE
    assert counts(gb)[CLASSIC_GROUP_COMPLETED_REBALANCES_SENSOR_NAME] == 1
    # two partitions stored, one refused (its metadata is over offset.metadata.max.bytes): 2 counted
    result = gb.call(coord(gb).commit_offsets, "g", generation, member, None,
                     {("t", 0): OffsetAndMetadata(5), ("t", 1): OffsetAndMetadata(6),
                      ("u", 0): OffsetAndMetadata(1, metadata="x" * 11)})
    assert result == {("t", 0): E.NONE, ("t", 1): E.NONE, ("u", 0): E.OFFSET_METADATA_TOO_LARGE}
    assert counts(gb)[OFFSET_COMMITS_SENSOR_NAME] == 2
    # a refused commit counts nothing (a stale generation)
    stale = gb.call(coord(gb).commit_offsets, "g", generation + 1, member, None, {("t", 0): OffsetAndMetadata(7)})
    assert stale == {("t", 0): E.ILLEGAL_GENERATION}
    assert counts(gb)[OFFSET_COMMITS_SENSOR_NAME] == 2
    # a simple group's offsets, committed long ago: the next expiry run removes them and counts them
    long_ago = {("t", 0): OffsetAndMetadata(1, commit_timestamp=0), ("t", 1): OffsetAndMetadata(2, commit_timestamp=0)}
    assert set(gb.call(coord(gb).commit_offsets, "simple", -1, "", None, long_ago).values()) == {E.NONE}
    assert counts(gb)[OFFSET_COMMITS_SENSOR_NAME] == 4
    gb.call(coord(gb)._cleanup_group_metadata)
    assert counts(gb)[OFFSET_EXPIRED_SENSOR_NAME] == 2
    assert gb.call(lambda: "simple" in coord(gb).groups) is False   # an Empty group left with nothing is dropped


def test_register_names_the_metrics_as_kafka_4_4_and_carries_the_counts_over(gb):
    joined = join_new(gb, "g")
    sync(gb, "g", joined["generation_id"], joined["member_id"], {joined["member_id"]: b"a"})
    gb.call(coord(gb).commit_offsets, "simple", -1, "", None, {("t", 0): OffsetAndMetadata(3)})
    registry = MetricsRegistry()
    gb.call(coord(gb).coordinator_metrics.register, registry)
    got = {}
    for name, metric in gb.call(registry.items):
        assert name.kafka_metric and name.group == "kafka.server" and name.type == METRICS_GROUP, name
        value = gb.call(lambda m=metric: m.value) if isinstance(metric, Gauge) else metric.count
        got[(name.name, name.tags, type(metric))] = value
    states = {"classic": ["PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"],
              "consumer": ["Empty", "Assigning", "Reconciling", "Stable", "Dead"], "share": ["Empty", "Stable", "Dead"]}
    expected = {("offset-count", (), Gauge): 1}
    for protocol, names in states.items():
        expected[("group-count", (("protocol", protocol),), Gauge)] = 2 if protocol == "classic" else 0
        for state in names:
            expected[(f"{protocol}-group-count", (("state", state),), Gauge)] = \
                int(protocol == "classic" and state in ("Stable", "Empty"))
    for metric, value in (("offset-commit-count", 1), ("offset-expiration-count", 0),
                          ("group-completed-rebalance-count", 1), ("consumer-group-rebalance-count", 0),
                          ("share-group-rebalance-count", 0)):
        expected[(metric, (), Meter)] = value
    assert got == expected
    # from now on the registry's meters are the ones counting
    gb.call(coord(gb).commit_offsets, "simple", -1, "", None, {("t", 1): OffsetAndMetadata(4)})
    commits = registry.get(MetricName.of_kafka_metric("kafka.server", METRICS_GROUP, "offset-commit-count"))
    assert isinstance(commits, Meter) and commits.count == 2
