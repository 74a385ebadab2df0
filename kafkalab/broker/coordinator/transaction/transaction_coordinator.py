"""``TransactionCoordinator``: transactions and exactly-once for producers (KIP-98), as Kafka's
``kafka.coordinator.transaction.TransactionCoordinator``.

* **InitProducerId** with a ``transactional.id``: the first call gets a producer id for that id
  (epoch 0); every later call keeps the id and bumps the epoch, which *fences* the previous
  producer instance (a "zombie"): its AddPartitionsToTxn / EndTxn get PRODUCER_FENCED and its
  produce INVALID_PRODUCER_EPOCH. A transaction the old instance left open is aborted first
  (epoch fence, then ABORT markers). ``transaction.timeout.ms`` above
  ``transaction.max.timeout.ms`` is INVALID_TRANSACTION_TIMEOUT.
* **AddPartitionsToTxn** / **AddOffsetsToTxn**: the partitions (for offsets: the group's
  ``__consumer_offsets`` partition) join the transaction, which becomes Ongoing.
* **EndTxn**: PrepareCommit / PrepareAbort, the markers to every partition
  (:mod:`.transaction_marker_channel_manager`), then CompleteCommit / CompleteAbort.
* Ongoing transactions older than their timeout are aborted every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (the producer is fenced).

Where the mini broker differs (docs/differences.md): the state is in memory
(:mod:`.transaction_state_manager`), standalone broker only, and the markers are written before
the answer, so a transaction is never seen in PrepareCommit/PrepareAbort by a client; an
InitProducerId that aborts an open transaction answers at once with the epoch bumped twice (fence,
then the new producer's epoch), where Kafka answers CONCURRENT_TRANSACTIONS and the client retries.
"""
from __future__ import annotations

import asyncio
import logging

from ...common.errors import ErrorCode
from ...utils.async_util import cancel_and_wait
from .transaction_marker_channel_manager import OFFSETS_TOPIC, TransactionMarkerChannelManager
from .transaction_metadata import (MAX_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata,
                                   TransactionState as S, now_ms)
from .transaction_state_manager import TransactionStateManager

log = logging.getLogger("kafkalab.broker.coordinator")


