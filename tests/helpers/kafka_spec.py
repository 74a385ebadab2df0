"""Kafka's on-disk formats written out from the specification, independently of kafkalab's code.

Used as byte-exact fixtures: message format v2 record batches (Kafka protocol
guide, "Record Batch"), the ``.index`` entry (int32 relativeOffset, int32
position) and the ``.timeindex`` entry (int64 timestamp, int32 relativeOffset),
all big-endian.

Two levels: :func:`batch` builds a whole batch from ``(timestamp, key, value)``
tuples; :func:`records_batch` wraps already encoded :func:`record` bytes in a
batch header with every field given (headers, compression, a delete horizon,
a ``lastOffsetDelta`` that disagrees with the records...).
"""
from __future__ import annotations

import struct

import crc32c


def zigzag_varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varbytes(data: bytes | None) -> bytes:
    """A nullable byte string inside a record: varint length (-1 for null), then the bytes."""
    return zigzag_varint(-1) if data is None else zigzag_varint(len(data)) + data


def record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
           headers: list[tuple[bytes, bytes | None]] = ()) -> bytes:
    body = (bytes([0]) + zigzag_varint(timestamp_delta) + zigzag_varint(offset_delta) + varbytes(key)
            + varbytes(value) + zigzag_varint(len(headers)) + b"".join(varbytes(k) + varbytes(v) for k, v in headers))
    return zigzag_varint(len(body)) + body


def records_batch(base_offset: int, records: list[bytes], *, base_ts: int, max_ts: int | None = None,
                  attributes: int = 0, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                  leader_epoch: int = 0, compress=None, last_offset_delta: int | None = None) -> bytes:
    """A batch around encoded ``records`` (``compress``: a function applied to their bytes)."""
    payload = b"".join(records)
    if compress is not None:
        payload = compress(payload)
    delta = len(records) - 1 if last_offset_delta is None else last_offset_delta
    after_crc = struct.pack(">hiqqqhii", attributes, delta, base_ts, base_ts if max_ts is None else max_ts,
                            producer_id, producer_epoch, base_sequence, len(records)) + payload
    crc = crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", leader_epoch, 2, crc) + after_crc  # partitionLeaderEpoch, magic, crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def batch(base_offset: int, records: list[tuple[int, bytes | None, bytes | None]], *, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1, leader_epoch: int = 0, attributes: int = 0,
          base_timestamp: int | None = None) -> bytes:
    """records: (timestamp, key, value). Uncompressed, CreateTime."""
    base_ts = min(r[0] for r in records) if base_timestamp is None else base_timestamp
    return records_batch(base_offset, [record(i, ts - base_ts, k, v) for i, (ts, k, v) in enumerate(records)],
                         base_ts=base_ts, max_ts=max(r[0] for r in records), attributes=attributes,
                         producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                         leader_epoch=leader_epoch)


def index_entry(relative_offset: int, position: int) -> bytes:
    return struct.pack(">ii", relative_offset, position)


def time_index_entry(timestamp: int, relative_offset: int) -> bytes:
    return struct.pack(">qi", timestamp, relative_offset)
