"""Source connectors' offsets, read straight from the worker group's offsets topic (``offset.storage.topic``).

A source task says where it is with each record it returns: a *source partition* (for
``FileStreamSourceConnector``, ``{"filename": ...}``) and a *source offset* (``{"position": <bytes read>}``).
Every ``offset.flush.interval.ms`` the worker writes the latest of each to the offsets topic
(``KafkaOffsetBackingStore``, a compacted topic): the key is the JSON array ``[connector, source partition]``,
the value the JSON source offset (a tombstone, ``null``, once KIP-875's ``DELETE /connectors/{name}/offsets``
reset it). A task that starts again, on this worker or on another, resumes from the last offset written: what
it returned after that is read and sent again, Connect's at-least-once delivery.
"""
from __future__ import annotations

import json
import time


def read_to_end(bootstrap_servers: str, topic: str, isolation_level: str = "read_committed",
                timeout: float = 20.0) -> list:
    """Every record of every partition of ``topic``, up to each partition's end as ``isolation_level`` sees it
    (``read_committed``: the last stable offset, as Connect itself reads its offsets topic in exactly-once mode).

    The end is the consumer's end-of-partition event, not the last record's offset: a topic written in
    transactions ends with a commit marker, a control record no consumer returns."""
    import uuid

    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"kafkalab-read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": isolation_level, "log_level": 3})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(partitions)])
        records, at_end, deadline = [], set(), time.monotonic() + timeout
        while len(at_end) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: partitions {sorted(set(partitions) - at_end)} not read to their end "
                                   f"in {timeout:.0f} s")
            for m in consumer.consume(500, timeout=0.2):
                if m.error() is None:
                    records.append(m)
                elif m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
        return sorted(records, key=lambda m: (m.partition(), m.offset()))
    finally:
        consumer.close()


def offset_records(bootstrap_servers: str, topic: str, timeout: float = 20.0) -> list[dict]:
    """Every record of the offsets topic, in partition and offset order, decoded: ``connector``,
    ``partition`` (the source partition), ``offset`` (the source offset, None for a tombstone) and where
    it sits (``topic_partition``, ``kafka_offset``, ``timestamp``). Committed records only (read_committed)."""
    rows = []
    for m in read_to_end(bootstrap_servers, topic, timeout=timeout):
        try:
            key = json.loads(m.key()) if m.key() is not None else None
            connector, source_partition = key
        except (TypeError, ValueError):
            continue   # not Connect's [connector, partition] key (written by something else)
        value = json.loads(m.value()) if m.value() is not None else None
        rows.append({"connector": connector, "partition": source_partition, "offset": value,
                     "topic_partition": m.partition(), "kafka_offset": m.offset(), "timestamp": m.timestamp()[1]})
    return rows


def latest_offsets(rows: list[dict], connector: str | None = None) -> list[dict]:
    """The last offset written for each (connector, source partition): what a restarted task resumes from."""
    latest: dict[tuple, dict] = {}
    for row in rows:
        if connector is None or row["connector"] == connector:
            latest[(row["connector"], json.dumps(row["partition"], sort_keys=True))] = row
    return [row for row in latest.values() if row["offset"] is not None]
