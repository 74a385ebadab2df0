"""``KafkaMetadataLog``: the ``__cluster_metadata-0`` partition under a node's ``metadata.log.dir``.

It is an ordinary log — the mini broker's :class:`~kafkalab.broker.log.log.UnifiedLog`, its segments
in Kafka's format, its ``leader-epoch-checkpoint`` — used by Raft in two ways (Kafka's
``KafkaMetadataLog`` over ``UnifiedLog``):

* the **leader** appends batches stamped with its epoch (the *partition leader epoch* of the batch
  header), at the log end offset; each append is fsynced before it counts towards the high
  watermark, as Kafka flushes before it counts the leader's own offset;
* a **follower** appends what it fetched, keeping the leader's offsets and epochs, and, when the
  leader answers a Fetch with a *diverging epoch*, truncates its log to where it last agreed with
  the leader (:meth:`truncate_to_end_offset`).

``end_offset_for_epoch`` (the leader epoch cache) is what both need: the leader to check a
follower's (fetch offset, last fetched epoch), a voter to compare a candidate's log with its own.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ..broker.common.records import CONTROL_MASK, Record, build_batch, iter_records
from ..broker.log.log import UnifiedLog
from ..broker.server.config import BrokerConfig, LogConfig
from .metadata_log_snapshots import MetadataLogSnapshots
from .raft_messages import METADATA_PARTITION, METADATA_TOPIC


@dataclass(frozen=True, order=True)
class OffsetAndEpoch:
    """Kafka's ``OffsetAndEpoch``; compared epoch first, then offset (which log is more up to date)."""

    epoch: int
    offset: int


class KafkaMetadataLog(MetadataLogSnapshots):
    def __init__(self, metadata_log_dir: str, segment_bytes: int | None = None):
        self.dir = os.path.join(metadata_log_dir, f"{METADATA_TOPIC}-{METADATA_PARTITION}")
        overrides = {"segment.bytes": segment_bytes} if segment_bytes else None   # metadata.log.segment.bytes
        self.log = UnifiedLog(self.dir, METADATA_TOPIC, METADATA_PARTITION, LogConfig(BrokerConfig(), overrides))
        self._recover_snapshots()   # snapshots: see metadata_log_snapshots.py

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch in the log; for an empty log the epoch of the snapshot it starts at, or 0."""
        latest = self.log.leader_epoch_cache.latest_epoch
        if latest is not None:
            return latest
        snapshot = self.latest_snapshot_id()
        return snapshot.epoch if snapshot is not None and snapshot.offset == self.end_offset else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch <= ``epoch`` in this log and the offset where it ends (where the next epoch
        starts, or the log end offset). An epoch older than every one known ends where the first starts;
        an empty log answers (0, its end offset)."""
        entries = self.log.leader_epoch_cache.entries
        if not entries:
            return OffsetAndEpoch(self.last_fetched_epoch, self.end_offset)
        earliest = self.earliest_snapshot_id()
        if earliest is not None and epoch < entries[0].epoch and entries[0].start_offset == earliest.offset:
            return OffsetAndEpoch(earliest.epoch, earliest.offset)   # older than the log: the snapshot it starts at
        floor = [e for e in entries if e.epoch <= epoch]
        if not floor:
            return OffsetAndEpoch(epoch, entries[0].start_offset)
        later = [e for e in entries if e.epoch > floor[-1].epoch]
        return OffsetAndEpoch(floor[-1].epoch, later[0].start_offset if later else self.end_offset)

    # -- writing ------------------------------------------------------------------------------

    def append_as_leader(self, records: list[tuple[bytes | None, bytes]], epoch: int, control: bool = False) -> int:
        """Append one batch of (key, value) records in ``epoch``; fsynced. Returns its first offset."""
        base = self.end_offset
        now = int(time.time() * 1000)
        batch = build_batch([Record(base + i, now, key, value, []) for i, (key, value) in enumerate(records)],
                            partition_leader_epoch=epoch, attributes_extra=CONTROL_MASK if control else 0)
        self.log.append_as_follower(batch)
        self.log.flush()
        return base

    def append_as_follower(self, records: bytes) -> int:
        """Append fetched batches as they are (the leader's offsets and epochs); fsynced. Returns the count."""
        info = self.log.append_as_follower(records)
        self.log.flush()
        return info.records_count

    def truncate_to_end_offset(self, diverging: OffsetAndEpoch) -> int:
        """Cut the log where it last agreed with the leader, which answered with ``diverging`` (its end offset
        for the largest epoch <= the one this log last fetched): Kafka's ``truncateToEndOffset``.
        Returns the new log end offset."""
        local = self.end_offset_for_epoch(diverging.epoch)
        if local.epoch == diverging.epoch:
            offset = min(local.offset, diverging.offset)
        else:
            offset = local.offset
        self.log.truncate_to(offset)
        self.log.flush()
        return self.end_offset

    def read(self, offset: int, max_bytes: int) -> bytes:
        return self.log.read(offset, max_bytes)

    def close(self) -> None:
        self.log.close()

    # -- looking at it (tests, notebooks) -------------------------------------------------------

    def batches(self) -> list[dict]:
        """Every batch: base and last offset, partition leader epoch, control or not, record keys and values."""
        out = []
        for seg in self.log.segments:
            for pos, header in seg.batches_from(0):
                recs = list(iter_records(seg.read_at(pos, header.size)))
                out.append({"base_offset": header.base_offset, "last_offset": header.last_offset,
                            "epoch": header.partition_leader_epoch, "control": header.is_control,
                            "keys": [r.key for r in recs], "values": [r.value for r in recs]})
        return out
