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


def offset_records(bootstrap_servers: str, topic: str, partitions: int, timeout: float = 20.0) -> list[dict]:
    """Every record of the offsets topic, in partition and offset order, decoded: ``connector``,
    ``partition`` (the source partition), ``offset`` (the source offset, None for a tombstone) and where
    it sits (``topic_partition``, ``kafka_offset``, ``timestamp``)."""
    from ..checks import read_partition   # pandas: only when asked
    rows = []
    for p in range(partitions):
        for m in read_partition(bootstrap_servers, topic, p, timeout=timeout):
            try:
                key = json.loads(m.key()) if m.key() is not None else None
                connector, source_partition = key
            except (TypeError, ValueError):
                continue   # not Connect's [connector, partition] key (written by something else)
            value = json.loads(m.value()) if m.value() is not None else None
            rows.append({"connector": connector, "partition": source_partition, "offset": value,
                         "topic_partition": p, "kafka_offset": m.offset(), "timestamp": m.timestamp()[1]})
    return rows


def latest_offsets(rows: list[dict], connector: str | None = None) -> list[dict]:
    """The last offset written for each (connector, source partition): what a restarted task resumes from."""
    latest: dict[tuple, dict] = {}
    for row in rows:
        if connector is None or row["connector"] == connector:
            latest[(row["connector"], json.dumps(row["partition"], sort_keys=True))] = row
    return [row for row in latest.values() if row["offset"] is not None]
