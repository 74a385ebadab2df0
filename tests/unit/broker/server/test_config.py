"""Config parsing and validation, broker defaults and synonyms, and how DescribeConfigs explains a value."""
from __future__ import annotations

import pytest

from kafkalab.broker.server.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, ConfigSource, LogConfig, parse, to_string


# -- parsing and validation --------------------------------------------------------

@pytest.mark.parametrize("name, raw, expected", [
    ("retention.ms", "60000", 60000),
    ("retention.ms", "-1", -1),
    ("retention.bytes", " 1024 ", 1024),
    ("min.cleanable.dirty.ratio", "0.25", 0.25),
    ("unclean.leader.election.enable", "TRUE", True),
    ("unclean.leader.election.enable", "false", False),
    ("preallocate", True, True),
    ("cleanup.policy", "compact, delete", "compact,delete"),
    ("compression.type", "zstd", "zstd"),
    ("message.timestamp.type", "LogAppendTime", "LogAppendTime"),
    ("leader.replication.throttled.replicas", "", ""),
    ("segment.bytes", "14", 14),
    ("segment.bytes", str(2**31 - 1), 2**31 - 1),
    ("retention.ms", str(2**63 - 1), 2**63 - 1),
])
def test_valid_topic_values_parse_to_python_values(name, raw, expected):
    assert LogConfig.validate(name, raw) == expected


@pytest.mark.parametrize("name, raw, message", [
    ("retention.ms", "soon", "Invalid value 'soon' for configuration retention.ms: expected a long"),
    ("retention.ms", "-2", "Invalid value '-2' for configuration retention.ms: Value must be at least -1"),
    ("segment.bytes", "13", "configuration segment.bytes: Value must be at least 14"),
    ("min.insync.replicas", "0", "configuration min.insync.replicas: Value must be at least 1"),
    ("min.cleanable.dirty.ratio", "1.5", "min.cleanable.dirty.ratio: Value must be between 0 and 1"),
    ("cleanup.policy", "shred", "configuration cleanup.policy: must be one of delete, compact"),
    ("cleanup.policy", "compact,shred", "configuration cleanup.policy: must be one of delete, compact"),
    ("compression.type", "brotli", "compression.type: must be one of producer, uncompressed"),
    ("unclean.leader.election.enable", "maybe", "unclean.leader.election.enable: expected a bool"),
    ("unclean.leader.election.enable", "1", "unclean.leader.election.enable: expected a bool"),
    ("unclean.leader.election.enable", "yes", "unclean.leader.election.enable: expected a bool"),
    ("compression.gzip.level", "0", "compression.gzip.level: Value must be -1 or between 1 and 9"),
    ("remote.storage.enable", "true", "tiered storage (KIP-405) is not supported"),
    ("retention.mss", "1", "Unknown topic config name: retention.mss"),    # Kafka's LogConfig.validateNames
    # Java's int and long: a value that does not fit is rejected, not stored to overflow later
    ("segment.bytes", str(2**31), "Invalid value '2147483648' for configuration segment.bytes: expected an int"),
    ("retention.ms", str(2**63), "configuration retention.ms: expected a long"),
])
def test_bad_topic_values_name_the_config(name, raw, message):
    with pytest.raises(ValueError) as info:
        LogConfig.validate(name, raw)
    assert message in str(info.value)


def test_kafka_3_9s_message_format_version_takes_its_version_strings():
    """Deprecated, ignored since the inter-broker protocol 3.0, but validated as Kafka 3.9's MetadataVersionValidator
    does (MetadataVersion.fromVersionString); on KRaft it is unknown (test_controller_apis.py)."""
    for ok in ("0.10.0", "0.10.0-IV1", "0.10.0.1", "2.8", "2.8.1", "2.8-IV1", "3.0-IV1", "3.9", "3.9-IV0", "4.0-IV1"):
        assert LogConfig.validate("message.format.version", ok) == ok
    for bad in ("abc", "4.0", "0.10", "2.9", ""):
        with pytest.raises(ValueError) as info:
            LogConfig.validate("message.format.version", bad)
        assert str(info.value) == (f"Invalid value {bad} for configuration message.format.version: "
                                   f"Version {bad} is not a valid version")
    assert LogConfig.validate("message.downconversion.enable", "false") is False


def test_overrides_are_validated_together():
    assert LogConfig.validate_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "10"}) == {
        "min.compaction.lag.ms": 10, "max.compaction.lag.ms": 10}
    with pytest.raises(ValueError, match=r"min.compaction.lag.ms \(100\) > max.compaction.lag.ms \(50\)"):
        LogConfig.validate_overrides({"min.compaction.lag.ms": "100", "max.compaction.lag.ms": "50"})
    with pytest.raises(ValueError, match="segment.bytes"):
        LogConfig.validate_overrides({"retention.ms": "5", "segment.bytes": "x"})


def test_to_string_prints_as_kafka_does():
    assert to_string(True) == "true" and to_string(False) == "false"
    assert to_string(604800000) == "604800000" and to_string(None) is None
    assert to_string(parse(TOPIC_CONFIGS["min.cleanable.dirty.ratio"], "0.5")) == "0.5"


