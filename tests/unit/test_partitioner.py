"""kafkalab.partitioner against values computed by Kafka and by the clients themselves."""
from __future__ import annotations

import random
import zlib

import pytest

from kafkalab.partitioner import crc32_partition, java_int, murmur2, murmur2_partition, to_positive

# Kafka's own test vectors for Utils.murmur2 (clients/src/test/.../utils/UtilsTest.java, testMurmur2)
KAFKA_CASES = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data,expected", KAFKA_CASES.items(), ids=[k.decode()[:12] for k in KAFKA_CASES])
def test_murmur2_matches_kafkas_test_vectors(data, expected):
    assert murmur2(data) == expected


def test_str_keys_are_utf8():
    assert murmur2("foobar") == murmur2(b"foobar")
    assert murmur2("café") == murmur2("café".encode())


def test_to_positive_clears_the_sign_bit_not_abs():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(java_int(0x80000000)) == 0          # abs(Integer.MIN_VALUE) would stay negative in Java
    assert to_positive(-973932308) == (-973932308) & 0x7FFFFFFF != abs(-973932308)


def test_murmur2_agrees_with_kafka_python_on_random_keys():
    from kafka.partitioner.default import murmur2 as kp_murmur2   # kafka-python: unsigned result

    rng = random.Random(7)
    for length in range(0, 40):
        for _ in range(20):
            data = bytes(rng.randrange(256) for _ in range(length))
            assert murmur2(data) & 0xFFFFFFFF == kp_murmur2(data)


def test_partitions_are_in_range_and_spread():
    counts = [0] * 6
    for i in range(6000):
        p = murmur2_partition(f"key-{i}", 6)
        counts[p] += 1
    assert min(counts) > 800          # roughly 1000 each
    with pytest.raises(ValueError):
        murmur2_partition("k", 0)


def test_crc32_partition_is_zlib_crc32():
    assert crc32_partition("foobar", 7) == zlib.crc32(b"foobar") % 7
    with pytest.raises(ValueError):
        crc32_partition("k", 0)
