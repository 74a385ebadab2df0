"""``TransactionStateManager``: the coordinator's table of transactional ids, persisted in
``__transaction_state``.

As Kafka's ``kafka.coordinator.transaction.TransactionStateManager``, it keeps a
``TransactionMetadata`` per transactional id in memory and writes every state transition to the
compacted internal topic ``__transaction_state`` *before* acting on it
(:meth:`append_transaction_to_log`, Kafka's ``appendTransactionToLog``): the new state is prepared
(a ``TxnTransitMetadata``), appended with acks=all, and only then becomes the metadata's state.
A write that fails leaves the state as it was and the client gets the coordinator's error
(COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR), as in Kafka.

The topic is created on first use with ``transaction.state.log.num.partitions`` partitions,
``transaction.state.log.replication.factor`` replicas (capped at the live brokers on a
standalone broker), ``min.insync.replicas`` = ``transaction.state.log.min.isr`` (capped at the
replication factor), ``cleanup.policy=compact``, no compression and
``transaction.state.log.segment.bytes``. A transactional id lives in partition
``abs(transactionalId.hashCode()) % numPartitions`` (:func:`partition_for`).

:meth:`load` replays the topic (latest record per transactional id wins, a tombstone deletes it)
as Kafka's ``loadTransactionsForTxnTopicPartition``; the coordinator then finishes what was
PrepareCommit / PrepareAbort. Transactional ids idle (Empty, CompleteCommit, CompleteAbort) for
``transactional.id.expiration.ms`` are removed with a tombstone
(:meth:`expired_transactional_ids`, Kafka's ``removeExpiredTransactionalIds``).

Records layouts: :mod:`.transaction_log`.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from ...common.records import Record, build_batch, iter_batches, iter_records
from ..group.offsets_topic import partition_for
from .transaction_log import (STATUS_IDS, TRANSACTION_STATE_TOPIC, TransactionLogValue, key_to_bytes,
                              partitions_by_topic, read_key, read_value, value_to_bytes)
from .transaction_metadata import TransactionMetadata, TransactionState, TxnTransitMetadata, now_ms

log = logging.getLogger(__name__)

S = TransactionState
#: states whose transactional id may expire (Kafka's ``shouldExpire``)
EXPIRABLE = (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
#: how long a write to __transaction_state may wait for its ISR (Kafka: request.timeout.ms)
APPEND_TIMEOUT_MS = 15_000


class TransactionStateManager:
    def __init__(self, broker):
        self.broker = broker
        self.config = broker.config
        self.transactions: dict[str, TransactionMetadata] = {}
        #: cluster mode: the partitions of the topic this broker leads (loaded) -> their leader epoch
        #: (the coordinator epoch the markers carry), and those it is loading
        self.in_cluster: bool = broker.in_cluster
        self.owned_partitions: dict[int, int] = {}
        self.loading_partitions: dict[int, int] = {}

    # -- which transactional ids this broker coordinates (cluster mode) -------------------------

    def coordinator_error(self, transactional_id: str) -> ErrorCode | None:
        """None if this broker coordinates ``transactional_id``; else NOT_COORDINATOR, or
        COORDINATOR_LOAD_IN_PROGRESS while it loads its partition (Kafka's ``getTransactionState``)."""
        if not self.in_cluster:
            return None
        partition = self.partition_for(transactional_id)
        if partition in self.loading_partitions:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return None if partition in self.owned_partitions else ErrorCode.NOT_COORDINATOR

    def coordinator_epoch(self, transactional_id: str) -> int:
        """The leader epoch of the id's partition when this broker loaded it (0 on a standalone broker)."""
        return self.owned_partitions.get(self.partition_for(transactional_id), 0)

    def begin_loading(self, index: int, leader_epoch: int) -> bool:
        if self.owned_partitions.get(index) == leader_epoch or self.loading_partitions.get(index) == leader_epoch:
            return False
        self.loading_partitions[index] = leader_epoch
        return True

    def unload_partition(self, index: int) -> None:
        """Kafka's ``removeTransactionsForTxnTopicPartition``: no longer the leader, forget its ids."""
        self.loading_partitions.pop(index, None)
        if self.owned_partitions.pop(index, None) is None:
            return
        gone = [t for t in self.transactions if self.partition_for(t) == index]
        for txn_id in gone:
            del self.transactions[txn_id]
        log.info("unloaded %d transactional ids of %s-%d: no longer its leader", len(gone),
                 TRANSACTION_STATE_TOPIC, index)

    # -- the topic ------------------------------------------------------------------------------

    @property
    def num_partitions(self) -> int:
        topic = self.broker.metadata_cache.get(TRANSACTION_STATE_TOPIC)
        return topic.num_partitions if topic is not None else self.config["transaction.state.log.num.partitions"]

    def partition_for(self, transactional_id: str) -> int:
        """``abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`` (as Kafka)."""
        return partition_for(transactional_id, self.num_partitions)

    def ensure_transaction_topic(self) -> None:
        """Create ``__transaction_state`` the first time a transactional producer needs it (Kafka:
        FindCoordinator or InitProducerId); COORDINATOR_NOT_AVAILABLE if it cannot be."""
        if self.broker.metadata_cache.get(TRANSACTION_STATE_TOPIC) is not None:
            return
        cfg = self.config
        rf = cfg["transaction.state.log.replication.factor"]
        if not self.in_cluster:   # a standalone broker: one replica (Kafka would refuse, see docs/differences.md)
            rf = min(rf, max(self.broker.live_broker_count, 1))
        min_isr = min(cfg["transaction.state.log.min.isr"], rf)
        try:
            self.broker.admin_manager.create_topic(
                TRANSACTION_STATE_TOPIC, cfg["transaction.state.log.num.partitions"], rf,
                {"cleanup.policy": "compact", "compression.type": "uncompressed",
                 "min.insync.replicas": str(min_isr), "unclean.leader.election.enable": "false",
                 "segment.bytes": str(cfg["transaction.state.log.segment.bytes"])})
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                 f"cannot create {TRANSACTION_STATE_TOPIC}: {exc.message}") from None
        if self.in_cluster:   # it exists once the controller's UpdateMetadata says so
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                             f"{TRANSACTION_STATE_TOPIC} is being created; its partitions have no leaders yet")
        log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC, cfg["transaction.state.log.num.partitions"])

    # -- writing --------------------------------------------------------------------------------

    async def _append(self, transactional_id: str, value: bytes | None) -> None:
        """Append with acks=all (Kafka's ``TransactionLog.EnforcedRequiredAcks``): in cluster mode the
        write counts once the partition's ISR (at least ``transaction.state.log.min.isr``) has it."""
        self.ensure_transaction_topic()
        partition = self.partition_for(transactional_id)
        batch = build_batch([Record(0, now_ms(), key_to_bytes(transactional_id), value, [])])
        try:
            await self.broker.replica_manager.append_records_and_wait(
                TRANSACTION_STATE_TOPIC, partition, batch, -1, timeout_ms=APPEND_TIMEOUT_MS)
        except KafkaError as exc:
            # Kafka's TransactionStateManager.appendTransactionToLog maps the log's errors
            if exc.code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            elif exc.code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
                code = ErrorCode.NOT_COORDINATOR
            else:
                code = ErrorCode.UNKNOWN_SERVER_ERROR
            raise KafkaError(code, f"writing to {TRANSACTION_STATE_TOPIC}-{partition}: {exc.message}") from None

    async def append_transaction_to_log(self, meta: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        """Write ``transit`` (the state ``meta`` is about to enter), then make it ``meta``'s state.
        Raises KafkaError (with the coordinator's error code) and leaves ``meta`` unchanged; while one
        write is on its way, another transition of the same id is CONCURRENT_TRANSACTIONS (Kafka's
        ``pendingState``)."""
        if meta.pending_state is not None:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"{meta.transactional_id} is already moving to {meta.pending_state}")
        value = TransactionLogValue(transit.producer_id, transit.producer_epoch, transit.txn_timeout_ms,
                                    STATUS_IDS[transit.state.value],
                                    None if transit.state == S.EMPTY else partitions_by_topic(transit.topic_partitions),
                                    transit.txn_last_update_timestamp, transit.txn_start_timestamp)
        meta.pending_state = transit.state
        try:
            await self._append(meta.transactional_id, value_to_bytes(value))
        finally:
            meta.pending_state = None
        if self.get(meta.transactional_id) is not meta:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"{meta.transactional_id} was unloaded meanwhile")
        meta.complete_transition_to(transit)

    async def remove_expired(self, meta: TransactionMetadata) -> None:
        """A tombstone for an expired transactional id, then it is forgotten (state Dead)."""
        await self._append(meta.transactional_id, None)
        meta.state = S.DEAD
        if self.transactions.get(meta.transactional_id) is meta:
            del self.transactions[meta.transactional_id]

    # -- reading --------------------------------------------------------------------------------

    def read_records(self, only_partition: int | None = None):
        """Every (key, value) of ``__transaction_state`` up to each partition's log end, oldest first."""
        topic = self.broker.metadata_cache.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return
        for index in range(topic.num_partitions) if only_partition is None else [only_partition]:
            partition = self.broker.replica_manager.partitions.get((TRANSACTION_STATE_TOPIC, index))
            if partition is None:
                continue
            plog = partition.log
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                data = plog.read(offset, 1 << 20)
                if not data:
                    break
                moved = False
                for pos, header in iter_batches(data, strict=False):
                    if header.next_offset <= offset:
                        continue
                    moved, offset = True, header.next_offset
                    if not header.is_control:
                        for record in iter_records(memoryview(data)[pos:pos + header.size]):
                            yield record.key, record.value
                if not moved:
                    break

    def load(self, only_partition: int | None = None, leader_epoch: int = 0) -> list[TransactionMetadata]:
        """Replay the topic (or one partition, which this broker then owns) into the table (Kafka's
        ``loadTransactionsForTxnTopicPartition``); the loaded transactions."""
        latest: dict[str, TransactionLogValue | None] = {}
        for key, value in self.read_records(only_partition):
            try:
                latest[read_key(key)] = read_value(value)
            except Exception as exc:   # noqa: BLE001 - a record we cannot read is skipped, never fatal
                log.warning("skipping unreadable %s record: %r", TRANSACTION_STATE_TOPIC, exc)
        loaded = []
        for txn_id, value in latest.items():
            if value is None:
                self.transactions.pop(txn_id, None)
                continue
            meta = TransactionMetadata(txn_id, value.producer_id, value.producer_epoch, value.transaction_timeout_ms,
                                       state=TransactionState(value.state_name),
                                       topic_partitions=value.topic_partitions,
                                       txn_start_timestamp=value.transaction_start_timestamp_ms,
                                       txn_last_update_timestamp=value.transaction_last_update_timestamp_ms)
            self.transactions[txn_id] = meta
            loaded.append(meta)
        if only_partition is not None:
            if self.loading_partitions.get(only_partition) != leader_epoch:   # resigned meanwhile
                self.unload_partition(only_partition)
                for meta in loaded:
                    self.transactions.pop(meta.transactional_id, None)
                return []
            del self.loading_partitions[only_partition]
            self.owned_partitions[only_partition] = leader_epoch
        return loaded

    # -- the table ------------------------------------------------------------------------------

    def validate_transaction_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self.transactions.get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> TransactionMetadata:
        return self.transactions.setdefault(metadata.transactional_id, metadata)

    def timed_out_transactions(self, now: int | None = None) -> list[TransactionMetadata]:
        """Ongoing transactions older than their timeout (Kafka's ``timedOutTransactions``)."""
        now = now_ms() if now is None else now
        return [m for m in self.transactions.values()
                if m.state == S.ONGOING and m.txn_start_timestamp + m.txn_timeout_ms < now]

    def expired_transactional_ids(self, now: int | None = None) -> list[TransactionMetadata]:
        """Idle transactional ids past ``transactional.id.expiration.ms`` (Kafka's ``shouldExpire``)."""
        now = now_ms() if now is None else now
        horizon = now - self.config["transactional.id.expiration.ms"]
        return [m for m in self.transactions.values()
                if m.state in EXPIRABLE and m.txn_last_update_timestamp <= horizon]
