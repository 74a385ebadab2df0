"""The options of Spark's Kafka source and sink, parsed and checked the way Spark does.

Spark's built-in Kafka integration (``spark-sql-kafka-0-10``, class
``KafkaSourceProvider``) takes its options as strings: which topics
(``subscribe``, ``subscribePattern`` or ``assign``: exactly one), where to
start and stop (``startingOffsets`` / ``endingOffsets`` as ``earliest``,
``latest`` or JSON such as ``{"topic": {"0": 23, "1": -2}}``, where -2 means
earliest and -1 latest; or ``startingTimestamp`` / ``endingTimestamp`` in
ms), how much per micro-batch (``maxOffsetsPerTrigger``), what to do when
data was deleted before it was read (``failOnDataLoss``), and every
``kafka.*`` option handed to the Kafka client with the prefix removed.

kafkalab's source takes the same options, so notebook code is the code a
student writes against production Spark. The client here is librdkafka
(confluent-kafka), not the Java consumer: ``kafka.*`` options are librdkafka
configs, which share most names with the Java client's
(``bootstrap.servers``, ``security.protocol``, ``sasl.mechanism``, ...).
Options Spark forbids because the source manages them itself are refused
with the same reason.
"""
from __future__ import annotations

import json
import re
import uuid

EARLIEST, LATEST = -2, -1
"""The offsets Spark's JSON uses for "the partition's earliest / latest offset"."""

# Kafka client configs the source manages itself (Spark refuses them too, KafkaSourceProvider).
FORBIDDEN = {
    "auto.offset.reset": "set the source option startingOffsets instead",
    "enable.auto.commit": "the source never commits offsets to Kafka; the query's checkpoint holds them",
    "key.deserializer": "keys are always read as binary: cast or decode the key column",
    "value.deserializer": "values are always read as binary: cast or decode the value column",
    "key.serializer": "write a binary or string key column",
    "value.serializer": "write a binary or string value column",
    "interceptor.classes": "not supported",
}

READ_OPTIONS = {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets", "startingtimestamp",
    "endingtimestamp", "startingoffsetsbytimestampstrategy", "maxoffsetspertrigger", "failondataloss",
    "includeheaders", "kafkaconsumer.polltimeoutms", "groupidprefix", "path", "fetchoffset.numretries",
    "fetchoffset.retryintervalms",
}
WRITE_OPTIONS = {"topic", "path", "checkpointlocation", "queryname"}


class KafkaOptionError(ValueError):
    """A source or sink option is missing, unknown or malformed; the message names it and the fix."""


def _get(options, name):
    # Spark passes options case-insensitively (CaseInsensitiveDict); plain dicts in tests work too.
    for key, value in options.items():
        if key.lower() == name.lower():
            return value
    return None


def client_config(options) -> dict:
    """The ``kafka.*`` options with the prefix removed: the Kafka client's config."""
    config = {}
    for key, value in options.items():
        if key.lower().startswith("kafka."):
            name = key[len("kafka."):]
            if name in FORBIDDEN:
                raise KafkaOptionError(f"Kafka option '{key}' is not supported: {FORBIDDEN[name]}")
            config[name] = value
    if not config.get("bootstrap.servers"):
        raise KafkaOptionError("option 'kafka.bootstrap.servers' must be specified for the Kafka source and sink "
                               "(a comma-separated host:port list, e.g. .option(\"kafka.bootstrap.servers\", "
                               "kafka.bootstrap_servers))")
    return config


def _bool(options, name, default):
    value = _get(options, name)
    if value is None:
        return default
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise KafkaOptionError(f"option '{name}' must be 'true' or 'false', got {value!r}")


def _long(options, name):
    value = _get(options, name)
    if value is None:
        return None
    try:
        number = int(str(value))
    except ValueError:
        raise KafkaOptionError(f"option '{name}' must be a whole number, got {value!r}") from None
    return number


