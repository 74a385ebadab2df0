"""The states a KRaft replica can be in, one class each as in Kafka's ``org.apache.kafka.raft``.

==============  ====================================================================================
state           what the replica does in it
==============  ====================================================================================
Unattached      knows the epoch but no leader and has not voted in it; a voter becomes Prospective
                when ``controller.quorum.election.timeout.ms`` (randomised) passes
Voted           voted for a candidate in this epoch (one vote per epoch, kept in ``quorum-state``);
                waits for it to win, or its election timeout
Prospective     (KIP-996, Kafka 4.0+) lost its leader or its election timed out: asks every voter for a
                *pre-vote* in its current epoch, bumping nothing and persisting nothing; a majority
                makes it a Candidate, a majority of refusals or an election timeout sends it back
                (Follower of the leader it knew, else Unattached) — :mod:`kafkalab.raft.prospective_state`
Candidate       bumped the epoch, voted for itself, asks every voter (Vote); a majority makes it
                leader, an election timeout makes it Prospective again (Kafka 4.0+)
Leader          appends, answers Fetch, moves the high watermark when a majority of voters have an
                offset of its own epoch
Follower        fetches from the leader; no answer for ``controller.quorum.fetch.timeout.ms`` makes
                a voter Prospective (an observer looks for the leader again)
Resigned        a leader stepping down (a graceful shutdown, check-quorum): sent EndQuorumEpoch, waits
                for the next leader; after its election timeout Unattached in the next epoch
==============  ====================================================================================

Each state answers ``can_grant_vote(replica_id, log_up_to_date, pre_vote)`` as Kafka's ``canGrantVote``:
a Leader never grants; a Follower grants only pre-votes, and only until it has fetched from its leader
once (a voter that hears from its leader will not help anyone unseat it); a Candidate or Resigned
replica grants pre-votes for a log at least as up to date as its own, never votes; an Unattached,
Voted (or Prospective) replica: see :func:`unattached_or_prospective_can_grant_vote`.

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


def unattached_or_prospective_can_grant_vote(leader_id: int, voted_id: int, replica_id: int, log_up_to_date: bool,
                                             pre_vote: bool) -> bool:
    """Kafka's ``QuorumState.unattachedOrProspectiveCanGrantVote``: a pre-vote needs only an up-to-date log; a
    vote, in addition, no other vote given in this epoch and no leader known in it."""
    if pre_vote:
        return log_up_to_date
    if voted_id >= 0:
        return voted_id == replica_id
    if leader_id >= 0:
        return False
    return log_up_to_date


@dataclass
class EpochState:
    epoch: int
    name = "?"

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return False

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

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return unattached_or_prospective_can_grant_vote(-1, -1, replica_id, log_up_to_date, pre_vote)


@dataclass
class VotedState(EpochState):
    candidate_id: int = -1
    election_deadline: float = 0.0
    name = "Voted"

    @property
    def voted_id(self) -> int:
        return self.candidate_id

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return unattached_or_prospective_can_grant_vote(-1, self.candidate_id, replica_id, log_up_to_date, pre_vote)


class EpochElection:
    """The tally of one election (Kafka's ``EpochElection``), shared by a Candidate's votes and a
    Prospective's pre-votes: ``local_id``, ``voters``, ``granted`` and ``rejected`` are the state's fields."""

    def __post_init__(self):
        self.granted.add(self.local_id)     # it votes for itself

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def won(self) -> bool:
        """A majority granted."""
        return len(self.granted) >= self.majority

    @property
    def lost(self) -> bool:
        """So many voters refused that no majority is left (Kafka's ``isVoteRejected``)."""
        return len(self.voters) - len(self.rejected) < self.majority

    def unrecorded(self) -> list[int]:
        return sorted(self.voters - self.granted - self.rejected)


@dataclass
class CandidateState(EpochElection, EpochState):
    local_id: int = -1
    voters: frozenset = frozenset()
    retries: int = 1
    election_deadline: float = 0.0
    granted: set = field(default_factory=set)
    rejected: set = field(default_factory=set)
    name = "Candidate"

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and log_up_to_date     # it voted for itself in this epoch

    @property
    def voted_id(self) -> int:
        return self.local_id


@dataclass
class FollowerState(EpochState):
    leader: int = -1
    fetch_deadline: float = 0.0
    #: the vote this replica gave in this epoch, if it voted (kept in quorum-state, as Kafka does)
    voted: int = -1
    high_watermark: int | None = None
    #: a fetch from the leader succeeded in this state (Kafka's hasFetchedFromLeader)
    has_fetched_from_leader: bool = False
    name = "Follower"

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        # a vote never (it has a leader in this epoch); a pre-vote only while it has not heard from its leader
        return pre_vote and not self.has_fetched_from_leader and log_up_to_date

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

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and log_up_to_date

    @property
    def leader_id(self) -> int:
        return self.local_id
