"""``ReplicaManager``: the partitions this broker hosts, appends to them and reads from them.

Kafka's ReplicaManager is the entry point of Produce and Fetch: it finds the
``Partition``, appends or reads, and parks requests that must wait in a
*purgatory*. A Fetch (``fetch_messages``, consumers and followers alike) reads
each partition with ``Partition.fetch_records``; one that wants ``min_bytes``
more data than there is waits (up to ``max_wait_ms``) in the fetch purgatory
(``DelayedFetch``, see :mod:`kafkalab.broker.server.delayed_fetch`), watching
the partitions it asked for: an append to one of them, a high watermark that
moves, or the partition going away wakes it to read again. With ``acks=all``
a Produce waits in the produce purgatory (``DelayedProduce``, see
:mod:`kafkalab.broker.server.delayed_produce`) until the ISR has the records; a
standalone broker's ISR is itself, so that wait is empty. A DeleteRecords waits
in the delete-records purgatory (``DelayedDeleteRecords``, see
:mod:`kafkalab.broker.server.delayed_delete_records`) until every live replica
has moved its log start offset.

In cluster mode the controller drives it:

* ``become_leader_or_follower`` (LeaderAndIsr): per partition, a leader epoch
  newer than ours makes this broker the leader (``Partition.make_leader``; its
  fetcher for the partition stops) or a follower (``Partition.make_follower``;
  a fetcher to the new leader starts, see :mod:`kafkalab.broker.server.replica_fetcher_thread`).
  An older or equal epoch is answered STALE_CONTROLLER_EPOCH, as Kafka does; a
  replica list without this broker UNKNOWN_TOPIC_OR_PARTITION. The
  ``leadership_listeners`` (the group coordinator) hear of each change.
* ``stop_replicas`` (StopReplica): stop fetching, and with ``delete`` drop the
  partition and delete its log.

and it runs two jobs, started by the first LeaderAndIsr, as Kafka's:

* ``isr-expiration`` every ``replica.lag.time.max.ms`` / 2: each led partition
  checks for followers that fell behind (``Partition.maybe_shrink_isr``);
* ``highwatermark-checkpoint`` every ``replica.high.watermark.checkpoint.interval.ms``
  (and at clean shutdown): every partition's high watermark goes to
  ``replication-offset-checkpoint`` in the log dir (Kafka's checkpoint format:
  version, count, ``<topic> <partition> <offset>`` lines). A replica's first
  LeaderAndIsr after a restart reads its HW from there.
"""
from __future__ import annotations

import asyncio
import logging
import os
import shutil
from dataclasses import dataclass
from typing import Callable, Iterable

from . import replica_manager_metrics
from .alter_partition_manager import AlterPartitionManager
from .broker_topic_stats import BrokerTopicStats
from .delayed_delete_records import DelayedDeleteRecords
from .delayed_fetch import DelayedFetch, FetchParams, FetchPartitionData, Unchanged
from .delayed_operation import DelayedOperationPurgatory
from .delayed_produce import DelayedProduce
from .fetch_purgatory import FetchPurgatory
from ..common.errors import ErrorCode, KafkaError
from ..log.offset_checkpoint import read_checkpoint, write_checkpoint
from ..cluster.partition import LogReadResult, Partition
from ..common.topic import INTERNAL_TOPICS
from ..log.log import LogAppendInfo
from .replica_fetcher_thread import InitialFetchState, ReplicaFetcherManager
from .replica_fetcher_thread import register_metrics as register_fetcher_metrics
from .replica_manager_metrics import AlterPartitionListener

log = logging.getLogger(__name__)

HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
#: StopReplica's leader epochs that skip the epoch check: the topic is being deleted / no epoch given
EPOCH_DURING_DELETE, NO_EPOCH = -2, -1
#: Append errors answered without the log start offset, as Kafka's ``appendToLocalLog`` answers them
#: (UNKNOWN_LOG_APPEND_INFO); any other failed append (a sequence gap, a fenced epoch, an invalid record,
#: too few replicas, ...) carries the partition's log start offset
_NO_LOG_START_OFFSET = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                  ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                                  ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR})


