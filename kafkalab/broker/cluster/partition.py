"""``Partition``: one topic-partition on this broker — its log and its replica state.

Kafka's ``kafka.cluster.Partition`` holds the leader epoch, the assigned
replicas, the in-sync replica set (ISR) and the local ``UnifiedLog``.

A **standalone** mini broker is the only replica of every partition: its ISR
is itself and its high watermark (HW) follows its log end offset (LEO) after
every append. Nothing below runs for it.

In **cluster mode** the controller makes each replica a leader or a follower
(LeaderAndIsr: ``make_leader`` / ``make_follower``). The leader keeps, per
follower, a ``Replica`` state (Kafka's ``ReplicaState``) which every follower
Fetch updates:

* the follower's LEO is the offset it fetches from (it has everything below);
* its *last caught-up time* is the latest time at which it had fetched up to
  the leader's LEO (exactly, or up to the leader's LEO at its previous fetch:
  Kafka's ``updateFetchStateOrThrow``).

From those the leader moves

* the **high watermark** (``maybe_increment_leader_hw``): the smallest LEO over
  the *maximal* ISR (the ISR plus a replica whose addition is pending) and the
  caught-up followers about to join; only forward, and not while the ISR is
  smaller than ``min.insync.replicas`` (Kafka 3.7+);
* the **ISR**: a follower whose LEO reached the HW and the start of the current
  leader epoch joins (``maybe_expand_isr``); one not caught up for
  ``replica.lag.time.max.ms`` leaves (``maybe_shrink_isr``, run by the replica
  manager every half of that). The leader does not change the ISR itself: it
  *proposes* it to the controller with AlterPartition
  (``AlterPartitionManager``); until the answer comes the partition is in a
  pending state (``PendingExpandIsr`` / ``PendingShrinkIsr``, KIP-497) and
  proposes nothing else. The controller's answer becomes the committed state;
  FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION leave it pending until the
  controller's next LeaderAndIsr says what is true. A follower on a broker that
  is shutting down is refused (INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED);
  Kafka proposes it again at its next fetch, the mini broker at most every
  ``ISR_EXPANSION_RETRY_BACKOFF_MS`` (not Kafka: it keeps the log readable).

``acks=all`` (``append_records_to_leader`` + ``check_enough_replicas_reach_offset``):
refused with NOT_ENOUGH_REPLICAS when the ISR is smaller than
``min.insync.replicas`` (capped at the replication factor, Kafka's
``effectiveMinIsr``), acknowledged once the HW passes the batch, with
NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below the minimum meanwhile.

Where it is: this module holds ``Partition`` itself (epochs, LeaderAndIsr, the
leader's reads for followers and its HW, appends, the follower's truncation).
Kafka's ``Replica`` class is :mod:`.replica`; the ISR states and the ISR
maintenance (``maybe_expand_isr``, ``maybe_shrink_isr``, the AlterPartition
answer, ``effective_min_isr``) are :mod:`.isr`, whose ``IsrMaintenance`` is a
part of ``Partition`` (a mixin). Their names can be imported from here as well.

Simplified: no reassignment (adding/removing replicas are kept, not acted on),
no broker-epoch checks of KRaft, no fetch from follower for consumers.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

from ..common.errors import ErrorCode, KafkaError
from ..common.records import iter_batches
from ..log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from ..log.log import LogAppendInfo, UnifiedLog
from .isr import (ISR_EXPANSION_RETRY_BACKOFF_MS, CommittedPartitionState, IsrMaintenance, PendingExpandIsr,
                  PendingShrinkIsr)
from .replica import UNKNOWN_OFFSET, Replica

log = logging.getLogger(__name__)

__all__ = ["Partition", "FollowerReadResult", "LogReadResult", "Replica", "CommittedPartitionState", "PendingExpandIsr",
           "PendingShrinkIsr", "ISR_EXPANSION_RETRY_BACKOFF_MS", "UNKNOWN_OFFSET", "NO_LEADER", "now_ms"]

NO_LEADER = -1


def now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class FollowerReadResult:
    """What the leader answers one follower partition of a Fetch (Kafka's ``LogReadInfo``)."""
    records: bytes = b""
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: tuple[int, int] | None = None   # (epoch, end offset)


@dataclass
class LogReadResult:
    """What one partition of a Fetch read (Kafka's ``LogReadResult``): records and the log's bounds, or a
    diverging epoch (epoch, end offset) instead of records, or an error code (the rest is -1)."""
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None
    #: read_committed: the aborted transactions overlapping the read (``AbortedTxn``s); else None
    aborted_transactions: list | None = None
    error_code: int = 0
    #: the partition and its ``fetch_signature()`` just before the read (a fetch session's reads only)
    signature: tuple | None = None


class Partition(IsrMaintenance):
    def __init__(self, topic: str, index: int, log: UnifiedLog, broker_id: int, standalone: bool = True,
                 clock: Callable[[], int] = now_ms):
        self.topic = topic
        self.index = index
        self.log = log
        self.local_broker_id = broker_id
        self.clock = clock
        #: ``replica.lag.time.max.ms`` (a broker config; the ReplicaManager sets it)
        self.replica_lag_time_max_ms = 30_000
        #: True until the controller first makes this replica a leader or a follower
        self.standalone = standalone
        self._high_watermark_initialized = False
        self.topic_id = None
        self.controller_epoch = 0
        self.partition_epoch = 0
        self.adding_replicas: list[int] = []
        self.removing_replicas: list[int] = []
        #: the followers' states, on the leader only (Kafka's remoteReplicasMap)
        self.remote_replicas: dict[int, Replica] = {}
        self.leader_epoch_start_offset: int | None = None
        #: followers the controller refused to add to the ISR -> when (clock ms) it last refused
        self.isr_expansion_refused: dict[int, int] = {}
        #: ``alter_partition(partition, pending_state)`` sends an ISR change to the controller (set by the
        #: ReplicaManager; unit tests answer for the controller themselves)
        self.alter_partition: Callable | None = None
        #: Kafka's ``AlterPartitionListener``: ``mark_isr_expand``, ``mark_isr_shrink``, ``mark_failed`` (the
        #: ReplicaManager's ISR meters; None without metrics)
        self.alter_partition_listener = None
        #: called when the HW moved or the ISR changed: wakes DelayedProduces and Fetches (Kafka's
        #: ``tryCompleteDelayedRequests``)
        self.on_delayed_requests: Callable[["Partition"], None] | None = None
        #: whether a broker is alive (registered): the low watermark counts the followers on live brokers only
        #: (set by the ReplicaManager from its metadata cache; None: every follower counts)
        self.is_broker_alive: Callable[[int], bool] | None = None
        if standalone:
            self.leader_id = broker_id
            self.leader_epoch = 0
            self.replicas = [broker_id]
            self.partition_state = CommittedPartitionState(frozenset([broker_id]))
            # becoming leader: the new epoch starts at the log end offset (Kafka's makeLeader)
            log.leader_epoch_cache.assign(self.leader_epoch, log.log_end_offset)
        else:
            self.leader_id = NO_LEADER
            self.leader_epoch = -1        # Kafka's LeaderAndIsr.InitialLeaderEpoch - 1: any first epoch is newer
            self.replicas = []
            self.partition_state = CommittedPartitionState(frozenset())

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    @property
    def isr(self) -> list[int]:
        """The committed ISR (sorted, for printing)."""
        return sorted(self.partition_state.isr)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    def fetch_signature(self) -> tuple:
        """What a Fetch's answer for this partition depends on besides the request: the leader and partition
        epochs, and the log's end, high watermark and start (a fetch session does not read a partition again
        while this and the request stay as they were at its last empty answer)."""
        log_ = self.log
        return (self.leader_epoch, self.partition_epoch, log_.log_end_offset, log_.high_watermark,
                log_.log_start_offset)

    def __repr__(self) -> str:
        return (f"Partition({self.name}, leader={self.leader_id}, leader_epoch={self.leader_epoch}, "
                f"replicas={self.replicas}, isr={self.isr}, hw={self.log.high_watermark}, "
                f"leo={self.log.log_end_offset})")

    # -- epochs and who leads ----------------------------------------------------------

    def check_current_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's ``checkCurrentLeaderEpoch`` (KIP-320): the epoch a client believes current (-1: don't check).

        An older one gets FENCED_LEADER_EPOCH (the client's metadata is stale),
        a newer one UNKNOWN_LEADER_EPOCH (this broker's is).
        """
        if current_leader_epoch == -1:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                             f"{self.name}: leader epoch {current_leader_epoch} is older than {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                             f"{self.name}: leader epoch {current_leader_epoch} is newer than {self.leader_epoch}")

    def local_log_with_epoch(self, current_leader_epoch: int, require_leader: bool) -> UnifiedLog:
        """Kafka's ``localLogWithEpochOrThrow``, checked by Fetch, ListOffsets and OffsetForLeaderEpoch:
        the leader epoch, then (for consumers, not followers) that this broker leads the partition."""
        self.check_current_leader_epoch(current_leader_epoch)
        if require_leader and self.leader_id != self.local_broker_id:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.local_broker_id} is not the leader of {self.name}")
        return self.log

    # -- becoming leader or follower (LeaderAndIsr) ------------------------------------------

    def _init_high_watermark(self, checkpointed: int | None) -> None:
        """The first LeaderAndIsr: a partition made as a standalone one forgets being its own leader
        at epoch 0 (any epoch the controller sends is new), and the HW comes from
        ``replication-offset-checkpoint`` (0 if absent), clamped to the log, as Kafka's ``createLog`` does."""
        if self.standalone:
            self.standalone = False
            self.leader_id = NO_LEADER
            self.leader_epoch = -1
            self.replicas = []
            self.partition_state = CommittedPartitionState(frozenset())
        if not self._high_watermark_initialized:
            self._high_watermark_initialized = True
            hw = 0 if checkpointed is None else checkpointed
            self.log.high_watermark = min(max(hw, self.log.log_start_offset), self.log.log_end_offset)

    def make_leader(self, state, checkpointed_high_watermark: int | None = None) -> bool:
        """Kafka's ``makeLeader``; returns True if this broker was not the leader before.

        A partition epoch older than ours is ignored (the AlterPartition answer may have told us a
        newer one already). A new leader epoch starts at the log end offset in the leader epoch
        cache, and the followers' states restart: an ISR member counts as caught up now.
        """
        if state.partition_epoch < self.partition_epoch:
            log.info("%s: skipped become-leader at partition epoch %d, already at %d", self.name,
                     state.partition_epoch, self.partition_epoch)
            return False
        self._init_high_watermark(checkpointed_high_watermark)
        self.controller_epoch = state.controller_epoch
        current = self.clock()
        is_new_leader = not self.is_leader
        is_new_leader_epoch = state.leader_epoch > self.leader_epoch
        self._update_assignment_and_isr(state.replicas, True, state.isr, state)
        if is_new_leader_epoch:
            start = self.log.log_end_offset
            # a follower may hold a later epoch than any this log knows; caching the new epoch lets it
            # find where to truncate
            self.log.leader_epoch_cache.assign(state.leader_epoch, start)
            for replica in self.remote_replicas.values():
                replica.reset(current, start, is_new_leader, replica.broker_id in state.isr)
            self.leader_epoch = state.leader_epoch
            self.leader_epoch_start_offset = start
            self.isr_expansion_refused.clear()
            log.info("%s: leader at epoch %d from offset %d, ISR %s, HW %d", self.name, state.leader_epoch,
                     start, sorted(state.isr), self.log.high_watermark)
        self.partition_epoch = state.partition_epoch
        self.leader_id = self.local_broker_id
        if self.maybe_increment_leader_hw(current):   # the ISR may be down to the leader alone
            self._try_complete_delayed_requests()
        return is_new_leader

    def make_follower(self, state, checkpointed_high_watermark: int | None = None) -> bool:
        """Kafka's ``makeFollower``: the leader and epoch from the controller, the ISR forgotten (only
        leaders keep it). Returns True if the leader epoch changed (the fetcher must restart)."""
        if state.partition_epoch < self.partition_epoch:
            log.info("%s: skipped become-follower at partition epoch %d, already at %d", self.name,
                     state.partition_epoch, self.partition_epoch)
            return False
        self._init_high_watermark(checkpointed_high_watermark)
        self.controller_epoch = state.controller_epoch
        is_new_leader_epoch = state.leader_epoch > self.leader_epoch
        self.leader_id = state.leader
        self.leader_epoch = state.leader_epoch
        self.leader_epoch_start_offset = None
        self.partition_epoch = state.partition_epoch
        self._update_assignment_and_isr(state.replicas, False, [], state)
        if is_new_leader_epoch:
            log.info("%s: follower of %d at epoch %d from offset %d, HW %d", self.name, state.leader,
                     state.leader_epoch, self.log.log_end_offset, self.log.high_watermark)
        self._try_complete_delayed_requests()   # a DelayedProduce waiting here must fail now
        return is_new_leader_epoch

    def _update_assignment_and_isr(self, replicas, is_leader: bool, isr, state) -> None:
        """Kafka's ``updateAssignmentAndIsr``: one ``Replica`` per follower on a leader, none on a follower."""
        self.replicas = list(replicas)
        if is_leader:
            followers = [r for r in replicas if r != self.local_broker_id]
            for r in followers:
                self.remote_replicas.setdefault(r, Replica(r))
            for r in list(self.remote_replicas):
                if r not in followers:
                    del self.remote_replicas[r]
        else:
            self.remote_replicas.clear()
        self.adding_replicas = list(state.adding_replicas or [])
        self.removing_replicas = list(state.removing_replicas or [])
        self.partition_state = CommittedPartitionState(frozenset(isr))

    def stop_being_leader(self) -> None:
        """The partition is no longer hosted here (StopReplica): waiting produces must fail."""
        self.leader_id = NO_LEADER
        self.remote_replicas.clear()
        self._try_complete_delayed_requests()

    # -- the leader: follower fetches and the HW (the ISR: IsrMaintenance) --------------------

    def fetch_records(self, replica_id: int, fetch_offset: int, current_leader_epoch: int, last_fetched_epoch: int,
                      log_start_offset: int, max_bytes: int, min_one: bool, read_committed: bool,
                      update_fetch_state: bool) -> LogReadResult:
        """Kafka's ``fetchRecords``: one partition of a Fetch, for a consumer (``replica_id`` -1) or a follower
        (raises KafkaError).

        A follower of a cluster-mode partition: :meth:`read_for_follower` (past the HW; its position
        recorded if ``update_fetch_state``). Otherwise the leader epoch is checked (and, for a consumer,
        that this broker leads), then the ``last_fetched_epoch`` (v12+) as for every fetcher: if that
        epoch ends here below the fetch offset the answer is the diverging epoch instead of records (the
        consumer then validates its position); an epoch not known here is OFFSET_OUT_OF_RANGE. A consumer
        reads up to the high watermark, or with ``read_committed`` up to the last stable offset, and then
        gets the aborted transactions overlapping what it read.
        """
        if replica_id >= 0 and not self.standalone:
            r = self.read_for_follower(replica_id, fetch_offset, last_fetched_epoch, current_leader_epoch,
                                       log_start_offset, max_bytes, min_one, update_fetch_state)
            return LogReadResult(r.high_watermark, r.high_watermark, r.log_start_offset, r.records,
                                 r.diverging_epoch)
        # (a request without current_leader_epoch, before Fetch v9, has -1: "don't check")
        log_ = self.local_log_with_epoch(current_leader_epoch, require_leader=replica_id < 0)
        diverging = self._diverging_epoch(log_, fetch_offset, last_fetched_epoch)
        lso = log_.last_stable_offset
        if diverging is not None:
            return LogReadResult(log_.high_watermark, lso, log_.log_start_offset, b"", diverging,
                                 [] if read_committed else None)
        max_offset = None if replica_id >= 0 else (lso if read_committed else log_.high_watermark)
        records = log_.read(fetch_offset, max_bytes, max_offset, min_one_message=min_one)
        # Kafka lists aborted transactions for READ_COMMITTED only, else null
        aborted = log_.collect_aborted_transactions(fetch_offset, lso) if read_committed else None
        return LogReadResult(log_.high_watermark, lso, log_.log_start_offset, records, None, aborted)

    def _diverging_epoch(self, log_: UnifiedLog, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        if last_fetched_epoch < 0:
            return None
        epoch, end = log_.leader_epoch_cache.end_offset_for(last_fetched_epoch, log_.log_end_offset)
        if epoch == UNDEFINED_EPOCH or end == UNDEFINED_EPOCH_OFFSET:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"{self.name}: no end offset for the last fetched epoch {last_fetched_epoch}")
        if fetch_offset < log_.log_start_offset:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, f"{self.name}: offset {fetch_offset} is below "
                                                            f"the log start offset {log_.log_start_offset}")
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def read_for_follower(self, replica_id: int, fetch_offset: int, last_fetched_epoch: int,
                          current_leader_epoch: int, log_start_offset: int, max_bytes: int, min_one: bool,
                          update_fetch_state: bool) -> FollowerReadResult:
        """The leader side of a follower's Fetch (Kafka's ``fetchRecords`` for a follower).

        Checks the epoch and leadership, the replica id (UNKNOWN_LEADER_EPOCH if it is not an assigned
        replica and the request has an epoch, else NOT_LEADER_OR_FOLLOWER), then answers a
        *diverging epoch* if the follower's last fetched epoch ends, here, below its fetch offset
        (KIP-595's truncation through Fetch); otherwise reads past the HW and records the follower's
        position, which may move the HW and the ISR.
        """
        log_ = self.local_log_with_epoch(current_leader_epoch, require_leader=True)
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            code = ErrorCode.UNKNOWN_LEADER_EPOCH if current_leader_epoch != -1 else ErrorCode.NOT_LEADER_OR_FOLLOWER
            raise KafkaError(code, f"replica {replica_id} is not a replica of {self.name} "
                                   f"at leader epoch {self.leader_epoch}")
        # the log end offset *before* the read: appends after it cannot keep the follower out of sync
        hw, start, leo = log_.high_watermark, log_.log_start_offset, log_.log_end_offset
        result = FollowerReadResult(high_watermark=hw, log_start_offset=start, log_end_offset=leo)
        if last_fetched_epoch >= 0:
            epoch, end = log_.leader_epoch_cache.end_offset_for(last_fetched_epoch, leo)
            if epoch == UNDEFINED_EPOCH or end == UNDEFINED_EPOCH_OFFSET:
                raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"{self.name}: no end offset for the last fetched epoch {last_fetched_epoch}")
            if fetch_offset < start:
                raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                                 f"{self.name}: offset {fetch_offset} is below the log start offset {start}")
            if epoch < last_fetched_epoch or end < fetch_offset:
                result.diverging_epoch = (epoch, end)
                return result
        result.records = log_.read(fetch_offset, max_bytes, None, min_one_message=min_one)
        if update_fetch_state:
            self.update_follower_fetch_state(replica, fetch_offset, log_start_offset, self.clock(), leo)
        return result

    def update_follower_fetch_state(self, replica: Replica | int, fetch_offset: int, start_offset: int,
                                    fetch_time_ms: int, leader_end_offset: int) -> None:
        """Kafka's ``updateFollowerFetchState``: record the position, then maybe expand the ISR and
        maybe advance the HW (which wakes waiting produces and consumer fetches)."""
        if isinstance(replica, int):
            replica = self.remote_replicas[replica]
        previous_end, previous_start = replica.log_end_offset, replica.log_start_offset
        replica.update_fetch_state(fetch_offset, start_offset, fetch_time_ms, leader_end_offset)
        self.maybe_expand_isr(replica)
        hw_moved = replica.log_end_offset != previous_end and self.maybe_increment_leader_hw(fetch_time_ms)
        # the follower dropped records below a new log start offset: a DeleteRecords waiting for the low
        # watermark may be done (Kafka's leaderLWIncremented)
        if hw_moved or replica.log_start_offset > previous_start:
            self._try_complete_delayed_requests()

    def maybe_increment_leader_hw(self, current_time_ms: int | None = None) -> bool:
        """Kafka's ``maybeIncrementLeaderHW``: HW = the smallest LEO over the maximal ISR and the
        followers caught up enough to join it, if they may join it (``isReplicaIsrEligible``: on a live
        broker; in KRaft mode an unfenced one); never backwards; not while under min ISR."""
        if not self.is_leader or self.is_under_min_isr():
            return False
        current = self.clock() if current_time_ms is None else current_time_ms
        log_ = self.log
        leo = log_.log_end_offset
        new_hw = leo
        maximal_isr = self.partition_state.maximal_isr
        max_lag = self.replica_lag_time_max_ms
        alive = self.is_broker_alive
        for replica in self.remote_replicas.values():
            if replica.log_end_offset < new_hw and (
                    replica.broker_id in maximal_isr or (replica.is_caught_up(leo, current, max_lag)
                                                         and (alive is None or alive(replica.broker_id)))):
                new_hw = replica.log_end_offset
        if new_hw > log_.high_watermark:
            log_.high_watermark = new_hw
            return True
        return False

    def _try_complete_delayed_requests(self) -> None:
        if self.on_delayed_requests is not None:
            self.on_delayed_requests(self)

    # -- DeleteRecords ------------------------------------------------------------------------

    def delete_records_on_leader(self, offset: int) -> tuple[int, int]:
        """Kafka's ``deleteRecordsOnLeader``: move the log start offset to ``offset`` (-1: the high watermark).
        Returns the offset asked for and the partition's low watermark now. NOT_LEADER_OR_FOLLOWER on a
        follower, POLICY_VIOLATION when ``cleanup.policy`` lacks ``delete``, OFFSET_OUT_OF_RANGE below 0 or
        past the high watermark."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Leader not local for partition {self.name} on broker {self.local_broker_id}")
        log_ = self.log
        if not log_.config.delete_enabled:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Records of partition {self.name} can not be deleted due to the configured "
                             f"policy (cleanup.policy={log_.config['cleanup.policy']})")
        converted = log_.high_watermark if offset == -1 else offset   # DeleteRecordsRequest.HIGH_WATERMARK
        if converted < 0:
            raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                             f"The offset {converted} for partition {self.name} is not valid")
        log_.maybe_increment_log_start_offset(converted)
        return converted, self.low_watermark_if_leader()

    def low_watermark_if_leader(self) -> int:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset of the leader and of its followers
        on live brokers (one that has not fetched since this leader epoch began counts as -1)."""
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Leader not local for partition {self.name} on broker {self.local_broker_id}")
        low = self.log.log_start_offset
        alive = self.is_broker_alive
        for replica in self.remote_replicas.values():
            if replica.log_start_offset < low and (alive is None or alive(replica.broker_id)):
                low = replica.log_start_offset
        return low

    # -- appends -----------------------------------------------------------------------------

    def append_records_to_leader(self, records: bytes, required_acks: int,
                                 from_coordinator: bool = False) -> LogAppendInfo:
        if self.standalone:   # the hot path of a standalone broker: the ISR is this broker alone
            min_isr = self.log.config["min.insync.replicas"]
            if required_acks == -1 and len(self.partition_state.isr) < min_isr:
                raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                                 f"{self.name}: ISR {self.isr} is smaller than min.insync.replicas={min_isr}")
            info = self.log.append_as_leader(records, self.leader_epoch, from_coordinator)
            self.log.high_watermark = self.log.log_end_offset
            return info
        if not self.is_leader:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"Leader not local for partition {self.name} on broker {self.local_broker_id}")
        min_isr = self.effective_min_isr()
        if required_acks == -1 and len(self.partition_state.isr) < min_isr:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"The size of the current ISR {self.isr} is insufficient to satisfy the min.isr "
                             f"requirement of {min_isr} for partition {self.name}")
        info = self.log.append_as_leader(records, self.leader_epoch, from_coordinator)
        if self.maybe_increment_leader_hw():   # the ISR may be the leader alone
            self._try_complete_delayed_requests()
        return info

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, int]:
        """Kafka's ``checkEnoughReplicasReachOffset``: (done, error code) for an acks=all produce
        waiting for the HW to reach ``required_offset``."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if self.standalone or self.effective_min_isr() <= len(self.partition_state.maximal_isr):
                return True, ErrorCode.NONE
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, ErrorCode.NONE

    def append_records_to_follower(self, records) -> LogAppendInfo:
        """The fetcher's append (Kafka's ``appendRecordsToFollowerOrFutureReplica``): the leader's
        offsets and epochs as they are. A log that is empty at its start offset, asked to take a batch
        that begins below it (the leader's log start fell inside a batch), restarts at that batch."""
        log_ = self.log
        try:
            return log_.append_as_follower(records)
        except KafkaError as exc:
            if exc.code != ErrorCode.OFFSET_OUT_OF_RANGE or log_.log_end_offset != log_.log_start_offset:
                raise
            first = next(iter_batches(records, strict=False), None)
            if first is None or first[1].base_offset >= log_.log_end_offset:
                raise
            log_.truncate_fully_and_start_at(first[1].base_offset)
            return log_.append_as_follower(records)

    def truncate_to(self, offset: int) -> None:
        """The follower's truncation (Kafka's ``Partition.truncateTo``). Called even when ``offset`` is
        at or past the log end: the log stays, but a leader epoch starting there is dropped."""
        before = self.log.log_end_offset
        if self.log.truncate_to(offset):
            log.info("%s: truncating log from %d to %d", self.name, before, self.log.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        log.info("%s: truncating log fully, starting at %d", self.name, offset)
        self.log.truncate_fully_and_start_at(offset)

    def update_follower_high_watermark(self, leader_high_watermark: int) -> bool:
        """A follower's HW is the leader's, but never past its own LEO (Kafka's ``updateHighWatermark``)."""
        log_ = self.log
        hw = min(max(leader_high_watermark, log_.log_start_offset), log_.log_end_offset)
        if hw != log_.high_watermark:
            log_.high_watermark = hw
            return True
        return False
