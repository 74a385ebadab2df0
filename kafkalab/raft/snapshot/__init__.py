"""KRaft snapshots of ``__cluster_metadata`` (Kafka's ``org.apache.kafka.snapshot``, KIP-630, which
lives in Kafka's raft module as this package lives in :mod:`kafkalab.raft`).

A snapshot is the metadata state at an offset, written as records: ``<end offset>-<epoch>.checkpoint``
in the partition directory (:mod:`.snapshots`), record batches that open with a SnapshotHeader control
record and close with a SnapshotFooter (:mod:`.records_snapshot_writer`, :mod:`.records_snapshot_reader`).
"""
from .records_snapshot_reader import RecordsSnapshotReader, SnapshotFormatError
from .records_snapshot_writer import RecordsSnapshotWriter
from .snapshots import OffsetAndEpochId, snapshot_path

__all__ = ["RecordsSnapshotReader", "RecordsSnapshotWriter", "SnapshotFormatError", "OffsetAndEpochId",
           "snapshot_path"]
