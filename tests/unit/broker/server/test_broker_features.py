"""Feature versioning (KIP-584): what a mini KRaft cluster supports, finalizes and reports.

A cluster must finalize only the levels its brokers implement (a Kafka 4.x client switches a protocol on from
the finalized level alone), the controller must refuse a broker that cannot run a finalized level, and ApiVersions
must list the features as Kafka's ``ApiVersionsResponse`` does. The live answers of a mini KRaft node and of
Kafka 4.4 are compared in ``tests/integration/test_kraft_features.py``.
"""
from __future__ import annotations

import types
import uuid

import pytest

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.server.broker_features import (SUPPORTED_FEATURES, FinalizedFeatures, api_versions_features,
                                                    registration_features, unsupported_levels)
from kafkalab.controller.cluster_control_manager import ClusterControlManager
from kafkalab.controller.feature_control_manager import (BOOTSTRAP_FEATURE_LEVELS, KAFKA_BOOTSTRAP_FEATURE_LEVELS,
                                                         FeatureControlManager)


def test_the_mini_cluster_bootstraps_only_levels_its_brokers_implement():
    assert unsupported_levels(BOOTSTRAP_FEATURE_LEVELS) == []
    # Kafka 4.4's defaults include three protocols the mini brokers do not serve
    assert unsupported_levels(KAFKA_BOOTSTRAP_FEATURE_LEVELS) == [
        "share.version 2 is not supported (this broker implements 0-1)",
        "streams.version 1 is not supported (this broker implements 0-0)",
        "transaction.version 2 is not supported (this broker implements 0-0)"]
    # same order as Kafka's bootstrap, levels Kafka's or lower
    kafka = dict(KAFKA_BOOTSTRAP_FEATURE_LEVELS)
    assert [n for n, _ in BOOTSTRAP_FEATURE_LEVELS] == [n for n, _ in KAFKA_BOOTSTRAP_FEATURE_LEVELS if n in
                                                        dict(BOOTSTRAP_FEATURE_LEVELS)]
    assert all(level <= kafka[name] for name, level in BOOTSTRAP_FEATURE_LEVELS)


def test_bootstrapping_an_unimplemented_level_is_a_clear_error():
    with pytest.raises(ValueError, match="transaction.version 2 is not supported"):
        FeatureControlManager().bootstrap_records([("metadata.version", 33), ("transaction.version", 2)])
    with pytest.raises(ValueError, match="no.such.version is not a feature this broker knows"):
        FeatureControlManager().bootstrap_records([("metadata.version", 33), ("no.such.version", 1)])
    with pytest.raises(ValueError, match="below the minimum bootstrap level"):
        FeatureControlManager().bootstrap_records([("metadata.version", 3)])


def test_api_versions_lists_features_as_kafka_does():
    finalized = FinalizedFeatures({"metadata.version": 33, "group.version": 1, "kraft.version": 0}, 42)
    assert api_versions_features(SUPPORTED_FEATURES, finalized, 2) == {}
    v3, v4 = (api_versions_features(SUPPORTED_FEATURES, finalized, v) for v in (3, 4))
    # v3 leaves out a feature whose minimum is 0 (KAFKA-17492): older clients fail to parse it
    assert v3["supported_features"] == [{"name": "metadata.version", "min_version": 4, "max_version": 33}]
    assert {f["name"] for f in v4["supported_features"]} == set(SUPPORTED_FEATURES)
    # a finalized level 0 (kraft.version of a static quorum) is not listed; min and max levels are the level
    for v in (v3, v4):
        assert v["finalized_features_epoch"] == 42
        assert v["finalized_features"] == [
            {"name": "metadata.version", "max_version_level": 33, "min_version_level": 33},
            {"name": "group.version", "max_version_level": 1, "min_version_level": 1}]
    assert api_versions_features({}, FinalizedFeatures(), 4) == {
        "supported_features": [], "finalized_features_epoch": -1, "finalized_features": []}


def registration(features):
    return types.SimpleNamespace(
        cluster_id=None, broker_id=1, incarnation_id=uuid.uuid4(), is_migrating_zk_broker=False,
        log_dirs=[uuid.uuid4()], listeners=[], rack=None,
        features=[types.SimpleNamespace(**f) for f in features])


def bootstrapped() -> ClusterControlManager:
    features = FeatureControlManager()
    for record in features.bootstrap_records():
        features.replay_feature_level({"name": record.data["name"], "featureLevel": record.data["feature_level"]})
    cluster = ClusterControlManager(None, features)
    cluster.activate()
    return cluster


def test_the_controller_refuses_a_broker_that_cannot_run_a_finalized_level():
    cluster = bootstrapped()
    records, epoch = cluster.register_broker(registration(registration_features()), 100)
    assert epoch == 100 and records[0].data["features"] == registration_features()
    # a broker that implements group.version 0 only: refused, as Kafka's processRegistrationFeature refuses it
    no_848 = [dict(f, max_supported_version=0) if f["name"] == "group.version" else f for f in registration_features()]
    with pytest.raises(KafkaError) as refused:
        bootstrapped().register_broker(registration(no_848), 100)
    assert refused.value.code == ErrorCode.UNSUPPORTED_VERSION
    assert refused.value.message == (
        "Unable to register because the broker does not support finalized version 1 of group.version. "
        "The broker wants a version between 0 and 0, inclusive.")
    # a finalized feature the broker does not name counts as level 0 only; no metadata.version range as level 1
    for features, feature in (([f for f in registration_features() if f["name"] != "share.version"], "share.version"),
                              ([f for f in registration_features() if f["name"] != "metadata.version"],
                               "metadata.version")):
        with pytest.raises(KafkaError, match=f"finalized version [0-9]+ of {feature}"):
            bootstrapped().register_broker(registration(features), 100)
