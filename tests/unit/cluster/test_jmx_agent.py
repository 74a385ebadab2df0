"""kafkalab's rules for the Prometheus JMX exporter (kafkalab/cluster/jmx_exporter/kafka.yml) and the agent's
command line.

The rules are applied here as the exporter applies them (its JmxCollector: each pattern wrapped as
``^.*(?:PATTERN).*$`` and matched against ``domain<k1=v1, k2=v2><>Attribute: value``, the first rule that matches
wins, ``$N`` replaced in name and labels, the name lowercased and made safe), and must give every MBean shape the
mini broker serves the sample name and labels of :func:`kafkalab.broker.common.metrics.prometheus.prometheus_name`.
tests/integration/test_metrics_on_kafka.py checks the same against the real agent on real Kafka.
"""
from __future__ import annotations

import re
import warnings

import pytest
import yaml

from kafkalab.broker.common.metrics.kafka_metrics_group import PERCENTILES, MetricName
from kafkalab.broker.common.metrics.prometheus import prometheus_name
from kafkalab.cluster import jmx_agent
from kafkalab.cluster.kafka_backend import KafkaBackend

from test_kafka_backend import fake_kafka_home

RULES = yaml.safe_load(jmx_agent.RULES.read_text())


def _safe(name: str) -> str:
    return re.sub(r"__+", "_", re.sub(r"[^a-zA-Z0-9:_]", "_", name))


def _sub(template: str, m: re.Match) -> str:
    return re.sub(r"\$(\d+)", lambda g: m.group(int(g.group(1))), template)


def export(name: MetricName, attribute: str) -> tuple[str, dict] | None:
    """(sample name, labels) the rules give ``name``'s ``attribute``, or None if no rule matches."""
    props = ", ".join([f"type={name.type}", f"name={name.name}"] + [f"{k}={v}" for k, v in name.tags])
    text = f"{name.group}<{props}><>{attribute}: 1.0"
    for rule in RULES["rules"]:
        m = re.match(f"^.*(?:{rule['pattern']}).*$", text)
        if m:
            sample = _sub(rule["name"], m)
            sample = sample.lower() if RULES["lowercaseOutputName"] else sample
            labels = {_sub(k, m): _sub(v, m) for k, v in (rule.get("labels") or {}).items()}
            return _safe(sample), labels
    return None


SHAPES = [
    ("kafka.server", "ReplicaManager", "PartitionCount", {}),
    ("kafka.controller", "KafkaController", "ActiveControllerCount", {}),
    ("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", {}),
    ("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec", {"topic": "orders"}),
    ("kafka.network", "RequestMetrics", "RequestsPerSec", {"request": "Produce", "version": "9"}),
    ("kafka.log", "Log", "LogEndOffset", {"topic": "orders", "partition": "2"}),
    ("kafka.network", "RequestMetrics", "TotalTimeMs", {"request": "Fetch"}),
    ("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs", {}),
    ("kafka.server", "DelayedOperationPurgatory", "PurgatorySize", {"delayedOperation": "Produce"}),
    ("kafka.cluster", "Partition", "UnderReplicated", {"topic": "my-topic.v1", "partition": "0"}),
    ("kafka.coordinator.group", "GroupMetadataManager", "NumGroupsStable", {}),   # a dotted domain: '_' for '.'
    ("kafka.server", "ReplicaFetcherManager", "MaxLag", {"clientId": "Replica"}),
]


@pytest.mark.parametrize("group,type_,name,tags", SHAPES)
def test_the_rules_give_the_mini_broker_s_names_and_labels(group, type_, name, tags):
    metric = MetricName.of(group, type_, name, tags)
    attributes = ["Count"] if name.endswith("PerSec") else \
        ["Count", *(f"{label}thPercentile" for label, _ in PERCENTILES)] if name.endswith(("Ms", "TimeMs")) else \
        ["Value"]
    for attribute in attributes:
        got = export(metric, attribute)
        assert got is not None, f"no rule matches {metric.mbean_name} {attribute}"
        expected_labels = dict(metric.tags)
        if attribute.endswith("thPercentile"):
            expected_labels["quantile"] = f"0.{attribute.removesuffix('thPercentile')}"
        assert got == (prometheus_name(metric, attribute), expected_labels), attribute


def test_the_rules_export_no_mean_rates_or_other_library_s_mbeans():
    metric = MetricName.of("kafka.network", "RequestMetrics", "TotalTimeMs", {"request": "Fetch"})
    for attribute in ("Mean", "Max", "Min", "StdDev", "OneMinuteRate", "MeanRate"):
        assert export(metric, attribute) is None
    # of Kafka's other library only the families the rules name (the socket server's counts, not its rates, nor
    # another Selector's metrics)
    for text in ("kafka.server<type=socket-server-metrics, listener=PLAINTEXT, networkProcessor=0><>"
                 "connection-creation-rate: 1",
                 "kafka.server<type=controller-channel-metrics, broker-id=1><>connection-count: 1"):
        assert not any(re.match(f"^.*(?:{r['pattern']}).*$", text) for r in RULES["rules"]), text


