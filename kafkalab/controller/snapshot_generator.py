"""``SnapshotGenerator`` and ``SnapshotEmitter``: KRaft snapshots of the replayed metadata state (Kafka's
``org.apache.kafka.image.publisher.SnapshotGenerator`` / ``SnapshotEmitter``, KIP-630).

Every controller (and every KRaft broker) writes its own snapshots from the state it has replayed —
no snapshot is sent around except to a replica that fell behind the leader's log start (FetchSnapshot).

* **when** (:class:`SnapshotGenerator`): after a round of committed records has been replayed, if
  ``metadata.log.max.record.bytes.between.snapshots`` bytes of committed batches arrived since the last
  snapshot, or ``metadata.log.max.snapshot.interval.ms`` has passed since it and something arrived;
* **what** (:func:`snapshot_records`, the image written as records, in the order of Kafka's
  ``MetadataImage.write``): the FeatureLevelRecords (``metadata.version`` first), a RegisterBrokerRecord
  per broker (its current fenced / controlled-shutdown state inside), per topic its TopicRecord and
  PartitionRecords, the topics' ConfigRecords, then those of BROKER and GROUP resources, the ProducerIdsRecord
  (broker id -1, as Kafka's ``ProducerIdsImage`` writes it), an AccessControlEntryRecord per ACL (with its id), a
  UserScramCredentialRecord per SCRAM credential;
* **the id**: (the replayed offset, the epoch of the last record it covers), ``lastContainedLogTimestamp``
  that record's batch's timestamp;
* after each snapshot the log is cleaned as retention allows (``metadata.max.retention.bytes`` / ``.ms``,
  :meth:`~kafkalab.raft.metadata_log_snapshots.MetadataLogSnapshots.maybe_clean`).

**Loading** (:func:`load_snapshot`): the state is emptied and the snapshot's records replayed, as Kafka
replays a snapshot's records with the offset of its last contained record; then the log after it.

Simplified: no RegisterControllerRecord, quotas or delegation tokens (the mini controller
has none of them); a partition's directories are written as the controller would assign them now.
"""
from __future__ import annotations

import logging
import time
import uuid

from ..broker.common.records import iter_batches
from ..raft.snapshot.snapshots import OffsetAndEpochId
from ..metadata.api_message_and_version import ApiMessageAndVersion
from .replication_control_manager import PARTITION_RECORD_VERSION, TOPIC_RESOURCE
from .cluster_control_manager import REGISTER_BROKER_RECORD_VERSION
from .feature_control_manager import METADATA_VERSION

log = logging.getLogger(__name__)

#: Kafka's defaults: 20 MiB of committed batches, 1 hour; retention 100 MiB, 7 days (docs/cluster.md)
MAX_BYTES_BETWEEN_SNAPSHOTS = 20 * 1024 * 1024
MAX_SNAPSHOT_INTERVAL_MS = 3_600_000
RETENTION_BYTES = 100 * 1024 * 1024
RETENTION_MS = 604_800_000
#: what a controller process takes (--config name=value) -> SnapshotGenerator keyword
SNAPSHOT_CONFIGS = {"metadata.log.max.record.bytes.between.snapshots": "max_bytes_between_snapshots",
                    "metadata.log.max.snapshot.interval.ms": "max_snapshot_interval_ms",
                    "metadata.max.retention.bytes": "retention_bytes", "metadata.max.retention.ms": "retention_ms"}


def snapshot_records(state) -> list[ApiMessageAndVersion]:
    """The replayed state (``features``, ``cluster``, ``replication``, ``producer_ids``) as records."""
    out = []
    levels = sorted(state.features.finalized.items(), key=lambda kv: (kv[0] != METADATA_VERSION, kv[0]))
    out += [ApiMessageAndVersion("FeatureLevelRecord", 0, {"name": n, "feature_level": v}) for n, v in levels]
    for broker_id, r in sorted(state.cluster.registrations.items()):
        out.append(ApiMessageAndVersion("RegisterBrokerRecord", REGISTER_BROKER_RECORD_VERSION, {
            "broker_id": broker_id, "is_migrating_zk_broker": False, "incarnation_id": uuid.UUID(r.incarnation_id),
            "broker_epoch": r.epoch, "rack": r.rack, "fenced": r.fenced,
            "in_controlled_shutdown": r.in_controlled_shutdown, "log_dirs": list(r.log_dirs),
            "end_points": [{"name": e["name"], "host": e["host"], "port": e["port"],
                            "security_protocol": e["securityProtocol"]} for e in r.listeners],
            "features": [{"name": f["name"], "min_supported_version": f["minSupportedVersion"],
                          "max_supported_version": f["maxSupportedVersion"]} for f in r.features]}))
    replication = state.replication
    topics = sorted(replication.topics.values(), key=lambda t: t.name)
    for t in topics:
        out.append(ApiMessageAndVersion("TopicRecord", 0, {"name": t.name, "topic_id": t.id}))
        for index, p in sorted(t.partitions.items()):
            out.append(ApiMessageAndVersion("PartitionRecord", PARTITION_RECORD_VERSION, {
                "partition_id": index, "topic_id": t.id, "replicas": list(p.replicas), "isr": list(p.isr),
                "removing_replicas": [], "adding_replicas": [], "leader": p.leader, "leader_recovery_state": 0,
                "leader_epoch": p.leader_epoch, "partition_epoch": p.partition_epoch,
                "directories": [replication._default_dir(b) for b in p.replicas]}))
    for t in topics:
        out += [ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": TOPIC_RESOURCE, "resource_name": t.name,
                                                         "name": n, "value": v}) for n, v in sorted(t.configs.items())]
    configuration = getattr(state, "configuration", None)      # BROKER and GROUP resources
    for (kind, name), configs in sorted((configuration.config_data if configuration else {}).items()):
        out += [ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": kind, "resource_name": name, "name": n,
                                                         "value": v}) for n, v in sorted(configs.items())]
    if state.producer_ids.next_producer_id > 0:
        out.append(ApiMessageAndVersion("ProducerIdsRecord", 0, {
            "broker_id": -1, "broker_epoch": -1, "next_producer_id": state.producer_ids.next_producer_id}))
    acls = getattr(state, "acls", None)     # AclsImage before ScramImage, as MetadataImage.write has them
    if acls is not None:
        out += acls.snapshot_records()
    scram = getattr(state, "scram", None)
    if scram is not None:
        out += scram.snapshot_records()
    return out


