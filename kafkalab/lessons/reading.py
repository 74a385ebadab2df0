"""Reading a topic back: what a consumer gets, for a lesson to count, compare and assert on.

Three ways to read, each with its own notion of "everything":

* :func:`read_values` — one partition from its log start offset up to its **high watermark**
  (the end a consumer may read: records every ISR member has). Lesson 03 compares what survives
  a failover with what the producer was told was written.
* :func:`read_all` — every partition of a topic from offset 0, values **in the order one consumer
  receives them**, until ``count`` records came. Lesson 01 shows that order holds per partition only.
* :func:`read_to_end` — one partition at an ``isolation.level``: ``read_uncommitted`` up to the high
  watermark, ``read_committed`` up to the **last stable offset** (LSO) once the transaction markers
  are written. Lesson 07 counts duplicates after SIGKILLed transactions.

Each function takes ``kafka``, the lesson's :class:`~kafkalab.lab.LabKafka` (anything with
``client_config(**overrides)``), or a ``bootstrap.servers`` string. The consumers are assigned
their partitions (no group membership, nothing committed) and closed before returning.
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition

from ..broker.mini import config_name


def client_config(kafka, **overrides) -> dict:
    """``kafka.client_config(**overrides)``, or the same dict built from a ``bootstrap.servers`` string."""
    if isinstance(kafka, str):
        config = {"bootstrap.servers": kafka}
        config.update({config_name(k): v for k, v in overrides.items()})
        return config
    return kafka.client_config(**overrides)


# What a ListOffsets may answer for a while after a leader change, as Kafka itself does: the broker asked is no longer
# the leader (the client's metadata was older than the change), or the new leader's high watermark has not caught up
RETRIABLE_OFFSETS_ERRORS = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                            KafkaError.OFFSET_NOT_AVAILABLE)


def watermark_offsets(consumer: Consumer, topic: str, partition: int, timeout_s: float = 20.0,
                      cached: bool = False) -> tuple[int, int]:
    """``consumer.get_watermark_offsets()`` — (log start offset, high watermark) — asked again after a retriable
    error for up to ``timeout_s``, as a client's own offset lookups do: librdkafka hands a NOT_LEADER_OR_FOLLOWER
    of a ListOffsets to the caller, which, right after a failover or a preferred leader election, can meet
    a broker that has just stopped leading the partition."""
    asked = time.monotonic()
    while True:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s, cached=cached)
        except KafkaException as exc:
            err = exc.args[0]
            retriable = err.retriable() or err.code() in RETRIABLE_OFFSETS_ERRORS
            if err.code() == KafkaError._UNKNOWN_PARTITION:
                retriable = _leaderless(consumer, topic, partition)
            if not retriable or time.monotonic() - asked > timeout_s:
                raise
            time.sleep(0.2)


def _leaderless(consumer: Consumer, topic: str, partition: int) -> bool:
    """Whether ``partition`` exists but has no leader in fresh metadata (asked now, which also refreshes the client's
    cache). librdkafka answers a watermark query with _UNKNOWN_PARTITION when its cached metadata shows the partition
    with leader -1, as a broker reports it between a leader's death and the next election reaching its metadata cache,
    and it would not ask again by itself; a partition that really does not exist is not retried."""
    try:
        found = consumer.list_topics(topic, timeout=5).topics.get(topic)
    except KafkaException:
        return True  # no broker answered yet: a failover, not a missing partition
    if found is None:
        return False
    if found.error is not None:  # the topic itself without partitions yet, as a broker answers before its cache has it
        return found.error.code() == KafkaError.LEADER_NOT_AVAILABLE
    return partition in found.partitions


def _consumer(kafka, logger=None, **overrides) -> Consumer:
    config = client_config(kafka, enable_auto_commit=False, **overrides)
    return Consumer(config, logger=logger) if logger is not None else Consumer(config)


def read_values(kafka, topic: str, partition: int = 0, group_id: str = "kafkalab-lesson-reader",
                timeout_s: float = 30.0, logger=None) -> list[str]:
    """Every value (decoded) of ``topic``'s ``partition``, from its log start offset to its high watermark.

    The watermarks are asked once, first: records written meanwhile are not waited for. ``logger``:
    a Python logger for librdkafka's own log lines (a lesson that kills brokers keeps them out of its cells).
    """
    consumer = _consumer(kafka, logger, group_id=group_id)
    try:
        low, high = watermark_offsets(consumer, topic, partition, 20)
        consumer.assign([TopicPartition(topic, partition, low)])
        values, deadline = [], time.monotonic() + timeout_s
        while low + len(values) < high and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                values.append(msg.value().decode())
        return values
    finally:
        consumer.close()


def read_all(kafka, topic: str, partitions: int, count: int, group_id: str = "kafkalab-lesson-reader",
             timeout_s: float = 15.0) -> list[tuple[str, int]]:
    """``(value, partition)`` of the records of all ``partitions`` of ``topic``, in the order one consumer gets them.

    Reads from offset 0 of each partition until ``count`` records came or ``timeout_s`` passed
    (then fewer come back: a lesson asserts on the count).
    """
    consumer = _consumer(kafka, group_id=group_id)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got, deadline = [], time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.value().decode(), msg.partition()))
        return got
    finally:
        consumer.close()


def stable_end(kafka, topic: str, partition: int = 0, timeout_s: float = 10.0) -> int:
    """The end a ``read_committed`` reader may read to (the LSO), once it has caught up with the high watermark.

    As on Kafka, ``commit_transaction()`` returns before the COMMIT markers are written, and the LSO
    follows them: ListOffsets at both isolation levels is asked until they agree, or ``timeout_s``
    passed (then the LSO as it is: a transaction is still open).
    """
    from confluent_kafka.admin import AdminClient, OffsetSpec

    # warnings and errors only: librdkafka's informational lines (a background queue purged on destroy) would
    # otherwise show up in the lesson's cell
    admin = AdminClient({**client_config(kafka), "log_level": 4})
    tp, deadline = TopicPartition(topic, partition), time.monotonic() + timeout_s
    try:
        while True:
            high, lso = ([*admin.list_offsets({tp: OffsetSpec.latest()}, isolation_level=level).values()][0]
                         .result(10).offset
                         for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED))
            if lso == high or time.monotonic() > deadline:
                return lso
            time.sleep(0.02)
    finally:
        del admin


def read_to_end(kafka, topic: str, isolation_level: str, partition: int = 0, group_id: str | None = None,
                timeout_s: float = 30.0) -> list[str]:
    """Every value of ``topic``'s ``partition`` that a consumer at ``isolation_level`` returns, from offset 0.

    ``read_uncommitted`` reads up to the high watermark (records of aborted and open transactions
    included); ``read_committed`` up to :func:`stable_end`, and librdkafka drops the aborted records.
    The last offset before the end may be a transaction marker, which no consumer returns: the read
    stops once the consumer's position has passed it.
    """
    reader = _consumer(kafka, group_id=group_id or f"kafkalab-lesson-{isolation_level}",
                       isolation_level=isolation_level, fetch_wait_max_ms=50)
    try:
        reader.assign([TopicPartition(topic, partition, 0)])
        end = (stable_end(kafka, topic, partition) if isolation_level == "read_committed"
               else watermark_offsets(reader, topic, partition, 10)[1])
        values, position, deadline = [], -1, time.monotonic() + timeout_s   # position: the last offset returned
        while position < end - 1 and time.monotonic() < deadline:     # the last offset is a marker or a record
            batch = reader.consume(1000, timeout=0.5)
            values += [m.value().decode() for m in batch if m.error() is None]
            position = max([position] + [m.offset() for m in batch if m.error() is None])
            if not batch and reader.position([TopicPartition(topic, partition)])[0].offset >= end:
                break
        return values
    finally:
        reader.close()
