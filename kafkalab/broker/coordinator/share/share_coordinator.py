"""The share coordinator: each share-partition's delivery state, kept in ``__share_group_state`` (KIP-932).

Modelled on Kafka 4.x's ``org.apache.kafka.coordinator.share.ShareCoordinator`` (``share-coordinator``
module) and the persister the partition leaders call (``DefaultStatePersister``). A partition leader's
``SharePartition`` (:mod:`kafkalab.broker.server.share.share_partition`) holds the live state; what must
survive a restart is written here, as Kafka's share coordinator does with its RPCs:

* **InitializeShareGroupState**: the first time a group reads a partition, its start offset (from
  ``share.auto.offset.reset``) is written, so it is decided once;
* **WriteShareGroupState**: after an acknowledgement, a release or an expired lock, the share-partition
  start offset (SPSO) and the in-flight state batches (first offset, last offset, state, delivery count);
* **ReadShareGroupState**: a leader that (re)loads a share-partition starts from it.

Records are keyed by (group id, topic id, partition), like Kafka's::

    key    int16 record type (0: ShareSnapshot; 1: ShareUpdate), then
           ShareSnapshotKey v0   group_id: string, topic_id: uuid, partition: int32
    value  int16 version 0, then (flexible) ShareSnapshotValue
           snapshot_epoch: int32, state_epoch: int32, leader_epoch: int32, start_offset: int64,
           create_timestamp: int64, write_timestamp: int64,
           state_batches: [first_offset: int64, last_offset: int64, delivery_state: int8, delivery_count: int16]

``__share_group_state`` has ``share.coordinator.state.topic.num.partitions`` partitions, compacted; a key's
partition is ``abs(hash("group:topicId:partition")) % partitions`` with Java's ``String.hashCode`` (Kafka's
``SharePartitionKey.asCoordinatorKey``). kafkalab simplification: every write is a whole **ShareSnapshot**
(Kafka writes ShareUpdate deltas and a snapshot every
``share.coordinator.snapshot.update.records.per.snapshot``), and the coordinator of a standalone broker
reads and writes its own log directly (no RPCs: they are inter-broker and not served by the mini broker).
The value layout follows Kafka 4.4's ShareSnapshotValue; its tagged field ``DeliveryCompleteCount`` is not
written.
"""
from __future__ import annotations

import base64
import logging
import struct
import time
import uuid

from kafka.protocol.schemas.fields.codecs import UnsignedVarInt32

from ...common.errors import ErrorCode, KafkaError
from ...common.records import Record, build_batch
from ..group.group_metadata_manager import GroupMetadataManager
from ..group.offsets_topic import _Reader, java_string_hash

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"
SHARE_SNAPSHOT, SHARE_UPDATE = 0, 1     # Kafka's CoordinatorRecordType ids of the share coordinator
SEGMENT_BYTES = 104_857_600


def _uuid_bytes(topic_id) -> bytes:
    return topic_id.bytes if isinstance(topic_id, uuid.UUID) else bytes(topic_id)


def snapshot_key(group_id: str, topic_id, partition: int) -> bytes:
    g = group_id.encode()
    return struct.pack(">hh", SHARE_SNAPSHOT, len(g)) + g + _uuid_bytes(topic_id) + struct.pack(">i", partition)


