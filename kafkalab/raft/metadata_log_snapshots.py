"""The snapshot half of ``KafkaMetadataLog`` (Kafka's ``kafka.raft.KafkaMetadataLog`` snapshot methods, KIP-630).

Mixed into :class:`~kafkalab.raft.kafka_metadata_log.KafkaMetadataLog`; its snapshots are the
``<offset>-<epoch>.checkpoint`` files of the partition directory (:mod:`kafkalab.raft.snapshot`).

* **opening**: ``.part`` files (a snapshot being written or fetched when the process died) and
  ``.deleted`` ones are removed, so are snapshots below the log start offset; then
  :meth:`truncate_to_latest_snapshot`: a follower that died after fetching a snapshot but before
  installing it installs it now;
* :meth:`create_new_snapshot` (a controller's own, from its replayed state) /
  :meth:`create_new_snapshot_unchecked` (a follower's, fetched with FetchSnapshot);
* :meth:`validate_offset_and_epoch` (the leader checking a Fetch): VALID, DIVERGING (the follower's log
  went another way: truncate) or SNAPSHOT (it fetches below the log start offset: fetch the latest snapshot);
* :meth:`truncate_to_latest_snapshot` (install): a snapshot past the log's end replaces the whole log,
  which starts again, empty, at the snapshot's end offset;
* :meth:`delete_before_snapshot` and :meth:`maybe_clean` (Kafka's ``maybeClean``): while the log and its
  snapshots are over ``metadata.max.retention.bytes``, or the oldest snapshot is older than
  ``metadata.max.retention.ms``, and there are two snapshots or more: the log start offset moves to the
  next snapshot, segments wholly below it and the older snapshots are deleted. The latest snapshot is
  never deleted.

Simplified: the log start offset is not checkpointed (Kafka's ``log-start-offset-checkpoint``): reopened,
the log starts at its first segment's base offset, which cleaning left at or below a kept snapshot.
"""
from __future__ import annotations

import logging
import os
import time

from .snapshot.records_snapshot_reader import RecordsSnapshotReader
from .snapshot.records_snapshot_writer import RawSnapshotWriter, RecordsSnapshotWriter
from .snapshot.snapshots import OffsetAndEpochId, delete_snapshot, list_snapshots, parse, snapshot_path

log = logging.getLogger(__name__)
VALID, DIVERGING, SNAPSHOT = "VALID", "DIVERGING", "SNAPSHOT"


