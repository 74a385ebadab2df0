"""``LeaderState``: what the leader knows of every replica, and the high watermark.

The leader of epoch *e* first writes a LeaderChange control record at its **epoch start offset**.
Each Fetch from a replica tells the leader how far that replica's log goes (its fetch offset is its
log end offset, the log having been checked against the leader's with the last fetched epoch).
The **high watermark** is the largest offset that a majority of the voters (the leader counted)
have reached: sort the voters' end offsets from high to low and take the one at position
``majority - 1``. As in Raft (and Kafka's ``LeaderState.maybeUpdateHighWatermark``) it moves only
past the epoch start offset: an offset of an earlier epoch counts as committed only once an offset
of the leader's own epoch is on a majority, and it never moves back. Observers (replicas that are
not voters, e.g. brokers) fetch too, but never count.

**Check-quorum** (Kafka 3.7+, KAFKA-15489: ``LeaderState.timeUntilCheckQuorumExpires``): a leader that has
not received a Fetch from a majority of the voters (itself counted) within ``1.5 ×
controller.quorum.fetch.timeout.ms`` resigns. A leader cut off from the others (a network partition, or
paused and resumed after the others elected a new one) so stops acting as leader by itself instead of
serving requests it can never commit. Each time a majority has fetched, the timer starts again.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .epoch_state import EpochState

CHECK_QUORUM_TIMEOUT_FACTOR = 1.5


@dataclass
class ReplicaState:
    node_id: int
    end_offset: int = -1
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1


@dataclass
class LeaderState(EpochState):
    local_id: int = -1
    voters: frozenset = frozenset()
    epoch_start_offset: int = 0
    granting_voters: frozenset = frozenset()
    high_watermark: int | None = None
    replicas: dict = field(default_factory=dict)     # voter id -> ReplicaState
    observers: dict = field(default_factory=dict)    # observer id -> ReplicaState
    #: voters that acknowledged BeginQuorumEpoch (or fetched in this epoch)
    acknowledged: set = field(default_factory=set)
    #: 1.5 × controller.quorum.fetch.timeout.ms (seconds); 0: no check-quorum
    check_quorum_timeout_s: float = 0.0
    #: the voters that fetched since the check-quorum timer last started (the leader never among them)
    fetched_voters: set = field(default_factory=set)
    check_quorum_deadline: float = 0.0                # clock()
    clock: object = field(default=time.monotonic, repr=False, compare=False)
    name = "Leader"

    def __post_init__(self):
        self.replicas = {v: ReplicaState(v) for v in sorted(self.voters)}
        self.acknowledged = {self.local_id}
        self.check_quorum_deadline = self.clock() + self.check_quorum_timeout_s

    @property
    def leader_id(self) -> int:
        return self.local_id

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def update_local_end_offset(self, end_offset: int, now_ms: int) -> bool:
        local = self.replicas[self.local_id]
        local.end_offset = end_offset
        local.last_caught_up_timestamp = now_ms
        return self._maybe_update_high_watermark()

    def update_replica(self, node_id: int, fetch_offset: int, now_ms: int, leader_end_offset: int) -> bool:
        """A Fetch from ``node_id`` at ``fetch_offset`` (already checked for divergence): True if the high
        watermark moved."""
        is_voter = node_id in self.replicas
        state = self.replicas[node_id] if is_voter else self.observers.setdefault(node_id, ReplicaState(node_id))
        state.end_offset = fetch_offset
        state.last_fetch_timestamp = now_ms
        if fetch_offset >= leader_end_offset:
            state.last_caught_up_timestamp = now_ms
        if not is_voter:
            return False
        self.acknowledged.add(node_id)
        self.update_check_quorum_for_following_voter(node_id, self.clock())
        return self._maybe_update_high_watermark()

    def update_check_quorum_for_following_voter(self, node_id: int, now: float) -> None:
        """A Fetch from voter ``node_id``: once a majority (the leader counted) has fetched, the timer starts
        again."""
        if node_id == self.local_id or node_id not in self.replicas:
            return
        self.fetched_voters.add(node_id)
        if len(self.fetched_voters) >= self.majority - (1 if self.local_id in self.replicas else 0):
            self.fetched_voters.clear()
            self.check_quorum_deadline = now + self.check_quorum_timeout_s

    def time_until_check_quorum_expires(self, now: float) -> float:
        """Seconds left before this leader must resign for want of a majority's fetches (0: now); infinite for a
        quorum of one or without check-quorum."""
        if len(self.replicas) == 1 or self.check_quorum_timeout_s <= 0:
            return float("inf")
        return max(0.0, self.check_quorum_deadline - now)

    def _maybe_update_high_watermark(self) -> bool:
        offsets = sorted((r.end_offset for r in self.replicas.values()), reverse=True)
        candidate = offsets[self.majority - 1]
        if candidate <= self.epoch_start_offset:
            return False                                 # nothing of this epoch is on a majority yet
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False                                 # never backwards
        self.high_watermark = candidate
        return True

    def non_acknowledging_voters(self) -> list[int]:
        return sorted(set(self.voters) - self.acknowledged)
