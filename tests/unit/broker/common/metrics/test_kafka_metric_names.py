"""Kafka (not Yammer) metrics in the registry and their Prometheus names, as the JMX exporter's example KRaft
configuration (``kafka-kraft-3_0_0.yml``) names ``kafka.server<type=raft-metrics><>current-leader``."""
from __future__ import annotations

import math

import pytest
from prometheus_client.core import CollectorRegistry
from prometheus_client.exposition import generate_latest

from kafkalab.broker.common.metrics import MetricName, MetricsRegistry
from kafkalab.broker.common.metrics.prometheus import KafkaCollector, prometheus_name


def test_a_kafka_metric_is_an_mbean_with_one_attribute_and_named_as_the_kraft_rules_name_it():
    name = MetricName.of_kafka_metric("kafka.server", "raft-metrics", "current-leader")
    assert name.mbean_name == "kafka.server:type=raft-metrics"
    assert str(name) == "kafka.server:type=raft-metrics current-leader"
    assert prometheus_name(name) == "kafka_server_raft_metrics_current_leader"
    assert prometheus_name(MetricName.of_kafka_metric("kafka.server", "raft-metrics", "commit-latency-avg")) == \
        "kafka_server_raft_metrics_commit_latency_avg"
    with pytest.raises(ValueError):
        prometheus_name(name, "Count")
    with pytest.raises(ValueError):
        MetricName.of_kafka_metric("kafka.server", "raft metrics", "x")
    # a Yammer metric of the same words is another metric
    assert MetricName.of("kafka.server", "raft-metrics", "current-leader") != name


def scrape(registry: MetricsRegistry) -> str:
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(KafkaCollector(registry))   # type: ignore[arg-type]
    return generate_latest(collectors).decode()


def test_current_state_is_an_info_sample_other_strings_are_left_out_and_numbers_are_gauges():
    registry = MetricsRegistry()
    state = ["leader"]
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "raft-metrics", "current-state"), lambda: state[0])
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "raft-metrics", "other-string"), lambda: "x")
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "raft-metrics", "current-epoch"), lambda: 7)
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "raft-metrics", "commit-latency-max"),
                       lambda: math.nan)
    text = scrape(registry)
    assert 'kafka_server_raft_metrics_current_state_info{state="leader"} 1.0' in text
    assert "other_string" not in text
    assert "kafka_server_raft_metrics_current_epoch 7.0" in text
    assert "kafka_server_raft_metrics_commit_latency_max NaN" in text
    state[0] = "follower"
    assert 'kafka_server_raft_metrics_current_state_info{state="follower"} 1.0' in scrape(registry)


def test_a_kafka_metric_with_tags_names_its_mbean_as_jmx_reporter_and_its_labels_safely():
    name = MetricName.of_kafka_metric("kafka.server", "Produce", "byte-rate", {"user": "ANONYMOUS", "client-id": "p1"})
    assert name.mbean_name == "kafka.server:type=Produce,user=ANONYMOUS,client-id=p1"
    assert str(name) == "kafka.server:type=Produce,user=ANONYMOUS,client-id=p1 byte-rate"
    assert MetricName.of_kafka_metric("kafka.server", "Produce", "byte-rate", {"user": "", "client-id": "p1"}) \
        .mbean_name == "kafka.server:type=Produce,client-id=p1"     # an empty tag is left out (JmxReporter)
    assert prometheus_name(name) == "kafka_server_produce_byte_rate"
    registry = MetricsRegistry()
    registry.new_gauge(name, lambda: 1234.5)
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "Produce", "throttle-time", {"client-id": "p1"}),
                       lambda: math.nan)
    text = scrape(registry)
    assert 'kafka_server_produce_byte_rate{client_id="p1",user="ANONYMOUS"} 1234.5' in text
    assert 'kafka_server_produce_throttle_time{client_id="p1"} NaN' in text


def test_a_kafka_sensor_s_total_kept_as_a_meter_is_untyped_and_named_as_written():
    registry = MetricsRegistry()
    commits = registry.new_meter(MetricName.of_kafka_metric("kafka.server", "group-coordinator-metrics",
                                                            "offset-commit-count"))
    registry.new_gauge(MetricName.of_kafka_metric("kafka.server", "group-coordinator-metrics", "group-count",
                                                  {"protocol": "classic"}), lambda: 2)
    commits.mark(3)
    text = scrape(registry)
    assert "# TYPE kafka_server_group_coordinator_metrics_offset_commit_count untyped" in text
    assert "kafka_server_group_coordinator_metrics_offset_commit_count 3.0" in text
    assert "# TYPE kafka_server_group_coordinator_metrics_group_count gauge" in text
    assert 'kafka_server_group_coordinator_metrics_group_count{protocol="classic"} 2.0' in text