class ReadOptions:
    """The source's options, checked: ``ReadOptions(options, streaming=True)``."""

    def __init__(self, options, streaming: bool):
        for key in options:
            if not key.lower().startswith("kafka.") and key.lower() not in READ_OPTIONS:
                raise KafkaOptionError(f"unknown option '{key}' for the Kafka source (known: subscribe, "
                                       f"subscribePattern, assign, startingOffsets, endingOffsets, startingTimestamp, "
                                       f"endingTimestamp, maxOffsetsPerTrigger, failOnDataLoss, includeHeaders, "
                                       f"kafka.*)")
        self.config = client_config(options)
        self.streaming = streaming
        chosen = [name for name in ("subscribe", "subscribePattern", "assign") if _get(options, name)]
        if len(chosen) != 1:
            raise KafkaOptionError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' must be "
                                   f"given, got {chosen or 'none'}")
        self.strategy = chosen[0]
        raw = _get(options, self.strategy)
        if self.strategy == "subscribe":
            self.topics = [t.strip() for t in raw.split(",") if t.strip()]
            if not self.topics:
                raise KafkaOptionError(f"option 'subscribe' names no topic: {raw!r}")
        elif self.strategy == "subscribePattern":
            try:
                self.pattern = re.compile(raw)
            except re.error as exc:
                raise KafkaOptionError(f"option 'subscribePattern' is not a valid regex: {raw!r} ({exc})") from None
        else:
            self.assigned = _partition_json("assign", raw, values=False)
        self.starting = parse_offsets("startingOffsets", _get(options, "startingOffsets")) or \
            ("latest" if streaming else "earliest")
        self.ending = None if streaming else parse_offsets("endingOffsets", _get(options, "endingOffsets")) or "latest"
        if self.starting == "latest" and not streaming:
            raise KafkaOptionError("option 'startingOffsets' cannot be 'latest' for a batch query: use 'earliest' or "
                                   "per-partition JSON")
        if self.ending == "earliest":
            raise KafkaOptionError("option 'endingOffsets' cannot be 'earliest' for a batch query: use 'latest' or "
                                   "per-partition JSON")
        if streaming and _get(options, "endingOffsets") is not None:
            raise KafkaOptionError("option 'endingOffsets' is for batch queries only; a streaming query reads on")
        if isinstance(self.ending, dict) and any(v == EARLIEST for p in self.ending.values() for v in p.values()):
            raise KafkaOptionError("option 'endingOffsets' cannot use -2 (earliest) for a partition")
        self.starting_timestamp = _long(options, "startingTimestamp")
        self.ending_timestamp = None if streaming else _long(options, "endingTimestamp")
        if streaming and _get(options, "endingTimestamp") is not None:
            raise KafkaOptionError("option 'endingTimestamp' is for batch queries only")
        strategy = (_get(options, "startingOffsetsByTimestampStrategy") or "error").lower()
        if strategy not in ("error", "latest"):
            raise KafkaOptionError(f"option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                                   f"got {strategy!r}")
        self.timestamp_strategy = strategy
        self.max_offsets = _long(options, "maxOffsetsPerTrigger")
        if self.max_offsets is not None and self.max_offsets <= 0:
            raise KafkaOptionError(f"option 'maxOffsetsPerTrigger' must be positive, got {self.max_offsets}")
        self.fail_on_data_loss = _bool(options, "failOnDataLoss", True)
        self.include_headers = _bool(options, "includeHeaders", False)
        self.poll_timeout_ms = _long(options, "kafkaConsumer.pollTimeoutMs") or 120_000
        # Spark's KafkaOffsetReader: attempts at fetching offsets, and the pause between them
        retries, interval = _long(options, "fetchOffset.numRetries"), _long(options, "fetchOffset.retryIntervalMs")
        self.fetch_offset_attempts = 3 if retries is None else retries
        self.fetch_offset_interval_ms = 1000 if interval is None else interval
        if self.fetch_offset_attempts < 1 or self.fetch_offset_interval_ms < 0:
            raise KafkaOptionError("option 'fetchOffset.numRetries' must be at least 1 and "
                                   "'fetchOffset.retryIntervalMs' at least 0")
        self.group_id = self.config.pop("group.id", None) or \
            f"{_get(options, 'groupIdPrefix') or 'spark-kafka-source'}-{uuid.uuid4()}"

    def topic_matches(self, topic: str) -> bool:
        if self.strategy == "subscribe":
            return topic in self.topics
        if self.strategy == "subscribePattern":
            return self.pattern.fullmatch(topic) is not None and not topic.startswith("__")
        return topic in self.assigned


def parse_offsets(name, raw):
    """``earliest`` / ``latest`` / per-partition JSON, as Spark's ``startingOffsets`` and ``endingOffsets``."""
    if raw is None:
        return None
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    return _partition_json(name, text, values=True)


def _partition_json(name, raw, values):
    example = '{"topic": {"0": 23, "1": -2}}' if values else '{"topic": [0, 1]}'
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        raise KafkaOptionError(f"option '{name}' is neither 'earliest', 'latest' nor JSON like {example}: {raw!r}") \
            if values else KafkaOptionError(f"option '{name}' must be JSON like {example}: {raw!r}") from None
    if not isinstance(parsed, dict):
        raise KafkaOptionError(f"option '{name}' must be a JSON object like {example}: {raw!r}")
    result = {}
    for topic, partitions in parsed.items():
        if values:
            if not isinstance(partitions, dict):
                raise KafkaOptionError(f"option '{name}': topic {topic!r} must map partition numbers to offsets, "
                                       f"like {example}")
            try:
                result[topic] = {int(p): int(o) for p, o in partitions.items()}
            except (TypeError, ValueError):
                raise KafkaOptionError(f"option '{name}': partitions and offsets must be numbers: {raw!r}") from None
        else:
            if not isinstance(partitions, list) or not all(isinstance(p, int) for p in partitions):
                raise KafkaOptionError(f"option '{name}': topic {topic!r} must map to a list of partition numbers, "
                                       f"like {example}")
            result[topic] = sorted(partitions)
    return result
