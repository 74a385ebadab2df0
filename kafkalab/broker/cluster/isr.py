"""A partition's ISR: its states and its maintenance by the leader (Kafka's ``kafka.cluster.Partition``).

In Kafka these live in ``Partition.scala`` beside the ``Partition`` class: the
``PartitionState`` trait with its three cases (KIP-497), and the leader's
``maybeExpandIsr``, ``maybeShrinkIsr``, ``getOutOfSyncReplicas``,
``isUnderMinIsr`` and ``submitAlterPartition``.

The ISR state is either **committed** (``CommittedPartitionState``: what the
controller last said) or a change the leader proposed to the controller with
AlterPartition (``AlterPartitionManager``) and that is not answered yet:

* ``PendingExpandIsr``: a follower whose LEO reached the high watermark and the
  start of the current leader epoch joins (``maybe_expand_isr``, at its fetches).
  It counts for the high watermark at once (its *maximal ISR*): stricter, so safe.
* ``PendingShrinkIsr``: followers not caught up for ``replica.lag.time.max.ms``
  leave (``maybe_shrink_isr``, run by the replica manager every half of that).
  Until the controller agrees they still count.

While a change is pending the leader proposes nothing else. The controller's
answer (``handle_alter_partition_response``) becomes the committed state;
FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION leave the change pending until
the controller's next LeaderAndIsr says what is true. A follower on a broker
that is shutting down is refused (INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED);
Kafka proposes it again at its next fetch, the mini broker at most every
``ISR_EXPANSION_RETRY_BACKOFF_MS`` (not Kafka: it keeps the log readable).

``effective_min_isr`` is ``min.insync.replicas`` capped at the replication
factor (Kafka's ``effectiveMinIsr``); a leader whose ISR is smaller is *under
min ISR*: ``acks=all`` produces are refused and the high watermark stays.

:class:`IsrMaintenance` is a part of ``Partition`` (a mixin): its methods run on
the partition and use its ``partition_state``, ``remote_replicas``, ``log``,
``clock``, ``alter_partition`` and ``maybe_increment_leader_hw``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from ..common.errors import ErrorCode
from .replica import Replica

#: the partition's own logger: these are ``Partition``'s messages, as in Kafka
log = logging.getLogger("kafkalab.broker.cluster.partition")

#: after the controller refused to add a follower to the ISR, the leader proposes it again at the
#: first fetch of it this long after the refusal (Kafka: at its very next fetch; see maybe_expand_isr)
ISR_EXPANSION_RETRY_BACKOFF_MS = 500


# -- the ISR state (KIP-497): committed, or a change sent to the controller and not yet answered --

@dataclass(frozen=True)
class CommittedPartitionState:
    isr: frozenset
    leader_recovery_state: int = 0
    is_inflight = False

    @property
    def maximal_isr(self) -> frozenset:
        return self.isr


@dataclass(frozen=True)
class PendingExpandIsr:
    """``new_in_sync_replica`` was proposed for the ISR: it counts for the HW already (stricter, so safe)."""
    new_in_sync_replica: int
    sent_isr: tuple
    last_committed_state: CommittedPartitionState
    leader_recovery_state: int = 0
    is_inflight = True

    @property
    def isr(self) -> frozenset:
        return self.last_committed_state.isr

    @property
    def maximal_isr(self) -> frozenset:
        return self.isr | {self.new_in_sync_replica}


@dataclass(frozen=True)
class PendingShrinkIsr:
    """``out_of_sync_replicas`` were proposed for removal: until the controller agrees they still count."""
    out_of_sync_replicas: frozenset
    sent_isr: tuple
    last_committed_state: CommittedPartitionState
    leader_recovery_state: int = 0
    is_inflight = True

    @property
    def isr(self) -> frozenset:
        return self.last_committed_state.isr

    @property
    def maximal_isr(self) -> frozenset:
        return self.isr


class IsrMaintenance:
    """``Partition``'s ISR on the leader: its size, expanding and shrinking it, the controller's answer."""

    # -- the ISR's size ----------------------------------------------------------------------

    def effective_min_isr(self) -> int:
        """``min.insync.replicas``, at most the replication factor (Kafka's ``effectiveMinIsr``)."""
        return min(self.log.config["min.insync.replicas"], len(self.remote_replicas) + 1)

    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.partition_state.isr) < self.effective_min_isr()

    # -- expanding and shrinking ------------------------------------------------------------

    def maybe_expand_isr(self, replica: Replica) -> None:
        """Kafka's ``maybeExpandIsr``: a follower not in the ISR whose LEO reached the HW and the
        start of this leader epoch is proposed to the controller as an ISR member.

        The controller refuses a replica on a broker that is not alive or is shutting down
        (INELIGIBLE_REPLICA; OPERATION_NOT_ATTEMPTED in AlterPartition v1). Such a broker may still
        be fetching: after a controlled shutdown a broker's fetchers run until it has stopped. Kafka
        proposes it again at its next fetch, and logs each refusal; a follower fetching every few
        milliseconds makes that hundreds of AlterPartitions and log lines a second. Here a refused
        replica is proposed again only ``ISR_EXPANSION_RETRY_BACKOFF_MS`` after the refusal, and
        only the first proposal and refusal are logged at INFO (the retries at DEBUG)."""
        state = self.partition_state
        if state.is_inflight or replica.broker_id in state.isr or not self.is_leader:
            return
        if not self._is_follower_in_sync(replica):
            return
        refused_at = self.isr_expansion_refused.get(replica.broker_id)
        if refused_at is not None and self.clock() - refused_at < ISR_EXPANSION_RETRY_BACKOFF_MS:
            return
        sent = tuple(sorted(state.isr | {replica.broker_id}))
        pending = PendingExpandIsr(replica.broker_id, sent, state)
        log.log(logging.INFO if refused_at is None else logging.DEBUG, "%s: expanding ISR from %s to %s",
                self.name, sorted(state.isr), list(sent))
        self._submit_alter_partition(pending)

    def _is_follower_in_sync(self, replica: Replica) -> bool:
        end = replica.log_end_offset
        return (end >= self.log.high_watermark and self.leader_epoch_start_offset is not None
                and end >= self.leader_epoch_start_offset)

    def out_of_sync_replicas(self, max_lag_ms: int, current_time_ms: int | None = None) -> set[int]:
        """Kafka's ``getOutOfSyncReplicas``: ISR followers not caught up within ``max_lag_ms``."""
        state = self.partition_state
        if state.is_inflight:
            return set()
        current = self.clock() if current_time_ms is None else current_time_ms
        leo = self.log.log_end_offset
        out = set()
        for r in state.isr:
            if r == self.local_broker_id:
                continue
            replica = self.remote_replicas.get(r)
            if replica is None or not replica.is_caught_up(leo, current, max_lag_ms):
                out.add(r)
        return out

    def maybe_shrink_isr(self, current_time_ms: int | None = None) -> None:
        """Kafka's ``maybeShrinkIsr``: propose the ISR without the followers that fell behind."""
        if not self.is_leader or self.partition_state.is_inflight:
            return
        out = self.out_of_sync_replicas(self.replica_lag_time_max_ms, current_time_ms)
        if not out:
            return
        state = self.partition_state
        sent = tuple(sorted(state.isr - out))
        log.info("%s: shrinking ISR from %s to %s (out of sync: %s; HW %d, LEO %d)", self.name,
                 sorted(state.isr), list(sent), sorted(out), self.log.high_watermark, self.log.log_end_offset)
        self._submit_alter_partition(PendingShrinkIsr(frozenset(out), sent, state))

    def _submit_alter_partition(self, pending) -> None:
        self.partition_state = pending
        if self.alter_partition is None:
            log.warning("%s: no AlterPartitionManager; ISR change %s stays pending", self.name, pending)
            return
        self.alter_partition(self, pending)

    # -- the controller's answer to AlterPartition ----------------------------------------------

    def handle_alter_partition_response(self, pending, error: int, leader_epoch: int = -1,
                                        isr: list[int] | None = None, partition_epoch: int = -1,
                                        leader_recovery_state: int = 0) -> bool:
        """Apply the controller's answer to ``pending`` (Kafka's ``submitAlterPartition`` callback).

        Returns True if the same change should be sent again (an unexpected, retriable error).
        """
        if self.partition_state is not pending:
            log.debug("%s: ignoring AlterPartition answer for %s, state is now %s", self.name, pending,
                      self.partition_state)
            return False
        listener = self.alter_partition_listener
        if error != ErrorCode.NONE:
            if listener is not None:   # Kafka's handleAlterPartitionError: every error is a failed ISR update
                listener.mark_failed()
            if error in (ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA):
                self.partition_state = pending.last_committed_state   # explicitly not applied
                if isinstance(pending, PendingExpandIsr):
                    replica = pending.new_in_sync_replica
                    first = replica not in self.isr_expansion_refused
                    self.isr_expansion_refused[replica] = self.clock()
                    log.log(logging.INFO if first else logging.DEBUG,
                            "%s: AlterPartition %s not applied (%s: the controller counts broker %d as not alive "
                            "or shutting down); proposing it again at most every %d ms while it keeps up",
                            self.name, list(pending.sent_isr), ErrorCode(error).name, replica,
                            ISR_EXPANSION_RETRY_BACKOFF_MS)
                else:
                    log.info("%s: AlterPartition %s not applied (%s)", self.name, list(pending.sent_isr),
                             ErrorCode(error).name)
                return False
            if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                         ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION,
                         ErrorCode.INVALID_REQUEST, ErrorCode.NEW_LEADER_ELECTED):
                log.info("%s: AlterPartition %s failed with %s; waiting for the controller's LeaderAndIsr",
                         self.name, list(pending.sent_isr), ErrorCode(error).name)
                return False   # stay pending until LeaderAndIsr tells the truth
            log.warning("%s: AlterPartition failed with %s; retrying", self.name, ErrorCode(error).name)
            return True
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            log.debug("%s: ignoring stale AlterPartition answer (epoch %d, partition epoch %d)", self.name,
                      leader_epoch, partition_epoch)
            if listener is not None:
                listener.mark_failed()
            return False
        self.partition_state = CommittedPartitionState(frozenset(isr or ()), leader_recovery_state)
        self.partition_epoch = partition_epoch
        if listener is not None:   # the proposed change is committed (Kafka's PendingPartitionChange.notifyListener)
            if isinstance(pending, PendingExpandIsr):
                listener.mark_isr_expand()
            elif isinstance(pending, PendingShrinkIsr):
                listener.mark_isr_shrink()
        for r in isr or ():
            self.isr_expansion_refused.pop(r, None)
        log.info("%s: ISR updated to %s, partition epoch %d%s", self.name, sorted(isr or ()), partition_epoch,
                 " (under min ISR)" if self.is_under_min_isr() else "")
        self.maybe_increment_leader_hw()
        self._try_complete_delayed_requests()   # also NOT_ENOUGH_REPLICAS_AFTER_APPEND for waiting produces
        return False
