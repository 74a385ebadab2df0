"""Kafka's on-disk formats written out from the specification, independently of kafkalab's code.

Used as byte-exact fixtures: message format v2 record batches (Kafka protocol
guide, "Record Batch"), the ``.index`` entry (int32 relativeOffset, int32
position) and the ``.timeindex`` entry (int64 timestamp, int32 relativeOffset),
all big-endian.
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


def record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = bytes([0]) + zigzag_varint(timestamp_delta) + zigzag_varint(offset_delta)
    body += zigzag_varint(-1) if key is None else zigzag_varint(len(key)) + key
    body += zigzag_varint(-1) if value is None else zigzag_varint(len(value)) + value
    body += zigzag_varint(0)  # no headers
    return zigzag_varint(len(body)) + body


def batch(base_offset: int, records: list[tuple[int, bytes | None, bytes | None]], *, producer_id: int = -1,
          producer_epoch: int = -1, base_sequence: int = -1, leader_epoch: int = 0, attributes: int = 0,
          base_timestamp: int | None = None) -> bytes:
    """records: (timestamp, key, value). Uncompressed, CreateTime."""
    base_ts = min(r[0] for r in records) if base_timestamp is None else base_timestamp
    payload = b"".join(record(i, ts - base_ts, k, v) for i, (ts, k, v) in enumerate(records))
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, base_ts, max(r[0] for r in records),
                            producer_id, producer_epoch, base_sequence, len(records)) + payload
    crc = crc32c.crc32c(after_crc)
    after_length = struct.pack(">ibI", leader_epoch, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def index_entry(relative_offset: int, position: int) -> bytes:
    return struct.pack(">ii", relative_offset, position)


def time_index_entry(timestamp: int, relative_offset: int) -> bytes:
    return struct.pack(">qi", timestamp, relative_offset)