def snapshot_value(state_epoch: int, leader_epoch: int, start_offset: int, batches: list[dict],
                   snapshot_epoch: int = 0, create_ts: int | None = None) -> bytes:
    now = int(time.time() * 1000)
    out = bytearray(struct.pack(">hiiiqqq", 0, snapshot_epoch, state_epoch, leader_epoch, start_offset,
                                now if create_ts is None else create_ts, now))
    out += UnsignedVarInt32.encode(len(batches) + 1)
    for b in batches:
        out += struct.pack(">qqbh", b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
        out += b"\x00"    # no tagged fields
    out += b"\x00"
    return bytes(out)


def decode_key(data: bytes) -> tuple[str, uuid.UUID, int] | None:
    """(group id, topic id, partition) of a ShareSnapshot or ShareUpdate key; None for another record type."""
    (kind,) = struct.unpack_from(">h", data)
    if kind not in (SHARE_SNAPSHOT, SHARE_UPDATE):
        return None
    r = _Reader(data[2:])
    group = r.string()
    topic_id = uuid.UUID(bytes=bytes(r.data[r.pos:r.pos + 16]))
    r.pos += 16
    return group, topic_id, r.int32()


def decode_snapshot_value(data: bytes) -> dict:
    r = _Reader(data, flexible=True)
    version = r.int16()
    if version != 0:
        raise ValueError(f"ShareSnapshotValue version {version} is not known")
    snapshot_epoch, state_epoch, leader_epoch, start = r.int32(), r.int32(), r.int32(), r.int64()
    create_ts, write_ts = r.int64(), r.int64()
    batches = []
    for _ in range(r.array_length()):
        first, last = r.int64(), r.int64()
        (state,) = struct.unpack_from(">b", r.data, r.pos)
        r.pos += 1
        count = r.int16()
        r.skip_tagged_fields()
        batches.append({"first_offset": first, "last_offset": last, "delivery_state": state,
                        "delivery_count": count})
    return {"snapshot_epoch": snapshot_epoch, "state_epoch": state_epoch, "leader_epoch": leader_epoch,
            "start_offset": start, "create_timestamp": create_ts, "write_timestamp": write_ts,
            "state_batches": batches}


def coordinator_key(group_id: str, topic_id, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey()``: ``group:topicId:partition`` (the topic id as Kafka prints
    a Uuid: URL-safe base64 without padding)."""
    topic = base64.urlsafe_b64encode(_uuid_bytes(topic_id)).decode().rstrip("=")
    return f"{group_id}:{topic}:{partition}"


class ShareCoordinator:
    """Kafka's ``ShareCoordinator``: the share-partition states of the ``__share_group_state`` partitions this
    broker leads (a standalone broker: all of them). Partition leaders reach it through
    :class:`kafkalab.broker.server.share.persister.SharePersister` (directly, or with ReadShareGroupState /
    WriteShareGroupState from another broker)."""

    def __init__(self, broker):
        self.broker = broker
        self.in_cluster: bool = broker.in_cluster
        self.states: dict[tuple, dict] = {}       # (group, topic id, partition) -> the last snapshot
        #: cluster mode: the __share_group_state partitions this broker leads (loaded) and is loading
        self.owned_partitions: set[int] = set()
        self.loading_partitions: set[int] = set()
        self.writes = 0

    def start(self) -> None:
        if self.in_cluster:   # loaded partition by partition, as this broker becomes their leader
            self.broker.replica_manager.leadership_listeners.append(self.on_leadership_change)
        else:
            self.load()

    @property
    def num_partitions(self) -> int:
        topic = self.broker.metadata_cache.get(SHARE_STATE_TOPIC)
        return topic.num_partitions if topic is not None else self.broker.config[
            "share.coordinator.state.topic.num.partitions"]

    def partition_for(self, group_id: str, topic_id, partition: int) -> int:
        return abs(java_string_hash(coordinator_key(group_id, topic_id, partition))) % self.num_partitions

    def ensure_topic(self) -> None:
        """Create ``__share_group_state`` the first time a share-partition is initialized (as Kafka does);
        in cluster mode COORDINATOR_NOT_AVAILABLE until the controller has made its leaders."""
        if self.broker.metadata_cache.get(SHARE_STATE_TOPIC) is not None:
            return
        cfg = self.broker.config
        rf = cfg["share.coordinator.state.topic.replication.factor"]
        if not self.in_cluster:
            rf = min(rf, self.broker.live_broker_count)
        try:
            self.broker.admin_manager.create_topic(
                SHARE_STATE_TOPIC, cfg["share.coordinator.state.topic.num.partitions"], rf,
                {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES), "compression.type": "producer"})
        except KafkaError as exc:
            if not (self.in_cluster and exc.code == ErrorCode.TOPIC_ALREADY_EXISTS):
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot create {SHARE_STATE_TOPIC}: "
                                 f"{exc.message}") from None
        if self.in_cluster:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{SHARE_STATE_TOPIC} is being created; its partitions have no leaders yet")
        log.info("created %s with %d partitions", SHARE_STATE_TOPIC,
                 cfg["share.coordinator.state.topic.num.partitions"])

    def _check_status(self, index: int) -> None:
        """Kafka's coordinator runtime: NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS for a partition not loaded."""
        if not self.in_cluster:
            return
        if index in self.loading_partitions:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"{SHARE_STATE_TOPIC}-{index} is loading")
        if index not in self.owned_partitions:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"broker {self.broker.broker_id} does not lead "
                             f"{SHARE_STATE_TOPIC}-{index}")

    # -- WriteShareGroupState / InitializeShareGroupState ------------------------------------

    async def write(self, group_id: str, topic_id, partition: int, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: list[dict]) -> None:
        """Append a ShareSnapshot of the share-partition (KafkaError with a coordinator error code)."""
        key = (group_id, topic_id, partition)
        index = self.partition_for(*key)
        self._check_status(index)
        old = self.states.get(key)
        value = snapshot_value(state_epoch, leader_epoch, start_offset, batches,
                               snapshot_epoch=old["snapshot_epoch"] + 1 if old else 0,
                               create_ts=old["create_timestamp"] if old else None)
        batch = build_batch([Record(0, int(time.time() * 1000), snapshot_key(*key), value, [])])
        rm = self.broker.replica_manager
        try:
            if self.in_cluster:   # acks=all: the state counts once the ISR has it
                await rm.append_records_and_wait(SHARE_STATE_TOPIC, index, batch, -1, timeout_ms=5000)
            else:
                rm.append_records(SHARE_STATE_TOPIC, index, batch, -1)
        except KafkaError as exc:
            code = (ErrorCode.NOT_COORDINATOR if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                    else ErrorCode.COORDINATOR_NOT_AVAILABLE)
            raise KafkaError(code, f"writing to {SHARE_STATE_TOPIC}-{index}: {exc.message}") from None
        self.states[key] = decode_snapshot_value(value)
        self.writes += 1

    # -- ReadShareGroupState ------------------------------------------------------------------

    def read(self, group_id: str, topic_id, partition: int) -> dict | None:
        self._check_status(self.partition_for(group_id, topic_id, partition))
        return self.states.get((group_id, topic_id, partition))

    # -- loading: at start (standalone), or as the leader of a partition (cluster mode) ---------

    def load(self, only_partition: int | None = None) -> int:
        """Replay ``__share_group_state`` (or one partition): the last snapshot of each share-partition."""
        count = 0
        records = GroupMetadataManager(self.broker).read_log(only_partition, topic_name=SHARE_STATE_TOPIC)
        for header, key, value in records:
            if header.is_control or key is None:
                continue
            k = decode_key(key)
            if k is None:
                continue
            if value is None:
                self.states.pop(k, None)
            elif struct.unpack_from(">h", key)[0] == SHARE_SNAPSHOT:
                self.states[k] = decode_snapshot_value(value)
                count += 1
        if count:
            log.info("loaded %d share-partition snapshots from %s%s", count, SHARE_STATE_TOPIC,
                     "" if only_partition is None else f"-{only_partition}")
        return count

    def on_leadership_change(self, topic: str, index: int, is_leader: bool, leader_epoch: int) -> None:
        """ReplicaManager's leadership listener: load a partition's states when this broker becomes its leader,
        forget them when it stops being it (the share coordinator moves with the partition's leadership)."""
        if topic != SHARE_STATE_TOPIC:
            return
        if is_leader:
            if index not in self.owned_partitions and index not in self.loading_partitions:
                self.loading_partitions.add(index)
                self.broker.loop.call_soon(self._load_partition, index)
            return
        self.loading_partitions.discard(index)
        if index in self.owned_partitions:
            self.owned_partitions.discard(index)
            for key in [k for k in self.states if self.partition_for(*k) == index]:
                del self.states[key]

    def _load_partition(self, index: int) -> None:
        if index not in self.loading_partitions:
            return   # resigned before the load ran
        try:
            self.load(only_partition=index)
        except Exception:
            log.exception("loading %s-%d failed", SHARE_STATE_TOPIC, index)
        self.loading_partitions.discard(index)
        self.owned_partitions.add(index)