def test_every_topic_config_default_is_valid_and_typed():
    for name, defn in TOPIC_CONFIGS.items():
        assert defn.type_id in (1, 2, 3, 5, 6, 7), name
        if name != "remote.storage.enable" or defn.default is False:
            assert parse(defn, to_string(defn.default)) == defn.default, name


# -- broker configs and topic defaults ------------------------------------------------

def test_broker_config_parses_and_rejects_unknown_names():
    b = BrokerConfig({"num.partitions": "3", "auto.create.topics.enable": "false"})
    assert b["num.partitions"] == 3 and b["auto.create.topics.enable"] is False
    assert b.overrides == {"num.partitions": 3, "auto.create.topics.enable": False}
    with pytest.raises(ValueError, match="Unknown broker configuration 'num.partition'"):
        BrokerConfig({"num.partition": 3})
    with pytest.raises(ValueError, match="num.partitions"):
        BrokerConfig({"num.partitions": "0"})


@pytest.mark.parametrize("broker, expected_retention_ms", [
    ({}, 168 * 3_600_000),
    ({"log.retention.hours": 1}, 3_600_000),
    ({"log.retention.minutes": 5, "log.retention.hours": 1}, 300_000),
    ({"log.retention.ms": 1234, "log.retention.minutes": 5}, 1234),
    ({"log.retention.ms": -1}, -1),
])
def test_retention_ms_default_follows_kafkas_synonym_order(broker, expected_retention_ms):
    assert LogConfig(BrokerConfig(broker))["retention.ms"] == expected_retention_ms


def test_roll_defaults_and_plain_synonyms():
    b = BrokerConfig({"log.roll.hours": 2, "log.roll.jitter.hours": 1, "log.segment.bytes": 4096,
                      "message.max.bytes": 2000, "log.cleanup.policy": "compact"})
    cfg = LogConfig(b)
    assert cfg["segment.ms"] == 7_200_000 and cfg["segment.jitter.ms"] == 3_600_000
    assert cfg["segment.bytes"] == 4096 and cfg["max.message.bytes"] == 2000
    assert cfg.compact and not cfg.delete_enabled
    assert cfg["leader.replication.throttled.replicas"] == ""  # no broker synonym: built-in default
    assert BrokerConfig({"log.roll.jitter.ms": 5})["log.roll.jitter.ms"] == 5
    assert LogConfig(BrokerConfig({"log.roll.jitter.ms": 5}))["segment.jitter.ms"] == 5


def test_log_config_replace_is_in_place_and_all_or_nothing():
    cfg = LogConfig(BrokerConfig(), {"segment.bytes": "2048"})
    same_dict = cfg.overrides
    cfg.replace({"retention.ms": "1000"})
    assert cfg.overrides is same_dict and cfg.overrides == {"retention.ms": 1000}
    assert cfg["segment.bytes"] == 1_073_741_824  # the dropped override is back to its default
    with pytest.raises(ValueError):
        cfg.replace({"retention.ms": "5", "segment.bytes": "1"})
    assert cfg.overrides == {"retention.ms": 1000}


# -- describing: value, source, synonyms ---------------------------------------------------

def test_describe_topic_config_sources_and_synonyms():
    broker = BrokerConfig({"log.retention.ms": 5000, "log.dirs": "/tmp/x"})
    cfg = LogConfig(broker, {"segment.bytes": "2048"})

    d = cfg.describe("segment.bytes")
    assert (d.value, d.source, d.read_only, d.is_default) == ("2048", ConfigSource.DYNAMIC_TOPIC_CONFIG, False, False)
    assert [(s.name, s.value, s.source) for s in d.synonyms] == [
        ("segment.bytes", "2048", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)]

    d = cfg.describe("retention.ms")
    assert (d.value, d.source) == ("5000", ConfigSource.STATIC_BROKER_CONFIG)
    assert [(s.name, s.source) for s in d.synonyms] == [
        ("log.retention.ms", ConfigSource.STATIC_BROKER_CONFIG), ("log.retention.hours", ConfigSource.DEFAULT_CONFIG)]

    d = cfg.describe("cleanup.policy")
    assert (d.value, d.source, d.is_default) == ("delete", ConfigSource.DEFAULT_CONFIG, True)
    assert d.definition.type_id == 7  # LIST

    d = cfg.describe("follower.replication.throttled.replicas")
    assert (d.value, d.source, d.synonyms) == ("", ConfigSource.DEFAULT_CONFIG, [])


def test_describe_broker_configs():
    broker = BrokerConfig({"log.retention.minutes": 10, "num.partitions": 3})
    d = broker.describe("num.partitions")
    assert (d.value, d.source, d.read_only) == ("3", ConfigSource.STATIC_BROKER_CONFIG, True)
    d = broker.describe("log.retention.ms")  # unset: value null, hidden by its synonyms
    assert d.value is None and d.source == ConfigSource.STATIC_BROKER_CONFIG
    assert [s.name for s in d.synonyms] == ["log.retention.minutes", "log.retention.hours"]
    d = broker.describe("log.retention.hours")  # a synonym list starts at the config itself
    assert [s.name for s in d.synonyms] == ["log.retention.hours"] and d.source == ConfigSource.DEFAULT_CONFIG
    assert all(broker.describe(n).read_only for n in BROKER_CONFIGS)