def load_snapshot(state, reader, replay_record) -> int:
    """Empty ``state`` and replay the snapshot ``reader`` holds; returns the snapshot's end offset."""
    state.features.finalized.clear()
    state.cluster.registrations.clear()
    state.replication.topics.clear()
    state.replication.topics_by_name.clear()
    state.producer_ids.next_producer_id = 0
    if getattr(state, "scram", None) is not None:
        state.scram.credentials.clear()
    if getattr(state, "acls", None) is not None:
        state.acls.clear()
    if getattr(state, "configuration", None) is not None:
        state.configuration.config_data.clear()
    last_contained = reader.snapshot_id.offset - 1
    for record in reader.records:
        replay_record(state, last_contained, record)
    return reader.snapshot_id.offset


def batch_info(metadata_log, start: int, end: int) -> tuple[int, int, int]:
    """(bytes of the batches holding offsets [start, end), epoch and timestamp of the one holding end - 1)."""
    size, epoch, timestamp, offset = 0, 0, -1, start
    while offset < end:
        data = metadata_log.read(offset, 1 << 20)
        moved = False
        for _, header in iter_batches(data, strict=False):
            if header.base_offset >= end:
                return size, epoch, timestamp
            if header.last_offset >= offset:
                size += header.size
                epoch, timestamp = header.partition_leader_epoch, header.max_timestamp
                moved = True
            offset = max(offset, header.last_offset + 1)
        if not moved:
            break
    return size, epoch, timestamp


class SnapshotGenerator:
    def __init__(self, max_bytes_between_snapshots: int = MAX_BYTES_BETWEEN_SNAPSHOTS,
                 max_snapshot_interval_ms: int = MAX_SNAPSHOT_INTERVAL_MS, retention_bytes: int = RETENTION_BYTES,
                 retention_ms: int = RETENTION_MS):
        self.max_bytes = max_bytes_between_snapshots
        self.max_interval_s = max_snapshot_interval_ms / 1000
        self.retention_bytes = retention_bytes
        self.retention_ms = retention_ms
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time = time.monotonic()
        #: one entry per snapshot written: id, records, bytes, seconds, why; and one per snapshot loaded
        self.written: list[dict] = []
        self.loaded: list[dict] = []

    def load_latest(self, state, metadata_log, replay_record) -> int | None:
        """Load the log's latest snapshot into ``state``; its end offset (None without one)."""
        snapshot_id = metadata_log.latest_snapshot_id()
        if snapshot_id is None:
            return None
        started = time.monotonic()
        reader = metadata_log.read_snapshot(snapshot_id)
        end = load_snapshot(state, reader, replay_record)
        self.loaded.append({"snapshot_id": snapshot_id, "records": len(reader.records), "bytes": reader.size,
                            "seconds": round(time.monotonic() - started, 4)})
        log.info("%s: loaded snapshot %s (%d records)", metadata_log.dir, snapshot_id, len(reader.records))
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time = time.monotonic()
        return end

    def after_replay(self, state, metadata_log, start: int, end: int) -> OffsetAndEpochId | None:
        """Records [start, end) were replayed into ``state``: write a snapshot at ``end`` if it is time."""
        if end <= start:
            return None
        size, epoch, timestamp = batch_info(metadata_log, start, end)
        self.bytes_since_last_snapshot += size
        now = time.monotonic()
        if self.bytes_since_last_snapshot >= self.max_bytes:
            why = f"{self.bytes_since_last_snapshot} bytes since the last snapshot"
        elif self.max_interval_s > 0 and now - self.last_snapshot_time >= self.max_interval_s:   # 0: never by time
            why = f"{now - self.last_snapshot_time:.1f} s since the last snapshot"
        else:
            return None
        return self.emit(state, metadata_log, OffsetAndEpochId(end, epoch), timestamp, why)

    def emit(self, state, metadata_log, snapshot_id: OffsetAndEpochId, timestamp: int, why: str = ""):
        """Kafka's ``SnapshotEmitter``: write the state as snapshot ``snapshot_id``, then clean the log."""
        started = time.monotonic()
        writer = metadata_log.create_new_snapshot(snapshot_id, timestamp)
        if writer is None:
            return None
        try:
            records = snapshot_records(state)
            writer.append([r.encode() for r in records])
            size = writer.freeze()
        finally:
            writer.close()
        metadata_log.on_snapshot_frozen(snapshot_id)
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time = time.monotonic()
        self.written.append({"snapshot_id": snapshot_id, "records": len(records), "bytes": size,
                             "seconds": round(time.monotonic() - started, 4), "why": why})
        log.info("%s: wrote snapshot %s (%d records, %d bytes): %s", metadata_log.dir, snapshot_id, len(records),
                 size, why)
        metadata_log.maybe_clean(self.retention_bytes, self.retention_ms)
        return snapshot_id