def test_javaagent_option(tmp_path):
    jar = tmp_path / "agent.jar"
    assert jmx_agent.javaagent_option(jar, "127.0.0.1", 9404) == f"-javaagent:{jar}=127.0.0.1:9404:{jmx_agent.RULES}"
    assert jmx_agent.metrics_url("127.0.0.1", 9404) == "http://127.0.0.1:9404/metrics"
    with pytest.raises(ValueError, match="metrics port"):
        jmx_agent.javaagent_option(jar, "127.0.0.1", 0)
    with pytest.raises(FileNotFoundError, match="rules file"):
        jmx_agent.javaagent_option(jar, "127.0.0.1", 9404, tmp_path / "missing.yml")


def test_a_bad_version_is_refused_before_maven(tmp_path):
    with pytest.raises(jmx_agent.FetchError, match="not a version"):
        jmx_agent.fetch_jmx_exporter("1.0.x", root=tmp_path)


def test_the_agent_goes_on_the_java_command_line_or_into_kafka_opts(tmp_path, monkeypatch):
    jar = tmp_path / "dist" / "jmx_prometheus_javaagent-1.0.1" / "libs" / "jmx_prometheus_javaagent-1.0.1.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path / "dist"))
    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    java = KafkaBackend(str(fake_kafka_home(tmp_path / "a", script=False)), metrics=True)
    agent = java.javaagent("127.0.0.1", 9404)
    assert agent == f"-javaagent:{jar}=127.0.0.1:9404:{jmx_agent.RULES}"
    cmd = java.command("/s/broker-1.properties", agent)
    assert agent in cmd and cmd.index(agent) < cmd.index("kafka.Kafka")
    assert "KAFKA_OPTS" not in java.env(1, str(tmp_path), agent)
    script = KafkaBackend(str(fake_kafka_home(tmp_path / "b")), metrics=True)
    assert script.command("/s/b.properties", agent) == [script.start_script, "/s/b.properties"]
    assert script.env(1, str(tmp_path), agent)["KAFKA_OPTS"] == agent
    assert KafkaBackend(str(fake_kafka_home(tmp_path / "c")), metrics=False).javaagent("127.0.0.1", 9404) is None
    assert KafkaBackend(str(fake_kafka_home(tmp_path / "d"))).agent_jar == jar   # on by default once fetched


