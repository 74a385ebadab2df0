"""Feature versioning (KIP-584) as a client reads it from ApiVersions, on a mini KRaft cluster and a standalone mini
broker. The same questions to Apache Kafka 4.4 are in ``test_kafka_kraft.py``
(``test_kafka_4_finalizes_what_the_mini_cluster_leaves_out``): together they show the mini cluster finalizing
Kafka 4.4's default levels less those of the protocols it does not serve.
"""
from __future__ import annotations

import time

import pytest

import kafkalab
from kafkalab.broker.server.broker_features import SUPPORTED_FEATURES
from kafkalab.controller.feature_control_manager import BOOTSTRAP_FEATURE_LEVELS
from tests.helpers.kafka_wire import api_versions_features

pytestmark = pytest.mark.cluster


def test_a_mini_kraft_broker_and_controller_report_the_levels_the_cluster_finalized(tmp_path):
    with kafkalab.cluster(brokers=1, mode="kraft", dir=str(tmp_path / "kraft")) as c:
        controller = c.bootstrap_controllers.split(",")[0]
        for node in (c.bootstrap_servers, controller):
            v3, v4 = (api_versions_features(node, v) for v in (3, 4))
            assert v4["supported"] == SUPPORTED_FEATURES
            # v3 leaves out each feature whose minimum is 0 (KAFKA-17492), as Kafka 4.4 does
            assert v3["supported"] == {"metadata.version": SUPPORTED_FEATURES["metadata.version"]}
            for answer in (v3, v4):
                assert answer["finalized"] == dict(BOOTSTRAP_FEATURE_LEVELS)
                assert "transaction.version" not in answer["finalized"]      # transactions v1: KIP-890 part 2 off
                assert answer["epoch"] >= len(BOOTSTRAP_FEATURE_LEVELS) - 1   # past the bootstrap records
        # the epoch is the offset of the metadata the node applied: it moves as the log grows (NoOpRecords)
        first = api_versions_features(c.bootstrap_servers, 4)["epoch"]
        deadline = time.monotonic() + 20
        while api_versions_features(c.bootstrap_servers, 4)["epoch"] <= first:
            assert time.monotonic() < deadline, "the broker's finalized features epoch never moved"
            time.sleep(0.2)


def test_a_standalone_mini_broker_lists_no_feature(tmp_path):
    # like Kafka 3.9's ZooKeeper-mode brokers (which report epoch 0, their /feature znode's version; the mini
    # broker has no such znode: -1, unknown)
    with kafkalab.mini(log_dir=str(tmp_path / "mini")) as broker:
        assert api_versions_features(broker.bootstrap_servers, 4) == {"supported": {}, "finalized": {}, "epoch": -1}
