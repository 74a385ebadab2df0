"""The record layouts of ``__transaction_state``, Kafka's internal compacted topic for transactions.

Kafka's ``kafka.coordinator.transaction.TransactionLog`` writes one record per state transition of
a transactional id, keyed by that id, so compaction keeps only its latest state (a tombstone, a
null value, is an expired transactional id). The schemas are Kafka's ``TransactionLogKey.json``
and ``TransactionLogValue.json``; every key and value starts with an int16 version::

    TransactionLogKey (version 0)     transactional_id: string
    TransactionLogValue (version 0)   producer_id: int64, producer_epoch: int16,
                                      transaction_timeout_ms: int32, transaction_status: int8,
                                      transaction_partitions: nullable [topic: string,
                                                                        partition_ids: [int32]],
                                      transaction_last_update_timestamp_ms: int64,
                                      transaction_start_timestamp_ms: int64

``transaction_status`` is ``TransactionState.id`` (Empty 0, Ongoing 1, PrepareCommit 2,
PrepareAbort 3, CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7); an Empty
transaction's partitions are written as null. Kafka 3.9 writes value version 0 (version 1, the
flexible one with tagged fields, comes with ``transaction.version`` 1 in Kafka 4, KIP-890): this
module writes version 0 and reads both, skipping the tagged fields of version 1.

A transactional id lives in partition ``abs(transactionalId.hashCode()) %
transaction.state.log.num.partitions``, the same function as a group's ``__consumer_offsets``
partition. kafka-python has no codec for these records (they are not API messages), so they are
encoded here with ``struct``, as :mod:`..group.offsets_topic` does for ``__consumer_offsets``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..group.offsets_topic import java_string_hash

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0

#: TransactionState.id, as Kafka numbers the states in the log
STATUS_IDS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
              "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}
STATUS_NAMES = {v: k for k, v in STATUS_IDS.items()}


@dataclass
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    #: topic -> partition ids; None for an Empty transaction (written as a null array)
    transaction_partitions: dict[str, list[int]] | None = field(default_factory=dict)
    transaction_last_update_timestamp_ms: int = -1
    transaction_start_timestamp_ms: int = -1

    @property
    def state_name(self) -> str:
        return STATUS_NAMES.get(self.transaction_status, f"Unknown({self.transaction_status})")

    @property
    def topic_partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, ids in (self.transaction_partitions or {}).items() for p in ids}


# -- writing ----------------------------------------------------------------------------------

def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def key_to_bytes(transactional_id: str) -> bytes:
    """TransactionLogKey v0 (Kafka's ``TransactionLog.keyToBytes``)."""
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def value_to_bytes(value: TransactionLogValue) -> bytes:
    """TransactionLogValue v0 (Kafka's ``TransactionLog.valueToBytes``)."""
    out = [struct.pack(">hqhib", VALUE_VERSION, value.producer_id, value.producer_epoch,
                       value.transaction_timeout_ms, value.transaction_status)]
    if value.transaction_status == STATUS_IDS["Empty"] or value.transaction_partitions is None:
        out.append(struct.pack(">i", -1))
    else:
        out.append(struct.pack(">i", len(value.transaction_partitions)))
        for topic, ids in sorted(value.transaction_partitions.items()):
            out.append(_string(topic))
            out.append(struct.pack(f">i{len(ids)}i", len(ids), *sorted(ids)))
    out.append(struct.pack(">qq", value.transaction_last_update_timestamp_ms, value.transaction_start_timestamp_ms))
    return b"".join(out)


def partitions_by_topic(partitions) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    return by_topic


# -- reading ----------------------------------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = memoryview(data), 0

    def take(self, fmt: str):
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values if len(values) > 1 else values[0]

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def string(self, compact: bool = False) -> str:
        n = self.uvarint() - 1 if compact else self.take(">h")
        if n < 0:
            raise ValueError("null string where Kafka's schema has none")
        s = bytes(self.data[self.pos:self.pos + n]).decode()
        self.pos += n
        return s

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()                       # tag
            self.pos += self.uvarint()           # size, then the field's bytes


def read_key(data: bytes) -> str:
    """The transactional id of a key (Kafka's ``readTxnRecordKey``); ValueError for another version."""
    r = _Reader(data)
    version = r.take(">h")
    if version != KEY_VERSION:
        raise ValueError(f"unknown {TRANSACTION_STATE_TOPIC} key version {version}")
    return r.string()


def read_value(data: bytes | None) -> TransactionLogValue | None:
    """A value, None for a tombstone (Kafka's ``readTxnRecordValue``); versions 0 and 1."""
    if data is None:
        return None
    r = _Reader(data)
    version = r.take(">h")
    if version not in (0, 1):
        raise ValueError(f"unknown {TRANSACTION_STATE_TOPIC} value version {version}")
    flexible = version >= 1
    pid, epoch, timeout, status = r.take(">qhib")
    count = r.uvarint() - 1 if flexible else r.take(">i")
    partitions = None if count < 0 else {}
    for _ in range(max(count, 0)):
        topic = r.string(flexible)
        n = r.uvarint() - 1 if flexible else r.take(">i")
        ids = list(r.take(f">{n}i")) if n > 1 else ([r.take(">i")] if n == 1 else [])
        if flexible:
            r.skip_tagged_fields()
        partitions.setdefault(topic, []).extend(ids)
    last_update, start = r.take(">qq")
    if flexible:
        r.skip_tagged_fields()   # Kafka 4: previous/next producer id, client transaction version
    return TransactionLogValue(pid, epoch, timeout, status, partitions, last_update, start)


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def kafka_set_order(partitions) -> list[tuple[str, int]]:
    """``(topic, partition)`` pairs in the order Kafka 3.9's tool prints a transaction's partitions.

    ``TransactionLog.readTxnRecordValue`` collects them into a Scala 2.13 ``mutable.HashSet`` of
    ``TopicPartition`` and ``formatRecordKeyAndValue`` prints it with ``mkString``, so the order is the
    set's: its table slot (``improveHash(h) & (length - 1)``, with ``improveHash(h) = h ^ (h >>> 16)`` and
    ``h`` Java's ``TopicPartition.hashCode``, ``31 * (31 + partition) + topic.hashCode()``), then that
    hash within a slot. The table starts at 16 slots and doubles once it holds 0.75 of them."""
    def improved(tp):
        h = _int32(31 * (31 + tp[1]) + java_string_hash(tp[0]))
        return _int32(h ^ ((h & 0xFFFFFFFF) >> 16))

    items = list(partitions)
    length = 16
    while len(items) >= int(length * 0.75):
        length *= 2
    return sorted(items, key=lambda tp: (improved(tp) & (length - 1), improved(tp)))


def format_record(key: bytes | None, value: bytes | None) -> str:
    """``key: ... payload: ...`` as Kafka's ``kafka-dump-log.sh --transaction-log-decoder`` prints it
    (``TransactionLog.formatRecordKeyAndValue``: the transactional id, then the value's fields; a key of
    another version is ``unknown::version=N``, without a payload; an Empty transaction's partitions are
    not read, ``[]``)."""
    if key is None:
        return f"key: (none: not a {TRANSACTION_STATE_TOPIC} record)"
    if len(key) >= 2 and struct.unpack_from(">h", key)[0] != KEY_VERSION:
        return f"key: unknown::version={struct.unpack_from('>h', key)[0]}"
    try:
        txn_id = read_key(key)
    except (ValueError, struct.error) as exc:
        return f"key: (not a {TRANSACTION_STATE_TOPIC} key: {exc})"
    try:
        v = read_value(value)
    except (ValueError, struct.error, IndexError) as exc:
        return f"key: transaction_metadata::transactionalId={txn_id} payload: (unreadable: {exc})"
    if v is None:
        payload = "<DELETE>"
    else:
        empty = v.transaction_status == STATUS_IDS["Empty"]
        parts = ",".join(f"{t}-{p}" for t, p in kafka_set_order(() if empty else v.topic_partitions))
        payload = (f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},state={v.state_name},"
                   f"partitions=[{parts}],txnLastUpdateTimestamp={v.transaction_last_update_timestamp_ms},"
                   f"txnTimeoutMs={v.transaction_timeout_ms}")
    return f"key: transaction_metadata::transactionalId={txn_id} payload: {payload}"
