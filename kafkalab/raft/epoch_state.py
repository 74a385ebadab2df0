"""The states a KRaft replica can be in, one class each as in Kafka's ``org.apache.kafka.raft``.

==============  ====================================================================================
state           what the replica does in it
==============  ====================================================================================
Unattached      knows the epoch but no leader and has not voted in it; a voter starts an election
                when ``controller.quorum.election.timeout.ms`` (randomised) passes
Voted           voted for a candidate in this epoch (one vote per epoch, kept in ``quorum-state``);
                waits for it to win, or its election timeout
Candidate       bumped the epoch, voted for itself, asks every voter (Vote); a majority makes it
                leader, an election timeout a new election after a random back-off
                (``controller.quorum.election.backoff.max.ms``)
Leader          appends, answers Fetch, moves the high watermark when a majority of voters have an
                offset of its own epoch
Follower        fetches from the leader; no answer for ``controller.quorum.fetch.timeout.ms`` makes
                a voter a candidate (an observer looks for the leader again)
Resigned        a leader stepping down (a graceful shutdown): sent EndQuorumEpoch, waits for the
                next leader
==============  ====================================================================================

Times are ``time.monotonic()`` seconds. Kafka's classes are ``UnattachedState``, ``VotedState``,
``CandidateState``, ``LeaderState``, ``FollowerState`` and ``ResignedState`` (the leader's replica
bookkeeping is in :mod:`kafkalab.raft.leader_state`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field


def random_election_timeout(election_timeout_ms: int, rng: random.Random) -> float:
    """Kafka's ``randomElectionTimeoutMs``: the timeout plus a random part of up to the timeout again,
    so that two voters rarely become candidates at the same moment (seconds)."""
    return (election_timeout_ms + rng.randrange(max(election_timeout_ms, 1))) / 1000


@dataclass
class EpochState:
    epoch: int
    name = "?"

    @property
    def leader_id(self) -> int:
        return -1

    @property
    def voted_id(self) -> int:
        return -1


@dataclass
class UnattachedState(EpochState):
    election_deadline: float = 0.0
    name = "Unattached"


@dataclass
class VotedState(EpochState):
    candidate_id: int = -1
    election_deadline: float = 0.0
    name = "Voted"

    @property
    def voted_id(self) -> int:
        return self.candidate_id


@dataclass
class CandidateState(EpochState):
    local_id: int = -1
    voters: frozenset = frozenset()
    retries: int = 1
    election_deadline: float = 0.0
    granted: set = field(default_factory=set)
    rejected: set = field(default_factory=set)
    #: after a lost election: when the next one may start (None while this one runs)
    backoff_deadline: float | None = None
    name = "Candidate"

    def __post_init__(self):
        self.granted.add(self.local_id)

    @property
    def voted_id(self) -> int:
        return self.local_id

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def won(self) -> bool:
        return len(self.granted) >= self.majority

    @property
    def lost(self) -> bool:
        """So many voters refused that no majority is left."""
        return len(self.voters) - len(self.rejected) < self.majority

    def unrecorded(self) -> list[int]:
        return sorted(self.voters - self.granted - self.rejected)


@dataclass
class FollowerState(EpochState):
    leader: int = -1
    fetch_deadline: float = 0.0
    #: the vote this replica gave in this epoch, if it voted (kept in quorum-state, as Kafka does)
    voted: int = -1
    high_watermark: int | None = None
    name = "Follower"

    @property
    def leader_id(self) -> int:
        return self.leader

    @property
    def voted_id(self) -> int:
        return self.voted


@dataclass
class ResignedState(EpochState):
    local_id: int = -1
    election_deadline: float = 0.0
    preferred_successors: list = field(default_factory=list)
    #: voters that acknowledged EndQuorumEpoch
    acknowledged: set = field(default_factory=set)
    name = "Resigned"

    @property
    def leader_id(self) -> int:
        return self.local_id
