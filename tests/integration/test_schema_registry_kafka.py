"""The schema registry on Apache Kafka 3.9 and on the mini broker: the same answers, the same ``_schemas`` records.

Where the two disagree Kafka is right. The script registers, evolves, checks, configures, soft- and hard-deletes,
starts a second instance (which fences the first as the writer) and restarts; every answer and the committed
records of ``_schemas`` (keys and values, read with ``read_committed``) must be the same on both.
"""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Consumer, TopicPartition

import kafkalab
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from conftest import NO_RETENTION_CHECK
from tests.helpers.registry_helpers import Rest, record

pytestmark = pytest.mark.timeout(240)


def script(bootstrap_servers: str) -> tuple[list, list]:
    answers = []
    with kafkalab.schema_registry(bootstrap_servers) as first:
        rest = Rest(first.url)
        answers.append(rest.post("/subjects/orders-value/versions", record("Order", ("id", "long"))))
        answers.append(rest.post("/subjects/orders-value/versions", record("Order", ("id", "long"), ("qty", "int"))))
        answers.append(rest.post("/subjects/orders-value/versions",
                                 record("Order", ("id", "long"), ("qty", "int", 1))))
        answers.append(rest.put("/config/orders-value", {"compatibility": "FULL_TRANSITIVE"}))
        answers.append(rest.post("/compatibility/subjects/orders-value/versions?verbose=true",
                                 record("Order", ("id", "int"))))
        answers.append(rest.post("/subjects/users-value/versions", record("User", ("name", "string"))))
        answers.append(rest.delete("/subjects/users-value"))
        answers.append(rest.delete("/subjects/users-value?permanent=true"))
        with kafkalab.schema_registry(bootstrap_servers) as second:
            answers.append(Rest(second.url).post("/subjects/logs-value/versions", record("Log", ("l", "string"))))
        answers.append(rest.post("/subjects/clicks-value/versions", record("Click", ("c", "int"))))
        first.restart()
        for path in ("/subjects", "/subjects?deleted=true", "/subjects/orders-value/versions/latest", "/schemas/ids/4",
                     "/config/orders-value", "/schemas/ids/3"):
            answers.append(rest.get(path))
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "registry-diff",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition("_schemas", 0, 0)])
    records = []
    while (message := consumer.poll(3.0)) is not None:
        if message.error() is None:
            records.append((json.loads(message.key()), message.value() and json.loads(message.value())))
    consumer.close()
    return answers, records


def test_same_answers_and_records_on_kafka_and_on_the_mini_broker(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "mini"), **NO_RETENTION_CHECK) as broker:
        on_mini = script(broker.bootstrap_servers)
    backend = KafkaBackend(str(fetch_kafka("3.9")))
    with kafkalab.cluster(brokers=1, backend=backend, dir=str(tmp_path / "kafka")) as cluster:
        on_kafka = script(cluster.bootstrap_servers)
    assert on_mini[0] == on_kafka[0]
    assert on_mini[1] == on_kafka[1]
    answers, records = on_kafka
    assert [a[0] for a in answers[:3]] == [200, 409, 200]
    assert answers[4] == (200, {"is_compatible": False, "messages": answers[4][1]["messages"]})
    subjects = (200, ["clicks-value", "logs-value", "orders-value"])
    assert answers[-6:-4] == [subjects, subjects]                # users-value is gone, even with ?deleted=true
    assert (answers[-4][1]["version"], answers[-4][1]["id"]) == (2, 2)
    assert answers[-3] == (200, {"schema": '{"type":"record","name":"Log","fields":[{"name":"l","type":"string"}]}'})
    assert answers[-2] == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert answers[-1][1]["error_code"] == 40403                  # users-value's id 3, hard-deleted
    assert records.count(({"keytype": "NOOP", "magic": 0}, None)) == 4   # 3 starts and 1 take-over
