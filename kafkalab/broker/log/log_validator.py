"""``LogValidator``: every record of a produced batch is checked before the leader appends it.

Kafka's ``LogValidator`` (storage/.../log/LogValidator.java) runs on the leader's append path.
Per batch (``validateBatch``) it checks the record count against the offset range the header
claims (``lastOffsetDelta + 1``), refuses control batches from clients and producer ids without a
sequence. Then it *decodes every record* (``DefaultRecord.readFrom``), decompressing the batch
first, and refuses:

* a record whose length, key, value or header sizes do not add up ("Invalid record size",
  "Found invalid number of record headers", "Invalid negative header key size"), a batch whose
  records end before or after its last byte, a count that is not the number of records;
  INVALID_RECORD (Kafka's ``InvalidRecordException``);
* a payload that does not decompress: CORRUPT_MESSAGE;
* per record (``validateRecord``, with the record's index in ``record_errors`` from Produce v8,
  KIP-467): a key-less record on a compacted topic (INVALID_RECORD), a CreateTime timestamp
  outside ``message.timestamp.before.max.ms`` / ``message.timestamp.after.max.ms``, or a
  producer claiming LogAppendTime (INVALID_TIMESTAMP).

Where the mini broker differs (docs/differences.md):

* Kafka accepts any record attributes byte and offset deltas that are not 0, 1, 2, ... (it
  rewrites such "old client" batches). Magic-2 clients always write attributes 0 and
  consecutive deltas, so the mini broker, which never rewrites a batch, refuses anything else
  (INVALID_RECORD): consumers then never see two records with one offset.
* Decompression is bounded: a batch may inflate to at most ``MAX_INFLATION`` (16) times the
  topic's ``max.message.bytes``; a larger one is refused with MESSAGE_TOO_LARGE (a Java producer
  then splits the batch). The codec writes into one buffer of that size and stops where it ends,
  so validating a batch never takes more memory than that, whatever its compression ratio.
  Kafka streams the records instead and has no such bound; its ``max.message.bytes`` bounds only
  the compressed size.

Speed (this is Python; see benchmarks/README.md, "Record validation"): finding where each record
starts means following each record's length to the next. For the usual batch (records of a few
distinct lengths: same-size values, a delta that needs one more varint byte from some record on)
``_bounds_by_runs`` guesses a whole run of equal-length records at once and checks the guess
with numpy; otherwise ``_bounds_by_loop`` jumps from length to length in a plain loop. Then every
field of every record is checked at once, one numpy gather per field (``_fields_ok``). Batches
of fewer than 32 records, and anything the fast check does not like, are walked record by record
by ``_walk_records``, the readable reference, which says exactly what is wrong and where. The
fast check never accepts what the reference refuses (tests/unit/test_log_validator.py).
"""
from __future__ import annotations

import time

import numpy as np

from ..common.errors import ErrorCode, KafkaError
from ..common.records import (COMPRESSION_NAMES, HEADER_SIZE, MAX_INFLATION, BatchHeader, decompress, iter_batches,
                              validate_batch)

LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1   # a record without a timestamp is never out of range (Kafka's validateTimestamp)
#: batches with at least this many records are checked with numpy
VECTOR_MIN_RECORDS = 32
#: header rounds the numpy check does; records with more headers go the reference way
VECTOR_MAX_HEADERS = 8
_MIN_RECORD_BODY = 6  # attributes, timestampDelta, offsetDelta, key length, value length, header count


