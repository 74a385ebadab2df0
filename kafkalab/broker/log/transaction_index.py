"""``TransactionIndex``: the aborted transactions of a segment, in ``<base offset>.txnindex``.

Kafka's ``TransactionIndex`` (storage/.../log/TransactionIndex.java). When an ABORT marker is
appended, the transaction it ends is recorded in the ``.txnindex`` of the segment the marker went
to, as an ``AbortedTxn`` of 34 bytes::

    version (int16, 0)  producerId (int64)  firstOffset (int64)  lastOffset (int64)  lastStableOffset (int64)

``firstOffset`` is the transaction's first record in this partition, ``lastOffset`` its marker's
offset, ``lastStableOffset`` the partition's last stable offset once the marker is written. A
``read_committed`` Fetch lists the aborted transactions overlapping what it returns, and the
consumer drops their records (Kafka's ``UnifiedLog.collectAbortedTransactions``).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size   # 34
CURRENT_VERSION = 0


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)


class TransactionIndex:
    def __init__(self, path: str):
        self.path = path

    def append(self, txn: AbortedTxn) -> None:
        with open(self.path, "ab") as f:
            f.write(txn.encode())

    def all_aborted(self) -> list[AbortedTxn]:
        """Every entry (a torn last entry, from a crash mid-write, is ignored)."""
        if not os.path.exists(self.path):
            return []
        with open(self.path, "rb") as f:
            data = f.read()
        out = []
        for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != CURRENT_VERSION:
                break
            out.append(AbortedTxn(pid, first, last, lso))
        return out

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of transactions whose marker is at or after ``offset``."""
        kept = [t for t in self.all_aborted() if t.last_offset < offset]
        if not kept:
            if os.path.exists(self.path):
                os.remove(self.path)
            return
        with open(self.path, "wb") as f:
            f.write(b"".join(t.encode() for t in kept))
