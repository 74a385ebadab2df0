"""The broker's metrics registry (Kafka's KafkaMetricsGroup over Yammer) and its Prometheus names: those of the
JMX exporter's example Kafka configuration (kafka-2_0_0.yml)."""
from __future__ import annotations

import threading
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafkalab.broker.common.metrics import KafkaMetricsGroup, MetricName, MetricsRegistry
from kafkalab.broker.common.metrics.kafka_metrics_group import RESERVOIR_SIZE, Histogram, quantile_of
from kafkalab.broker.common.metrics.prometheus import (
    MetricsHttpServer, prometheus_name, prometheus_samples, snapshot)


@pytest.mark.parametrize("group, type_, name, tags, attribute, expected", [
    ("kafka.server", "ReplicaManager", "UnderReplicatedPartitions", None, "Value",
     "kafka_server_replicamanager_underreplicatedpartitions"),
    ("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", {"topic": "t"}, "Count",
     "kafka_server_brokertopicmetrics_messagesin_total"),
    ("kafka.network", "RequestMetrics", "RequestsPerSec", {"request": "Produce", "version": "9"}, "Count",
     "kafka_network_requestmetrics_requests_total"),
    ("kafka.network", "RequestMetrics", "TotalTimeMs", {"request": "Produce"}, "Count",
     "kafka_network_requestmetrics_totaltimems_count"),
    ("kafka.network", "RequestMetrics", "TotalTimeMs", {"request": "Produce"}, "99thPercentile",
     "kafka_network_requestmetrics_totaltimems"),
    ("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs", None, "Count",
     "kafka_controller_controllerstats_leaderelectionrateandtimems_count"),
    ("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec", None, "Count",
     "kafka_controller_controllerstats_uncleanleaderelections_total"),
    ("kafka.log", "Log", "LogEndOffset", {"topic": "t", "partition": "0"}, "Value", "kafka_log_log_logendoffset"),
    ("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", {"delayedOperation": "Produce"}, "Value",
     "kafka_server_delayedoperationpurgatory_purgatorysize"),
])
def test_prometheus_names_follow_the_exporter_rules(group, type_, name, tags, attribute, expected):
    assert prometheus_name(MetricName.of(group, type_, name, tags), attribute) == expected


def test_mbean_names_keep_kafkas_order_and_drop_empty_tags():
    name = MetricName.of("kafka.log", "Log", "Size", {"topic": "t", "partition": 3})
    assert name.mbean_name == "kafka.log:type=Log,name=Size,topic=t,partition=3"
    assert MetricName.of("kafka.server", "X", "Y", {"topic": ""}).mbean_name == "kafka.server:type=X,name=Y"


@pytest.mark.parametrize("args, match", [
    (("server", "ReplicaManager", "X"), "kafka.<word>"),
    (("kafka.server", "Replica Manager", "X"), "type must be a word"),
    (("kafka.server", "ReplicaManager", ""), "name must be a word"),
    (("kafka.server", "T", "N", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}), "at most four tags"),
    (("kafka.server", "T", "N", {"name": 1}), "tag must be a word"),
])
def test_bad_names_are_refused_clearly(args, match):
    with pytest.raises(ValueError, match=match):
        MetricName.of(*args)


def test_meters_count_and_are_shared_by_name():
    group = KafkaMetricsGroup(MetricsRegistry(), "kafka.server", "ReplicaManager")
    meter = group.new_meter("IsrShrinksPerSec")
    meter.mark()
    meter.mark(4)
    assert group.new_meter("IsrShrinksPerSec") is meter and meter.count == 5
    with pytest.raises(ValueError, match="already registered as a meter"):
        group.new_histogram("IsrShrinksPerSec")


def test_gauges_are_read_when_read_and_replaced_by_a_new_registration():
    registry = MetricsRegistry()
    group = KafkaMetricsGroup(registry, "kafka.server", "ReplicaManager")
    state = {"n": 1}
    group.new_gauge("PartitionCount", lambda: state["n"])
    state["n"] = 7
    assert snapshot(registry) == [(group.metric_name("PartitionCount"), "gauge", 7.0)]
    group.new_gauge("PartitionCount", lambda: 2)
    assert snapshot(registry)[0][2] == 2.0
    with pytest.raises(TypeError):
        group.new_gauge("LeaderCount", 3)


def test_histogram_percentiles_as_yammers_snapshot():
    h = Histogram()
    for v in range(1, 101):   # 1..100
        h.update(v)
    p = h.percentiles()
    # position q * (n + 1), interpolated: 0.5 * 101 = 50.5 -> between 50 and 51
    assert p["50"] == pytest.approx(50.5) and p["99"] == pytest.approx(99.99) and p["999"] == 100
    assert (h.count, h.mean, h.max, h.min) == (100, 50.5, 100, 1)
    assert quantile_of([], 0.5) == 0.0


def test_the_reservoir_is_bounded_to_the_newest_values():
    h = Histogram()
    for _ in range(RESERVOIR_SIZE):
        h.update(1000.0)
    for _ in range(RESERVOIR_SIZE):
        h.update(1.0)
    assert len(h._values) == RESERVOIR_SIZE and h.percentiles()["999"] == 1.0
    assert h.count == 2 * RESERVOIR_SIZE and h.max == 1000.0


def test_removal_takes_the_series_away():
    registry = MetricsRegistry()
    log_group = KafkaMetricsGroup(registry, "kafka.log", "Log")
    for p in (0, 1):
        log_group.new_gauge("LogEndOffset", lambda: 5, {"topic": "gone", "partition": p})
    log_group.new_gauge("LogEndOffset", lambda: 5, {"topic": "kept", "partition": 0})
    assert log_group.remove_metric("LogEndOffset", {"topic": "gone", "partition": 0})
    assert not log_group.remove_metric("LogEndOffset", {"topic": "gone", "partition": 0})
    assert registry.remove_matching(lambda n: dict(n.tags).get("topic") == "gone") == 1
    (fam,) = prometheus_samples(snapshot(registry))
    assert [s.labels for s in fam.samples] == [{"topic": "kept", "partition": "0"}]


def test_one_registry_per_broker():
    a, b = MetricsRegistry(), MetricsRegistry()
    KafkaMetricsGroup(a, "kafka.server", "ReplicaManager").new_meter("IsrExpandsPerSec").mark()
    assert len(a) == 1 and len(b) == 0


def test_served_over_http_and_stopped_without_a_thread_left():
    registry = MetricsRegistry()
    KafkaMetricsGroup(registry, "kafka.server", "BrokerTopicMetrics").new_meter(
        "MessagesInPerSec", {"topic": "t"}).mark(3)
    timer = KafkaMetricsGroup(registry, "kafka.controller", "ControllerStats").new_timer("LeaderElectionRateAndTimeMs")
    timer.update(4.0)
    before = set(threading.enumerate())
    server = MetricsHttpServer(registry, "127.0.0.1", 0)
    server.start()
    try:
        text = urllib.request.urlopen(server.url, timeout=10).read().decode()
    finally:
        server.stop()
    server.stop()   # twice is fine
    assert set(threading.enumerate()) == before
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for fam in text_string_to_metric_families(text) for s in fam.samples}
    assert samples[("kafka_server_brokertopicmetrics_messagesin_total", (("topic", "t"),))] == 3
    assert samples[("kafka_controller_controllerstats_leaderelectionrateandtimems_count", ())] == 1
    assert samples[("kafka_controller_controllerstats_leaderelectionrateandtimems", (("quantile", "0.99"),))] == 4
    with pytest.raises(ValueError, match="metrics port"):
        MetricsHttpServer(registry, "127.0.0.1", 70000)
