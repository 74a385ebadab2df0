"""backend="kafka": server.properties and command lines for Apache Kafka 3.x brokers in ZooKeeper mode.

These tests build the layout of a distribution (``libs/kafka_2.13-<version>.jar``,
``bin/kafka-server-start.sh``) and check what the launcher generates from it;
tests/integration/test_kafka_cluster.py runs real Kafka 3.9 brokers fetched by
``kafkalab fetch-kafka``.
"""
from __future__ import annotations

import os
import sys

import pytest

from kafkalab.cluster.cluster import LAB_DEFAULTS, lab_configs
from kafkalab.cluster.kafka_backend import (KafkaBackend, KafkaDistributionError, MiniBackend, config_value,
                                            make_backend)


def fake_kafka_home(root, version="3.9.0", scala="2.13", script=True):
    home = root / f"kafka_{scala}-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "config").mkdir()
    (home / "libs" / f"kafka_{scala}-{version}.jar").write_bytes(b"")
    (home / "libs" / f"kafka_{scala}-{version}-sources.jar").write_bytes(b"")
    (home / "libs" / "kafka-clients-3.9.0.jar").write_bytes(b"")
    if script:
        start = home / "bin" / "kafka-server-start.sh"
        start.write_text("#!/bin/sh\nexit 0\n")
        start.chmod(0o755)
    return home


def test_unset_kafka_home_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path / "empty-cache"))     # nothing fetched either
    with pytest.raises(KafkaDistributionError) as e:
        KafkaBackend()
    msg = str(e.value)
    assert "KAFKA_HOME" in msg and "3.x" in msg and "backend='mini'" in msg
    assert "kafkalab fetch-kafka 3.9" in msg


def test_unset_kafka_home_uses_the_newest_fetched_3x(monkeypatch, tmp_path):
    """What ``kafkalab fetch-kafka`` left in its cache: the newest intact 3.x (never a 4.x: no ZooKeeper)."""
    from kafkalab.cluster.distribution import MANIFEST
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("KAFKALAB_DIST", str(tmp_path))
    for version in ("3.8.1", "3.9.2", "4.4.0"):
        home = fake_kafka_home(tmp_path / "made", version=version, script=False)
        home.rename(tmp_path / version)
        (tmp_path / version / MANIFEST).write_text('{"version": "%s", "files": {}}' % version)
    backend = KafkaBackend()
    assert backend.kafka_home == str(tmp_path / "3.9.2") and backend.version == (3, 9, 2)
    assert not backend.use_script


def test_kafka_home_that_is_not_a_directory(tmp_path):
    with pytest.raises(KafkaDistributionError, match="not a directory"):
        KafkaBackend(str(tmp_path / "nowhere"))


def test_kafka_home_without_kafka_jar(tmp_path):
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka-clients-3.9.0.jar").write_bytes(b"")   # a client jar is not a broker
    with pytest.raises(KafkaDistributionError, match="not an Apache Kafka distribution"):
        KafkaBackend(str(tmp_path))


def test_kafka_4_is_refused_because_it_has_no_zookeeper_mode(tmp_path):
    with pytest.raises(KafkaDistributionError, match="Kafka 4.0.0; Kafka 4 removed ZooKeeper mode"):
        KafkaBackend(str(fake_kafka_home(tmp_path, "4.0.0")))


def test_kafka_2_is_refused(tmp_path):
    with pytest.raises(KafkaDistributionError, match="Kafka 2.8.1"):
        KafkaBackend(str(fake_kafka_home(tmp_path, "2.8.1", scala="2.12")))


def test_version_is_read_from_the_broker_jar(tmp_path, monkeypatch):
    home = fake_kafka_home(tmp_path, "3.7.2")
    monkeypatch.setenv("KAFKA_HOME", str(home))
    backend = make_backend("kafka")
    assert backend.version == (3, 7, 2) and backend.kafka_home == str(home)


def test_server_properties(tmp_path):
    backend = KafkaBackend(str(fake_kafka_home(tmp_path)))
    configs = {**lab_configs(3, backend), "min.insync.replicas": 2, "auto.create.topics.enable": False}
    text = backend.server_properties(2, "127.0.0.1", 19093, "/data/broker-2", "127.0.0.1:2181", configs)
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    props = dict(line.split("=", 1) for line in lines)
    assert len(props) == len(lines)                                  # every key once
    assert props["broker.id"] == "2"
    assert props["listeners"] == props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19093"
    assert props["log.dirs"] == "/data/broker-2"
    assert props["zookeeper.connect"] == "127.0.0.1:2181"
    assert props["min.insync.replicas"] == "2"
    assert props["auto.create.topics.enable"] == "false"             # Java's spelling of booleans
    for name in LAB_DEFAULTS:
        assert name in props
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.replication.factor"] == "3"  # the Kafka backend's own extras
    assert props["transaction.state.log.min.isr"] == "2"


