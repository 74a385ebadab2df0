"""kafkalab.tools.consumer_groups without a broker: the rows, their order and the printout of
``kafka-consumer-groups.sh --describe`` (Kafka 3.9's ConsumerGroupCommand), and the ReplicaFetcherManager's MaxLag."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pandas as pd

from kafkalab.broker.common.metrics import MetricsRegistry
from kafkalab.broker.common.metrics.kafka_metrics_group import MetricName
from kafkalab.broker.server.replica_fetcher_thread import register_metrics
from kafkalab.tools.consumer_groups import COLUMNS, format_describe, lag_of, rows


def member(member_id, client_id, *partitions, topic="t"):
    tps = [NS(topic=topic, partition=p) for p in partitions]
    return NS(member_id=member_id, client_id=client_id, host="/10.0.0.1", assignment=NS(topic_partitions=tps))


def test_lag_is_end_minus_committed_not_capped_and_missing_without_either():
    assert lag_of(4, 10) == 6
    assert lag_of(12, 10) == -2          # a commit past the high watermark: the tool prints a negative LAG
    assert lag_of(None, 10) is None and lag_of(4, None) is None


def test_rows_in_the_tool_s_order():
    committed = {("t", 0): 5, ("t", 1): 7, ("t", 3): 1, ("t", 4): 0}
    ends = {("t", p): 10 for p in range(5)}
    members = [member("m-small", "one", 3), member("m-big", "two", 2, 0), member("m-none", "idle")]
    got = rows("g", members, committed, ends)
    # the largest assignment first, its partitions by number; a member without partitions has no row; then the
    # committed partitions nobody owns, with "-"
    assert [(r["CONSUMER-ID"], r["PARTITION"]) for r in got] == [("m-big", 0), ("m-big", 2), ("m-small", 3),
                                                                ("-", 1), ("-", 4)]
    by_partition = {r["PARTITION"]: r for r in got}
    assert by_partition[2]["CURRENT-OFFSET"] is None and by_partition[2]["LAG"] is None    # assigned, not committed
    assert by_partition[0]["LAG"] == 5 and by_partition[4]["LAG"] == 10
    assert by_partition[1]["HOST"] == by_partition[1]["CLIENT-ID"] == "-"


def test_the_printout_has_the_tool_s_columns_and_dashes():
    df = pd.DataFrame(rows("g", [member("m", "c", 0)], {}, {("t", 0): 3}), columns=COLUMNS)
    df["CURRENT-OFFSET"] = df["CURRENT-OFFSET"].astype("Int64")
    df["LAG"] = df["LAG"].astype("Int64")
    header, line = format_describe(df).splitlines()
    assert header.split() == COLUMNS
    assert line.split() == ["g", "t", "0", "-", "3", "-", "m", "/10.0.0.1", "c"]
    assert header.index("TOPIC") == 16          # GROUP at least 15 wide, as "%-15s "


def test_max_lag_is_the_largest_lag_of_any_fetcher_and_0_without_one():
    registry = MetricsRegistry()
    rm = NS(replica_fetcher_manager=None)
    register_metrics(rm, registry)
    name = MetricName.of("kafka.server", "ReplicaFetcherManager", "MaxLag", {"clientId": "Replica"})
    failed = MetricName.of("kafka.server", "ReplicaFetcherManager", "FailedPartitionsCount", {"clientId": "Replica"})
    assert registry.get(name).value == 0 and registry.get(failed).value == 0
    rm.replica_fetcher_manager = NS(fetchers={1: NS(lag_stats={("a", 0): 3, ("a", 1): 0}),
                                              2: NS(lag_stats={("b", 0): 17})},
                                    failed_partitions={("c", 0)})
    assert registry.get(name).value == 17 and registry.get(failed).value == 1
