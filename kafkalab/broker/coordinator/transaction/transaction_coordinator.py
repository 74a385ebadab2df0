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
* **EndTxn**: PrepareCommit / PrepareAbort written, the answer, then the markers to every partition
  (:mod:`.transaction_marker_channel_manager`), then CompleteCommit / CompleteAbort.
* Ongoing transactions older than their timeout are aborted every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` (the producer is fenced).

Every transition is written to ``__transaction_state`` before it is acted on
(:mod:`.transaction_state_manager`); when the broker starts, :meth:`TransactionCoordinator.load`
replays the topic: a transaction found in PrepareCommit / PrepareAbort gets its markers and
completes, an Ongoing one is aborted at its timeout, as Kafka's coordinator does when it becomes
the leader of a ``__transaction_state`` partition. Transactional ids idle for
``transactional.id.expiration.ms`` are removed (a tombstone) every
``transaction.remove.expired.transaction.cleanup.interval.ms``.

In cluster mode the coordinator of a transactional id is the leader of its ``__transaction_state``
partition: :meth:`TransactionCoordinator.on_leadership_change` loads a partition when this broker
becomes its leader (other brokers answer NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS while it
loads) and forgets its ids when it stops being it; the markers go to the partitions' leaders over
the network (:mod:`.transaction_marker_channel_manager`).

As in Kafka, EndTxn is answered once PrepareCommit / PrepareAbort is written (and, in cluster mode,
replicated); the markers are written after the answer, and until CompleteCommit / CompleteAbort is
written a client gets CONCURRENT_TRANSACTIONS from InitProducerId, AddPartitionsToTxn and EndTxn
(and retries). An InitProducerId that aborts an open transaction answers CONCURRENT_TRANSACTIONS
and writes the ABORT markers right after the answer; the client's retry gets the epoch bumped twice
(fence, then the new producer's epoch).
"""
from __future__ import annotations

import asyncio
import logging

from ...common.errors import ErrorCode, KafkaError
from ...utils.async_util import cancel_and_wait
from .transaction_marker_channel_manager import OFFSETS_TOPIC, TransactionMarkerChannelManager
from .transaction_metadata import (MAX_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransactionMetadata,
                                   TransactionState as S, now_ms)
from .transaction_log import TRANSACTION_STATE_TOPIC
from .transaction_state_manager import TransactionStateManager

log = logging.getLogger(__name__)


class TransactionCoordinator:
    def __init__(self, broker):
        self.broker = broker
        self.state_manager = TransactionStateManager(broker)
        self.marker_channel = TransactionMarkerChannelManager(broker)
        self.in_cluster: bool = broker.in_cluster
        self._tasks: list[asyncio.Task] = []
        self._background: set[asyncio.Task] = set()
        #: transactional id -> the metadata whose markers are being written (one task per transaction; a
        #: task left from before the id was unloaded and loaded again never blocks the new metadata's)
        self._completing: dict[str, TransactionMetadata] = {}

    # -- InitProducerId -----------------------------------------------------------------------

    async def handle_init_producer_id(self, transactional_id: str, txn_timeout_ms: int,
                                expected_producer_id: int = NO_PRODUCER_ID,
                                expected_epoch: int = NO_PRODUCER_EPOCH) -> tuple[ErrorCode, int, int]:
        """(error, producer id, epoch) for a transactional producer (Kafka's ``handleInitProducerId``)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if not self.state_manager.validate_transaction_timeout(txn_timeout_ms):
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        try:
            self.state_manager.ensure_transaction_topic()
        except KafkaError as exc:
            return exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        error = self.state_manager.coordinator_error(transactional_id)
        if error:
            return error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        meta = self.state_manager.get(transactional_id)
        if meta is None:
            meta = self.state_manager.put_if_absent(TransactionMetadata(
                transactional_id, self._new_producer_id(), NO_PRODUCER_EPOCH, txn_timeout_ms))
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if meta.state == S.DEAD:
            return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        if expected_producer_id != NO_PRODUCER_ID and (expected_producer_id, expected_epoch) not in (
                (meta.producer_id, meta.producer_epoch), (meta.last_producer_id, meta.last_producer_epoch)):
            # KIP-360: a producer asking to bump an epoch that is no longer the current one was fenced
            return ErrorCode.PRODUCER_FENCED, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        try:
            if meta.state == S.ONGOING:
                # the previous instance left a transaction open: fence it and abort it, and answer
                # CONCURRENT_TRANSACTIONS; the client retries and gets its epoch once the abort is complete
                await self._fence_and_abort(meta, "a new producer instance called InitProducerId")
                return ErrorCode.CONCURRENT_TRANSACTIONS, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
            # Empty, CompleteCommit, CompleteAbort: the next epoch (a new producer id once it is exhausted)
            if meta.producer_epoch + 1 > MAX_PRODUCER_EPOCH:
                producer_id, epoch = self._new_producer_id(), 0
            else:
                producer_id, epoch = meta.producer_id, meta.producer_epoch + 1
            transit = meta.prepare_transition(S.EMPTY, producer_id=producer_id, producer_epoch=epoch,
                                              last_producer_id=meta.producer_id,
                                              last_producer_epoch=meta.producer_epoch,
                                              txn_timeout_ms=txn_timeout_ms, topic_partitions=set(),
                                              txn_start_timestamp=-1)
            await self.state_manager.append_transaction_to_log(meta, transit)
        except KafkaError as exc:
            return exc.code, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        log.info("transactional id %s: producer id %d, epoch %d", transactional_id, meta.producer_id,
                 meta.producer_epoch)
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    def _new_producer_id(self) -> int:
        return self.broker.producer_id_manager.generate_producer_id()

    async def _fence_and_abort(self, meta: TransactionMetadata, why: str) -> None:
        """Kafka's ``prepareFenceProducerEpoch`` then ``endTransaction(ABORT)``: the epoch goes up by
        one (the old instance is fenced) and the ABORT markers carry the new epoch. PrepareEpochFence
        is a state of the memory only: what is written is PrepareAbort with the bumped epoch."""
        log.info("transactional id %s: aborting the open transaction (%s)", meta.transactional_id, why)
        epoch = meta.producer_epoch + 1 if meta.producer_epoch < MAX_PRODUCER_EPOCH else meta.producer_epoch
        transit = meta.prepare_transition(S.PREPARE_ABORT, producer_epoch=epoch)
        await self.state_manager.append_transaction_to_log(meta, transit)
        self._spawn(self._send_markers_and_complete(meta))   # as Kafka's marker channel: after the answer

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("transaction coordinator task failed", exc_info=task.exception())

    async def _complete(self, meta: TransactionMetadata, committed: bool) -> None:
        """EndTxn from the client: PrepareCommit / PrepareAbort written (Kafka's ``endTransaction``
        answers here, its ``sendTxnMarkersCallback``), then, after the answer, the markers and
        CompleteCommit / CompleteAbort. Raises KafkaError if the first write fails. Until the
        transaction is complete, InitProducerId, AddPartitionsToTxn and EndTxn for its id get
        CONCURRENT_TRANSACTIONS."""
        transit = meta.prepare_transition(S.PREPARE_COMMIT if committed else S.PREPARE_ABORT)
        await self.state_manager.append_transaction_to_log(meta, transit)
        self._spawn(self._send_markers_and_complete(meta))

    async def _send_markers_and_complete(self, meta: TransactionMetadata) -> None:
        """The markers of a transaction in PrepareCommit / PrepareAbort, then its Complete state
        (Kafka's ``TransactionMarkerChannelManager`` and ``tryCompleteTransition``). A transaction
        whose Complete state cannot be written stays prepared; the next check finishes it."""
        txn_id = meta.transactional_id
        if meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or self._completing.get(txn_id) is meta:
            return   # completed meanwhile, or being completed
        self._completing[txn_id] = meta
        try:
            committed = meta.state == S.PREPARE_COMMIT
            owned = await self.marker_channel.add_txn_markers_to_send(
                meta.transactional_id, self.state_manager.coordinator_epoch(meta.transactional_id),
                meta.producer_id, meta.producer_epoch, committed, meta.topic_partitions,
                still_coordinator=lambda: self.state_manager.get(meta.transactional_id) is meta)
            if not owned or self.state_manager.get(txn_id) is not meta:
                return   # no longer its coordinator (or fenced by a newer one): the new one finishes it
            transit = meta.prepare_transition(S.COMPLETE_COMMIT if committed else S.COMPLETE_ABORT,
                                              topic_partitions=set())
            try:
                await self.state_manager.append_transaction_to_log(meta, transit)
            except KafkaError as exc:
                log.warning("transactional id %s: %s not written (%s); retried later", meta.transactional_id,
                            transit.state, exc.message)
        finally:
            if self._completing.get(txn_id) is meta:
                del self._completing[txn_id]

    # -- checks shared by the transaction APIs ------------------------------------------------

    def _check_producer(self, transactional_id: str | None, producer_id: int, producer_epoch: int):
        """(error, metadata): Kafka's checks of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST, None
        error = self.state_manager.coordinator_error(transactional_id)
        if error:
            return error, None
        meta = self.state_manager.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, meta

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

    async def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                             partitions: set[tuple[str, int]]) -> ErrorCode:
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error:
            return error
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state == S.ONGOING and partitions <= meta.topic_partitions:
            return ErrorCode.NONE
        start = meta.txn_start_timestamp if meta.state == S.ONGOING else now_ms()
        try:
            transit = meta.prepare_transition(S.ONGOING, topic_partitions=meta.topic_partitions | partitions,
                                              txn_start_timestamp=start)
            await self.state_manager.append_transaction_to_log(meta, transit)
        except KafkaError as exc:
            return exc.code
        return ErrorCode.NONE

    def offsets_partition_for(self, group_id: str) -> tuple[str, int]:
        return OFFSETS_TOPIC, self.broker.group_coordinator.manager.partition_for(group_id)

    # -- EndTxn -------------------------------------------------------------------------------

    async def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               committed: bool) -> ErrorCode:
        """Kafka's ``TransactionCoordinator.endTransaction`` (from a client)."""
        error, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
        if error:
            return error
        state = meta.state
        if state == S.ONGOING:
            try:
                await self._complete(meta, committed)
            except KafkaError as exc:
                return exc.code
            return ErrorCode.NONE
        if state == S.COMPLETE_COMMIT:   # a retried EndTxn is answered as the first one was
            return ErrorCode.NONE if committed else ErrorCode.INVALID_TXN_STATE
        if state == S.COMPLETE_ABORT:
            return ErrorCode.NONE if not committed else ErrorCode.INVALID_TXN_STATE
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            # the markers are on their way: Kafka's metadata has CompleteCommit / CompleteAbort pending from the
            # moment PrepareCommit / PrepareAbort is written (``prepareComplete``, also when it is loaded), and a
            # pending transition answers CONCURRENT_TRANSACTIONS before the state is looked at, to a retried
            # EndTxn as to the other one (abort while PrepareCommit)
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.INVALID_TXN_STATE   # Empty (nothing to end), Dead, PrepareEpochFence

    # -- what partition leaders ask (Produce, TxnOffsetCommit) --------------------------------

    def verify_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           partition: tuple[str, int]) -> ErrorCode:
        """KIP-890 (part 1) verification, as a leader asks with AddPartitionsToTxn ``verify_only``: is
        ``partition`` in this producer's ongoing transaction? INVALID_PRODUCER_EPOCH for a fenced
        producer, INVALID_TXN_STATE for a partition it never added. In cluster mode a leader that is
        not the transactional id's coordinator does not verify (Kafka asks the coordinator over the
        network: not done here)."""
        if self.state_manager.coordinator_error(transactional_id or "") is not None:
            return ErrorCode.NONE
        meta = self.state_manager.get(transactional_id or "")
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != meta.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if meta.state != S.ONGOING or partition not in meta.topic_partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    # -- timeouts -----------------------------------------------------------------------------

    async def abort_timed_out_transactions(self) -> int:
        """Kafka's ``abortTimedOutTransactions``: fence and abort what ran past its timeout; also
        finish a transaction left prepared (its Complete state not written yet). As Kafka's, it writes
        PrepareAbort and hands the markers to the channel: a marker retried to a moved leader never holds
        up the next check."""
        for meta in [m for m in self.state_manager.transactions.values()
                     if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]:
            self._spawn(self._send_markers_and_complete(meta))
        expired = self.state_manager.timed_out_transactions()
        for meta in expired:
            try:
                await self._fence_and_abort(meta, f"it ran longer than its timeout of {meta.txn_timeout_ms} ms")
            except KafkaError as exc:
                log.warning("transactional id %s: abort not written (%s); retried later", meta.transactional_id,
                            exc.message)
        return len(expired)

    async def remove_expired_transactional_ids(self) -> int:
        """Kafka's ``removeExpiredTransactionalIds``: a tombstone for every transactional id idle for
        ``transactional.id.expiration.ms``; a producer using it again starts with a new producer id."""
        expired = self.state_manager.expired_transactional_ids()
        for meta in expired:
            try:
                await self.state_manager.remove_expired(meta)
                log.info("transactional id %s expired", meta.transactional_id)
            except KafkaError as exc:
                log.warning("transactional id %s: tombstone not written (%s)", meta.transactional_id, exc.message)
        return len(expired)

    # -- start-up, shutdown, and (cluster mode) which transactional ids this broker coordinates ----

    async def load(self, only_partition: int | None = None, leader_epoch: int = 0) -> list[TransactionMetadata]:
        """Replay ``__transaction_state`` (or, in cluster mode, the partition this broker now leads:
        Kafka's ``onElection`` -> ``loadTransactionsForTxnTopicPartition``) and finish every
        transaction found in PrepareCommit / PrepareAbort: its markers, then its Complete state.
        Ongoing ones are left to the timeout check."""
        loaded = self.state_manager.load(only_partition, leader_epoch)
        for meta in loaded:
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                log.info("transactional id %s was %s when loaded: writing its markers", meta.transactional_id,
                         meta.state)
                if self.in_cluster:
                    self._spawn(self._send_markers_and_complete(meta))
                else:
                    await self._send_markers_and_complete(meta)
        if loaded:
            log.info("loaded %d transactional ids from %s%s", len(loaded), TRANSACTION_STATE_TOPIC,
                     "" if only_partition is None else f"-{only_partition}")
        return loaded

    def on_leadership_change(self, topic: str, index: int, is_leader: bool, leader_epoch: int) -> None:
        """ReplicaManager's leadership listener: load a ``__transaction_state`` partition when this broker
        becomes its leader, forget its transactional ids when it stops being it (``onResignation``)."""
        if topic != TRANSACTION_STATE_TOPIC:
            return
        if not is_leader:
            self.state_manager.unload_partition(index)
            return
        if self.state_manager.begin_loading(index, leader_epoch):
            self._spawn(self._load_partition(index, leader_epoch))

    async def _load_partition(self, index: int, leader_epoch: int) -> None:
        try:
            await self.load(index, leader_epoch)
        except Exception:
            log.exception("loading %s-%d failed", TRANSACTION_STATE_TOPIC, index)

    async def start(self) -> None:
        if self.in_cluster:   # loaded partition by partition, as this broker becomes their leader
            self.broker.replica_manager.leadership_listeners.append(self.on_leadership_change)
        else:
            await self.load()
        cfg = self.broker.config
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                                         self.abort_timed_out_transactions)),
            loop.create_task(self._every(cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
                                         self.remove_expired_transactional_ids))]

    @staticmethod
    async def _every(interval_ms: int, job) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:   # never let one bad transaction stop the timer
                log.exception("%s failed", job.__name__)

    async def stop(self) -> None:
        tasks = self._tasks + list(self._background)
        if tasks:
            await cancel_and_wait(tasks)
        self._tasks, self._background = [], set()
        await self.marker_channel.close()

    def describe_transactions(self) -> list[dict]:
        return [m.describe() for m in self.state_manager.transactions.values()]

    # -- DescribeTransactions / ListTransactions (KIP-664) --------------------------------------

    def handle_describe_transaction(self, transactional_id: str) -> dict:
        """One entry of a DescribeTransactions response (Kafka's ``handleDescribeTransactions``)."""
        out = {"error_code": ErrorCode.NONE, "transactional_id": transactional_id, "transaction_state": "",
               "transaction_timeout_ms": 0, "transaction_start_time_ms": -1, "producer_id": -1,
               "producer_epoch": -1, "topics": []}
        error = self.state_manager.coordinator_error(transactional_id or "")
        if error:
            out["error_code"] = error
            return out
        meta = self.state_manager.get(transactional_id) if transactional_id else None
        if meta is None or meta.state == S.DEAD:
            out["error_code"] = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
            return out
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(meta.topic_partitions):
            topics.setdefault(topic, []).append(index)
        out.update(transaction_state=str(meta.state), transaction_timeout_ms=meta.txn_timeout_ms,
                   transaction_start_time_ms=meta.txn_start_timestamp, producer_id=meta.producer_id,
                   producer_epoch=meta.producer_epoch,
                   topics=[{"topic": t, "partitions": ids} for t, ids in topics.items()])
        return out

    def handle_list_transactions(self, state_filters: list[str], producer_id_filters: list[int],
                                 duration_filter_ms: int = -1) -> dict:
        """A ListTransactions response's body (Kafka's ``TransactionStateManager.listTransactionStates``):
        state names Kafka does not know go to ``unknown_state_filters``; Dead ids are never listed;
        ``duration_filter_ms`` >= 0 keeps transactions running longer than that (KIP-994)."""
        known = {s.value for s in S}
        unknown = [name for name in state_filters if name not in known]
        wanted = set(state_filters) - set(unknown)
        now = now_ms()
        states = [{"transactional_id": m.transactional_id, "producer_id": m.producer_id,
                   "transaction_state": str(m.state)}
                  for m in self.state_manager.transactions.values()
                  if m.state != S.DEAD
                  and (not producer_id_filters or m.producer_id in producer_id_filters)
                  and (not state_filters or str(m.state) in wanted)
                  and (duration_filter_ms < 0 or now - m.txn_start_timestamp > duration_filter_ms)]
        return {"error_code": ErrorCode.NONE, "unknown_state_filters": unknown, "transaction_states": states}
