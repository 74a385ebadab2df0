"""LogValidator: every record of a produced batch is decoded and checked; bounded decompression."""
from __future__ import annotations

import os
import random
import resource
import struct
import time

import cramjam
import pytest

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.log import log_validator as V
from kafkalab.broker.log.log_manager import LogManager
from kafkalab.broker.common.records import HEADER_SIZE, MAX_INFLATION, BatchHeader, Record, build_batch, compute_crc, decompress, iter_records


MB = 1024 * 1024
CFG = LogConfig(BrokerConfig({}))


def recs(n, rng=None, headers=True):
    rng = rng or random.Random(n)
    return [Record(i, 1_000 + i * rng.randrange(3), None if i % 4 == 0 else b"key-%d" % i,
                   None if i % 9 == 0 else os.urandom(rng.randrange(0, 300)),
                   [("h%d" % j, b"x" * j) for j in range(i % 3)] if headers else [])
            for i in range(n)]


def with_crc(batch) -> bytes:
    batch = bytearray(batch)
    struct.pack_into(">I", batch, 17, compute_crc(batch))
    return bytes(batch)


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("n", [1, 5, 31, 32, 500])
def test_good_batches_pass_both_ways(codec, n):
    batch = build_batch(recs(n), compression=codec)
    assert V.validate_records(batch, CFG)
    body = decompress(codec, memoryview(batch)[HEADER_SIZE:])
    rules = V._Rules(BatchHeader.parse(batch), CFG, None)
    V._walk_records(body, n, rules, "x")       # the reference accepts it
    assert V._vector_ok(body, n, rules)        # and so does the fast check


def test_fast_check_never_accepts_what_the_reference_refuses():
    rng = random.Random(1234)
    refused = 0
    for trial in range(1500):
        rs = recs(rng.randrange(32, 90), rng)
        batch = build_batch(rs)
        body = bytearray(batch[HEADER_SIZE:])
        for _ in range(rng.randrange(1, 4)):
            body[rng.randrange(len(body))] = rng.choice([0, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        rules = V._Rules(BatchHeader.parse(batch), CFG, None)
        try:
            V._walk_records(bytes(body), len(rs), rules, "none")
            ok = True
        except KafkaError:
            ok = False
            refused += 1
        if not ok:
            assert not V._vector_ok(bytes(body), len(rs), rules), trial
    assert refused > 100   # many mutations hit opaque values; these many break records


def test_each_refusal_names_the_record():
    good = bytearray(build_batch([Record(i, 1, b"k", b"v", []) for i in range(3)]))
    bad = bytearray(good)
    bad[HEADER_SIZE + 1] = 0x01                      # record 0's attributes
    with pytest.raises(V.RecordValidationError) as e:
        V.validate_records(with_crc(bad), CFG)
    assert e.value.code == ErrorCode.INVALID_RECORD and e.value.record_errors[0][0] == 0
    extra = with_crc(bytes(good) + b"\x00\x00")       # bytes after the last record
    fixed = bytearray(extra)
    struct.pack_into(">i", fixed, 8, len(fixed) - 12)
    with pytest.raises(V.RecordValidationError, match="remain after"):
        V.validate_records(with_crc(fixed), CFG)


def test_compacted_topic_needs_keys_and_timestamps_are_bounded():
    compacted = LogConfig(BrokerConfig({}), {"cleanup.policy": "compact"})
    batch = build_batch([Record(0, 1, b"k", b"v", []), Record(1, 1, None, b"v", [])])
    with pytest.raises(V.RecordValidationError) as e:
        V.validate_records(batch, compacted)
    assert e.value.code == ErrorCode.INVALID_RECORD and e.value.record_errors == [
        (1, "Compacted topic cannot accept message without key")]
    bounded = LogConfig(BrokerConfig({}), {"message.timestamp.after.max.ms": "1000"})
    now = int(time.time() * 1000)
    batch = build_batch([Record(i, now + 3_600_000 * (i == 40), b"k", b"v", []) for i in range(64)])
    with pytest.raises(V.RecordValidationError) as e:
        V.validate_records(batch, bounded)
    assert e.value.code == ErrorCode.INVALID_TIMESTAMP and [i for i, _ in e.value.record_errors] == [40]


def _zstd_bomb(inflated: int) -> bytes:
    from tests.integration.test_hardening import zstd_bomb
    return zstd_bomb(inflated)


def test_a_bomb_is_refused_without_inflating():
    bomb = _zstd_bomb(1 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(KafkaError) as e:
        V.validate_records(bomb, CFG)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    assert time.monotonic() - start < 1.0
    # at most the inflation bound (16 x max.message.bytes) is ever written
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb * 1024 < MAX_INFLATION * CFG["max.message.bytes"] + 8 * MB


def test_the_log_cleaner_does_not_inflate_a_bomb_either(tmp_path):
    """A bomb that reached a compacted log some other way (a follower copies batches as they are) is
    refused by the cleaner's bounded decompression: the log is left as it was, marked uncleanable."""
    manager = LogManager(str(tmp_path), BrokerConfig({"log.dirs": str(tmp_path)}))
    try:
        log = manager.get_or_create_log("c", 0, LogConfig(manager.config, {
            "cleanup.policy": "compact", "segment.bytes": 1000, "min.cleanable.dirty.ratio": 0.01}))
        bomb = bytearray(_zstd_bomb(1 << 30))
        log.append_as_follower(bytes(bomb))
        for i in range(30):
            log.append_as_follower(build_batch([Record(1 + i, 1, b"k", b"v" * 50, [])]))
        log.high_watermark = log.log_end_offset
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        manager.run_cleaner(2_000_000_000_000, force=True)
        grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert grown_kb * 1024 < 64 * MB
        with pytest.raises(KafkaError) as e:
            list(iter_records(bytes(bomb)))
        assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    finally:
        manager.close()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompress_stops_at_the_bound(codec):
    data = b"\x00" * (4 * MB)
    packed = bytes({1: cramjam.gzip.compress, 2: cramjam.snappy.compress_raw, 3: cramjam.lz4.compress,
                    4: cramjam.zstd.compress}[codec](data))
    assert decompress(codec, packed, limit=4 * MB) == data
    with pytest.raises(KafkaError) as e:
        decompress(codec, packed, limit=4 * MB - 1)
    assert e.value.code == ErrorCode.MESSAGE_TOO_LARGE
    with pytest.raises(KafkaError) as e:
        decompress(codec, packed[:len(packed) // 2] + b"\xa5" * 50, limit=4 * MB)
    assert e.value.code in (ErrorCode.CORRUPT_MESSAGE, ErrorCode.MESSAGE_TOO_LARGE)
