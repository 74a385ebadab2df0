"""Topic configs and ``LogConfig``, one topic's effective configs
(Kafka's ``org.apache.kafka.storage.internals.log.LogConfig``).

Kafka keeps its ``LogConfig`` in the storage module, below the broker; so does kafkalab: the log
layer (``UnifiedLog``, ``LogManager``) reads its configs from here, and :mod:`kafkalab.broker.server.config`
(the broker configs) builds on it.

* **topic configs** (``TOPIC_CONFIGS``): ``segment.bytes``, ``retention.ms``, ``cleanup.policy``, ...
  Each topic config has a broker-wide default, usually the same name with a ``log.`` prefix
  (``retention.ms`` <- ``log.retention.ms``, ``TOPIC_CONFIG_SYNONYMS``). A topic override set with
  CreateTopics or (Incremental)AlterConfigs wins over the default.
* how a config is defined, parsed and described (``ConfigDef``, :func:`parse`, :func:`to_string`,
  ``ConfigSource``, ``ConfigDescription``), shared with the broker configs.

Values are kept as Python values (int, bool, str); :func:`parse` turns the strings a client or a
command line sends into them and raises ``ValueError`` with a message naming the config when a
value does not fit.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Protocol

MB = 1024 * 1024


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str  # "int", "long", "bool", "string", "list", "double", "password" (a string DescribeConfigs hides)
    default: Any
    doc: str
    validator: Callable[[Any], bool] | None = None
    valid_values: tuple[str, ...] | None = None

    @property
    def type_id(self) -> int:
        """Kafka's ``ConfigType`` id, sent in DescribeConfigs v3+."""
        return CONFIG_TYPE_IDS.get(self.type, 0)


#: DescribeConfigsResponse ``ConfigType``: BOOLEAN=1 STRING=2 INT=3 SHORT=4 LONG=5 DOUBLE=6 LIST=7 CLASS=8 PASSWORD=9
CONFIG_TYPE_IDS = {"bool": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7, "password": 9}


class ConfigSource(enum.IntEnum):
    """Where a config's value comes from (DescribeConfigs v1+, KIP-226), by Kafka's names."""
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1            # a topic override (CreateTopics / AlterConfigs)
    DYNAMIC_BROKER_CONFIG = 2           # a dynamic per-broker config (not supported here)
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3   # a dynamic cluster-wide default (not supported here)
    STATIC_BROKER_CONFIG = 4            # set when the broker started (server.properties, --config)
    DEFAULT_CONFIG = 5                  # Kafka's built-in default


def _d(name, type_, default, doc, validator=None, valid_values=None):
    return ConfigDef(name, type_, default, doc, validator, valid_values)