class TransactionCoordinator:
    def __init__(self, broker):
        self.broker = broker
        self.state_manager = TransactionStateManager(broker.config)
        self.marker_channel = TransactionMarkerChannelManager(broker)
        self.coordinator_epoch = 0
        self._abort_task: asyncio.Task | None = None

    # -- InitProducerId -----------------------------------------------------------------------

    def handle_init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                                expected_producer_id: int = NO_PRODUCER_ID,
                                expected_epoch: int = NO_PRODUCER_EPOCH) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a transactional producer (Kafka's ``handleInitProducerId``)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not self.state_manager.validate_transaction_timeout(txn_timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        meta = self.state_manager.get(transactional_id)
        if meta is None:
            meta = self.state_manager.put_if_absent(TransactionMetadata(
                transactional_id, self._new_producer_id(), NO_PRODUCER_EPOCH, txn_timeout_ms))
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if meta.state == S.DEAD:
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if expected_producer_id != NO_PRODUCER_ID and not (
                (expected_producer_id, expected_epoch) in ((meta.producer_id, meta.producer_epoch),
                                                           (meta.last_producer_id, meta.last_producer_epoch))):
            # KIP-360: a producer asking to bump an epoch that is no longer the current one was fenced
            return ErrorCode.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if meta.state == S.ONGOING:   # the previous instance left a transaction open: fence it, abort it
            self._fence_and_abort(meta, "a new producer instance called InitProducerId")
        # Empty, CompleteCommit, CompleteAbort: the next epoch (a new producer id once it is exhausted)
        meta.last_producer_id, meta.last_producer_epoch = meta.producer_id, meta.producer_epoch
        if meta.producer_epoch + 1 > MAX_PRODUCER_EPOCH:
            meta.producer_id, meta.producer_epoch = self._new_producer_id(), 0
        else:
            meta.producer_epoch += 1
        meta.txn_timeout_ms = txn_timeout_ms
        meta.topic_partitions.clear()
        meta.txn_start_timestamp = -1
        meta.transition_to(S.EMPTY)
        log.info("transactional id %s: producer id %d, epoch %d", transactional_id, meta.producer_id,
                 meta.producer_epoch)
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    def _new_producer_id(self) -> int:
        return self.broker.producer_id_manager.generate_producer_id()

    def _fence_and_abort(self, meta: TransactionMetadata, why: str) -> None:
        """Kafka's ``prepareFenceProducerEpoch`` then ``endTransaction(ABORT)``: the epoch goes up by
        one (the old instance is fenced) and the ABORT markers carry the new epoch."""
        log.info("transactional id %s: aborting the open transaction (%s)", meta.transactional_id, why)
        meta.transition_to(S.PREPARE_EPOCH_FENCE)
        if meta.producer_epoch < MAX_PRODUCER_EPOCH:
            meta.producer_epoch += 1
        self._complete(meta, committed=False)

    def _complete(self, meta: TransactionMetadata, committed: bool) -> None:
        meta.transition_to(S.PREPARE_COMMIT if committed else S.PREPARE_ABORT)
        self.marker_channel.add_txn_markers_to_send(meta.transactional_id, self.coordinator_epoch,
                                                    meta.producer_id, meta.producer_epoch, committed,
                                                    meta.topic_partitions)
        meta.topic_partitions.clear()
        meta.transition_to(S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT)

    # -- checks shared by the transaction APIs ------------------------------------------------

    def _check_producer(self, transactional_id: str | None, producer_id: int, producer_epoch: int):
        """(error, metadata): Kafka's checks of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        meta = self.state_manager.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, meta

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

    def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                             partitions: set[tuple[str, int]]) -> ErrorCode:
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error:
            return error
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state == S.ONGOING and partitions <= meta.topic_partitions:
            return ErrorCode.NONE
        if meta.state != S.ONGOING:
            meta.txn_start_timestamp = now_ms()
        meta.topic_partitions |= partitions
        meta.transition_to(S.ONGOING)
        return ErrorCode.NONE

    def offsets_partition_for(self, group_id: str) -> tuple[str, int]:
        return OFFSETS_TOPIC, self.broker.group_coordinator.manager.partition_for(group_id)

    # -- EndTxn -------------------------------------------------------------------------------

    def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               committed: bool) -> ErrorCode:
        """Kafka's ``TransactionCoordinator.endTransaction`` (from a client)."""
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error:
            return error
        state = meta.state
        if state == S.ONGOING:
            self._complete(meta, committed)
            return ErrorCode.NONE
        if state == S.COMPLETE_COMMIT:   # a retried EndTxn is answered as the first one was
            return ErrorCode.NONE if committed else ErrorCode.INVALID_TXN_STATE
        if state == S.COMPLETE_ABORT:
            return ErrorCode.NONE if not committed else ErrorCode.INVALID_TXN_STATE
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return (ErrorCode.CONCURRENT_TRANSACTIONS if committed == (state == S.PREPARE_COMMIT)
                    else ErrorCode.INVALID_TXN_STATE)
        return ErrorCode.INVALID_TXN_STATE   # Empty (nothing to end), Dead, PrepareEpochFence

    # -- what partition leaders ask (Produce, TxnOffsetCommit) --------------------------------

    def verify_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           partition: tuple[str, int]) -> ErrorCode:
        """KIP-890 (part 1) verification, as a leader asks with AddPartitionsToTxn ``verify_only``: is
        ``partition`` in this producer's ongoing transaction? INVALID_PRODUCER_EPOCH for a fenced
        producer, INVALID_TXN_STATE for a partition it never added."""
        meta = self.state_manager.get(transactional_id or "")
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != meta.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if meta.state != S.ONGOING or partition not in meta.topic_partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    # -- timeouts -----------------------------------------------------------------------------

    def abort_timed_out_transactions(self) -> int:
        """Kafka's ``abortTimedOutTransactions``: fence and abort what ran past its timeout."""
        expired = self.state_manager.timed_out_transactions()
        for meta in expired:
            self._fence_and_abort(meta, f"it ran longer than its timeout of {meta.txn_timeout_ms} ms")
        return len(expired)

    def start(self) -> None:
        self._abort_task = asyncio.get_running_loop().create_task(self._abort_loop())

    async def _abort_loop(self) -> None:
        interval = self.broker.config["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.abort_timed_out_transactions()
            except Exception:   # never let one bad transaction stop the timer
                log.exception("aborting timed-out transactions failed")

    async def stop(self) -> None:
        if self._abort_task is not None:
            await cancel_and_wait([self._abort_task])
            self._abort_task = None

    def describe_transactions(self) -> list[dict]:
        return [m.describe() for m in self.state_manager.transactions.values()]
