"""kafkalab.kafka_connect without a JVM: the workers' generated config, and bad input refused clearly."""
from __future__ import annotations

import os
import socket
import sys

import pytest

import kafkalab
from kafkalab.cluster import maven
from kafkalab.cluster.zookeeper import ZooKeeperNotFound
from kafkalab.kafka_connect import (LAB_DEFAULTS, ConnectCluster, ConnectError, ConnectJvmError, jvm, rest,
                                    worker_config)
from kafkalab.kafka_connect import cluster as connect_module
from kafkalab.kafka_connect.worker_config import to_properties
from kafkalab.streams import jvm as streams_jvm


def test_lab_defaults_and_what_the_lab_sets():
    config = worker_config("127.0.0.1:9092", 18083, brokers=1)
    assert config["bootstrap.servers"] == "127.0.0.1:9092"
    assert config["listeners"] == "http://127.0.0.1:18083"
    assert (config["rest.advertised.host.name"], config["rest.advertised.port"]) == ("127.0.0.1", 18083)
    assert config["key.converter"] == config["value.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    assert config["key.converter.schemas.enable"] == config["value.converter.schemas.enable"] == "false"
    assert config["scheduled.rebalance.max.delay.ms"] == 3000 and config["offset.flush.interval.ms"] == 1000
    assert (config["session.timeout.ms"], config["heartbeat.interval.ms"]) == (6000, 1000)
    assert {k: config[k] for k in LAB_DEFAULTS} == LAB_DEFAULTS


@pytest.mark.parametrize("brokers, factor", [(1, 1), (2, 2), (3, 3), (5, 3)])
def test_internal_topics_replicated_on_as_many_brokers_as_there_are_up_to_three(brokers, factor):
    config = worker_config("b:9092", 8083, brokers=brokers)
    assert [config[f"{t}.storage.replication.factor"] for t in ("offset", "config", "status")] == [factor] * 3


def test_overrides_by_kafka_or_python_name_win_over_the_lab_defaults():
    config = worker_config("b:9092", 8083, 3, {"offset_flush_interval_ms": 5000, "group.id": "etl",
                                               "exactly.once.source.support": "enabled",
                                               "config_storage_replication_factor": -1})
    assert config["offset.flush.interval.ms"] == 5000 and config["group.id"] == "etl"
    assert config["exactly.once.source.support"] == "enabled"
    assert config["config.storage.replication.factor"] == -1   # -1: the broker's default.replication.factor


def test_bad_worker_configs_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="listeners: set by connect_cluster"):
        worker_config("b:9092", 8083, 1, {"listeners": "http://0.0.0.0:8083"})
    with pytest.raises(ValueError, match="bootstrap.servers: set by connect_cluster"):
        worker_config("b:9092", 8083, 1, {"bootstrap_servers": "x:1"})
    with pytest.raises(ValueError, match=r"status.storage.replication.factor=3 but the Kafka cluster has 1 broker"):
        worker_config("b:9092", 8083, 1, {"status.storage.replication.factor": 3})
    with pytest.raises(ValueError, match="not a TCP port"):
        worker_config("b:9092", 70000, 1)
    with pytest.raises(ValueError, match="at least one broker"):
        worker_config("b:9092", 8083, 0)
    with pytest.raises(ValueError, match="host:port"):
        worker_config(" ", 8083, 1)


def test_properties_are_escaped():
    text = to_properties({"a.b": "x=y:z", "c": "line\nnext", "d": "C:\\dir #1!"})
    assert text == "a.b=x\\=y\\:z\nc=line\\nnext\nd=C\\:\\\\dir \\#1\\!\n"


@pytest.mark.parametrize("kafka, error", [
    (None, TypeError), (42, TypeError), ("", TypeError), ("localhost", TypeError), (object(), TypeError),
])
def test_connect_cluster_wants_a_kafka(kafka, error):
    with pytest.raises(error, match="connect_cluster\\(\\) needs Kafka"):
        kafkalab.connect_cluster(kafka)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_connect_cluster_wants_a_positive_number_of_workers(workers):
    with pytest.raises(ValueError, match="at least one worker"):
        kafkalab.connect_cluster("127.0.0.1:9092", workers=workers)


def test_a_closed_kafka_is_refused():
    class Closed:
        bootstrap_servers, closed = "127.0.0.1:9092", True
    with pytest.raises(ValueError, match="is closed"):
        kafkalab.connect_cluster(Closed())


def test_no_broker_answering_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(connect_module, "fetch_connect", lambda version: tmp_path)
    with socket.socket() as s:          # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConnectError, match=f"no Kafka broker answers at 127.0.0.1:{port}"):
        connect_module.count_brokers(f"127.0.0.1:{port}", timeout=2)


def test_no_java_says_what_to_install(monkeypatch, tmp_path):
    def no_java():
        raise ZooKeeperNotFound("no java")
    monkeypatch.setattr("kafkalab.cluster.zookeeper.find_java", no_java)
    with pytest.raises(ConnectJvmError, match="Kafka Connect runs on Java, and no 'java' was found"):
        jvm.worker_command(tmp_path, tmp_path / "w.properties", tmp_path / "log4j.properties")


