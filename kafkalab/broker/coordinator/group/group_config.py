"""``GroupConfig``: a group's own configs, set with IncrementalAlterConfigs on a GROUP resource (Kafka 4.x's
``org.apache.kafka.coordinator.group.GroupConfig``, KIP-848 and KIP-932).

A group config overrides, for one group, the broker config of the same name with a ``group.`` prefix:
``share.record.lock.duration.ms`` overrides ``group.share.record.lock.duration.ms``. Kafka checks a new set in
three steps, and so does this module (:func:`validate`), with Kafka's messages:

1. every name is a group config ("Unknown group config name: x");
2. every value parses and passes the config's own check ("Invalid value 1 for configuration
   share.delivery.count.limit: Value must be at least 2");
3. a value bounded by the broker lies within the broker's ``min``/``max`` configs ("share.session.timeout.ms must
   be in the range 45000 to 60000 inclusive."): ``group.share.min.session.timeout.ms`` and its siblings
   (:data:`BOUND_CONFIGS`, Kafka 4.4's defaults), which a lab lowers to use short timings.

Served here, each read where the behaviour it sets is decided: ``consumer.session.timeout.ms`` and
``consumer.heartbeat.interval.ms`` (a KIP-848 consumer group's members), ``share.session.timeout.ms``,
``share.heartbeat.interval.ms``, ``share.record.lock.duration.ms``, ``share.delivery.count.limit``,
``share.partition.max.record.locks``, ``share.auto.offset.reset`` (``earliest``, ``latest`` or
``by_duration:<ISO-8601 duration>``) and ``share.isolation.level`` (``read_uncommitted`` only: the mini broker's
share groups do not read committed-only; ``read_committed`` is refused, saying so). Kafka 4.4 also has the
``streams.*`` configs (KIP-1071), ``consumer.``/``share.assignment.interval.ms``, ``share.renew.acknowledge.enable``
and ``errors.deadletterqueue.*`` (KIP-1191): not served here, so "Unknown group config name".

Measured against Kafka 4.4.0 (a combined KRaft node, confluent-kafka's AdminClient): each message above is
Kafka's, word for word.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from ...common.errors import ErrorCode, KafkaError

#: the broker configs that bound a group's override, with Kafka 4.4's defaults
BOUND_CONFIGS: dict[str, int] = {
    "group.consumer.min.session.timeout.ms": 45000, "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.min.heartbeat.interval.ms": 5000, "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.share.min.session.timeout.ms": 45000, "group.share.max.session.timeout.ms": 60000,
    "group.share.min.heartbeat.interval.ms": 5000, "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.min.record.lock.duration.ms": 15000, "group.share.max.record.lock.duration.ms": 60000,
    "group.share.min.delivery.count.limit": 2, "group.share.max.delivery.count.limit": 10,
    "group.share.min.partition.max.record.locks": 100, "group.share.max.partition.max.record.locks": 4000,
}

_ISO_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_duration_ms(text: str) -> int | None:
    """``PnDTnHnMn.nS`` (Java's ``Duration.parse``, days at most, no negative parts) in ms; None if it is not one."""
    m = _ISO_DURATION.match(text.upper())
    if m is None or text.upper() in ("P", "PT") or text.upper().endswith("T"):
        return None
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def _auto_offset_reset(value: str) -> str | None:
    if value in ("earliest", "latest"):
        return None
    if value.startswith("by_duration:") and parse_duration_ms(value[len("by_duration:"):]) is not None:
        return None
    return (f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either 'earliest', "
            "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


def _isolation_level(value: str) -> str | None:
    if value not in ("read_committed", "read_uncommitted"):
        return "String must be one of: read_committed, read_uncommitted"
    return None


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    type: str                         # "int" or "string"
    broker_config: str | None         # the broker config it overrides (its default); None: ``default``
    default: str | None = None
    at_least: int | None = None
    #: (min broker config, max broker config): the range the broker allows
    bounds: tuple[str, str] | None = None
    #: a string's check: None if fine, else the reason (after "Invalid value v for configuration n: ")
    check: Callable[[str], str | None] | None = None


def _int(name: str, at_least: int) -> GroupConfigDef:
    """An int group config: it overrides the broker config ``group.<name>``, bounded by ``group.<kind>.min.<rest>``
    and ``group.<kind>.max.<rest>`` (``share.session.timeout.ms``: ``group.share.min.session.timeout.ms``)."""
    kind, rest = name.split(".", 1)
    return GroupConfigDef(name, "int", f"group.{name}", at_least=at_least,
                          bounds=(f"group.{kind}.min.{rest}", f"group.{kind}.max.{rest}"))


GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in [
    _int("consumer.session.timeout.ms", 1),
    _int("consumer.heartbeat.interval.ms", 1),
    _int("share.session.timeout.ms", 1),
    _int("share.heartbeat.interval.ms", 1),
    _int("share.record.lock.duration.ms", 1000),
    _int("share.delivery.count.limit", 2),
    _int("share.partition.max.record.locks", 100),
    GroupConfigDef("share.auto.offset.reset", "string", None, "latest", check=_auto_offset_reset),
    GroupConfigDef("share.isolation.level", "string", None, "read_uncommitted", check=_isolation_level),
]}


def _invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, message)


def validate(new: Mapping[str, str | None], bounds: Mapping[str, int]) -> dict[str, object]:
    """Kafka's ``GroupConfig.validate`` of a group's whole new override set (names, values, then the broker's
    bounds, each in ``bounds`` or else :data:`BOUND_CONFIGS`); the parsed values. KafkaError INVALID_CONFIG."""
    for name in new:
        if name not in GROUP_CONFIGS:
            raise _invalid(f"Unknown group config name: {name}")
    parsed: dict[str, object] = {}
    for name, value in new.items():
        d = GROUP_CONFIGS[name]
        text = "" if value is None else str(value).strip()
        if d.type == "int":
            try:
                number = int(text)
            except ValueError:
                raise _invalid(f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
            if d.at_least is not None and number < d.at_least:
                raise _invalid(f"Invalid value {number} for configuration {name}: Value must be at least {d.at_least}")
            parsed[name] = number
        else:
            reason = d.check(text) if d.check else None
            if reason is not None:
                raise _invalid(f"Invalid value {value} for configuration {name}: {reason}")
            parsed[name] = text
    for name, value in parsed.items():
        d = GROUP_CONFIGS[name]
        if d.bounds is not None:
            low, high = (bounds.get(b, BOUND_CONFIGS[b]) for b in d.bounds)
            if not low <= value <= high:
                raise _invalid(f"{name} must be in the range {low} to {high} inclusive.")
    if parsed.get("share.isolation.level") == "read_committed":
        raise _invalid("share.isolation.level read_committed is not served by the mini broker: its share groups "
                       "read every record up to the high watermark (Kafka 4.x serves it; docs/differences.md)")
    return parsed


def group_config_value(overrides: Mapping[str, str], name: str, broker_config: Mapping[str, object]):
    """A group's effective value of ``name``: its override, else the broker's config, else the built-in default."""
    d = GROUP_CONFIGS[name]
    if name in overrides:
        return int(overrides[name]) if d.type == "int" else overrides[name]
    return broker_config[d.broker_config] if d.broker_config else d.default


def group_config_of(broker, group_id: str, name: str):
    """The effective group config ``name`` of ``group_id`` on ``broker`` (the KafkaBroker contract): the group's
    override (kept by its SharePartitionManager), else the broker config."""
    manager = broker.share_partition_manager
    overrides = manager.group_configs.get(group_id, {}) if manager is not None else {}
    return group_config_value(overrides, name, broker.config)
