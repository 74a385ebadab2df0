"""``kafkalab.connect()`` (embedded broker or external cluster) and the small display helpers."""
from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import kafkalab
from kafkalab.lab import ENV_VAR
from kafkalab.viz import plot_log, records_frame


@pytest.fixture(autouse=True)
def no_external_cluster(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_connect_starts_an_embedded_broker_and_close_removes_it():
    kafka = kafkalab.connect()
    try:
        assert kafka.embedded and not kafka.closed
        assert kafka.bootstrap_servers.startswith("127.0.0.1:")
        log_dir = kafka.broker.log_dir
        assert os.path.isdir(log_dir)
        assert "embedded mini broker" in repr(kafka)
    finally:
        kafka.close()
    assert kafka.closed and kafka.broker.closed
    assert not os.path.exists(log_dir)
    with pytest.raises(RuntimeError, match="closed"):
        kafka.create_topic("late")


def test_connect_again_closes_the_previous_embedded_broker():
    first = kafkalab.connect()
    second = kafkalab.connect()
    try:
        assert first.closed and first.broker.closed
        assert not second.closed
    finally:
        second.close()


def test_context_manager_closes():
    with kafkalab.connect() as kafka:
        pass
    assert kafka.closed and kafka.broker.closed


def test_broker_configs_reach_the_embedded_broker():
    with kafkalab.connect(**{"num.partitions": 4}) as kafka:
        assert kafka.broker.config["num.partitions"] == 4


def test_env_var_selects_an_external_cluster(monkeypatch):
    # Any broker reachable over TCP serves as "external": here a mini broker started separately.
    with kafkalab.mini() as cluster:
        monkeypatch.setenv(ENV_VAR, cluster.bootstrap_servers)
        with pytest.warns(UserWarning, match="ignored"):
            kafka = kafkalab.connect(**{"num.partitions": 4})
        assert not kafka.embedded and kafka.broker is None
        assert kafka.bootstrap_servers == cluster.bootstrap_servers
        assert ENV_VAR in repr(kafka)
        topic = kafka.create_topic("orders", partitions=2)
        assert topic == "orders" and "orders" in kafka.topics()
        kafka.close()
        assert not cluster.closed, "closing the connection to an external cluster must not stop it"


def test_local_starts_its_own_broker_even_with_an_external_cluster_set(monkeypatch):
    # Lessons 02 and 04 need kafkalab's own brokers (faults, the broker's clock): in the workshop the
    # environment names the compose cluster, and connect(local=True) must not use it.
    with kafkalab.mini() as elsewhere:
        monkeypatch.setenv(ENV_VAR, elsewhere.bootstrap_servers)
        with kafkalab.connect(local=True, **{"num.partitions": 4}) as kafka:
            assert kafka.embedded and kafka.bootstrap_servers != elsewhere.bootstrap_servers
            assert kafka.broker.config["num.partitions"] == 4
        with pytest.raises(ValueError, match="no bootstrap_servers"):
            kafkalab.connect(elsewhere.bootstrap_servers, local=True)
        with kafkalab.connect(brokers=1, local=True) as kafka:   # lesson 02: a cluster of its own to break
            assert isinstance(kafka.cluster, kafkalab.cluster.Cluster) and kafka.cluster.broker_ids == [1]
            assert kafka.bootstrap_servers != elsewhere.bootstrap_servers
        assert kafka.cluster.closed and not elsewhere.closed


def test_create_topic_never_reuses_an_existing_topic(capsys):
    with kafkalab.connect() as kafka:
        assert kafka.create_topic("events") == "events"
        assert kafka.create_topic("events") == "events-2"
        assert kafka.create_topic("events") == "events-3"
        assert "already exists" in capsys.readouterr().out
        assert kafka.topics() == ["events", "events-2", "events-3"]


def test_create_topic_passes_partitions_and_configs():
    with kafkalab.connect() as kafka:
        topic = kafka.create_topic("configured", partitions=3, retention_ms=60000)
        metadata = Producer(kafka.client_config()).list_topics(topic, timeout=10)
        assert len(metadata.topics[topic].partitions) == 3
        configs = kafka.broker.call(lambda: dict(kafka.broker.server.metadata_cache.get(topic).configs))
        assert configs.get("retention.ms") in ("60000", 60000)


def test_client_config_translates_python_names():
    kafka = kafkalab.lab.LabKafka("somewhere:9092")
    assert kafka.client_config(group_id="g", enable_auto_commit=False, **{"auto.offset.reset": "earliest"}) == {
        "bootstrap.servers": "somewhere:9092", "group.id": "g", "enable.auto.commit": False,
        "auto.offset.reset": "earliest"}


def test_records_frame_is_the_same_for_both_clients():
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition

    with kafkalab.connect() as kafka:
        topic = kafka.create_topic("frames")
        producer = Producer(kafka.client_config())
        producer.produce(topic, key="k", value="v", timestamp=1735722000000, headers=[("h", b"1"), ("h", b"2")])
        producer.produce(topic, key=None, value=b"\xff\xfe", timestamp=1735722000001)
        producer.flush(10)
        producer.close()

        consumer = Consumer(kafka.client_config(group_id="t", enable_auto_commit=False))
        consumer.assign([TopicPartition(topic, 0, 0)])
        confluent_records, deadline = [], time.monotonic() + 10
        while len(confluent_records) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                confluent_records.append(msg)
        consumer.close()

        kp = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, enable_auto_commit=False)
        tp = KpTopicPartition(topic, 0)
        kp.assign([tp])
        kp.seek(tp, 0)
        kp_records, deadline = [], time.monotonic() + 10
        while len(kp_records) < 2 and time.monotonic() < deadline:
            for batch in kp.poll(timeout_ms=500).values():
                kp_records.extend(batch)
        kp.close()

    a, b = records_frame(confluent_records), records_frame(kp_records)
    assert list(a["offset"]) == [0, 1]
    assert a.loc[0, "headers"] == [("h", "1"), ("h", "2")]   # a repeated header name keeps both pairs
    assert a.loc[1, "key"] is None and a.loc[1, "value"] == b"\xff\xfe"   # not UTF-8: stays bytes
    assert str(a.loc[0, "timestamp"]) == "2025-01-01 09:00:00+00:00"
    assert a.to_dict("records") == b.to_dict("records")


def test_plot_log_draws_and_validates():
    fig = plot_log([0, 1, 2], labels=["a", "b", "c"], groups=["x", "x", "y"], positions={"position": 3},
                   title="t", log_start_offset=1)
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="same length"):
        plot_log([0, 1], labels=["a"])
    with pytest.raises(ValueError, match="at least one"):
        plot_log([])


def test_metrics_of_the_embedded_broker_and_a_clear_refusal_for_an_external_cluster(monkeypatch):
    with kafkalab.connect() as kafka:
        topic = kafka.create_topic("lab-metrics")
        producer = Producer(kafka.client_config())
        for i in range(7):
            producer.produce(topic, b"v")
        assert producer.flush(10) == 0
        frame = kafka.metrics("kafka_server_brokertopicmetrics_messagesin")
        mine = frame[frame["labels"].map(lambda labels: labels.get("topic") == topic)]
        assert mine["value"].tolist() == [7]
        bootstrap = kafka.bootstrap_servers
    monkeypatch.setenv(ENV_VAR, bootstrap)   # the same address, now as an external cluster nobody here started
    external = kafkalab.connect()
    try:
        with pytest.raises(RuntimeError, match="external cluster"):
            external.metrics()
    finally:
        external.close()
