"""Which partition a key goes to: Kafka's murmur2 partitioner and librdkafka's CRC32 one.

A producer, not the broker, picks each record's partition. Apache Kafka's Java
client (3.9: ``BuiltInPartitioner.partitionForKey``) does, for a record with a
key::

    partition = toPositive(murmur2(key_bytes)) % number_of_partitions

``murmur2`` is Austin Appleby's MurmurHash2 (32 bit, seed ``0x9747b28c``) as
Kafka's ``Utils.murmur2`` computes it, and ``toPositive`` clears the sign bit
(``n & 0x7fffffff``), *not* ``abs()``: ``abs(Integer.MIN_VALUE)`` is still
negative in Java. kafka-python's ``DefaultPartitioner`` and librdkafka's
``murmur2`` / ``murmur2_random`` partitioners compute the same thing.

librdkafka (and so confluent-kafka) has another default,
``partitioner=consistent_random``: ``crc32(key) % number_of_partitions``
(:func:`crc32_partition`). The same key can land in different partitions
depending on which client wrote it — set ``partitioner=murmur2_random`` in
confluent-kafka to place keys as the Java client does.

Records *without* a key are not hashed: the Java client and librdkafka both
stick to one partition for a while and then move on (KIP-480, KIP-794); see
lesson 01.

Nothing here talks to a broker: these are the pure functions, so a lesson or a
lab can predict a partition and compare it with where a record really went.
"""
from __future__ import annotations

import zlib

__all__ = ["murmur2", "to_positive", "murmur2_partition", "crc32_partition", "java_int"]

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def _as_bytes(key) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")   # what a StringSerializer / confluent-kafka does with a str key
    return bytes(key)


def java_int(n: int) -> int:
    """An unsigned 32-bit value read as Java's signed ``int``."""
    n &= _MASK
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(key) -> int:
    """Kafka's ``Utils.murmur2``: the 32-bit MurmurHash2 of ``key`` as a signed Java ``int``.

    ``key`` is ``bytes`` (or a ``str``, taken as UTF-8). Java does this
    arithmetic on 32-bit ints that wrap around; here every step is masked to
    32 bits, and ``>>>`` (unsigned shift) is a plain shift of the masked value.
    """
    data = _as_bytes(key)
    length = len(data)
    h = (_SEED ^ length) & _MASK
    full = length - length % 4
    for i in range(0, full, 4):             # four bytes at a time, little-endian
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4                       # the last one to three bytes (Java's switch falls through)
    if rest >= 3:
        h ^= data[full + 2] << 16
    if rest >= 2:
        h ^= data[full + 1] << 8
    if rest >= 1:
        h ^= data[full]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return java_int(h)


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (``n & 0x7fffffff``), so every int maps to 0..2^31-1."""
    return n & 0x7FFFFFFF


def murmur2_partition(key, num_partitions: int) -> int:
    """The partition the Java client (and kafka-python, and librdkafka's ``murmur2_random``) picks for ``key``."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


def crc32_partition(key, num_partitions: int) -> int:
    """The partition librdkafka's default ``consistent_random`` partitioner picks for a non-empty ``key``.

    (librdkafka's ``consistent_random`` sends records with a null or empty
    key to a random — in fact sticky — partition instead.)
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return zlib.crc32(_as_bytes(key)) % num_partitions