def _rule(text: str, check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A validator that can say what it wants (Kafka's "Value must be at least 0")."""
    check.rule = text
    return check


def _at_least(n):
    return _rule(f"Value must be at least {n}", lambda v: v >= n)


def _between(lo, hi):
    return _rule(f"Value must be between {lo} and {hi}", lambda v: lo <= v <= hi)


_nonneg = _at_least(0)
_positive = _at_least(1)
_ms_or_unlimited = _at_least(-1)
_not_supported = _rule("tiered storage (KIP-405) is not supported by the mini broker", lambda v: v is False)
LONG_MAX = 2**63 - 1
INT_RANGE = {"int": 2**31, "long": 2**63}  # the values of Java's int and long: [-range, range)

#: Topic-level configs (Kafka's LogConfig / TopicConfig). Default values equal
#: the broker-level default named in ``TOPIC_TO_BROKER``.
TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    _d("cleanup.policy", "list", "delete", "delete, compact, or both (comma separated)",
       valid_values=("delete", "compact")),
    _d("compression.type", "string", "producer",
       "Final compression of the topic's batches; 'producer' keeps what the producer sent",
       valid_values=("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")),
    _d("delete.retention.ms", "long", 86_400_000, "How long tombstones stay after compaction", _nonneg),
    _d("file.delete.delay.ms", "long", 60_000, "Delay before a deleted segment's files are removed", _nonneg),
    _d("flush.messages", "long", 2**63 - 1, "fsync the log after this many messages", _positive),
    _d("flush.ms", "long", 2**63 - 1, "fsync the log after this many ms", _nonneg),
    _d("index.interval.bytes", "int", 4096, "Bytes between two offset index entries", _nonneg),
    _d("max.compaction.lag.ms", "long", 2**63 - 1, "Longest a record stays uncompacted", _positive),
    _d("max.message.bytes", "int", 1_048_588, "Largest record batch the topic accepts", _nonneg),
    _d("message.timestamp.type", "string", "CreateTime",
       "CreateTime keeps the producer's timestamp, LogAppendTime stamps the broker's clock",
       valid_values=("CreateTime", "LogAppendTime")),
    _d("min.cleanable.dirty.ratio", "double", 0.5, "Dirty share of the log that makes it cleanable",
       _between(0, 1)),
    _d("min.compaction.lag.ms", "long", 0, "Shortest time a record stays uncompacted", _nonneg),
    _d("min.insync.replicas", "int", 1, "Replicas that must have a write for acks=all", _positive),
    _d("retention.bytes", "long", -1, "Maximum size of a partition's log before old segments go (-1: none)"),
    _d("retention.ms", "long", 604_800_000, "Age after which a segment is deleted (-1: forever)", _ms_or_unlimited),
    _d("segment.bytes", "int", 1_073_741_824, "Size at which the active segment rolls", _at_least(14)),
    _d("segment.index.bytes", "int", 10 * MB, "Maximum size of a segment's offset index", _at_least(8)),
    _d("segment.jitter.ms", "long", 0, "Random jitter subtracted from segment.ms", _nonneg),
    _d("segment.ms", "long", 604_800_000, "Age at which the active segment rolls", _positive),
    _d("unclean.leader.election.enable", "bool", False, "Allow an out-of-sync replica to become leader"),
    # Accepted and described like Kafka's, but they change nothing in the mini broker
    # (see docs/differences.md, "Admin and configs").
    _d("compression.gzip.level", "int", -1, "gzip level when the broker compresses (KIP-390; -1: codec default)",
       _rule("Value must be -1 or between 1 and 9", lambda v: v == -1 or 1 <= v <= 9)),
    _d("compression.lz4.level", "int", 9, "lz4 level when the broker compresses (KIP-390)", _between(1, 17)),
    _d("compression.zstd.level", "int", 3, "zstd level when the broker compresses (KIP-390)",
       _between(-131072, 22)),
    _d("follower.replication.throttled.replicas", "list", "",
       "Replicas whose follower fetches are throttled (partition:broker,...)"),
    _d("leader.replication.throttled.replicas", "list", "",
       "Replicas whose leader side is throttled (partition:broker,...)"),
    _d("local.retention.bytes", "long", -2, "Local share of retention.bytes with tiered storage (-2: same)",
       _at_least(-2)),
    _d("local.retention.ms", "long", -2, "Local share of retention.ms with tiered storage (-2: same)",
       _at_least(-2)),
    _d("message.timestamp.after.max.ms", "long", LONG_MAX,
       "How far in the future a CreateTime timestamp may be", _nonneg),
    _d("message.timestamp.before.max.ms", "long", LONG_MAX,
       "How far in the past a CreateTime timestamp may be", _nonneg),
    _d("preallocate", "bool", False, "Preallocate the file of a new segment"),
    _d("remote.storage.enable", "bool", False, "Tiered storage for this topic (KIP-405)", _not_supported),
]}

#: Broker-level name of each topic config's default.
TOPIC_TO_BROKER: dict[str, str] = {
    "cleanup.policy": "log.cleanup.policy",
    "compression.type": "compression.type",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "flush.messages": "log.flush.interval.messages",
    "flush.ms": "log.flush.interval.ms",
    "index.interval.bytes": "log.index.interval.bytes",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "max.message.bytes": "message.max.bytes",
    "message.timestamp.type": "log.message.timestamp.type",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "min.insync.replicas": "min.insync.replicas",
    "retention.bytes": "log.retention.bytes",
    "retention.ms": "log.retention.ms",
    "segment.bytes": "log.segment.bytes",
    "segment.index.bytes": "log.index.size.max.bytes",
    "segment.jitter.ms": "log.roll.jitter.ms",
    "segment.ms": "log.roll.ms",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "local.retention.bytes": "log.local.retention.bytes",
    "local.retention.ms": "log.local.retention.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "preallocate": "log.preallocate",
}

#: Every broker config that can supply a topic config's default, most specific first, with
#: the factor that turns its unit into the topic config's (Kafka's ``TopicConfigSynonyms``):
#: ``retention.ms`` <- ``log.retention.ms``, else ``log.retention.minutes``, else ``log.retention.hours``.
#: Topic configs without a broker synonym (the throttled-replica lists, ``remote.storage.enable``)
#: always take their built-in default.
TOPIC_CONFIG_SYNONYMS: dict[str, list[tuple[str, int]]] = {
    name: [(broker_name, 1)] for name, broker_name in TOPIC_TO_BROKER.items()}
