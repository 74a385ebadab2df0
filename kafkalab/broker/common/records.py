"""Record batches (message format v2, "magic 2", KIP-98).

A producer sends records grouped in *batches*; the broker stores each batch
as it arrived and only rewrites the 61-byte header (the base offset, and for
``LogAppendTime`` topics the timestamp). Layout of a batch header::

    offset  size  field
    0       8     baseOffset            (assigned by the broker)
    8       4     batchLength           (bytes after this field)
    12      4     partitionLeaderEpoch
    16      1     magic                 (2)
    17      4     crc                   CRC-32C of everything from attributes on
    21      2     attributes            bits 0-2 compression, 3 timestamp type,
                                        4 transactional, 5 control, 6 delete horizon
    23      4     lastOffsetDelta
    27      8     baseTimestamp
    35      8     maxTimestamp
    43      8     producerId
    51      2     producerEpoch
    53      4     baseSequence
    57      4     recordsCount
    61      ...   records (compressed together when compression is set)

Each record inside is varint-encoded: length, attributes, timestampDelta,
offsetDelta, key, value, headers. Codecs come from ``cramjam``; CRC-32C from
``crc32c``; varints from kafka-python's ``kafka.record.util``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterator

import cramjam
import crc32c
import numpy
from kafka.record.util import decode_varint, encode_varint

from .errors import ErrorCode, KafkaError

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted in batchLength
_HEADER = struct.Struct(">qiibIhiqqqhii")

COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
COMPRESSION_CODES = {name: code for code, name in COMPRESSION_NAMES.items()}
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
NO_PRODUCER_ID = -1


@dataclass
class BatchHeader:
    """The fixed 61-byte header of one record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @classmethod
    def parse(cls, buf, pos: int = 0) -> "BatchHeader":
        return cls(*_HEADER.unpack_from(buf, pos))

    @property
    def size(self) -> int:
        """Bytes the whole batch takes in the log."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> str:
        return COMPRESSION_NAMES.get(self.attributes & 0x07, "unknown")

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


@dataclass
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


# --- compression -------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"

#: A compressed batch may inflate to at most this many times ``max.message.bytes`` (the log validator
#: refuses a larger one with MESSAGE_TOO_LARGE); where the topic's limit is not at hand (the log
#: cleaner, dump_log) the broker default ``message.max.bytes`` stands in for it.
MAX_INFLATION = 16
DEFAULT_MAX_MESSAGE_BYTES = 1_048_588


class InflationLimitExceeded(KafkaError):
    """A compressed batch that inflates past the broker's bound (a "zip bomb")."""

    def __init__(self, codec: int, limit: int):
        super().__init__(ErrorCode.MESSAGE_TOO_LARGE,
                         f"{COMPRESSION_NAMES[codec]} records inflate past {limit} bytes "
                         f"({MAX_INFLATION} x max.message.bytes)")


def _snappy_into(data: bytes, out) -> int:
    """Kafka's Java client frames snappy the xerial way; librdkafka may send raw blocks.
    A raw block states its inflated length up front, so the bound is checked before inflating."""
    if data[:8] != _XERIAL_MAGIC:
        return _raw_snappy_into(data, out, 0)
    pos, n_out = 16, 0
    while pos < len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise ValueError(f"xerial snappy block of {n} bytes does not fit the data")
        n_out += _raw_snappy_into(data[pos + 4:pos + 4 + n], out, n_out)
        pos += 4 + n
    return n_out


def _raw_snappy_into(block: bytes, out, at: int) -> int:
    need = cramjam.snappy.decompress_raw_len(block)
    if at + need > len(out) - 1:
        raise _Overflow()
    return cramjam.snappy.decompress_raw_into(block, memoryview(out)[at:])


class _Overflow(Exception):
    pass


_DECOMPRESS_INTO = {
    1: cramjam.gzip.decompress_into,
    2: _snappy_into,
    3: cramjam.lz4.decompress_into,
    4: cramjam.zstd.decompress_into,
}
_COMPRESS = {
    1: lambda d: bytes(cramjam.gzip.compress(d)),
    2: lambda d: bytes(cramjam.snappy.compress_raw(d)),
    3: lambda d: bytes(cramjam.lz4.compress(d)),
    4: lambda d: bytes(cramjam.zstd.compress(d)),
}


