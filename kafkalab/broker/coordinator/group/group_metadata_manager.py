"""``GroupMetadataManager``: groups and committed offsets, persisted in ``__consumer_offsets``.

As in Kafka (``kafka.coordinator.group.GroupMetadataManager``), the coordinator
keeps every group in memory and writes each change as a record to the
internal compacted topic ``__consumer_offsets``:

* OffsetCommit writes one record per partition, key (group, topic, partition);
  TxnOffsetCommit writes the same records in a *transactional* batch of the producer, which
  count from the transaction's COMMIT marker on (an ABORT marker voids them; :meth:`load`
  keeps those of a transaction still open pending);
* a finished rebalance (the leader's SyncGroup) and a group becoming Empty
  write the group's metadata, key (group);
* DeleteGroups and offset expiry write tombstones (null values);
* a KIP-848 consumer group is written as records of types 3-8
  (:mod:`.consumer_group_records`), replayed by :meth:`load_all`.

The topic is created on first use (FindCoordinator, or a commit) with
``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
replicas and ``cleanup.policy=compact``; a group lives in partition
``abs(groupId.hashCode()) % offsets.topic.num.partitions``. When the broker
starts, :meth:`load` replays the topic from its log start: the latest record
per key wins, a tombstone deletes — exactly the state compaction would keep.
So committed offsets (and groups' last generation) survive a restart.

Record layouts are in :mod:`kafkalab.broker.coordinator.group.offsets_topic`.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from ...common.records import (COMMIT, TRANSACTIONAL_MASK, Record, build_batch, control_record_type, iter_batches,
                               iter_records)
from .consumer_group_records import RECORD_TYPES, record_type
from .consumer_group_records import decode as decode_consumer_group_record
from .group_metadata import GroupMetadata, GroupState, MemberMetadata, now_ms
from .offsets_topic import (OFFSETS_TOPIC, GroupMetadataKey, GroupMetadataValue, MemberRecord, OffsetAndMetadata,
                            OffsetCommitKey, decode_key, decode_value, group_metadata_key, group_metadata_value,
                            offset_commit_key, offset_commit_value, partition_for)

log = logging.getLogger(__name__)

#: offsets.topic.segment.bytes: Kafka keeps the offsets topic's segments small so compaction runs often
OFFSETS_TOPIC_SEGMENT_BYTES = 104_857_600
#: offsets.commit.timeout.ms: how long a commit waits for the ISR of its __consumer_offsets partition
OFFSET_COMMIT_TIMEOUT_MS = 5000


class GroupMetadataManager:
    def __init__(self, broker):
        self.broker = broker

    @property
    def num_partitions(self) -> int:
        topic = self.broker.metadata_cache.get(OFFSETS_TOPIC)
        return topic.num_partitions if topic is not None else self.broker.config["offsets.topic.num.partitions"]

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def ensure_offsets_topic(self) -> None:
        """Create ``__consumer_offsets`` the first time a group needs it (as Kafka does on FindCoordinator).

        In cluster mode it is written to ZooKeeper with ``offsets.topic.replication.factor`` replicas,
        not capped: with fewer brokers registered, INVALID_REPLICATION_FACTOR (FindCoordinator then says
        COORDINATOR_NOT_AVAILABLE); and it exists only once the controller's UpdateMetadata says so,
        so this raises COORDINATOR_NOT_AVAILABLE until then."""
        if self.broker.metadata_cache.get(OFFSETS_TOPIC) is not None:
            return
        cfg = self.broker.config
        in_cluster = self.broker.in_cluster
        rf = cfg["offsets.topic.replication.factor"]
        if not in_cluster:
            rf = min(rf, self.broker.live_broker_count)
        try:
            self.broker.admin_manager.create_topic(
                OFFSETS_TOPIC, cfg["offsets.topic.num.partitions"], rf,
                {"cleanup.policy": "compact", "segment.bytes": str(OFFSETS_TOPIC_SEGMENT_BYTES),
                 "compression.type": "producer"})
        except KafkaError as exc:
            if not (in_cluster and exc.code == ErrorCode.TOPIC_ALREADY_EXISTS):
                raise
        if in_cluster:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{OFFSETS_TOPIC} is being created; its partitions have no leaders yet")
        log.info("created %s with %d partitions", OFFSETS_TOPIC, cfg["offsets.topic.num.partitions"])

    # -- writing ----------------------------------------------------------------

    def _batch(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> tuple[int, bytes]:
        try:
            self.ensure_offsets_topic()
        except KafkaError as exc:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot create {OFFSETS_TOPIC}: {exc.message}")
        ts = now_ms()
        return self.partition_for(group_id), build_batch([Record(i, ts, k, v, []) for i, (k, v) in enumerate(records)])

    async def store_offsets_and_wait(self, group: GroupMetadata,
                                     offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        """Cluster mode: write the commit with acks=all semantics, as Kafka's coordinator does: the
        commit counts once every in-sync replica of the ``__consumer_offsets`` partition has it."""
        records = [(offset_commit_key(group.group_id, t, p), offset_commit_value(om)) for (t, p), om in offsets.items()]
        if records:
            partition, batch = self._batch(group.group_id, records)
            try:
                await self.broker.replica_manager.append_records_and_wait(
                    OFFSETS_TOPIC, partition, batch, -1, timeout_ms=OFFSET_COMMIT_TIMEOUT_MS)
            except KafkaError as exc:
                raise self._group_error(exc, partition) from None
        group.offsets.update(offsets)

    @staticmethod
    def _group_error(exc: KafkaError, partition: int) -> KafkaError:
        """Kafka's GroupMetadataManager maps log errors to what a group client understands."""
        if exc.code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
        elif exc.code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            code = ErrorCode.NOT_COORDINATOR
        elif exc.code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
            code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        else:
            code = ErrorCode.UNKNOWN_SERVER_ERROR
        return KafkaError(code, f"writing to {OFFSETS_TOPIC}-{partition}: {exc.message}")

    def _append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        """Append (key, value) records for ``group_id`` as one batch; raise KafkaError with a group error code."""
        if not records:
            return
        partition, batch = self._batch(group_id, records)
        try:
            self.broker.replica_manager.append_records(OFFSETS_TOPIC, partition, batch, -1)
        except KafkaError as exc:
            # Kafka's GroupMetadataManager maps log errors to what a group client understands
            if exc.code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            elif exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                code = ErrorCode.NOT_COORDINATOR
            elif exc.code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE):
                code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE
            else:
                code = ErrorCode.UNKNOWN_SERVER_ERROR
            raise KafkaError(code, f"writing to {OFFSETS_TOPIC}-{partition}: {exc.message}") from None

    def store_offsets(self, group: GroupMetadata, offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        self._append(group.group_id, [(offset_commit_key(group.group_id, t, p), offset_commit_value(om))
                                      for (t, p), om in offsets.items()])
        group.offsets.update(offsets)

    async def store_transactional_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                          offsets: dict[tuple[str, int], OffsetAndMetadata]) -> None:
        """TxnOffsetCommit, as Kafka writes it: the offset records at once, in a *transactional* batch
        of the producer (its id and epoch; ``AppendOrigin.COORDINATOR``, so no sequence check), acks=all.
        They count from the transaction's COMMIT marker on (also for a coordinator that loads the
        partition later); an ABORT marker voids them. Raises KafkaError with a group error code."""
        if not offsets:
            return
        try:
            self.ensure_offsets_topic()
        except KafkaError as exc:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"cannot create {OFFSETS_TOPIC}: {exc.message}")
        ts = now_ms()
        records = [Record(i, ts, offset_commit_key(group_id, t, p), offset_commit_value(om), [])
                   for i, ((t, p), om) in enumerate(offsets.items())]
        partition = self.partition_for(group_id)
        batch = build_batch(records, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=0,
                            attributes_extra=TRANSACTIONAL_MASK)
        try:
            await self.broker.replica_manager.append_records_and_wait(
                OFFSETS_TOPIC, partition, batch, -1, timeout_ms=OFFSET_COMMIT_TIMEOUT_MS, from_coordinator=True)
        except KafkaError as exc:
            raise self._group_error(exc, partition) from None

    def store_group(self, group: GroupMetadata) -> None:
        """Write the group's metadata: generation, protocol, leader and each member's subscription/assignment."""
        members = [MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms,
                                m.metadata(group.protocol_name) if group.protocol_name else b"", m.assignment)
                   for m in group.members.values()]
        value = GroupMetadataValue(group.protocol_type or "", group.generation_id, group.protocol_name,
                                   group.leader_id, group.state_timestamp_ms, members)
        self._append(group.group_id, [(group_metadata_key(group.group_id), group_metadata_value(value))])

    def delete_group_metadata(self, group_id: str) -> None:
        """A tombstone for the group's metadata record only (its offsets stay): the classic group became a
        consumer group (KIP-848's online upgrade, Kafka's ``ClassicGroup.createGroupTombstoneRecords``)."""
        self._append(group_id, [(group_metadata_key(group_id), None)])

    def delete_offsets(self, group: GroupMetadata, partitions: list[tuple[str, int]]) -> None:
        self._append(group.group_id, [(offset_commit_key(group.group_id, t, p), None) for t, p in partitions])
        for tp in partitions:
            group.offsets.pop(tp, None)

    def delete_group(self, group: GroupMetadata) -> None:
        """Tombstones for the group and all its offsets (DeleteGroups, or expiry of an empty group)."""
        records = [(offset_commit_key(group.group_id, t, p), None) for t, p in group.offsets]
        records.append((group_metadata_key(group.group_id), None))
        self._append(group.group_id, records)
        group.offsets.clear()

    # -- loading ----------------------------------------------------------------

    def read_records(self, only_partition: int | None = None):
        """Every (key, value) record of ``__consumer_offsets``, partition by partition, oldest first
        (transaction markers left out; see :meth:`read_log`)."""
        for header, key, value in self.read_log(only_partition):
            if not header.is_control:
                yield key, value

    def read_log(self, only_partition: int | None = None, topic_name: str = OFFSETS_TOPIC):
        """Every (batch header, key, value) of ``__consumer_offsets`` (or of another coordinator's topic,
        ``topic_name``: the share coordinator reads ``__share_group_state`` so), partition by partition, oldest
        first; a control batch (a transaction marker) as (header, "COMMIT" or "ABORT", None).

        ``only_partition``: just that one, read up to its log end offset (a new leader loads all it
        has, as Kafka's ``doLoadGroupsAndOffsets``; its high watermark may not have caught up yet)."""
        topic = self.broker.metadata_cache.get(topic_name)
        if topic is None:
            return
        indexes = range(topic.num_partitions) if only_partition is None else [only_partition]
        for index in indexes:
            partition = self.broker.replica_manager.partitions.get((topic_name, index))
            if partition is None:
                continue
            plog = partition.log
            offset = plog.log_start_offset
            end = plog.high_watermark if only_partition is None else plog.log_end_offset
            while offset < end:
                data = plog.read(offset, 1 << 20)
                if not data:
                    break
                moved = False
                for pos, header in iter_batches(data, strict=False):
                    if header.next_offset <= offset:
                        continue
                    moved = True
                    offset = header.next_offset
                    batch = memoryview(data)[pos:pos + header.size]
                    if header.is_control:
                        yield header, "COMMIT" if control_record_type(batch) == COMMIT else "ABORT", None
                        continue
                    for record in iter_records(batch):
                        yield header, record.key, record.value
                if not moved:
                    break

    def load(self, only_partition: int | None = None) -> dict[str, GroupMetadata]:
        """Replay ``__consumer_offsets`` (or one of its partitions): the groups and committed offsets
        as they were at shutdown, or as the previous leader of the partition left them."""
        return self.load_all(only_partition)[0]

    def load_all(self, only_partition: int | None = None) -> tuple[dict[str, GroupMetadata],
                                                                   dict[str, dict[bytes, bytes]]]:
        """:meth:`load`, plus the latest KIP-848 consumer group records (types 3-8, tombstones applied)
        by group id, for :func:`.consumer_group_records.replay`."""
        latest: dict[bytes, bytes | None] = {}
        #: transactional offset commits waiting for their marker: producer id -> {key: value}
        pending: dict[int, dict[bytes, bytes | None]] = {}
        for header, key, value in self.read_log(only_partition):
            if header.is_control:   # the end of a producer's transaction: its offsets count, or not
                committed = pending.pop(header.producer_id, {})
                if key == "COMMIT":
                    latest.update(committed)
            elif header.is_transactional:
                pending.setdefault(header.producer_id, {})[key] = value
            elif key is not None:
                latest[key] = value  # the latest record per key wins, as compaction keeps it
        offsets: dict[str, dict[tuple[str, int], OffsetAndMetadata]] = {}
        metadata: dict[str, GroupMetadataValue] = {}
        consumer_records: dict[str, dict[bytes, bytes]] = {}
        for key_bytes, value_bytes in latest.items():
            if value_bytes is None:
                continue  # a tombstone: the offset or the group was deleted
            if len(key_bytes) >= 2 and record_type(key_bytes) in RECORD_TYPES:   # a KIP-848 consumer group record
                try:
                    group_id = decode_consumer_group_record(key_bytes, None)[1].group_id
                except Exception as exc:   # noqa: BLE001 - an unreadable record is skipped, never fatal
                    log.warning("skipping unreadable %s record: %r", OFFSETS_TOPIC, exc)
                    continue
                consumer_records.setdefault(group_id, {})[key_bytes] = value_bytes
                continue
            try:
                key = decode_key(key_bytes)
                value = decode_value(key, value_bytes)
            except Exception as exc:   # noqa: BLE001 - a record we cannot read is skipped, never fatal
                log.warning("skipping unreadable %s record: %r", OFFSETS_TOPIC, exc)
                continue
            if isinstance(key, OffsetCommitKey):
                offsets.setdefault(key.group, {})[(key.topic, key.partition)] = value
            elif isinstance(key, GroupMetadataKey):
                metadata[key.group] = value
        open_txns: dict[str, dict[int, dict[tuple[str, int], OffsetAndMetadata]]] = {}
        for producer_id, records in pending.items():   # transactions still open: their offsets wait
            for key_bytes, value_bytes in records.items():
                try:
                    key = decode_key(key_bytes)
                    value = decode_value(key, value_bytes)
                except Exception as exc:   # noqa: BLE001 - an unreadable record is skipped, never fatal
                    log.warning("skipping unreadable %s record: %r", OFFSETS_TOPIC, exc)
                    continue
                if isinstance(key, OffsetCommitKey) and value is not None:
                    open_txns.setdefault(key.group, {}).setdefault(producer_id, {})[(key.topic, key.partition)] = value
        groups: dict[str, GroupMetadata] = {}
        for group_id in offsets.keys() | metadata.keys() | open_txns.keys():
            group = groups[group_id] = GroupMetadata(group_id)
            group.offsets = offsets.get(group_id, {})
            group.pending_transactional_offsets = open_txns.get(group_id, {})
            if group_id in metadata:
                self._restore(group, metadata[group_id])
        return groups, consumer_records

    @staticmethod
    def _restore(group: GroupMetadata, value: GroupMetadataValue) -> None:
        """Kafka's GroupMetadata.loadGroup: a group with members comes back Stable, else Empty."""
        group.protocol_type = value.protocol_type or None
        group.generation_id = value.generation
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        if value.current_state_timestamp > 0:
            group.state_timestamp_ms = value.current_state_timestamp
        for m in value.members:
            member = MemberMetadata(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                    m.rebalance_timeout, m.session_timeout, value.protocol_type,
                                    [(value.protocol or "", m.subscription)], m.assignment)
            group.members[m.member_id] = member
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
