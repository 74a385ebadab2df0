"""kafkalab.cluster.metrics: brokers' Prometheus text as a DataFrame (MiniBroker.metrics, Cluster.metrics)."""
from __future__ import annotations

import pandas as pd
import pytest

from kafkalab.broker.common.metrics import KafkaMetricsGroup, MetricsRegistry
from kafkalab.broker.common.metrics.prometheus import MetricsHttpServer
from kafkalab.cluster.metrics import COLUMNS, metrics_frame, name_filter


@pytest.fixture
def servers():
    started = []

    def serve(under_replicated: int, messages: int) -> str:
        registry = MetricsRegistry()
        KafkaMetricsGroup(registry, "kafka.server", "ReplicaManager").new_gauge(
            "UnderReplicatedPartitions", lambda: under_replicated)
        KafkaMetricsGroup(registry, "kafka.server", "BrokerTopicMetrics").new_meter(
            "MessagesInPerSec", {"topic": "orders"}).mark(messages)
        server = MetricsHttpServer(registry)
        server.start()
        started.append(server)
        return server.url

    yield serve
    for server in started:
        server.stop()


def test_one_row_per_sample_and_broker(servers):
    df = metrics_frame({1: servers(0, 5), 2: servers(3, 7)})
    assert list(df.columns) == COLUMNS
    urp = df[df.metric == "kafka_server_replicamanager_underreplicatedpartitions"]
    assert dict(zip(urp.broker, urp.value)) == {1: 0.0, 2: 3.0}
    msgs = df[df.metric == "kafka_server_brokertopicmetrics_messagesin_total"]
    assert list(msgs.labels) == [{"topic": "orders"}] * 2 and list(msgs.value) == [5.0, 7.0]
    assert isinstance(df.time.iloc[0], pd.Timestamp) and str(df.time.iloc[0].tz) == "UTC"


def test_names_keep_exact_names_or_prefixes(servers):
    urls = {1: servers(2, 1)}
    assert set(metrics_frame(urls, "kafka_server_replicamanager_").metric) == {
        "kafka_server_replicamanager_underreplicatedpartitions"}
    assert set(metrics_frame(urls, ["kafka_server_brokertopicmetrics_messagesin_total"]).metric) == {
        "kafka_server_brokertopicmetrics_messagesin_total"}
    empty = metrics_frame(urls, "nothing_like_it")
    assert empty.empty and list(empty.columns) == COLUMNS


@pytest.mark.parametrize("names", [3, [""], ["ok", None]])
def test_bad_names_are_refused(names):
    with pytest.raises(TypeError, match="names must be"):
        name_filter(names)


def test_an_unreachable_broker_is_named():
    with pytest.raises(RuntimeError, match="broker 4: its metrics at http://127.0.0.1:9/metrics cannot be read"):
        metrics_frame({4: "http://127.0.0.1:9/metrics"})
