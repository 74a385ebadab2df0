"""Issue #21, "real Kafka is the oracle": the same forwarded admin requests to a mini KRaft cluster and to Apache
Kafka 4.4 in KRaft mode (``kafkalab fetch-kafka 4``), each three controllers and one broker.

The requests (:mod:`kraft_ctrl_cases`) go to the broker, which forwards them to the active controller: CreateTopics,
CreatePartitions (every error the controller checks, validate_only, a manual assignment), IncrementalAlterConfigs
(SET, APPEND, DELETE, validation errors, BROKER resources the broker answers itself, a request mixing resources the
broker answers with forwarded ones) and AlterConfigs; then DescribeConfigs shows the topic's configs with their
sources. Error codes and error messages must be equal, except the differences listed in :data:`LISTED`, which are
asserted exactly (if the mini cluster starts answering like Kafka, the list has to be updated).
"""
from __future__ import annotations

import time

import pytest

import kafkalab
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from tests.helpers.kraft_ctrl_cases import cases, topic_configs

pytestmark = pytest.mark.cluster
CONFIGS = ["min.insync.replicas", "cleanup.policy", "retention.ms", "max.message.bytes", "segment.ms"]

#: case -> (the mini cluster's answer, Kafka's answer), and why they differ
LISTED = {
    # the value parser is the mini broker's LogConfig, shared with ZooKeeper mode; the code is Kafka's
    "bad value": ((40, "Invalid value 'zero' for configuration min.insync.replicas: expected an int"),
                  (40, "Invalid value zero for configuration min.insync.replicas: Not a number of type INT")),
}
#: Kafka 4.4's controller writes a cluster-wide min.insync.replicas (a BROKER ConfigRecord for the default
#: resource, KIP-966 ELR), so a topic inherits it as DYNAMIC_DEFAULT_BROKER_CONFIG (3); the mini controller does
#: not maintain ELR, and the value comes from the broker's built-in default (DEFAULT_CONFIG, 5)
LISTED_CONFIGS = {"min.insync.replicas": (("1", 5), ("1", 3))}


def run(tmp_path, **backend) -> tuple[list, dict]:
    with kafkalab.cluster(brokers=1, mode="kraft", dir=str(tmp_path), **backend) as c:
        b = c.brokers.to_dict("records")[0]
        host, port = b["host"], int(b["port"])
        answers = cases(host, port, b["id"])
        deadline = time.monotonic() + 20    # the broker's metadata catches up with the controller's last records
        while True:
            configs = topic_configs(host, port, CONFIGS)
            if configs["max.message.bytes"][0] == "100000" or time.monotonic() > deadline:
                return answers, configs
            time.sleep(0.2)


def test_forwarded_admin_requests_answer_as_kafka_4_4(tmp_path):
    mini, mini_configs = run(tmp_path / "mini")
    kafka, kafka_configs = run(tmp_path / "kafka", backend=KRaftBackend(str(fetch_kafka("4"))))
    assert [m[0] for m in mini] == [k[0] for k in kafka]
    for m, k in zip(mini, kafka):
        if m[0] in LISTED:
            assert (tuple(m[1:3]), tuple(k[1:3])) == LISTED[m[0]], m[0]
        else:
            assert m == k, f"{m[0]}: mini {m[1:]} vs Kafka {k[1:]}"
    assert set(mini_configs) == set(kafka_configs) == set(CONFIGS)
    for name in CONFIGS:
        if name in LISTED_CONFIGS:
            assert (tuple(mini_configs[name]), tuple(kafka_configs[name])) == LISTED_CONFIGS[name], name
        else:
            assert mini_configs[name] == kafka_configs[name], name