class MetadataLogSnapshots:
    dir: str

    def _recover_snapshots(self) -> None:
        for name in os.listdir(self.dir):
            parsed = parse(name)
            if parsed is not None and (parsed[1] != "frozen" or parsed[0].offset < self.log.log_start_offset):
                os.remove(os.path.join(self.dir, name))
                log.info("%s: deleted unneeded snapshot file %s", self.dir, name)
        self.snapshots: dict[OffsetAndEpochId, str] = list_snapshots(self.dir)
        self.truncate_to_latest_snapshot()

    # -- ids -------------------------------------------------------------------------------------

    def latest_snapshot_id(self) -> OffsetAndEpochId | None:
        return max(self.snapshots) if self.snapshots else None

    def earliest_snapshot_id(self) -> OffsetAndEpochId | None:
        return min(self.snapshots) if self.snapshots else None

    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    # -- writing ----------------------------------------------------------------------------------

    def create_new_snapshot(self, snapshot_id: OffsetAndEpochId,
                            last_contained_log_timestamp: int) -> RecordsSnapshotWriter | None:
        """A writer for a snapshot of the state up to ``snapshot_id.offset`` (exclusive); None if that snapshot
        exists already. ValueError if the id is outside the log."""
        if not self.start_offset <= snapshot_id.offset <= self.end_offset:
            raise ValueError(f"snapshot {snapshot_id} is outside the log [{self.start_offset}, {self.end_offset}]")
        if snapshot_id in self.snapshots:
            return None
        return RecordsSnapshotWriter(self.dir, snapshot_id, last_contained_log_timestamp)

    def create_new_snapshot_unchecked(self, snapshot_id: OffsetAndEpochId) -> RawSnapshotWriter | None:
        """A writer for a snapshot fetched from the leader (its id may be past this log's end)."""
        if snapshot_id in self.snapshots:
            return None
        return RawSnapshotWriter(self.dir, snapshot_id)

    def on_snapshot_frozen(self, snapshot_id: OffsetAndEpochId) -> None:
        self.snapshots[snapshot_id] = snapshot_path(self.dir, snapshot_id)

    # -- reading ----------------------------------------------------------------------------------

    def read_snapshot(self, snapshot_id: OffsetAndEpochId) -> RecordsSnapshotReader | None:
        path = self.snapshots.get(snapshot_id)
        return RecordsSnapshotReader(path) if path else None

    def snapshot_size(self, snapshot_id: OffsetAndEpochId) -> int:
        return os.path.getsize(self.snapshots[snapshot_id])

    def read_snapshot_chunk(self, snapshot_id: OffsetAndEpochId, position: int, max_bytes: int) -> bytes:
        with open(self.snapshots[snapshot_id], "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    # -- the leader's check of a Fetch -------------------------------------------------------------

    def validate_offset_and_epoch(self, offset: int, epoch: int):
        """(VALID, None) | (DIVERGING, this log's OffsetAndEpoch for the fetcher to truncate to) | (SNAPSHOT, the
        latest snapshot id): Kafka's ``validateOffsetAndEpoch``."""
        if self.start_offset == 0 and offset == 0 and epoch == 0:
            return VALID, None     # an empty follower of a log never cleaned
        earliest = self.earliest_snapshot_id()
        if earliest is not None and (offset < self.start_offset or (offset == self.start_offset and
                                     epoch != earliest.epoch) or epoch < earliest.epoch):
            return SNAPSHOT, self.latest_snapshot_id()
        end = self.end_offset_for_epoch(epoch)
        if end.epoch != epoch or end.offset < offset:
            return DIVERGING, end
        return VALID, None

    # -- installing, cleaning ----------------------------------------------------------------------

    def truncate_to_latest_snapshot(self) -> bool:
        """Replace the log by the latest snapshot when that is past the log (Kafka's ``truncateToLatestSnapshot``)."""
        latest = self.latest_snapshot_id()
        cached = self.log.leader_epoch_cache.latest_epoch
        latest_epoch = cached if cached is not None else 0
        if latest is None or not (latest.epoch > latest_epoch or
                                  (latest.epoch == latest_epoch and latest.offset > self.end_offset)):
            return False
        self.log.truncate_fully_and_start_at(latest.offset)
        self._forget_snapshots_before(latest, "the log was replaced by it")
        return True

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpochId, reason: str = "") -> bool:
        """Move the log start offset to ``snapshot_id`` (one of the snapshots, not past the latest), delete the
        segments wholly below it and the older snapshots."""
        latest = self.latest_snapshot_id()
        if latest is None or snapshot_id not in self.snapshots or not \
                self.start_offset < snapshot_id.offset <= latest.offset or snapshot_id.offset > self.end_offset:
            return False
        self.log.log_start_offset = snapshot_id.offset
        self.log.leader_epoch_cache.truncate_from_start(snapshot_id.offset)
        doomed = [s for s in self.log.segments[:-1] if s.next_offset <= snapshot_id.offset]
        self.log.delete_segments(doomed, f"below the log start offset {snapshot_id.offset} (snapshot)")
        self._forget_snapshots_before(snapshot_id, reason)
        self.segments_deleted = getattr(self, "segments_deleted", 0) + len(doomed)
        return True

    def _forget_snapshots_before(self, snapshot_id: OffsetAndEpochId, reason: str) -> None:
        for old in [s for s in self.snapshots if s < snapshot_id]:
            del self.snapshots[old]
            delete_snapshot(self.dir, old)
            log.info("%s: deleted snapshot %s: %s", self.dir, old, reason)

    def maybe_clean(self, retention_bytes: int, retention_ms: int, now_ms: int | None = None) -> bool:
        """Kafka's ``maybeClean``: by size (``metadata.max.retention.bytes``), then by age (``.ms``); -1 disables."""
        cleaned = False
        if retention_bytes >= 0:
            sizes = {s: os.path.getsize(p) for s, p in self.snapshots.items()}
            total = sum(sizes.values())

            def over_size(snapshot_id) -> str | None:
                nonlocal total
                if self.log.size + total > retention_bytes:
                    total -= sizes[snapshot_id]
                    return f"log and snapshots hold more than metadata.max.retention.bytes={retention_bytes}"
                return None
            cleaned |= self._clean_snapshots(over_size)
        if retention_ms >= 0:
            now = int(time.time() * 1000) if now_ms is None else now_ms

            def too_old(snapshot_id) -> str | None:
                timestamp = self.read_snapshot(snapshot_id).last_contained_log_timestamp
                if now - timestamp > retention_ms:
                    return f"older than metadata.max.retention.ms={retention_ms}"
                return None
            cleaned |= self._clean_snapshots(too_old)
        return cleaned

    def _clean_snapshots(self, should_clean) -> bool:
        ids = sorted(self.snapshots)
        cleaned = False
        for snapshot_id, next_id in zip(ids, ids[1:]):
            reason = should_clean(snapshot_id)
            if reason is None or not self.delete_before_snapshot(next_id, reason):
                return cleaned
            cleaned = True
        return cleaned
