"""Which partitions a query reads and at which offsets: Spark's ``KafkaOffsetReader``, on librdkafka.

Spark's Kafka source plans every batch on the driver: it asks Kafka which
partitions the subscribed topics have now, and the earliest and latest
offsets of each (ListOffsets; the *low* and *high watermarks*), or the
first offset at or after a timestamp (ListOffsets with a timestamp, KIP-79).
The executors then read exactly those offset ranges. This module is that
driver-side part: one confluent-kafka ``Consumer`` used only for metadata
and ListOffsets (it never joins a group or commits).

A request that fails — typically a ListOffsets sent to a partition leader
that has just died, which the client keeps waiting for — is tried again, as
Spark's reader does: ``fetchOffset.numRetries`` attempts in all (3),
``fetchOffset.retryIntervalMs`` apart (1 s), each with a new consumer, which
starts from fresh metadata and so finds the partition's new leader. Only
when every attempt failed does the query fail.

Offsets are kept as Spark writes them into a query's checkpoint:
``{"topic": {"0": 42, "1": 17}}`` (partition numbers as strings, JSON).
"""
from __future__ import annotations

import time

from .options import EARLIEST, LATEST, KafkaOptionError

METADATA_TIMEOUT_S = 15.0


class KafkaUnreachableError(ConnectionError):
    """The brokers named by ``kafka.bootstrap.servers`` did not answer."""


def consumer_config(options, **extra) -> dict:
    """A librdkafka consumer config from the source's options (``kafka.*`` wins over our defaults)."""
    config = {
        "group.id": options.group_id,
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "log_level": 0,              # errors arrive as exceptions; no connection chatter on stderr
        "fetch.queue.backoff.ms": 10,   # librdkafka otherwise naps 1 s when its queue is full
        **extra,
    }
    config.update(options.config)
    return config


def _unreachable(options, detail):
    return KafkaUnreachableError(
        f"could not reach Kafka at kafka.bootstrap.servers={options.config['bootstrap.servers']!r} ({detail}): "
        f"is the broker running, and is this host:port list the one it advertises?")


class KafkaOffsetReader:
    """Partitions and offsets for one query (lives on the driver)."""

    def __init__(self, options):
        self.options = options
        self.timeout = min(METADATA_TIMEOUT_S, options.poll_timeout_ms / 1000)
        self.consumer = None
        self._new_consumer()

    def _new_consumer(self):
        from confluent_kafka import Consumer, KafkaException

        self.close()
        try:
            self.consumer = Consumer(consumer_config(self.options, error_cb=lambda err: None))
        except KafkaException as exc:
            raise KafkaOptionError(f"the Kafka client refused a kafka.* option: {exc.args[0].str()}") from None

    def close(self):
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None

    def _with_retries(self, request):
        """``request()``, tried ``fetchOffset.numRetries`` times in all; a new consumer after each failure."""
        from confluent_kafka import KafkaException

        for attempt in range(1, self.options.fetch_offset_attempts + 1):
            try:
                return request()
            except KafkaException:
                if attempt == self.options.fetch_offset_attempts:
                    raise
                time.sleep(self.options.fetch_offset_interval_ms / 1000)
                self._new_consumer()

    # -- which partitions -------------------------------------------------------------------------
    def topic_partitions(self) -> list[tuple[str, int]]:
        """The (topic, partition) pairs the query reads now: new partitions and topics show up here."""
        from confluent_kafka import KafkaException

        try:
            metadata = self._with_retries(lambda: self.consumer.list_topics(timeout=self.timeout))
        except KafkaException as exc:
            raise _unreachable(self.options, exc.args[0].str()) from None
        if self.options.strategy == "assign":
            wanted = [(t, p) for t, parts in self.options.assigned.items() for p in parts]
            for topic, partition in wanted:
                if topic not in metadata.topics or partition not in metadata.topics[topic].partitions:
                    raise KafkaOptionError(f"option 'assign' names {topic}-{partition}, which does not exist")
            return wanted
        return sorted((name, p) for name, topic in metadata.topics.items()
                      if self.options.topic_matches(name) and topic.error is None for p in topic.partitions)

    # -- offsets ----------------------------------------------------------------------------------
    def watermarks(self, topic_partitions) -> dict:
        """{(topic, partition): (low, high)} — the log start offset and the high watermark."""
        from confluent_kafka import KafkaException, TopicPartition

        result = {}
        for topic, partition in topic_partitions:
            try:
                result[(topic, partition)] = self._with_retries(lambda: self.consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=self.timeout))
            except KafkaException as exc:
                raise _unreachable(self.options, f"ListOffsets for {topic}-{partition}: {exc.args[0].str()}") \
                    from None
        return result

    def offsets_for_timestamp(self, topic_partitions, timestamp_ms) -> dict:
        """{(topic, partition): first offset whose timestamp is >= timestamp_ms, or None if there is none}."""
        from confluent_kafka import TopicPartition

        found = self._with_retries(lambda: self.consumer.offsets_for_times(
            [TopicPartition(t, p, timestamp_ms) for t, p in topic_partitions], timeout=self.timeout))
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in found}

    def resolve(self, spec, topic_partitions, name, timestamp=None, ending=False) -> dict:
        """Concrete offsets for 'earliest' / 'latest' / per-partition JSON / a timestamp."""
        marks = self.watermarks(topic_partitions)
        if timestamp is not None:
            found = self.offsets_for_timestamp(topic_partitions, timestamp)
            offsets = {}
            for tp in topic_partitions:
                if found[tp] is not None:
                    offsets[tp] = found[tp]
                elif ending or self.options.timestamp_strategy == "latest":
                    offsets[tp] = marks[tp][1]
                else:
                    raise KafkaOptionError(
                        f"no record in {tp[0]}-{tp[1]} has a timestamp at or after {name}={timestamp}; set the "
                        f"option startingOffsetsByTimestampStrategy to 'latest' to start at the end instead")
            return offsets
        if spec in ("earliest", "latest"):
            return {tp: marks[tp][0 if spec == "earliest" else 1] for tp in topic_partitions}
        offsets = {}
        for topic, partition in topic_partitions:
            if partition not in spec.get(topic, {}):
                raise KafkaOptionError(f"option '{name}' gives offsets per partition but not for {topic}-{partition}: "
                                       f"name every partition of the topics read ({name}={_to_json(spec)})")
            value = spec[topic][partition]
            offsets[(topic, partition)] = marks[(topic, partition)][0] if value == EARLIEST else \
                marks[(topic, partition)][1] if value == LATEST else value
        return offsets


def _to_json(spec):
    import json
    return json.dumps({t: {str(p): o for p, o in parts.items()} for t, parts in spec.items()})


def to_spark(offsets: dict) -> dict:
    """{(topic, partition): offset} -> {"topic": {"partition": offset}}, the checkpoint's form."""
    result: dict = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def from_spark(offsets: dict) -> dict:
    """{"topic": {"partition": offset}} -> {(topic, partition): offset}."""
    return {(topic, int(p)): int(o) for topic, parts in (offsets or {}).items() for p, o in parts.items()}