def decompress(codec: int, data: bytes, limit: int | None = None) -> bytes:
    """The records area of a batch, inflated: at most ``limit`` bytes (default ``MAX_INFLATION`` x
    the larger of the broker default ``message.max.bytes`` and the compressed size), else
    MESSAGE_TOO_LARGE. The codecs write into one buffer of ``limit + 1`` bytes and stop where it
    ends, so a bomb never takes more memory than that, whatever its ratio (the buffer is
    ``numpy.empty``: pages the codec does not reach are never touched)."""
    if codec == 0:
        return bytes(data)
    if codec not in _DECOMPRESS_INTO:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {codec}")
    if limit is None:
        limit = MAX_INFLATION * max(DEFAULT_MAX_MESSAGE_BYTES, len(data))
    out = numpy.empty(limit + 1, dtype=numpy.uint8)
    try:
        n = _DECOMPRESS_INTO[codec](bytes(data), out)
    except _Overflow:
        raise InflationLimitExceeded(codec, limit) from None
    except Exception as exc:   # noqa: BLE001 - cramjam raises its own DecompressionError, whose module varies by codec
        if "whole buffer" in str(exc) or "smaller than" in str(exc):
            raise InflationLimitExceeded(codec, limit) from None
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"cannot decompress {COMPRESSION_NAMES[codec]}: {exc}") from None
    if n > limit:
        raise InflationLimitExceeded(codec, limit)
    return out[:n].tobytes()


def compress(codec: int, data: bytes) -> bytes:
    return data if codec == 0 else _COMPRESS[codec](data)


# --- validation and rewriting (the broker's append path) ---------------------

def compute_crc(batch: bytes | bytearray | memoryview) -> int:
    return crc32c.crc32c(memoryview(batch)[21:])


def iter_batches(buf, strict: bool = True) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in ``buf``.

    With ``strict`` a partial trailing batch raises CORRUPT_MESSAGE (a produce
    request must hold whole batches); without it iteration just stops (a
    fetch response may end in a partial batch, a crashed segment may too).
    """
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < HEADER_SIZE:
            if strict:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "truncated record batch header")
            return
        header = BatchHeader.parse(buf, pos)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > end:
            if strict:
                raise KafkaError(ErrorCode.CORRUPT_MESSAGE,
                                 f"record batch length {header.batch_length} does not fit the data")
            return
        yield pos, header
        pos += header.size


def validate_batch(buf, pos: int, header: BatchHeader) -> None:
    """What Kafka's LogValidator checks before anything is appended."""
    if header.magic != 2:
        raise KafkaError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                         f"record batch magic {header.magic}; this broker speaks magic 2 only")
    if compute_crc(memoryview(buf)[pos:pos + header.size]) != header.crc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "record batch CRC-32C does not match its contents")
    if header.records_count <= 0 or header.last_offset_delta != header.records_count - 1:
        raise KafkaError(ErrorCode.INVALID_RECORD, "record count and lastOffsetDelta disagree")
    if (header.attributes & 0x07) not in COMPRESSION_NAMES:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"compression codec {header.attributes & 7}")


def assign_offsets(batch: bytearray, base_offset: int, log_append_time: int | None = None,
                   partition_leader_epoch: int | None = None) -> None:
    """Stamp the broker-assigned base offset (the leader's epoch, and LogAppendTime) into ``batch`` in place.

    The base offset and partition leader epoch are outside the CRC, so only a
    LogAppendTime rewrite needs a new CRC: Kafka sets the timestamp-type bit
    and maxTimestamp to the broker's clock and leaves the records' own deltas
    untouched.
    """
    struct.pack_into(">q", batch, 0, base_offset)
    if partition_leader_epoch is not None:
        struct.pack_into(">i", batch, 12, partition_leader_epoch)
    if log_append_time is not None:
        (attributes,) = struct.unpack_from(">h", batch, 21)
        struct.pack_into(">h", batch, 21, attributes | TIMESTAMP_TYPE_MASK)
        struct.pack_into(">q", batch, 35, log_append_time)
        struct.pack_into(">I", batch, 17, compute_crc(batch))


# --- reading records ---------------------------------------------------------

def _read_bytes(buf, pos):
    n, pos = decode_varint(buf, pos)
    if n < 0:
        return None, pos
    return bytes(buf[pos:pos + n]), pos + n


