"""How a partition's stored order differs from the order records were sent in: lesson 02's reordering counts.

The records are named ``<prefix>-<n>`` with ``n`` the order they were sent in (``seq-0``, ``seq-1``, ...),
and the values come in the order the partition stores them (offset order). Only **first copies**
count for order: a duplicate that shows up later (a retried request that had been written) is not a
reordering.
"""
from __future__ import annotations


def _numbers(values) -> list[int]:
    return [int(v.split("-")[1]) for v in values]


def order_stats(values) -> dict:
    """``stored``, ``duplicates`` (copies beyond the first), ``inversions`` and ``moved ahead`` of stored values.

    ``inversions``: among first copies, places where a record is stored right after one sent later;
    ``moved ahead``: records stored before a record that was sent before them.
    """
    numbers = _numbers(values)
    first = list(dict.fromkeys(numbers))                 # first copies, in stored order
    moved, smallest_after = 0, float("inf")
    for n in reversed(first):                            # stored before a record sent before it?
        moved += n > smallest_after
        smallest_after = min(smallest_after, n)
    return {"stored": len(numbers), "duplicates": len(numbers) - len(first),
            "inversions": sum(1 for a, b in zip(first, first[1:]) if b < a), "moved ahead": moved}


def stored_runs(values, prefix: str = "seq") -> list[str]:
    """The stored order of first copies as runs of consecutive records: ``["seq-100…seq-199", "seq-0…seq-99", ...]``."""
    numbers = list(dict.fromkeys(_numbers(values)))
    runs, start = [], 0
    for i in range(1, len(numbers) + 1):
        if i == len(numbers) or numbers[i] != numbers[i - 1] + 1:
            runs.append(f"{prefix}-{numbers[start]}…{prefix}-{numbers[i - 1]}")
            start = i
    return runs