TOPIC_CONFIG_SYNONYMS["retention.ms"] = [("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                                         ("log.retention.hours", 3_600_000)]
TOPIC_CONFIG_SYNONYMS["segment.ms"] = [("log.roll.ms", 1), ("log.roll.hours", 3_600_000)]
TOPIC_CONFIG_SYNONYMS["segment.jitter.ms"] = [("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)]

#: Kafka 3.9's inter-broker protocol versions (``MetadataVersion``, its ``ibpVersion`` strings) and the production
#: releases they belong to: what ``message.format.version`` accepts
_IBP_VERSIONS = (
    "0.8.0 0.8.1 0.8.2 0.9.0 0.10.0-IV0 0.10.0-IV1 0.10.1-IV0 0.10.1-IV1 0.10.1-IV2 0.10.2-IV0 0.11.0-IV0 0.11.0-IV1 "
    "0.11.0-IV2 1.0-IV0 1.1-IV0 2.0-IV0 2.0-IV1 2.1-IV0 2.1-IV1 2.1-IV2 2.2-IV0 2.2-IV1 2.3-IV0 2.3-IV1 2.4-IV0 "
    "2.4-IV1 2.5-IV0 2.6-IV0 2.7-IV0 2.7-IV1 2.7-IV2 2.8-IV0 2.8-IV1 3.0-IV0 3.0-IV1 3.1-IV0 3.2-IV0 3.3-IV0 3.3-IV1 "
    "3.3-IV2 3.3-IV3 3.4-IV0 3.5-IV0 3.5-IV1 3.5-IV2 3.6-IV0 3.6-IV1 3.6-IV2 3.7-IV0 3.7-IV1 3.7-IV2 3.7-IV3 3.7-IV4 "
    "3.8-IV0 3.9-IV0 4.0-IV0 4.0-IV1").split()
_RELEASES = {v.split("-")[0] for v in _IBP_VERSIONS if not v.startswith("4.")}   # 4.0 is not production in 3.9


def _metadata_version(value: str) -> bool:
    """Kafka 3.9's ``MetadataVersion.fromVersionString``: an IBP version, or a release (only its first 3 parts for
    0.x, 2 otherwise, count: ``2.8.1`` is ``2.8``); ValueError with Kafka's message otherwise."""
    parts = value.split(".")
    key = ".".join(parts[:3 if value.startswith("0.") else 2])
    if value in _IBP_VERSIONS or key in _RELEASES or key in _IBP_VERSIONS:
        return True
    raise ValueError(f"Invalid value {value} for configuration message.format.version: "
                     f"Version {value} is not a valid version")


#: topic configs of Kafka 3.9 that Kafka 4.0 removed: served by the ZooKeeper-mode and standalone mini brokers (Kafka
#: 3.9's modes), unknown on a KRaft one, as on Kafka 4.x ("Unknown topic config name"). Both are deprecated and do
#: nothing here: ``message.format.version`` is ignored once the inter-broker protocol is 3.0 or newer (a 3.9 broker
#: logs that it ignores it), and the mini broker never down-converts records for old fetchers.
ZK_TOPIC_CONFIGS: dict[str, ConfigDef] = {c.name: c for c in [
    _d("message.format.version", "string", "3.0-IV1",
       "[Deprecated] The message format version; ignored with inter.broker.protocol.version 3.0 or newer (KIP-724)",
       _metadata_version),
    _d("message.downconversion.enable", "bool", True,
       "[Deprecated] Whether fetches of old consumers down-convert records (the mini broker never does; KIP-724)"),
]}
#: every topic config a Kafka 3.9 broker knows (ZooKeeper mode and the standalone broker)
ALL_TOPIC_CONFIGS: dict[str, ConfigDef] = {**TOPIC_CONFIGS, **ZK_TOPIC_CONFIGS}


def topic_configs(kraft: bool) -> dict[str, ConfigDef]:
    """The topic configs of a broker: Kafka 4.x's in KRaft mode, Kafka 3.9's in the others."""
    return TOPIC_CONFIGS if kraft else ALL_TOPIC_CONFIGS


_TRUE = {"true"}    # Kafka's ConfigDef takes "true"/"false" only (any case), not 1/0 or yes/no
_FALSE = {"false"}


def parse(defn: ConfigDef, value: Any) -> Any:
    """Turn ``value`` (a string or Python value) into the config's type, or raise ValueError."""
    if value is None:
        return None
    try:
        if defn.type in ("int", "long"):
            out = int(value)
            if not -INT_RANGE[defn.type] <= out < INT_RANGE[defn.type]:
                raise ValueError  # Java's int is 32 bits, long 64: Kafka rejects what does not fit
        elif defn.type == "double":
            out = float(value)
        elif defn.type == "bool":
            if isinstance(value, bool):
                out = value
            elif str(value).strip().lower() in _TRUE:
                out = True
            elif str(value).strip().lower() in _FALSE:
                out = False
            else:
                raise ValueError
        elif defn.type == "list":
            out = ",".join(v.strip() for v in str(value).split(",") if v.strip())
        else:
            out = str(value)
    except (TypeError, ValueError):
        article = "an" if defn.type == "int" else "a"
        raise ValueError(f"Invalid value {value!r} for configuration {defn.name}: expected {article} {defn.type}"
                         ) from None
    if defn.valid_values is not None:
        items = out.split(",") if defn.type == "list" else [out]
        bad = [v for v in items if v not in defn.valid_values]
        if bad:
            raise ValueError(f"Invalid value {value!r} for configuration {defn.name}: "
                             f"must be one of {', '.join(defn.valid_values)}")
    if defn.validator is not None and not defn.validator(out):
        rule = getattr(defn.validator, "rule", None)
        raise ValueError(f"Invalid value {value!r} for configuration {defn.name}" + (f": {rule}" if rule else ""))
    return out


def to_string(value: Any) -> str | None:
    """How Kafka prints a config value (DescribeConfigs): booleans lower case."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class ConfigSynonym:
    """One place a config's value could come from, most specific first (DescribeConfigs v1+)."""
    name: str
    value: str | None
    source: ConfigSource


@dataclass
class ConfigDescription:
    """What DescribeConfigs (and ``kafka-configs --describe``) says about one config."""
    name: str
    value: str | None
    source: ConfigSource
    synonyms: list[ConfigSynonym]
    read_only: bool
    definition: ConfigDef

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


class ConfigValues(Protocol):
    """What the log layer reads from the broker's configs (``BrokerConfig`` is one): a value by name."""

    def __getitem__(self, name: str) -> Any: ...


class TopicDefaults(Protocol):
    """Where a ``LogConfig`` finds the broker-wide defaults of its topic configs (``BrokerConfig`` is one)."""

    def topic_default(self, topic_config: str) -> Any: ...

    def synonyms(self, names) -> list[ConfigSynonym]: ...


class LogConfig:
    """One topic's effective configs: its overrides over the broker defaults.

    ``overrides`` can change at runtime (AlterConfigs); readers always ask
    ``config["segment.bytes"]``, so a change takes effect at the next use.
    """

    def __init__(self, broker: TopicDefaults, overrides: dict[str, Any] | None = None):
        self.broker = broker
        self.overrides: dict[str, Any] = {}
        for name, value in (overrides or {}).items():
            self.set(name, value)

    @staticmethod
    def validate(name: str, value: Any) -> Any:
        defn = ALL_TOPIC_CONFIGS.get(name)
        if defn is None:
            raise ValueError(f"Unknown topic config name: {name}")
        return parse(defn, value)

    @staticmethod
    def validate_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
        """Parse a whole set of topic overrides; ValueError names the first bad config.

        Besides each value on its own, Kafka checks that the set makes sense together
        (``LogConfig.validate``): ``min.compaction.lag.ms`` may not exceed ``max.compaction.lag.ms``.
        """
        parsed = {name: LogConfig.validate(name, value) for name, value in overrides.items()}
        lo = parsed.get("min.compaction.lag.ms", TOPIC_CONFIGS["min.compaction.lag.ms"].default)
        hi = parsed.get("max.compaction.lag.ms", TOPIC_CONFIGS["max.compaction.lag.ms"].default)
        if lo > hi:
            raise ValueError(f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                             f"max.compaction.lag.ms ({hi})")
        return parsed

    def replace(self, overrides: dict[str, Any]) -> None:
        """Swap in a new set of overrides, in place: every holder of this object
        (the topic's ``UnifiedLog`` s) sees the change at its next read."""
        parsed = self.validate_overrides(overrides)
        self.overrides.clear()
        self.overrides.update(parsed)

    def describe(self, name: str) -> ConfigDescription:
        """A topic config as DescribeConfigs shows it: the topic's override if it has one
        (DYNAMIC_TOPIC_CONFIG), else the broker's static setting of a synonym
        (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG)."""
        synonyms = []
        if name in self.overrides:
            synonyms.append(ConfigSynonym(name, to_string(self.overrides[name]), ConfigSource.DYNAMIC_TOPIC_CONFIG))
        synonyms += self.broker.synonyms([b for b, _ in TOPIC_CONFIG_SYNONYMS.get(name, ())])
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        return ConfigDescription(name, to_string(self[name]), source, synonyms, False, ALL_TOPIC_CONFIGS[name])

    def set(self, name: str, value: Any) -> None:
        self.overrides[name] = self.validate(name, value)

    def __getitem__(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        return self.broker.topic_default(name)

    @property
    def compact(self) -> bool:
        return "compact" in self["cleanup.policy"].split(",")

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self["cleanup.policy"].split(",")
