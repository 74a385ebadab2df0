"""Offset checkpoint files: Kafka's ``OffsetCheckpointFile`` (``kafka.server.checkpoints``).

A broker keeps a few per-partition offsets in small text files in each log
directory, rewritten atomically (write ``.tmp``, fsync, rename): the high
watermarks (``replication-offset-checkpoint``), the log start offsets
(``log-start-offset-checkpoint``), the recovery points
(``recovery-point-offset-checkpoint``) and the cleaner's first dirty offsets
(``cleaner-offset-checkpoint``). The format is Kafka's::

    0              <- version
    2              <- number of entries
    orders 0 42    <- topic partition offset
    orders 1 17
"""
from __future__ import annotations

import os


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """Read a Kafka offset checkpoint file; a missing or malformed one reads as empty."""
    if not os.path.exists(path):
        return {}
    out = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines or lines[0].strip() != "0":
            return {}
        count = int(lines[1])
        for line in lines[2:2 + count]:
            topic, part, offset = line.split()
            out[(topic, int(part))] = int(offset)
    except (ValueError, IndexError):
        return {}
    return out


def write_checkpoint(path: str, offsets: dict[tuple[str, int], int]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"0\n{len(offsets)}\n")
        for (topic, part), offset in sorted(offsets.items()):
            f.write(f"{topic} {part} {offset}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