def test_without_the_jar_brokers_start_without_metrics_and_one_warning(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path / "empty"))
    monkeypatch.setattr(jmx_agent, "_warned", False)
    home = str(fake_kafka_home(tmp_path))
    with pytest.warns(RuntimeWarning, match="kafkalab fetch-jmx-exporter"):
        backend = KafkaBackend(home, metrics=True)
    assert backend.agent_jar is None and backend.javaagent("127.0.0.1", 9404) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert KafkaBackend(home, metrics=True).agent_jar is None    # the warning is said once
    monkeypatch.setattr(jmx_agent, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert KafkaBackend(home).agent_jar is None    # not asked for: no metrics, and no warning either


def test_kraft_nodes_get_the_agent_too(tmp_path, monkeypatch):
    from kafkalab.cluster.kraft_config import KRaftBackend
    from kafkalab.cluster.resources import _Broker
    jar = tmp_path / "dist" / "jmx_prometheus_javaagent-1.0.1" / "libs" / "jmx_prometheus_javaagent-1.0.1.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path / "dist"))
    backend = KRaftBackend(str(fake_kafka_home(tmp_path, "4.0.0", script=False)), metrics=True)
    node = _Broker(3001, "127.0.0.1", 0, str(tmp_path / "node-3001"), str(tmp_path / "node-3001.log"),
                   roles="controller", controller_port=9093)
    agent = jmx_agent.javaagent_for(backend, node)
    assert node.metrics_port and node.metrics_url == f"http://127.0.0.1:{node.metrics_port}/metrics"
    assert agent == f"-javaagent:{jar}=127.0.0.1:{node.metrics_port}:{jmx_agent.RULES}"
    port = node.metrics_port
    assert jmx_agent.javaagent_for(backend, node) == agent and node.metrics_port == port   # kept over restarts
    ports = iter([9093, 9093, 9555])    # the node's CONTROLLER port is not taken for its metrics
    monkeypatch.setattr("kafkalab.cluster.ports.free_port", lambda host: next(ports))
    other = _Broker(3002, "127.0.0.1", 0, str(tmp_path / "n2"), str(tmp_path / "n2.log"), roles="controller",
                    controller_port=9093)
    jmx_agent.javaagent_for(backend, other)
    assert other.metrics_port == 9555
    cmd = backend.command("/s/node-3001.properties", "controller", agent)
    assert cmd[-3:] == [agent, "kafka.Kafka", "/s/node-3001.properties"]
    without = KRaftBackend(str(fake_kafka_home(tmp_path / "b", "4.0.0", script=False)), metrics=False)
    assert jmx_agent.javaagent_for(without, node) is None and node.metrics_url is None


def export_kafka_metric(name: MetricName) -> tuple[str, dict] | None:
    """(sample name, labels) the rules give a Kafka metric's MBean (``kafka.server:type=T,k=v...``, no name=) and
    attribute ``name.name``, or None."""
    props = ", ".join([f"type={name.type}"] + [f"{k}={v}" for k, v in name.tags])
    text = f"{name.group}<{props}><>{name.name}: 1.0"
    for rule in RULES["rules"]:
        m = re.match(f"^.*(?:{rule['pattern']}).*$", text)
        if m:
            sample = _sub(rule["name"], m)
            sample = sample.lower() if RULES["lowercaseOutputName"] else sample
            return _safe(sample), {_sub(k, m): _sub(v, m) for k, v in (rule.get("labels") or {}).items()}
    return None


QUOTA_SHAPES = [   # ClientQuotaManager's metric tags: user and client id, user only, client id only (JmxReporter
    {"user": "ANONYMOUS", "client-id": "reporter"},   # leaves an empty tag out of the MBean name)
    {"user": "ANONYMOUS"},
    {"client-id": "reporter"},
]


@pytest.mark.parametrize("quota_type,attribute", [("Produce", "byte-rate"), ("Fetch", "byte-rate"),
                                                  ("Request", "request-time"), ("Produce", "throttle-time"),
                                                  ("Fetch", "throttle-time"), ("Request", "throttle-time")])
@pytest.mark.parametrize("tags", QUOTA_SHAPES)
def test_the_rules_give_the_client_quota_metrics_the_mini_broker_s_names(quota_type, attribute, tags):
    from kafkalab.broker.common.metrics.prometheus import prometheus_samples
    metric = MetricName.of_kafka_metric("kafka.server", quota_type, attribute, tags)
    got = export_kafka_metric(metric)
    assert got is not None, f"no rule matches {metric}"
    assert got[0] == f"kafka_server_{quota_type.lower()}_{attribute.replace('-', '_')}"
    [family] = prometheus_samples([(metric, "gauge", 2.5)])
    [sample] = family.samples
    assert (sample.name, sample.labels) == got


def test_other_kafka_metrics_of_the_quota_types_are_not_exported():
    for text in ("kafka.server<type=Produce><>queue-size: 0",
                 "kafka.server<type=Request><>exempt-request-time: 0",
                 "kafka.server<type=Produce, client-id=c><>byte-total: 1"):
        assert not any(re.match(f"^.*(?:{r['pattern']}).*$", text) for r in RULES["rules"]), text


@pytest.mark.parametrize("attribute", ["current-leader", "current-epoch", "high-watermark", "commit-latency-avg",
                                       "log-end-offset"])
def test_the_rules_give_raft_metrics_the_mini_controllers_names(attribute):
    from kafkalab.broker.common.metrics.prometheus import prometheus_samples
    metric = MetricName.of_kafka_metric("kafka.server", "raft-metrics", attribute)
    got = export_kafka_metric(metric)
    assert got == (f"kafka_server_raft_metrics_{attribute.replace('-', '_')}", {})
    [family] = prometheus_samples([(metric, "gauge", 7.0)])
    [sample] = family.samples
    assert (sample.name, sample.labels) == got


def test_the_rules_give_the_group_coordinator_metrics_the_mini_broker_s_names_and_no_rates():
    from types import SimpleNamespace

    from kafkalab.broker.common.metrics import MetricsRegistry
    from kafkalab.broker.common.metrics.prometheus import prometheus_samples, snapshot
    from kafkalab.broker.coordinator.group.group_coordinator_metrics import METRICS_GROUP, GroupCoordinatorMetrics
    registry = MetricsRegistry()
    GroupCoordinatorMetrics(SimpleNamespace(groups={}, consumer_groups={}, share_groups={})).register(registry)
    names = [n for n, _ in registry.items()]
    assert len(names) == 1 + 3 + 5 + 5 + 3 + 5   # offset-count, group-count x3, the states, the five totals
    served = {(s.name, tuple(sorted(s.labels.items()))) for f in prometheus_samples(snapshot(registry))
              for s in f.samples}
    exported = set()
    for name in names:
        got = export_kafka_metric(name)
        assert got == (prometheus_name(name), dict(name.tags)), name
        exported.add((got[0], tuple(sorted(got[1].items()))))
    assert exported == served
    assert export_kafka_metric(MetricName.of_kafka_metric("kafka.server", METRICS_GROUP, "group-count",
                                                          {"protocol": "streams"})) == \
        ("kafka_server_group_coordinator_metrics_group_count", {"protocol": "streams"})   # real Kafka's, exported
    # the sensors' rates, and the coordinator runtime's metrics of the same type, are not exported
    for other, tags in (("offset-commit-rate", {}), ("consumer-group-rebalance-rate", {}),
                        ("batch-buffer-cache-discard-count", {}), ("num-partitions", {"state": "active"}),
                        ("partition-load-time-avg", {})):
        assert export_kafka_metric(MetricName.of_kafka_metric("kafka.server", METRICS_GROUP, other, tags)) is None
