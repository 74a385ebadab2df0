"""``kafkalab.connect()``'s choice of cluster from the environment: ``KAFKALAB_MODE`` beside ``KAFKALAB_BACKEND``.

The cluster itself is replaced by a recorder: what is checked here is which ``kafkalab.cluster(...)`` call a
lesson's ``connect()`` makes in each environment (the clusters are started for real by the integration tests)."""
from __future__ import annotations

import importlib

import pytest

from kafkalab import lab

# the module, not the function kafkalab.cluster re-exports under the same name
cluster_module = importlib.import_module("kafkalab.cluster.cluster")


class _Started:
    bootstrap_servers = "127.0.0.1:1"
    external = False
    broker_ids = [1]

    def close(self):
        pass


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake_cluster(**kwargs):
        seen.append(kwargs)
        return _Started()

    monkeypatch.setattr(cluster_module, "cluster", fake_cluster)
    for name in (lab.ENV_VAR, lab.BACKEND_ENV_VAR, lab.MODE_ENV_VAR, "KAFKALAB_CLUSTER_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield seen
    if lab._current is not None:
        lab._current.close()


@pytest.mark.parametrize("env, brokers, expected", [
    ({}, 3, {"brokers": 3, "backend": "mini", "mode": "zookeeper"}),
    ({"KAFKALAB_MODE": "kraft"}, 3, {"brokers": 3, "backend": "mini", "mode": "kraft"}),
    ({"KAFKALAB_MODE": "KRaft ", "KAFKALAB_BACKEND": "kafka"}, 3, {"brokers": 3, "backend": "kafka", "mode": "kraft"}),
    # without brokers=N: one broker process where the kernel cannot hold the broker asked for
    ({"KAFKALAB_MODE": "kraft"}, None, {"brokers": 1, "backend": "mini", "mode": "kraft"}),
    ({"KAFKALAB_BACKEND": "kafka"}, None, {"brokers": 1, "backend": "kafka", "mode": "zookeeper"}),
])
def test_the_environment_chooses_the_cluster(calls, monkeypatch, env, brokers, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kafka = lab.connect(brokers=brokers, **{"num.partitions": 2})
    assert calls == [{**expected, "num.partitions": 2}]
    assert kafka.cluster is not None and kafka.broker is None


def test_the_default_one_broker_connect_stays_embedded(calls):
    kafka = lab.connect()
    try:
        assert calls == [] and kafka.embedded
    finally:
        kafka.close()


def test_an_unknown_mode_is_refused_by_name(calls, monkeypatch):
    monkeypatch.setenv("KAFKALAB_MODE", "zk")
    with pytest.raises(ValueError, match=r"KAFKALAB_MODE='zk': set it to 'zookeeper' \(the default\) or 'kraft'"):
        lab.connect(brokers=3)
    assert calls == []


def test_cluster_without_a_mode_follows_the_environment(monkeypatch):
    # kafkalab.cluster() as lesson 06 calls it, beside the lesson's own broker: KRaft when the environment says so
    kraft_module = importlib.import_module("kafkalab.cluster.kraft")
    seen = []
    monkeypatch.setattr(kraft_module, "kraft_cluster", lambda **kwargs: seen.append(kwargs) or _Started())
    monkeypatch.setenv("KAFKALAB_MODE", "kraft")
    cluster_module.cluster(brokers=3, **{"min.insync.replicas": 2})
    assert seen == [{"brokers": 3, "dir": None, "backend": "mini", "min.insync.replicas": 2}]
    monkeypatch.setenv("KAFKALAB_MODE", "zookeeper")
    monkeypatch.setattr(cluster_module, "Cluster", lambda **kwargs: seen.append(("zookeeper", kwargs)))
    cluster_module.cluster(brokers=1)
    assert seen[1] == ("zookeeper", {"brokers": 1, "dir": None, "backend": "mini"})