class RecordValidationError(KafkaError):
    """A refusal that names records: ``record_errors`` is [(batch index, message)] (KIP-467)."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]):
        super().__init__(code, message)
        self.record_errors = record_errors


def validate_records(records: bytes, config, now_ms: int | None = None):
    """Kafka's ``analyzeAndValidateRecords`` + ``LogValidator``: [(position, header)] of the batches
    in ``records`` if every batch and every record in it is valid, else a KafkaError."""
    batches = list(iter_batches(records, strict=True))
    if not batches:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "produce request carries no record batch")
    max_bytes = config["max.message.bytes"]
    for pos, header in batches:
        if header.size > max_bytes:
            raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                             f"batch of {header.size} bytes is larger than max.message.bytes={max_bytes}")
        validate_batch(records, pos, header)   # magic, CRC, count vs lastOffsetDelta, codec
        validate_batch_records(records, pos, header, config, now_ms)
    return batches


def validate_batch_records(buf, pos: int, header: BatchHeader, config, now_ms: int | None = None) -> None:
    """Decode and check every record of the batch at ``pos`` (see the module docstring)."""
    codec = header.attributes & 0x07
    payload = memoryview(buf)[pos + HEADER_SIZE:pos + header.size]
    limit = MAX_INFLATION * config["max.message.bytes"]
    body = decompress(codec, payload, limit) if codec else bytes(payload)
    rules = _Rules(header, config, now_ms)
    count = header.records_count
    if count >= VECTOR_MIN_RECORDS and _vector_ok(body, count, rules):
        return
    _walk_records(body, count, rules, COMPRESSION_NAMES.get(codec, "?"))


class _Rules:
    """What validateRecord checks besides the record's structure."""

    def __init__(self, header: BatchHeader, config, now_ms):
        self.base_timestamp = header.base_timestamp
        self.need_key = config.compact
        before = config["message.timestamp.before.max.ms"]
        after = config["message.timestamp.after.max.ms"]
        self.check_time = (config["message.timestamp.type"] == "CreateTime"
                           and (before < LONG_MAX or after < LONG_MAX))
        if self.check_time:
            now = int(time.time() * 1000) if now_ms is None else now_ms
            self.lowest, self.highest = now - before, now + after


# -- the reference: one record at a time ------------------------------------------------------