@dataclass
class LogAppendResult:
    """One partition's append for a Produce (Kafka's ``LogAppendResult``): the append's info, or the error
    (its ``record_errors``, KIP-467, on the KafkaError) with the log start offset to answer (-1 for the
    errors answered without one)."""
    info: LogAppendInfo | None = None
    error: KafkaError | None = None
    log_start_offset: int = -1
    #: acks=all: the high watermark the records need (last offset + 1), None if it is already past them
    required_offset: int | None = None


class ReplicaManager:
    def __init__(self, broker_id: int, broker=None):
        self.broker_id = broker_id
        #: the broker (its config, log manager, live brokers and controller id); None in some unit tests
        self.broker = broker
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: the fetch purgatory: the Fetches waiting for data, the fetch sessions told of changes
        self.fetch_purgatory = FetchPurgatory()
        self._fetch_waiters = self.fetch_purgatory.waiters
        self.parked_sessions = self.fetch_purgatory.parked_sessions
        self.watch_changes = self.fetch_purgatory.watch_changes
        self.unwatch_changes = self.fetch_purgatory.unwatch_changes
        self.wait_for_session = self.fetch_purgatory.wait_for_session
        #: the produce purgatory (acks=all)
        self.produce_purgatory = DelayedOperationPurgatory(self.partitions)
        #: the delete-records purgatory
        self.delete_records_purgatory = DelayedOperationPurgatory(self.partitions)
        #: the newest controller epoch seen (Kafka's ``controllerEpoch``; starts at InitialControllerEpoch)
        self.controller_epoch = 0
        #: ``callable(topic, index, is_leader, leader_epoch)``, told of every leadership change
        self.leadership_listeners: list[Callable[[str, int, bool, int], None]] = []
        self.replica_fetcher_manager = None    # created by the first LeaderAndIsr
        self.alter_partition_manager: AlterPartitionManager | None = None   # idem; tests may set their own first
        self._high_watermark_checkpoints: dict[tuple[str, int], int] | None = None
        self._jobs: set[asyncio.Task] = set()       # one-off tasks (stopping idle fetchers)
        self._periodic: list[asyncio.Task] = []     # isr-expiration, highwatermark-checkpoint
        self._shut_down = False
        #: Kafka's BrokerTopicStats and the ISR meters; None without metrics (kafkalab.metrics.enabled=false)
        self.broker_topic_stats: BrokerTopicStats | None = None
        self.alter_partition_listener: AlterPartitionListener | None = None
        registry = broker.metrics if broker is not None else None
        if registry is not None:
            self.broker_topic_stats = BrokerTopicStats(registry)
            self.alter_partition_listener = replica_manager_metrics.register(self, registry)
            register_fetcher_metrics(self, registry)

    @property
    def config(self):
        return self.broker.config

    # -- hosted partitions ------------------------------------------------------------------

    def add_partition(self, partition: Partition) -> None:
        self.partitions[(partition.topic, partition.index)] = partition
        partition.on_delayed_requests = self._try_complete_delayed_requests
        partition.is_broker_alive = self._is_broker_alive
        if self.broker is not None:
            partition.replica_lag_time_max_ms = self.broker.config["replica.lag.time.max.ms"]
        partition.alter_partition = self._alter_partition
        partition.alter_partition_listener = self.alter_partition_listener

    def remove_partition(self, topic: str, index: int) -> Partition | None:
        """Stop hosting a partition; a Fetch or Produce waiting on it answers at once (Kafka's stopPartitions)."""
        partition = self.partitions.pop((topic, index), None)
        if partition is not None and self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.remove_fetcher_for_partitions([(topic, index)])
        self.notify_data_arrived(topic, index)
        self.produce_purgatory.check_and_complete((topic, index))
        self.delete_records_purgatory.check_and_complete((topic, index))
        stats = self.broker_topic_stats
        if stats is not None and partition is not None and not any(t == topic for t, _ in self.partitions):
            stats.remove_metrics(topic)   # the topic's last partition here: its BrokerTopicMetrics go
        return partition

    def get_partition(self, topic: str, index: int) -> Partition:
        p = self.partitions.get((topic, index))
        if p is None:
            broker = self.broker
            meta = broker.metadata_cache.get(topic) if broker is not None else None
            if meta is not None and 0 <= index < meta.num_partitions and broker.in_cluster:
                # Kafka's getPartitionOrError: a partition of a known topic that is not here is led elsewhere
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 f"broker {self.broker_id} does not host {topic}-{index}")
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"This server does not host this topic-partition: {topic}-{index}")
        return p

    # -- produce ---------------------------------------------------------------------------

    def append_records(self, topic: str, index: int, records: bytes, required_acks: int,
                       from_coordinator: bool = False) -> LogAppendInfo:
        """Append to the partition this broker leads (raises KafkaError); the coordinators' appends."""
        stats = self.broker_topic_stats
        if stats is not None:
            stats.produce_tried(topic)
        try:
            return self._append(self.get_partition(topic, index), records, required_acks, from_coordinator)
        except KafkaError as exc:
            if stats is not None:
                stats.produce_failed(topic, exc.code)
            raise

    def _append(self, partition: Partition, records: bytes, required_acks: int,
                from_coordinator: bool = False) -> LogAppendInfo:
        info = partition.append_records_to_leader(records, required_acks, from_coordinator)
        stats = self.broker_topic_stats
        if stats is not None:
            stats.produce_appended(partition.topic, info.records_count, len(records))
        if not info.duplicate:
            self.notify_data_arrived(partition.topic, partition.index)
        return info

    def append_to_local_log(self, topic: str, index: int, records: bytes, required_acks: int) -> LogAppendResult:
        """A Produce's append to one partition (Kafka's ``appendToLocalLog``): never raises a KafkaError, it
        is the result's ``error``; for ``required_acks == -1`` the offset the high watermark must reach."""
        partition = None
        stats = self.broker_topic_stats
        if stats is not None:
            stats.produce_tried(topic)
        try:
            partition = self.get_partition(topic, index)
            info = self._append(partition, records, required_acks)
        except KafkaError as exc:
            if stats is not None:
                stats.produce_failed(topic, exc.code)
            start = -1 if partition is None or exc.code in _NO_LOG_START_OFFSET else partition.log.log_start_offset
            # kept without its traceback and chained errors: they hold the frames of the append (the request's
            # records, a decompressed batch) alive for as long as the result lives
            exc.__context__ = exc.__cause__ = None
            return LogAppendResult(error=exc.with_traceback(None), log_start_offset=start)
        result = LogAppendResult(info, log_start_offset=info.log_start_offset)
        if required_acks == -1:   # wait only if the high watermark is not past the records yet (never standalone)
            required = info.last_offset + 1
            result.required_offset = required if partition.log.high_watermark < required else None
        return result

    async def wait_for_acks(self, required_offsets: dict[tuple[str, int], int], timeout_ms: int) -> dict:
        """The produce purgatory: wait until each partition's HW reaches its required offset (last
        appended offset + 1) or ``timeout_ms`` passes; returns an error code per partition."""
        return await DelayedProduce(self.produce_purgatory, required_offsets).wait(timeout_ms)

    async def append_records_and_wait(self, topic: str, index: int, records: bytes, required_acks: int,
                                      timeout_ms: int, from_coordinator: bool = False):
        """Append and, for ``required_acks == -1``, wait for the ISR (what a Produce does for one
        partition; the group coordinator's offset commits use it). Raises ``KafkaError``."""
        info = self.append_records(topic, index, records, required_acks, from_coordinator)
        if required_acks == -1:
            required = info.last_offset + 1
            partition = self.partitions.get((topic, index))
            if partition is None or partition.log.high_watermark < required or not partition.standalone:
                error = (await self.wait_for_acks({(topic, index): required}, timeout_ms))[(topic, index)]
                if error != ErrorCode.NONE:
                    raise KafkaError(error, f"{topic}-{index}: records appended up to offset {info.last_offset} "
                                            f"but not acknowledged: {ErrorCode(error).name}")
        return info

    def _try_complete_delayed_requests(self, partition: Partition) -> None:
        """The HW, the low watermark or the ISR of ``partition`` moved: wake waiting Fetches, DelayedProduces
        and DelayedDeleteRecords."""
        key = (partition.topic, partition.index)
        self.notify_data_arrived(*key)
        self.produce_purgatory.check_and_complete(key)
        self.delete_records_purgatory.check_and_complete(key)

    def _is_broker_alive(self, broker_id: int) -> bool:
        """Kafka's ``metadataCache.hasAliveBroker`` (a standalone broker knows no other)."""
        if self.broker is None or not self.broker.in_cluster:
            return True
        return self.broker.metadata_cache.alive_broker(broker_id) is not None

    # -- DeleteRecords -----------------------------------------------------------------------

    def delete_records_on_local_log(self, offsets: dict[tuple[str, int], int]
                                    ) -> tuple[dict[tuple[str, int], tuple[int, int]], dict[tuple[str, int], int]]:
        """Kafka's ``deleteRecordsOnLocalLog``: per partition, (the offset asked for, the low watermark) where
        this leader deleted, else the error code (an internal topic: INVALID_TOPIC_EXCEPTION)."""
        deleted, errors = {}, {}
        for key, offset in offsets.items():
            try:
                if key[0] in INTERNAL_TOPICS:
                    raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                     f"Cannot delete records of internal topic {key[0]}")
                deleted[key] = self.get_partition(*key).delete_records_on_leader(offset)
            except KafkaError as exc:
                errors[key] = exc.code
        return deleted, errors

    async def wait_for_low_watermarks(self, deleted: dict[tuple[str, int], tuple[int, int]],
                                      timeout_ms: int) -> dict[tuple[str, int], tuple[int, int]]:
        """The delete-records purgatory: (error code, low watermark) per partition deleted on this leader."""
        return await DelayedDeleteRecords(self.delete_records_purgatory, deleted).wait(timeout_ms)

    # -- fetch -------------------------------------------------------------------------------

    async def fetch_messages(self, params: FetchParams, fetch_infos: list[FetchPartitionData],
                             unchanged: Unchanged | None = None) -> list[LogReadResult | None]:
        """Kafka's ``fetchMessages``, for consumers and followers: read each partition
        (:meth:`read_from_local_log`) and, when fewer than ``min_bytes`` are ready, wait in the fetch
        purgatory (:class:`~kafkalab.broker.server.delayed_fetch.DelayedFetch`) up to ``max_wait_ms``.
        One ``LogReadResult`` per partition, in the order asked (None: not read, ``unchanged``)."""
        return await DelayedFetch(self, params, fetch_infos, unchanged).run()

    async def fetch_session_messages(self, params: FetchParams, context, denied: set) -> list:
        """:meth:`fetch_messages` for an incremental fetch session (``context``): the (partition, LogReadResult)
        of each partition read (``DelayedFetch.run_session``)."""
        return await DelayedFetch(self, params, []).run_session(context, denied)

    def read_from_local_log(self, params: FetchParams, fetch_infos: list[FetchPartitionData],
                            update_fetch_state: bool, unchanged: Unchanged | None = None
                            ) -> tuple[list[LogReadResult | None], int, bool]:
        """Kafka's ``readFromLocalLog``: each partition's read (``Partition.fetch_records``) within
        ``params.max_bytes`` in all and the partition's own ``max_bytes``, except that the first batch of
        the first non-empty partition is returned whole (KIP-74). Returns the results, the bytes read and
        whether one failed or diverged (the fetch is then answered at once).

        The first read of a Fetch (``update_fetch_state``) marks each partition's TotalFetchRequestsPerSec (and
        FailedFetchRequestsPerSec) in BrokerTopicStats, as Kafka's ``readFromLocalLog`` marks them when it reads;
        the reads after waiting in the purgatory do not (Kafka's DelayedFetch reads again and marks again), so a
        Fetch is counted once, and one that was parked when its topic was deleted does not bring the topic's
        series back when it completes.

        ``unchanged(info, partition)`` (an incremental fetch session's): True for a partition whose answer would
        be the same empty one the fetcher was last given; it is not read (None in the results) and not marked."""
        results: list[LogReadResult | None] = []
        total, errors = 0, False
        stats = self.broker_topic_stats if update_fetch_state else None
        for info in fetch_infos:
            if info.topic is None:
                result = LogReadResult(error_code=ErrorCode.UNKNOWN_TOPIC_ID)
            else:
                try:
                    partition = self.get_partition(info.topic, info.partition)
                    signature = None
                    if unchanged is not None:
                        if unchanged(info, partition):
                            results.append(None)
                            continue
                        signature = (partition, *partition.fetch_signature())   # before the read moves the HW
                    result = partition.fetch_records(
                        params.replica_id, info.fetch_offset, info.current_leader_epoch, info.last_fetched_epoch,
                        info.log_start_offset, min(info.max_bytes, max(params.max_bytes - total, 0)), total == 0,
                        params.read_committed, update_fetch_state)
                    result.signature = signature
                except KafkaError as exc:
                    result = LogReadResult(error_code=exc.code)
            errors = errors or result.error_code != 0 or result.diverging_epoch is not None
            total += len(result.records)
            results.append(result)
            if stats is not None and info.topic is not None:
                stats.fetch_read(info.topic, result.error_code)
        return results, total, errors

    # -- the fetch purgatory (fetch_purgatory.py) ---------------------------------------------------

    def notify_data_arrived(self, topic: str, index: int) -> None:
        """Wake the Fetches watching this partition and tell the fetch sessions holding it that it changed."""
        self.fetch_purgatory.notify_data_arrived(topic, index)

    async def wait_for_data(self, watched: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Park until one of the ``watched`` (topic, partition)s changes, or ``timeout_s`` passes."""
        await self.fetch_purgatory.wait_for_data(watched, timeout_s)

    # -- the controller's requests ---------------------------------------------------------------

    def become_leader_or_follower(self, controller_id: int, controller_epoch: int, states: list,
                                  topic_ids: dict, live_leaders: dict[int, tuple[str, int]], kraft: bool = False
                                  ) -> dict[tuple[str, int], int]:
        """LeaderAndIsr (Kafka's ``becomeLeaderOrFollower``); returns an error code per partition.

        ``kraft``: the states come from a KRaft broker's metadata records (``kafkalab.kraft``), where a change
        of the ISR alone keeps the leader epoch: a newer partition epoch at the same leader epoch is applied
        too (Kafka's ``applyDelta``, ``Partition.makeLeader`` checking the partition epoch)."""
        if controller_epoch < self.controller_epoch:
            raise KafkaError(ErrorCode.STALE_CONTROLLER_EPOCH,
                             f"controller {controller_id}'s epoch {controller_epoch} is older than "
                             f"{self.controller_epoch}")
        self.controller_epoch = controller_epoch
        self._start_cluster_jobs()
        errors: dict[tuple[str, int], int] = {}
        to_lead, to_follow = [], []
        for state in states:
            key = (state.topic, state.partition)
            try:
                partition = self.partitions.get(key)
                if partition is None:
                    partition = self.broker.get_or_create_partition(state.topic, state.partition,
                                                                    topic_ids.get(state.topic))
            except KafkaError as exc:
                errors[key] = exc.code
                continue
            current = -1 if partition.standalone else partition.leader_epoch
            newer = state.leader_epoch > current or (kraft and state.leader_epoch == current
                                                     and state.partition_epoch > partition.partition_epoch)
            if newer:
                if self.broker_id not in state.replicas:
                    log.warning("broker %d: ignoring LeaderAndIsr for %s: not among its replicas %s",
                                self.broker_id, partition.name, state.replicas)
                    errors[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif state.leader == self.broker_id:
                    to_lead.append((partition, state))
                else:
                    to_follow.append((partition, state))
            else:
                # an older epoch is a stale controller's decision; an equal one we have already applied
                log.info("broker %d: ignoring LeaderAndIsr for %s at leader epoch %d (ours is %d)",
                         self.broker_id, partition.name, state.leader_epoch, current)
                errors[key] = ErrorCode.STALE_CONTROLLER_EPOCH
        checkpoints = self._read_high_watermark_checkpoints() if (to_lead or to_follow) else {}
        fetchers = self._fetcher_manager()
        if to_lead:
            fetchers.remove_fetcher_for_partitions([(p.topic, p.index) for p, _ in to_lead])
        for partition, state in to_lead:
            key = (partition.topic, partition.index)
            try:
                partition.make_leader(state, checkpoints.get(key))
                self.notify_data_arrived(*key)   # Kafka's completeDelayedFetchOrProduceRequests
                errors[key] = ErrorCode.NONE
            except Exception:
                log.exception("broker %d: error making %s the leader", self.broker_id, partition.name)
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
        restart = {}
        for partition, state in to_follow:
            key = (partition.topic, partition.index)
            try:
                if partition.make_follower(state, checkpoints.get(key)):
                    restart[key] = state
                self.notify_data_arrived(*key)   # a Fetch parked here as at the leader answers NOT_LEADER
                errors[key] = ErrorCode.NONE
            except Exception:
                log.exception("broker %d: error making %s a follower", self.broker_id, partition.name)
                errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
        if restart:
            fetchers.remove_fetcher_for_partitions(restart)
            initial = {}
            for key, state in restart.items():
                address = live_leaders.get(state.leader) or self._broker_address(state.leader)
                if address is None:   # the leader is not alive: follow once a LeaderAndIsr names a live one
                    log.info("broker %d: leader %d of %s-%d is not alive; not fetching", self.broker_id,
                             state.leader, *key)
                    continue
                initial[key] = InitialFetchState(state.leader, address[0], address[1], state.leader_epoch)
            fetchers.add_fetcher_for_partitions(initial)
        self._spawn(fetchers.shutdown_idle_fetcher_threads())
        for partition, state in to_lead + to_follow:
            if errors.get((partition.topic, partition.index)) == ErrorCode.NONE:
                self._tell_listeners(partition.topic, partition.index, partition.is_leader, partition.leader_epoch)
        return errors

    def stop_replicas(self, controller_id: int, controller_epoch: int,
                      partitions: list[tuple[str, int, int, bool]]) -> dict[tuple[str, int], int]:
        """StopReplica (Kafka's ``stopReplicas``): stop fetching; with ``delete`` remove the partition and
        its log. A leader epoch older than ours is FENCED_LEADER_EPOCH (-1 and -2 skip the check)."""
        if controller_epoch < self.controller_epoch:
            raise KafkaError(ErrorCode.STALE_CONTROLLER_EPOCH,
                             f"controller {controller_id}'s epoch {controller_epoch} is older than "
                             f"{self.controller_epoch}")
        self.controller_epoch = controller_epoch
        errors: dict[tuple[str, int], int] = {}
        to_stop: list[tuple[str, int, bool]] = []
        for topic, index, leader_epoch, delete in partitions:
            partition = self.partitions.get((topic, index))
            if partition is not None and leader_epoch not in (EPOCH_DURING_DELETE, NO_EPOCH) \
                    and not partition.standalone and leader_epoch < partition.leader_epoch:
                log.info("broker %d: ignoring StopReplica for %s at leader epoch %d (ours is %d)",
                         self.broker_id, partition.name, leader_epoch, partition.leader_epoch)
                errors[(topic, index)] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            to_stop.append((topic, index, delete))
            errors[(topic, index)] = ErrorCode.NONE
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.remove_fetcher_for_partitions([(t, i) for t, i, _ in to_stop])
            self._spawn(self.replica_fetcher_manager.shutdown_idle_fetcher_threads())
        for topic, index, delete in to_stop:
            partition = self.partitions.get((topic, index))
            epoch = partition.leader_epoch if partition is not None else -1
            if delete:
                self.remove_partition(topic, index)
                if partition is not None:
                    partition.stop_being_leader()
                if self.broker is not None:
                    self.broker.log_manager.delete_log(topic, index)
                    leftover = os.path.join(self.broker.log_dir, f"{topic}-{index}")
                    if os.path.isdir(leftover):   # a directory no log was opened for
                        shutil.rmtree(leftover, ignore_errors=True)
                if self._high_watermark_checkpoints is not None:
                    self._high_watermark_checkpoints.pop((topic, index), None)
            else:
                self.notify_data_arrived(topic, index)
                self.produce_purgatory.check_and_complete((topic, index))
            self._tell_listeners(topic, index, False, epoch)
        return errors

    def _tell_listeners(self, topic: str, index: int, is_leader: bool, leader_epoch: int) -> None:
        for listener in list(self.leadership_listeners):
            try:
                listener(topic, index, is_leader, leader_epoch)
            except Exception:
                log.exception("broker %d: leadership listener %r failed for %s-%d", self.broker_id, listener,
                              topic, index)

    def _broker_address(self, broker_id: int) -> tuple[str, int] | None:
        for b, host, port in (self.broker.live_brokers if self.broker is not None else []):
            if b == broker_id:
                return host, port
        return None

    # -- the parts cluster mode adds -------------------------------------------------------------

    def _fetcher_manager(self):
        if self.replica_fetcher_manager is None:
            self.replica_fetcher_manager = ReplicaFetcherManager(self, self.broker.config)
        return self.replica_fetcher_manager

    def _alter_partition(self, partition: Partition, pending) -> None:
        if self.alter_partition_manager is None:
            self.alter_partition_manager = AlterPartitionManager(self.broker_id, broker=self.broker)
        self.alter_partition_manager.submit(partition, pending)

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._jobs.add(task)
        task.add_done_callback(self._jobs.discard)

    def _start_cluster_jobs(self) -> None:
        """Kafka starts ``isr-expiration`` at startup and the HW checkpoint thread at the first
        LeaderAndIsr; both start here, at the first LeaderAndIsr, so a standalone broker runs neither."""
        if self._periodic or self.broker is None:
            return
        cfg = self.broker.config
        self._periodic = [
            asyncio.get_running_loop().create_task(
                self._every("isr-expiration", max(cfg["replica.lag.time.max.ms"] // 2, 10), self.maybe_shrink_isr)),
            asyncio.get_running_loop().create_task(
                self._every("highwatermark-checkpoint", cfg["replica.high.watermark.checkpoint.interval.ms"],
                            self.checkpoint_high_watermarks)),
        ]

    @staticmethod
    async def _every(name: str, interval_ms: int, job) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                job()
            except Exception:
                log.exception("replica manager job %s failed", name)

    def maybe_shrink_isr(self) -> None:
        for partition in list(self.partitions.values()):
            if partition.is_leader and not partition.standalone:
                partition.maybe_shrink_isr()

    # -- replication-offset-checkpoint ---------------------------------------------------------------

    @property
    def high_watermark_checkpoint_path(self) -> str:
        return os.path.join(self.broker.log_dir, HIGH_WATERMARK_CHECKPOINT)

    def _read_high_watermark_checkpoints(self) -> dict[tuple[str, int], int]:
        if self._high_watermark_checkpoints is None:
            self._high_watermark_checkpoints = read_checkpoint(self.high_watermark_checkpoint_path) \
                if self.broker is not None else {}
        return self._high_watermark_checkpoints

    def checkpoint_high_watermarks(self) -> None:
        """Write every replicated partition's high watermark (Kafka's ``checkpointHighWatermarks``)."""
        if self.broker is None:
            return
        # a log whose partition has not had its first LeaderAndIsr since the restart keeps its old entry
        logs = self.broker.log_manager.logs
        hws = {key: hw for key, hw in self._read_high_watermark_checkpoints().items() if key in logs}
        hws.update({key: p.log.high_watermark for key, p in self.partitions.items() if not p.standalone})
        write_checkpoint(self.high_watermark_checkpoint_path, hws)
        self._high_watermark_checkpoints = hws

    async def shutdown(self) -> None:
        """Clean shutdown: stop the fetchers and the jobs, then write the high watermarks one last time."""
        if self._shut_down:
            return
        self._shut_down = True
        tasks = list(self._periodic) + list(self._jobs)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.replica_fetcher_manager is not None:
            await self.replica_fetcher_manager.shutdown()
        if self.alter_partition_manager is not None:
            await self.alter_partition_manager.shutdown()
        if self._periodic:   # cluster mode ran: the HW checkpoint, as Kafka's shutdown(checkpointHW = true)
            self.checkpoint_high_watermarks()
