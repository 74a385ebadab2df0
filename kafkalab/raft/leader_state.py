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
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .epoch_state import EpochState


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
    name = "Leader"

    def __post_init__(self):
        self.replicas = {v: ReplicaState(v) for v in sorted(self.voters)}
        self.acknowledged = {self.local_id}

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
        return self._maybe_update_high_watermark()

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
