"""``records_frame``: consumed records as a pandas DataFrame, whichever client read them.

confluent-kafka hands out ``Message`` objects (``msg.offset()``, ``msg.key()``
...), kafka-python ``ConsumerRecord`` tuples (``rec.offset``, ``rec.key`` ...).
Both carry the same fields because both decode the same RecordBatch bytes
from the broker, so one table shape fits both.
"""
from __future__ import annotations

import pandas as pd

COLUMNS = ["topic", "partition", "offset", "key", "value", "timestamp", "headers"]


def _text(value, decode: bool):
    if decode and isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value)
    return value


def _headers(headers, decode: bool):
    pairs = [(k, _text(v, decode)) for k, v in (headers or [])]
    keys = [k for k, _ in pairs]
    # A dict reads best; a header key may repeat though (Kafka allows it), then keep the pairs.
    return dict(pairs) if len(set(keys)) == len(keys) else pairs


def _fields(record) -> tuple:
    if callable(getattr(record, "offset", None)):  # confluent_kafka.Message
        if record.error() is not None:
            raise ValueError(f"not a record but an error event: {record.error()}")
        _ts_type, ts = record.timestamp()
        return (record.topic(), record.partition(), record.offset(), record.key(), record.value(), ts,
                record.headers())
    # kafka-python ConsumerRecord (a namedtuple)
    return (record.topic, record.partition, record.offset, record.key, record.value, record.timestamp,
            record.headers)


def records_frame(records, decode: bool = True) -> pd.DataFrame:
    """One row per record: topic, partition, offset, key, value, timestamp (UTC), headers.

    ``decode=True`` shows UTF-8 keys, values and header values as text
    (bytes that are not UTF-8 stay bytes); ``decode=False`` keeps the raw
    bytes the broker stored. Rows keep the order they were read in.
    """
    rows = []
    for record in records:
        topic, partition, offset, key, value, ts, headers = _fields(record)
        rows.append({
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "key": _text(key, decode),
            "value": _text(value, decode),
            "timestamp": pd.to_datetime(ts, unit="ms", utc=True) if ts is not None and ts >= 0 else pd.NaT,
            "headers": _headers(headers, decode),
        })
    # object columns keep a missing key as None (a str column would turn it into NaN) and bytes as bytes
    frame = pd.DataFrame(rows, columns=COLUMNS, dtype=object)
    frame["partition"] = frame["partition"].astype("int64")
    frame["offset"] = frame["offset"].astype("int64")
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    return frame
