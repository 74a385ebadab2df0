"""``ProspectiveState``: a voter that may start an election, asking first whether it could win (KIP-996, Kafka 4.0+).

Before KIP-996 a voter that lost touch with its leader (its fetches timed out) bumped the epoch and
stood as a Candidate at once. If only *it* was cut off (paused, partitioned away) the others still
had a healthy leader; but on its return its higher epoch reached them (every request carries the
epoch) and the leader had to step down: one unlucky voter disrupted the whole quorum.

Kafka 4.0+ puts a Prospective state before Candidate:

* Unattached or Voted (election timeout), Follower (fetch timeout) and Candidate (election timeout
  without winning) become **Prospective** in the *same* epoch, keeping the leader and the vote they
  had. The state is in memory only: ``quorum-state`` keeps the previous election state (Kafka's
  ``memoryTransitionTo``), since nothing a Prospective does must survive a restart;
* it sends every voter a Vote request (v2) with ``PreVote=true``, its current epoch and its log end.
  A voter answers without changing state and without persisting anything
  (:meth:`~kafkalab.raft.epoch_state.EpochState.can_grant_vote`): a Follower that has fetched from its
  leader refuses, a Leader refuses, anyone else grants if the log is at least as up to date;
* a majority of pre-votes (itself included) makes it a **Candidate** (epoch + 1, persisted), which
  then asks for real votes as before;
* a majority of refusals, or its election timeout, sends it back: a **Follower** of the leader it
  knew (in the same epoch, so the leader never notices), else **Unattached** in the same epoch.
  After refusals the new election timeout is fresh; after a timeout the old (expired) one is kept,
  so it tries again at once.

The tally of granted and refused (pre-)votes is Kafka's ``EpochElection``; both Prospective and
Candidate are Kafka's ``NomineeState``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .epoch_state import EpochElection, EpochState, unattached_or_prospective_can_grant_vote


@dataclass
class ProspectiveState(EpochElection, EpochState):
    local_id: int = -1
    voters: frozenset = frozenset()
    #: the leader it knew in this epoch (it was its Follower), or -1
    leader: int = -1
    #: the vote it gave in this epoch (kept from the state before), or -1
    voted: int = -1
    election_deadline: float = 0.0
    granted: set = field(default_factory=set)
    rejected: set = field(default_factory=set)
    name = "Prospective"

    @property
    def leader_id(self) -> int:
        return self.leader

    @property
    def voted_id(self) -> int:
        return self.voted

    def can_grant_vote(self, replica_id: int, log_up_to_date: bool, pre_vote: bool) -> bool:
        return unattached_or_prospective_can_grant_vote(self.leader, self.voted, replica_id, log_up_to_date, pre_vote)
