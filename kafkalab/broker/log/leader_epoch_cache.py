"""``LeaderEpochFileCache``: which leader epoch wrote which offsets (KIP-101, KIP-279, KIP-320).

Every leader election bumps a partition's *leader epoch*, and every batch a
leader appends carries it (``partitionLeaderEpoch`` in the batch header). The
cache keeps, per epoch, the first offset written in it::

    epoch 0 -> start offset 0
    epoch 1 -> start offset 150     (a new leader took over at offset 150)

so "where does epoch 0 end?" is answered by the start of the next epoch (150),
and for the current epoch by the log end offset. That is what OffsetForLeaderEpoch
answers: a follower (KIP-101) or a consumer (KIP-320) that has offsets from an
older epoch asks, and truncates (or resets) if its log went past that end —
the records it has there were never committed and the new leader does not have them.

On disk it is Kafka's ``leader-epoch-checkpoint`` file in the partition directory,
in Kafka's checkpoint text format: a version line (0), a count line, then one
``<epoch> <start offset>`` line per entry.

A standalone mini broker is always leader at epoch 0, so its cache holds
``0 -> 0``; the cluster mode adds epochs as leaders change. The log keeps it
current: an append assigns its batches' epoch, truncation and a moved log start
offset trim it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True)
class EpochEntry:
    epoch: int
    start_offset: int


def read_leader_epoch_checkpoint(path: str) -> list[EpochEntry] | None:
    """The entries of a ``leader-epoch-checkpoint`` file; None if it is missing or malformed."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines or lines[0].strip() != "0":
            return None
        count = int(lines[1])
        entries = []
        for line in lines[2:2 + count]:
            epoch, offset = line.split()
            entries.append(EpochEntry(int(epoch), int(offset)))
        if len(entries) != count:
            return None
        return entries
    except (OSError, ValueError, IndexError):
        return None


def write_leader_epoch_checkpoint(path: str, entries: list[EpochEntry]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"0\n{len(entries)}\n")
        for e in entries:
            f.write(f"{e.epoch} {e.start_offset}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class LeaderEpochFileCache:
    def __init__(self, directory: str, entries: list[EpochEntry] | None = None):
        self.path = os.path.join(directory, LEADER_EPOCH_CHECKPOINT)
        self.entries: list[EpochEntry] = list(entries or [])

    @classmethod
    def load(cls, directory: str, segments=()) -> "LeaderEpochFileCache":
        """Read the checkpoint; if there is none, rebuild it from the batches' leader epochs."""
        entries = read_leader_epoch_checkpoint(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
        cache = cls(directory, entries)
        if entries is None:
            for seg in segments:
                for _, header in seg.batches_from(0):
                    cache.assign(header.partition_leader_epoch, header.base_offset, flush=False)
            if cache.entries:
                cache.flush()
        return cache

    # -- state ---------------------------------------------------------------

    @property
    def latest_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None

    def assign(self, epoch: int, start_offset: int, flush: bool = True) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a no-op if it already does or later
        epochs are known). Entries that contradict it (a later epoch, or one starting at or after
        it) are dropped, as in Kafka."""
        if epoch < 0:
            return
        latest = self.entries[-1] if self.entries else None
        if latest is not None and (latest.epoch > epoch
                                   or (latest.epoch == epoch and latest.start_offset <= start_offset)):
            return
        self.entries = [e for e in self.entries if e.epoch < epoch and e.start_offset < start_offset]
        self.entries.append(EpochEntry(epoch, start_offset))
        if flush:
            self.flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, as Kafka's ``LeaderEpochFileCache.endOffsetFor``.

        * the latest epoch: the log end offset;
        * an older epoch: the largest known epoch <= it, ending where the next one starts;
        * an epoch older than all known: the requested epoch, ending at the first known start;
        * a newer (unknown) epoch or UNDEFINED: (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        undefined = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
        if requested_epoch == UNDEFINED_EPOCH or not self.entries:
            return undefined
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        higher = next((e for e in self.entries if e.epoch > requested_epoch), None)
        if higher is None:
            return undefined
        floor = [e for e in self.entries if e.epoch <= requested_epoch]
        if not floor:
            return requested_epoch, higher.start_offset
        return floor[-1].epoch, higher.start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: forget epochs starting at or after it."""
        kept = [e for e in self.entries if e.start_offset < end_offset]
        if kept != self.entries:
            self.entries = kept
            self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """The log start offset moved to ``start_offset``: the epoch holding it now starts there."""
        before = [e for e in self.entries if e.start_offset <= start_offset]
        if not before or (len(before) == 1 and before[0].start_offset == start_offset):
            return
        later = [e for e in self.entries if e.start_offset > start_offset]
        kept = [EpochEntry(before[-1].epoch, start_offset)] + later
        if kept != self.entries:
            self.entries = kept
            self.flush()

    def flush(self) -> None:
        write_leader_epoch_checkpoint(self.path, self.entries)

    @classmethod
    def for_log(cls, ulog) -> "LeaderEpochFileCache":
        """The cache of a freshly loaded ``UnifiedLog``, trimmed to what recovery left of the log."""
        cache = cls.load(ulog.dir, ulog.segments)
        cache.truncate_from_end(ulog.log_end_offset)
        cache.truncate_from_start(ulog.log_start_offset)
        return cache
