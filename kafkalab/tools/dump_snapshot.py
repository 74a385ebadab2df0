"""``kafka-dump-log.sh`` on a producer-state ``.snapshot`` file (Kafka's ``dumpProducerIdSnapshot``), and on
a ``.txnindex`` (``dumpTxnIndex``): the transaction state a partition directory keeps beside its segments.

One line per producer, as Kafka 3.9's tool prints it::

    producerId: 1000 producerEpoch: 0 coordinatorEpoch: 0 currentTxnFirstOffset: OptionalLong[12]
      lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 2 lastOffset: 14 offsetDelta: 2
      timestamp: 1700000000000

(one line, wrapped here). ``currentTxnFirstOffset`` is Java's ``OptionalLong``: ``OptionalLong.empty``
when no transaction of that producer is open in the partition. The ``firstSequence ...`` part is
left out for a producer without a batch (one known only from a marker). A corrupt file (bad CRC,
unknown version, cut short) prints the reason on stderr, as Kafka does, and nothing else.
The format itself: :mod:`kafkalab.broker.log.producer_snapshot`.
"""
from __future__ import annotations

from typing import IO

from ..broker.log.producer_snapshot import PRODUCER_SNAPSHOT_SUFFIX, CorruptSnapshotError, SnapshotEntry, read_snapshot
from ..broker.log.transaction_index import TransactionIndex

__all__ = ["PRODUCER_SNAPSHOT_SUFFIX", "dump_producer_snapshot", "dump_txn_index", "format_snapshot_entry"]


def _optional_long(value: int) -> str:
    return f"OptionalLong[{value}]" if value >= 0 else "OptionalLong.empty"


def format_snapshot_entry(e: SnapshotEntry) -> str:
    line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} lastTimestamp: {e.timestamp} ")
    if e.has_batch:
        line += (f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                 f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
    return line


def dump_producer_snapshot(path: str, out: IO[str], err: IO[str]) -> None:
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as e:
        print(str(e), file=err)
        return
    for e in entries:
        print(format_snapshot_entry(e), file=out)


def dump_txn_index(path: str, out: IO[str]) -> None:
    """Kafka's ``dumpTxnIndex``: one line per aborted transaction."""
    for t in TransactionIndex(path).all_aborted():
        print(f"version: 0 producerId: {t.producer_id} firstOffset: {t.first_offset} lastOffset: {t.last_offset} "
              f"lastStableOffset: {t.last_stable_offset}", file=out)
