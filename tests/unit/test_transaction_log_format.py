"""``kafkalab dump-log --transaction-log-decoder`` prints a ``__transaction_state`` record as Kafka 3.9's
``DumpLogSegments`` does (``TransactionLog.formatRecordKeyAndValue``): a transaction's partitions in the order
of the Scala ``mutable.HashSet`` Kafka reads them into. The expected orders below are what Kafka 3.9.2's own
tool printed for these transactions (``tests/integration/test_transaction_state.py`` runs it on such files)."""
from __future__ import annotations

import struct

from kafkalab.broker.coordinator.transaction.transaction_log import (STATUS_IDS, TransactionLogValue, format_record,
                                                                     kafka_set_order, key_to_bytes, value_to_bytes)


def _parts(text: str) -> list[tuple[str, int]]:
    return [(tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])) for tp in text.split(",")]


KAFKA_PRINTED = [
    "alpha-6,alpha-4,alpha-5,alpha-2,alpha-3,alpha-0,alpha-1,orders-copied-transactions-0,__consumer_offsets-3",
    "zz-1,zz-0,zz-12,zz-11,zz-10,zz-9,zz-8,zz-7,zz-6,__consumer_offsets-3,zz-5,zz-4,zz-3,zz-2",
    "orders-copied-transactions-0,__consumer_offsets-3",
]


def test_partitions_in_the_order_kafkas_tool_prints_them():
    for printed in KAFKA_PRINTED:
        expected = _parts(printed)
        assert kafka_set_order(sorted(expected)) == expected
        assert kafka_set_order(reversed(expected)) == expected     # whatever order they were written in


def test_a_record_formatted_as_kafka_formats_it():
    parts = {}
    for t, p in _parts(KAFKA_PRINTED[2]):
        parts.setdefault(t, []).append(p)
    value = value_to_bytes(TransactionLogValue(7, 3, 60000, STATUS_IDS["PrepareCommit"], parts, 11, 10))
    assert format_record(key_to_bytes("copier-x"), value) == (
        "key: transaction_metadata::transactionalId=copier-x payload: producerId:7,producerEpoch:3,"
        f"state=PrepareCommit,partitions=[{KAFKA_PRINTED[2]}],txnLastUpdateTimestamp=11,txnTimeoutMs=60000")
    empty = value_to_bytes(TransactionLogValue(7, 4, 60000, STATUS_IDS["Empty"], None, 12, -1))
    assert "state=Empty,partitions=[]," in format_record(key_to_bytes("copier-x"), empty)
    assert format_record(key_to_bytes("copier-x"), None).endswith("payload: <DELETE>")
    # another key version: Kafka's UnknownKey, printed without a payload
    assert format_record(struct.pack(">h", 1) + b"\x00\x01x", value) == "key: unknown::version=1"