def test_lab_defaults_follow_the_broker_count(tmp_path):
    backend = KafkaBackend(str(fake_kafka_home(tmp_path)))
    one = lab_configs(1, backend)
    assert one["offsets.topic.replication.factor"] == one["default.replication.factor"] == 1
    assert one["transaction.state.log.replication.factor"] == one["transaction.state.log.min.isr"] == 1
    five = lab_configs(5)
    assert five["offsets.topic.replication.factor"] == 3 and five["transaction.state.log.min.isr"] == 2
    assert "min.insync.replicas" not in five                       # stays Kafka's 1


def test_reserved_configs_are_refused(tmp_path):
    backend = KafkaBackend(str(fake_kafka_home(tmp_path)))
    with pytest.raises(ValueError, match="broker.id"):
        backend.server_properties(1, "127.0.0.1", 9092, "/d", "zk:2181", {"broker.id": 7})


def test_properties_values_are_escaped(tmp_path):
    backend = KafkaBackend(str(fake_kafka_home(tmp_path)))
    text = backend.server_properties(1, "h", 1, "/d", "zk:1", {"ssl.keystore.location": "C:\\keys\\k.jks"})
    assert "ssl.keystore.location=C:\\\\keys\\\\k.jks" in text


def test_written_file_and_script_command_line(tmp_path):
    home = fake_kafka_home(tmp_path)
    backend = KafkaBackend(str(home))
    path = backend.write_properties(str(tmp_path), 1, "127.0.0.1", 9092, str(tmp_path / "broker-1"), "zk:2181",
                                    {"num.partitions": 3})
    assert path == str(tmp_path / "broker-1.properties")
    assert "num.partitions=3" in open(path).read()
    assert backend.command(path) == [str(home / "bin" / "kafka-server-start.sh"), path]
    env = backend.env(1, str(tmp_path))
    assert env["KAFKA_HEAP_OPTS"] == backend.heap_opts                # not Kafka's 1 GB per broker
    assert env["LOG_DIR"] == str(tmp_path / "broker-1-kafka-logs")


def test_java_command_line_without_the_script(tmp_path):
    home = fake_kafka_home(tmp_path, script=False)
    backend = KafkaBackend(str(home))
    assert not backend.use_script
    cmd = backend.command("/s/broker-1.properties")
    assert os.path.basename(cmd[0]).startswith("java")
    assert cmd[-2:] == ["kafka.Kafka", "/s/broker-1.properties"]
    assert cmd[cmd.index("-cp") + 1] == os.path.join(str(home), "libs", "*")
    assert "-Xmx256m" in cmd        # the lab's heap (Kafka's scripts default to 1 GB per broker)


def test_mini_backend_command_line():
    cmd = MiniBackend().command(2, "127.0.0.1", 0, "/d/broker-2", {"zookeeper.connect": "zk:1",
                                                                   "log.cleaner.enable": False}, 4242, "/d")
    assert cmd[:3] == [sys.executable, "-m", "kafkalab.broker"]
    joined = " ".join(cmd)
    assert "--broker-id 2" in joined and "--port 0" in joined and "--parent-pid 4242" in joined
    assert "--config zookeeper.connect=zk:1" in joined and "--config log.cleaner.enable=false" in joined


def test_config_values():
    assert config_value(True) == "true" and config_value(5000) == "5000" and config_value("x") == "x"


def test_unknown_backend():
    with pytest.raises(ValueError, match="'mini' or 'kafka'"):
        make_backend("confluent")


def test_a_mini_broker_s_ready_line_gives_its_port_and_metrics_url():
    """The launcher learns a broker process's metrics URL from its ready line (python -m kafkalab.broker)."""
    backend = MiniBackend()
    log = ("kafkalab broker 1 ready on 127.0.0.1:9001 metrics=http://127.0.0.1:40001/metrics log.dirs=/a\n"
           "kafkalab broker 2 ready on 127.0.0.1:9002 log.dirs=/b\n"
           "kafkalab broker 3 ready on 127.0.0.1:9003 metrics=http://127.0.0.1:40003/metrics log.dirs=/c\n"
           "kafkalab broker 3 ready on 127.0.0.1:9003 metrics=http://127.0.0.1:40333/metrics log.dirs=/c\n")
    assert backend.ready_port(log, 1) == 9001
    assert backend.ready_metrics_url(log, 1) == "http://127.0.0.1:40001/metrics"
    assert backend.ready_metrics_url(log, 2) is None          # kafkalab.metrics.port=-1: none served
    assert backend.ready_metrics_url(log, 3) == "http://127.0.0.1:40333/metrics"   # the latest start's
    assert backend.ready_metrics_url(log, 4) is None