def _varint(body, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """A zigzag varint (int32: at most 5 bytes; int64 "varlong": at most 10) at ``pos``."""
    value = shift = 0
    for i in range(max_bytes):
        b = body[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos + i + 1
        shift += 7
    raise ValueError(f"varint longer than {max_bytes} bytes")


def _walk_records(body: bytes, count: int, rules: _Rules, codec_name: str) -> None:
    """``DefaultRecord.readFrom`` + ``validateRecord`` for each record, in order."""
    end = len(body)
    pos = 0
    record_errors: list[tuple[int, str]] = []
    timestamp_error = False
    for index in range(count):
        where = f"record {index} of {count}"
        try:
            length, pos = _varint(body, pos)
            rec_end = pos + length
            if length < _MIN_RECORD_BODY or rec_end > end:
                raise ValueError(f"invalid record size {length} ({end - pos} bytes left in the batch)")
            if body[pos] != 0:
                raise ValueError(f"record attributes {body[pos]:#x}: no attribute is defined for magic-2 records")
            ts_delta, pos = _varint(body, pos + 1, 10)
            offset_delta, pos = _varint(body, pos)
            if offset_delta != index:
                raise ValueError(f"offset delta {offset_delta}, expected {index}")
            key_len, pos = _varint(body, pos)
            if key_len < -1 or pos + max(key_len, 0) > rec_end:
                raise ValueError(f"invalid key size {key_len}")
            pos += max(key_len, 0)
            value_len, pos = _varint(body, pos)
            if value_len < -1 or pos + max(value_len, 0) > rec_end:
                raise ValueError(f"invalid value size {value_len}")
            pos += max(value_len, 0)
            n_headers, pos = _varint(body, pos)
            if n_headers < 0 or 2 * n_headers > rec_end - pos:
                raise ValueError(f"invalid number of record headers {n_headers}")
            for _ in range(n_headers):
                hkey_len, pos = _varint(body, pos)
                if hkey_len < 0 or pos + hkey_len > rec_end:
                    raise ValueError(f"invalid header key size {hkey_len}")
                pos += hkey_len
                hval_len, pos = _varint(body, pos)
                if hval_len < -1 or pos + max(hval_len, 0) > rec_end:
                    raise ValueError(f"invalid header value size {hval_len}")
                pos += max(hval_len, 0)
            if pos != rec_end:
                raise ValueError(f"invalid record size: expected to read {length} bytes, read "
                                 f"{length - (rec_end - pos)}")
        except (IndexError, ValueError) as exc:
            raise RecordValidationError(ErrorCode.INVALID_RECORD, f"{where} ({codec_name}) is malformed: {exc}",
                                        [(index, str(exc))]) from None
        if rules.need_key and key_len < 0:
            record_errors.append((index, "Compacted topic cannot accept message without key"))
        elif (rules.check_time and rules.base_timestamp + ts_delta != NO_TIMESTAMP
              and not rules.lowest <= rules.base_timestamp + ts_delta <= rules.highest):
            timestamp_error = True
            record_errors.append((index, f"Timestamp {rules.base_timestamp + ts_delta} is out of range "
                                         f"[{rules.lowest}, {rules.highest}]"))
    if pos != end:
        raise RecordValidationError(ErrorCode.INVALID_RECORD,
                                    f"incorrect declared batch size: {end - pos} bytes remain after {count} records",
                                    [(max(count - 1, 0), "bytes remain after the last record")])
    if record_errors:
        code = ErrorCode.INVALID_TIMESTAMP if timestamp_error else ErrorCode.INVALID_RECORD
        raise RecordValidationError(code, f"One or more records have been rejected due to {len(record_errors)} "
                                          f"record errors in total, and only showing the first three errors at "
                                          f"most: {record_errors[:3]}", record_errors)


# -- the fast check: all records' fields at once -----------------------------------------------

def _chain(body: bytes, count: int, arr):
    """Start (after the length varint) and end of each record, following the lengths; None if they do
    not chain to exactly the end of ``body`` in ``count`` records.

    The loop only jumps from length to length (the hot loop of the whole validation: one and
    two-byte lengths inline); that each length is a well-formed, non-negative varint of at least
    ``_MIN_RECORD_BODY`` is then checked for all records at once."""
    end = len(body)
    if count * (_MIN_RECORD_BODY + 1) > end:
        return None
    for find_bounds in (_bounds_by_runs, _bounds_by_loop):
        bounds = find_bounds(arr, body, count)
        if bounds is None:
            continue
        length, starts, ok = _vdecode(arr, bounds, 5)
        ends = np.empty_like(bounds)
        ends[:-1] = bounds[1:]
        ends[-1] = end
        if ok and not (length < _MIN_RECORD_BODY).any() and np.array_equal(starts + length, ends):
            return starts, ends
    return None


#: runs of equal-length records the vectorised walk follows before it hands over to the loop,
#: and the shortest run it accepts
MAX_RUNS = 12
MIN_RUN = 16


def _bounds_by_runs(arr, body, count: int):
    """Where each record starts, for batches made of a few runs of records of equal length (the usual
    batch: same-size values, lengths changing only where a delta needs one more varint byte).
    From the first record of a run, guess that every following record has its length, check the
    guess for all of them at once, and start a new run where it first fails. None if the batch
    has more runs than ``MAX_RUNS`` (records of many sizes): the loop is as fast then."""
    end = len(arr)
    bounds = np.empty(count, dtype=np.int64)
    done, pos = 0, 0
    for _ in range(MAX_RUNS):
        if pos >= end:
            return None
        length, after, ok = _vdecode(arr, np.array([pos]), 5)
        step = int(after[0] - pos + length[0])
        if not ok or step <= 0:
            return None
        guess = pos + step * np.arange(count - done + 1, dtype=np.int64)
        head = guess[:MIN_RUN]   # a cheap look at the first few: do the sizes vary?
        if len(guess) > MIN_RUN + 1 and head[-1] < end:
            length, after, _ = _vdecode(arr, head, 5)
            if not (after - head + length == step).all():
                return None
        inside = guess[:-1] < end
        probe = np.where(inside, guess[:-1], 0)
        length, after, ok = _vdecode(arr, probe, 5)
        same = inside & (after - probe + length == step)
        if same.all():
            bounds[done:] = guess[:-1]
            return bounds if guess[-1] == end else None
        k = int(np.argmin(same))   # the first record whose length differs: a new run starts there
        if k < MIN_RUN:            # sizes vary from record to record: the loop is faster
            return None
        bounds[done:done + k] = guess[:k]
        done += k
        pos = int(guess[k])
    return None


def _bounds_by_loop(arr, body: bytes, count: int):
    """Where each record starts, jumping from length to length in a plain loop."""
    end = len(body)
    bounds = []
    add = bounds.append
    pos = 0
    try:
        for _ in range(count):
            add(pos)
            n = body[pos]
            if n < 0x80:
                pos += 1 + (n >> 1)
            else:
                m = body[pos + 1]
                if m < 0x80:
                    pos += 2 + (((n & 0x7F) | (m << 7)) >> 1)
                else:
                    length, pos = _varint(body, pos)
                    if length < 0:
                        return None
                    pos += length
    except (IndexError, ValueError):
        return None
    if pos != end:
        return None
    return np.array(bounds, dtype=np.int64)


def _vdecode(arr, pos, max_bytes: int):
    """Zigzag varints at every position of ``pos`` at once: (values, positions after, all well-formed).
    One round per byte of the longest varint (usually one or two rounds)."""
    b = arr[pos]
    value = (b & 0x7F).astype(np.int64)
    more = b >= 0x80
    width = np.ones(len(pos), dtype=np.int64)
    last = len(arr) - 1
    for j in range(1, max_bytes):
        if not more.any():
            break
        b = arr[np.minimum(pos + j, last)]
        value |= np.where(more, (b & 0x7F).astype(np.int64) << (7 * j), 0)
        width += more
        more &= b >= 0x80
    else:
        if more.any():   # (the values are still decoded: a caller may look at the well-formed ones)
            return (value >> 1) ^ -(value & 1), pos + width, False
    return (value >> 1) ^ -(value & 1), pos + width, True


def _vector_ok(body: bytes, count: int, rules: _Rules) -> bool:
    """True if every record is valid (the same verdict as ``_walk_records``, which explains a False)."""
    arr = np.frombuffer(body, dtype=np.uint8)
    chained = _chain(body, count, arr)
    if chained is None:
        return False
    try:
        return _fields_ok(arr, *chained, count, rules)
    except IndexError:   # a field runs past the end of the batch
        return False


def _fields_ok(arr, pos, ends, count: int, rules: _Rules) -> bool:
    if arr[pos].any():                                        # record attributes
        return False
    ts, pos, ok1 = _vdecode(arr, pos + 1, 10)
    off, pos, ok2 = _vdecode(arr, pos, 5)
    if not (ok1 and ok2) or not np.array_equal(off, np.arange(count)):
        return False
    klen, pos, ok = _vdecode(arr, pos, 5)
    if not ok or (klen < -1).any() or (rules.need_key and (klen < 0).any()):
        return False
    pos = pos + np.maximum(klen, 0)
    if (pos > ends).any():
        return False
    vlen, pos, ok = _vdecode(arr, pos, 5)
    if not ok or (vlen < -1).any():
        return False
    pos = pos + np.maximum(vlen, 0)
    if (pos >= ends).any():                                   # the header count is still to come
        return False
    nh, pos, ok = _vdecode(arr, pos, 5)
    if not ok or (nh < 0).any() or nh.max() > VECTOR_MAX_HEADERS:
        return False
    for round_ in range(int(nh.max())):
        active = np.nonzero(nh > round_)[0]
        p = pos[active]
        e = ends[active]
        if (p >= e).any():
            return False
        hk, p, ok = _vdecode(arr, p, 5)
        if not ok or (hk < 0).any():
            return False
        p = p + hk
        if (p >= e).any():
            return False
        hv, p, ok = _vdecode(arr, p, 5)
        if not ok or (hv < -1).any():
            return False
        pos[active] = p + np.maximum(hv, 0)
    if not np.array_equal(pos, ends):
        return False
    if rules.check_time:
        stamps = rules.base_timestamp + ts
        if (((stamps < rules.lowest) | (stamps > rules.highest)) & (stamps != NO_TIMESTAMP)).any():
            return False
    return True
