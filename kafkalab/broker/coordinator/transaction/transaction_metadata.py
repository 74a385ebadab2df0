"""``TransactionMetadata``: one transactional id's state (Kafka's ``kafka.coordinator.transaction``).

A transactional producer's life, seen by its coordinator::

    Empty ─AddPartitionsToTxn─▶ Ongoing ─EndTxn(commit)─▶ PrepareCommit ─markers─▶ CompleteCommit
                                  │     ─EndTxn(abort)──▶ PrepareAbort  ─markers─▶ CompleteAbort
                                  └─ InitProducerId / timeout ─▶ PrepareEpochFence ─▶ PrepareAbort
    CompleteCommit / CompleteAbort ──AddPartitionsToTxn──▶ Ongoing (the next transaction)

``Dead`` is a transactional id expired after ``transactional.id.expiration.ms`` (its tombstone is
written to ``__transaction_state`` and it is forgotten). A transition is checked against Kafka's
``TransactionState.validPreviousStates``; it is first *prepared* (:meth:`TransactionMetadata.prepare_transition`
gives a ``TxnTransitMetadata``, the state to be), written to ``__transaction_state``, and only
then completed (:meth:`TransactionMetadata.complete_transition_to`), as Kafka's ``prepareTransitionTo``
and ``completeTransitionTo``. ``PrepareEpochFence`` is never written, as in Kafka.
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace

NO_PRODUCER_ID, NO_PRODUCER_EPOCH = -1, -1
#: Short.MaxValue - 1: an epoch that may not be bumped any more (a new producer id is handed out)
MAX_PRODUCER_EPOCH = 32766


class TransactionState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    def __str__(self) -> str:
        return self.value


S = TransactionState
VALID_PREVIOUS_STATES = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState = S.EMPTY
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    topic_partitions: set[tuple[str, int]] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = field(default_factory=now_ms)
    #: the state a write to __transaction_state is on its way to (Kafka's ``pendingState``)
    pending_state: "TransactionState | None" = None

    def transition_to(self, new_state: TransactionState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[new_state]:
            raise IllegalStateError(f"transactional id {self.transactional_id}: {self.state} -> {new_state} "
                                    "is not a valid transition")
        self.state = new_state
        self.txn_last_update_timestamp = now_ms()

    def prepare_transition(self, state: TransactionState, **changes) -> "TxnTransitMetadata":
        """The metadata as it will be in ``state`` (with ``changes``), checked but not applied."""
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalStateError(f"transactional id {self.transactional_id}: {self.state} -> {state} "
                                    "is not a valid transition")
        changes.setdefault("topic_partitions", set(self.topic_partitions))
        return replace(self, state=state, txn_last_update_timestamp=now_ms(), pending_state=None, **changes)

    def complete_transition_to(self, transit: "TxnTransitMetadata") -> None:
        """Apply a prepared transition once ``__transaction_state`` has it."""
        for name in ("producer_id", "producer_epoch", "last_producer_id", "last_producer_epoch", "txn_timeout_ms",
                     "state", "txn_start_timestamp", "txn_last_update_timestamp"):
            setattr(self, name, getattr(transit, name))
        self.topic_partitions = set(transit.topic_partitions)

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_PRODUCER_EPOCH

    def describe(self) -> dict:
        """For notebooks: what the coordinator knows of this transactional id."""
        return {"transactional_id": self.transactional_id, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "state": str(self.state),
                "timeout_ms": self.txn_timeout_ms, "partitions": sorted(self.topic_partitions),
                "txn_start_timestamp": self.txn_start_timestamp}


#: Kafka's ``TxnTransitMetadata``: a transition's target, a copy of the metadata not yet applied
TxnTransitMetadata = TransactionMetadata


class IllegalStateError(Exception):
    """A transition Kafka's state machine does not allow (a bug, never a client's error)."""