def test_a_failed_fetch_is_one_line_and_leaves_nothing(monkeypatch, tmp_path):
    def missing(*args, **kwargs):
        raise maven.FetchError("maven: the repository does not have org.apache.kafka:connect-runtime:0.0.1",
                               kind="version")
    monkeypatch.setattr(streams_jvm, "fetch_jars", missing)   # the fetch Streams and Connect share
    with pytest.raises(ConnectJvmError) as e:
        jvm.fetch_connect("0.0.1", root=tmp_path)
    assert "\n" not in str(e.value) and "Kafka Connect 0.0.1 could not be fetched" in str(e.value)
    assert list(tmp_path.iterdir()) == []

    def offline(*args, **kwargs):
        raise maven.FetchError("maven: the Maven repository cannot be reached (no network?); nothing was fetched")
    monkeypatch.setattr(streams_jvm, "fetch_jars", offline)
    monkeypatch.setattr(streams_jvm, "fetch_with_ivy", offline)
    with pytest.raises(ConnectJvmError, match="cannot be reached") as e:
        jvm.fetch_connect(root=tmp_path)
    assert "\n" not in str(e.value) and list(tmp_path.iterdir()) == []


def test_unknown_worker_indexes_and_no_running_worker(tmp_path):
    cluster = ConnectCluster(tmp_path, "127.0.0.1:9092", workers=2, brokers=1, directory=tmp_path, temp=False)
    try:
        assert [w.config_path.name for w in cluster.workers] == ["worker-0.properties", "worker-1.properties"]
        assert cluster.workers[0].port != cluster.workers[1].port
        assert cluster.url == cluster.workers[0].url
        assert cluster.cwd == os.getcwd()   # a connector's relative file is the caller's
        assert "group.id=connect-cluster" in cluster.workers[1].config_path.read_text()
        with pytest.raises(IndexError, match="no worker 2: this Connect cluster has workers 0..1"):
            cluster.kill(2)
        with pytest.raises(IndexError, match="no worker -1"):
            cluster.restart(-1)
        with pytest.raises(TypeError, match="named by its index"):
            cluster.stop(True)
        with pytest.raises(ConnectError, match="no Connect worker is running"):
            cluster.connectors()
        cluster.kill(1)       # a worker never started: nothing to do
    finally:
        cluster.close()
    with pytest.raises(ConnectError, match="closed"):
        cluster.start(0)


def test_rest_input_checked_and_no_worker_is_one_clear_error():
    with pytest.raises(rest.ConnectRestError, match="no answer from the Connect worker at http://127.0.0.1:9") as e:
        rest.call("http://127.0.0.1:9", timeout=2)
    assert e.value.status == 0
    with pytest.raises(ValueError, match="connector.class"):
        rest.create_connector("http://127.0.0.1:9", "x", {"file": "/tmp/x"})
    with pytest.raises(ValueError, match="not a connector name"):
        rest.connector_status("http://127.0.0.1:9", "")


def test_a_worker_that_gives_up_is_stopped_at_once_and_a_restart_starts_afresh(monkeypatch, tmp_path):
    """What the lab does with a worker's log, with a stand-in process instead of the JVM: the fatal line of
    Connect's herder ends the wait at once with the exception's line, and a restart looks only at its own run."""
    script = {"text": "[..] ERROR Uncaught exception in herder work thread, exiting: (DistributedHerder:398)\n"
                      "org.apache.kafka.common.config.ConfigException: Topic 'x' ... 'cleanup.policy=delete'\n"}

    def stand_in(home, properties, log4j, jvm_options=None):
        return [sys.executable, "-c", f"import sys, time; sys.stdout.write({script['text']!r}); sys.stdout.flush(); "
                                      "time.sleep(60)"]
    monkeypatch.setattr(connect_module, "worker_command", stand_in)
    cluster = ConnectCluster(tmp_path, "127.0.0.1:9092", workers=1, brokers=1, directory=tmp_path, temp=False)
    try:
        cluster.start(0)
        with pytest.raises(ConnectError) as e:
            cluster.wait_until_ready(0, timeout=30)
        assert str(e.value).startswith("worker 0 failed to start and was stopped\n"
                                       "org.apache.kafka.common.config.ConfigException: Topic 'x'")
        assert not cluster.workers[0].running
        script["text"] = "starting\n"      # the second run logs nothing fatal: the first run's lines do not count
        cluster.start(0)
        with pytest.raises(ConnectError, match=r"worker 0's REST API \(http://127.0.0.1:\d+\) does not answer after 1 s"):
            cluster.wait_until_ready(0, timeout=1)
        assert cluster.workers[0].running
        assert cluster.log(0).count("--- kafkalab: worker 0 starting") == 2
    finally:
        cluster.close()
    assert not cluster.workers[0].running
