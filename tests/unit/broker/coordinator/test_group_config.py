"""``GroupConfig``: a group's own configs, checked in Kafka 4.x's order (names, values, the broker's bounds) with its
messages; the live comparison with Kafka 4.4.0 is ``test_group_configs_are_checked_as_kafka_4_4_checks_them``."""
from __future__ import annotations

import pytest

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.coordinator.group.group_config import (BOUND_CONFIGS, GROUP_CONFIGS, group_config_value,
                                                            parse_duration_ms, validate)
from kafkalab.broker.server.config import BROKER_CONFIGS, BrokerConfig


def refused(new, bounds=None) -> str:
    with pytest.raises(KafkaError) as exc:
        validate(new, bounds or {})
    assert exc.value.code == ErrorCode.INVALID_CONFIG
    return exc.value.message


def test_names_are_checked_before_values():
    assert refused({"share.delivery.count.limit": "1", "nope": "1"}) == "Unknown group config name: nope"


def test_values_then_bounds():
    assert refused({"share.delivery.count.limit": "x"}) == \
        "Invalid value x for configuration share.delivery.count.limit: Not a number of type INT"
    assert refused({"share.delivery.count.limit": "1"}) == \
        "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"
    assert refused({"share.record.lock.duration.ms": "2000"}) == \
        "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."     # Kafka's default bounds
    # a lab lowers the bound: the same value is accepted
    assert validate({"share.record.lock.duration.ms": "2000"},
                    {"group.share.min.record.lock.duration.ms": 1000}) == {"share.record.lock.duration.ms": 2000}


def test_share_auto_offset_reset_and_durations():
    for ok in ("earliest", "latest", "by_duration:PT1H", "by_duration:P1DT2H", "by_duration:PT0.5S"):
        assert validate({"share.auto.offset.reset": ok}, {}) == {"share.auto.offset.reset": ok}
    for bad in ("none", "by_duration:", "by_duration:1h", "by_duration:-PT1H"):
        assert "The value must be either 'earliest', 'latest'" in refused({"share.auto.offset.reset": bad})
    assert (parse_duration_ms("PT1H"), parse_duration_ms("P1D"), parse_duration_ms("PT1.5S")) == \
        (3_600_000, 86_400_000, 1500)
    assert parse_duration_ms("PT") is None and parse_duration_ms("1H") is None


def test_read_committed_share_groups_are_refused_with_the_reason():
    assert "not served by the mini broker" in refused({"share.isolation.level": "read_committed"})
    assert validate({"share.isolation.level": "read_uncommitted"}, {}) == {"share.isolation.level": "read_uncommitted"}


def test_every_bound_and_every_overridden_config_is_a_broker_config_with_kafkas_default():
    for name, default in BOUND_CONFIGS.items():
        assert BROKER_CONFIGS[name].default == default
    for d in GROUP_CONFIGS.values():
        assert d.broker_config is None or d.broker_config in BROKER_CONFIGS
        assert d.bounds is None or all(b in BOUND_CONFIGS for b in d.bounds)


def test_a_group_value_is_its_override_else_the_brokers():
    config = BrokerConfig({"group.share.record.lock.duration.ms": 10000})
    assert group_config_value({}, "share.record.lock.duration.ms", config) == 10000
    overrides = {"share.record.lock.duration.ms": "2000"}
    assert group_config_value(overrides, "share.record.lock.duration.ms", config) == 2000
    assert group_config_value({}, "share.auto.offset.reset", config) == "latest"
