"""``Snapshots``: where a KRaft snapshot lives and what its file names say (Kafka's
``org.apache.kafka.snapshot.Snapshots``).

* ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``: a finished (*frozen*) snapshot; the end
  offset is the first offset it does **not** cover, the epoch that of the last record it covers;
* ``....checkpoint.part``: one being written (or fetched); renamed when complete, so a reader never
  sees half a snapshot, and deleted at start-up (a crash left it);
* ``....checkpoint.deleted``: one marked for deletion (the log was cleaned past it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = SUFFIX + ".part"
DELETE_SUFFIX = SUFFIX + ".deleted"


@dataclass(frozen=True, order=True)
class OffsetAndEpochId:
    """A snapshot id: (end offset, epoch), ordered offset first as Kafka's snapshot ids are."""

    offset: int
    epoch: int


def filename(snapshot_id: OffsetAndEpochId) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}"


def snapshot_path(log_dir: str, snapshot_id: OffsetAndEpochId) -> str:
    return os.path.join(log_dir, filename(snapshot_id) + SUFFIX)


def partial_path(log_dir: str, snapshot_id: OffsetAndEpochId) -> str:
    return os.path.join(log_dir, filename(snapshot_id) + PARTIAL_SUFFIX)


def parse(name: str) -> tuple[OffsetAndEpochId, str] | None:
    """(id, kind) for a snapshot file name, kind one of "frozen", "partial", "deleted"; None for any other file."""
    name = os.path.basename(name)
    for suffix, kind in ((PARTIAL_SUFFIX, "partial"), (DELETE_SUFFIX, "deleted"), (SUFFIX, "frozen")):
        if name.endswith(suffix):
            stem = name[:-len(suffix)]
            offset, sep, epoch = stem.partition("-")
            if sep and len(offset) == 20 and len(epoch) == 10 and offset.isdigit() and epoch.isdigit():
                return OffsetAndEpochId(int(offset), int(epoch)), kind
            return None
    return None


def list_snapshots(log_dir: str) -> dict[OffsetAndEpochId, str]:
    """The frozen snapshots in ``log_dir``: id -> path."""
    out = {}
    for name in os.listdir(log_dir) if os.path.isdir(log_dir) else ():
        parsed = parse(name)
        if parsed is not None and parsed[1] == "frozen":
            out[parsed[0]] = os.path.join(log_dir, name)
    return dict(sorted(out.items()))


def delete_snapshot(log_dir: str, snapshot_id: OffsetAndEpochId) -> None:
    """Mark for deletion (rename to ``.checkpoint.deleted``), then delete: Kafka waits ``file.delete.delay.ms``
    so that open readers finish; here a reader holds the bytes it read, so the file goes at once."""
    path = snapshot_path(log_dir, snapshot_id)
    marked = os.path.join(log_dir, filename(snapshot_id) + DELETE_SUFFIX)
    if os.path.exists(path):
        os.replace(path, marked)
    if os.path.exists(marked):
        os.remove(marked)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