def iter_records(batch) -> Iterator[Record]:
    """Decode every record of one batch (decompressing it first)."""
    header = BatchHeader.parse(batch)
    body = decompress(header.attributes & 0x07, memoryview(batch)[HEADER_SIZE:header.size])
    log_append = header.attributes & TIMESTAMP_TYPE_MASK
    pos = 0
    try:
        for _ in range(header.records_count):
            length, pos = decode_varint(body, pos)
            end = pos + length
            pos += 1  # record attributes (unused)
            ts_delta, pos = decode_varint(body, pos)
            offset_delta, pos = decode_varint(body, pos)
            key, pos = _read_bytes(body, pos)
            value, pos = _read_bytes(body, pos)
            n_headers, pos = decode_varint(body, pos)
            headers = []
            for _ in range(n_headers):
                hkey, pos = _read_bytes(body, pos)
                hval, pos = _read_bytes(body, pos)
                headers.append(((hkey or b"").decode("utf-8", "replace"), hval))
            if pos != end:
                raise ValueError("record length does not match its fields")
            timestamp = header.max_timestamp if log_append else header.base_timestamp + ts_delta
            yield Record(header.base_offset + offset_delta, timestamp, key, value, headers)
    except (IndexError, ValueError) as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed record in batch: {exc}") from None


def _encode_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        encode_varint(-1, out.append)
    else:
        encode_varint(len(data), out.append)
        out += data


def build_batch(records: list[Record], *, base_offset: int | None = None, compression: int = 0,
                producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1, base_sequence: int = -1,
                partition_leader_epoch: int = 0, attributes_extra: int = 0,
                last_offset_delta: int | None = None, base_timestamp: int | None = None) -> bytes:
    """Encode ``records`` as one batch; offsets are relative to the first record's.

    Used where the broker itself writes records: the log cleaner's output,
    ``__consumer_offsets``, tests and fixtures.
    """
    if not records:
        raise ValueError("a record batch holds at least one record")
    base = records[0].offset if base_offset is None else base_offset
    # baseTimestamp is the first timestamp, unless the log cleaner stores a delete horizon there (KIP-534)
    base_ts = min(r.timestamp for r in records) if base_timestamp is None else base_timestamp
    body = bytearray()
    for r in records:
        rec = bytearray(b"\x00")
        encode_varint(r.timestamp - base_ts, rec.append)
        encode_varint(r.offset - base, rec.append)
        _encode_bytes(rec, r.key)
        _encode_bytes(rec, r.value)
        encode_varint(len(r.headers), rec.append)
        for hkey, hval in r.headers:
            _encode_bytes(rec, hkey.encode())
            _encode_bytes(rec, hval)
        encode_varint(len(rec), body.append)
        body += rec
    payload = compress(compression, bytes(body))
    delta = records[-1].offset - base if last_offset_delta is None else last_offset_delta
    header = _HEADER.pack(base, HEADER_SIZE - LOG_OVERHEAD + len(payload), partition_leader_epoch, 2, 0,
                          compression | attributes_extra, delta, base_ts,
                          max(r.timestamp for r in records), producer_id, producer_epoch, base_sequence,
                          len(records))
    batch = bytearray(header + payload)
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return bytes(batch)


# --- control records (KIP-98): the transaction markers -------------------------

#: Kafka's ``ControlRecordType``: the type in a control record's key
ABORT, COMMIT = 0, 1
CONTROL_RECORD_TYPES = {ABORT: "ABORT", COMMIT: "COMMIT"}
_CONTROL_KEY = struct.Struct(">hh")     # version 0, type
_MARKER_VALUE = struct.Struct(">hi")    # version 0, coordinator epoch


def build_end_txn_marker(control_type: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                         timestamp: int, partition_leader_epoch: int = 0) -> bytes:
    """Kafka's ``MemoryRecords.withEndTransactionMarker``: one batch, transactional and control, holding
    one record whose key is (version 0, COMMIT or ABORT) and value (version 0, coordinator epoch)."""
    record = Record(0, timestamp, _CONTROL_KEY.pack(0, control_type), _MARKER_VALUE.pack(0, coordinator_epoch), [])
    return build_batch([record], producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=-1,
                       partition_leader_epoch=partition_leader_epoch,
                       attributes_extra=TRANSACTIONAL_MASK | CONTROL_MASK)


def control_record_type(batch) -> int | None:
    """COMMIT or ABORT for a control batch (its first record's key), None if it cannot be read."""
    try:
        record = next(iter_records(batch), None)
    except KafkaError:
        return None
    if record is None or record.key is None or len(record.key) < _CONTROL_KEY.size:
        return None
    return _CONTROL_KEY.unpack_from(record.key)[1]


def coordinator_epoch_of(value: bytes | None) -> int | None:
    """The coordinator epoch in an end-transaction marker's value."""
    if value is None or len(value) < _MARKER_VALUE.size:
        return None
    return _MARKER_VALUE.unpack_from(value)[1]
