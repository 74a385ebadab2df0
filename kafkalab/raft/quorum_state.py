"""``QuorumState``: the one place where a replica changes state, each change written to ``quorum-state`` first.

Kafka's ``QuorumState`` checks every transition (an illegal one is a bug and raises) and persists
the new election state (epoch, leader id, voted id) before the replica acts on it, so that after
a crash it neither votes twice in an epoch nor goes back to an older epoch. The legal moves:

* to **Unattached**(e): to a higher epoch (a request or response showed one), or in the same epoch from
  Prospective (its pre-vote lost and it knew no leader; a vote it gave is kept, so it goes back to
  Voted then); an Unattached, Voted, Candidate or Resigned replica keeps its election timer running (a
  disruptive candidate whose log is behind must not hold off an election for ever), as does a
  Prospective whose pre-vote timed out;
* to **Voted**(e, c): from Unattached in e, or to a higher epoch; a voter only. A Prospective that
  votes stays Prospective with the vote recorded (Kafka's ``prospectiveAddVotedState``);
* to **Prospective** (KIP-996): from Unattached, Voted, Follower or Candidate, same epoch, keeping the
  leader and the vote; a voter only; **not persisted** (Kafka's ``memoryTransitionTo``);
* to **Candidate**: from any state but Leader (in the client: from a Prospective that won its pre-vote),
  epoch + 1, voting for itself; a voter only;
* to **Leader**: from a Candidate that a majority granted;
* to **Follower**(e, l): to a higher epoch, or in the same epoch from Unattached, Voted, Candidate or
  Prospective (never a second leader in one epoch);
* to **Resigned**: from Leader.

On start (:meth:`initialize`): no file → Unattached in epoch 0; the file names this replica as leader →
Resigned (it may have lost leadership meanwhile, so it does not lead again in that epoch); it voted
for itself → Candidate again in that epoch; it voted → Voted; a leader known → Follower; else Unattached.
"""
from __future__ import annotations

import random
import time

from .epoch_state import (CandidateState, EpochState, FollowerState, ResignedState, UnattachedState, VotedState,
                          random_election_timeout)
from .file_quorum_state_store import ElectionState, FileQuorumStateStore
from .leader_state import CHECK_QUORUM_TIMEOUT_FACTOR, LeaderState
from .prospective_state import ProspectiveState


class IllegalStateError(RuntimeError):
    """A transition Kafka's QuorumState refuses (IllegalStateException): a bug, never bad input."""


class QuorumState:
    def __init__(self, local_id: int, voters: list[int], store: FileQuorumStateStore, *,
                 election_timeout_ms: int = 1000, fetch_timeout_ms: int = 2000, rng: random.Random | None = None,
                 clock=time.monotonic):
        self.local_id = local_id
        self.voters = frozenset(voters)
        self.store = store
        self.election_timeout_ms = election_timeout_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.rng = rng or random.Random()
        self.clock = clock
        self.state: EpochState = UnattachedState(0)
        #: (time.monotonic(), state name, epoch, leader id) for every transition, for tests and notebooks
        self.history: list[tuple[float, str, int, int]] = []

    # -- reading ------------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int:
        return self.state.leader_id

    @property
    def is_voter(self) -> bool:
        return self.local_id in self.voters

    @property
    def is_observer(self) -> bool:
        return not self.is_voter

    def is_(self, cls) -> bool:
        return isinstance(self.state, cls)

    @property
    def is_leader(self) -> bool:
        return isinstance(self.state, LeaderState)

    def _election_deadline(self) -> float:
        return self.clock() + random_election_timeout(self.election_timeout_ms, self.rng)

    def _fetch_deadline(self) -> float:
        return self.clock() + self.fetch_timeout_ms / 1000

    # -- start-up -----------------------------------------------------------------------------

    def initialize(self) -> None:
        stored = self.store.read()
        if stored is None:
            self._set(UnattachedState(0, self._election_deadline()))
            return
        epoch, leader, voted = stored.epoch, stored.leader_id, stored.voted_id
        if leader == self.local_id and self.is_voter:
            state = ResignedState(epoch, self.local_id, self._election_deadline())
        elif voted == self.local_id and self.is_voter:
            state = CandidateState(epoch, self.local_id, self.voters, 1, self._election_deadline())
        elif leader >= 0 and leader != self.local_id:
            state = FollowerState(epoch, leader, self._fetch_deadline(), voted)
        elif voted >= 0:
            state = VotedState(epoch, voted, self._election_deadline())
        else:
            state = UnattachedState(epoch, self._election_deadline())
        self._set(state, persist=False)

    # -- transitions --------------------------------------------------------------------------

    def _set(self, state: EpochState, persist: bool = True) -> None:
        if persist:
            self.store.write(ElectionState(state.epoch, state.leader_id if not isinstance(state, LeaderState)
                                           else self.local_id,
                                           -1 if isinstance(state, LeaderState) else state.voted_id,
                                           sorted(self.voters)))
        self.state = state
        self.history.append((self.clock(), state.name, state.epoch, state.leader_id))

    def transition_to_unattached(self, epoch: int) -> None:
        state = self.state
        same_epoch = epoch == self.epoch and isinstance(state, ProspectiveState)
        if epoch < self.epoch or (epoch == self.epoch and not same_epoch):
            raise IllegalStateError(f"cannot become Unattached in epoch {epoch} from {self.state.name} "
                                    f"in epoch {self.epoch}")
        if isinstance(state, (UnattachedState, VotedState, CandidateState, ResignedState)) or (
                isinstance(state, ProspectiveState) and not state.lost):
            # keep the election timer running (Kafka does): else a candidate that cannot win (its log is
            # behind) but keeps bumping the epoch would reset everyone's timer forever, and no one else stands
            deadline = state.election_deadline
        else:
            deadline = self._election_deadline()
        if same_epoch and state.voted_id >= 0:
            self._set(VotedState(epoch, state.voted_id, deadline))    # the vote given in this epoch stays
        else:
            self._set(UnattachedState(epoch, deadline))

    def transition_to_prospective(self) -> ProspectiveState:
        """Ask for pre-votes before standing (KIP-996): same epoch, same leader and vote, nothing persisted."""
        if not self.is_voter:
            raise IllegalStateError(f"observer {self.local_id} cannot become Prospective")
        state = self.state
        if isinstance(state, (LeaderState, ProspectiveState, ResignedState)):
            raise IllegalStateError(f"cannot become Prospective from {state.name} in epoch {self.epoch}")
        prospective = ProspectiveState(state.epoch, self.local_id, self.voters, state.leader_id, state.voted_id,
                                       self._election_deadline())
        self._set(prospective, persist=False)
        return prospective

    def prospective_add_voted_state(self, epoch: int, candidate_id: int) -> None:
        """A Prospective that has not voted in this epoch votes for another: it stays Prospective (Kafka's
        ``prospectiveAddVotedState``); the vote is persisted."""
        state = self.state
        if (not isinstance(state, ProspectiveState) or epoch != state.epoch or state.voted >= 0
                or candidate_id == self.local_id or candidate_id not in self.voters):
            raise IllegalStateError(f"cannot add a vote for {candidate_id} in epoch {epoch} to {state.name} "
                                    f"(voted {state.voted_id}) in epoch {self.epoch}")
        self._set(ProspectiveState(epoch, self.local_id, self.voters, state.leader, candidate_id,
                                   self._election_deadline()))

    def transition_to_voted(self, epoch: int, candidate_id: int) -> None:
        if not self.is_voter or candidate_id not in self.voters:
            raise IllegalStateError(f"{self.local_id} cannot vote for {candidate_id}: not both voters")
        if epoch < self.epoch or (epoch == self.epoch and not isinstance(self.state, UnattachedState)):
            raise IllegalStateError(f"cannot vote in epoch {epoch} from {self.state.name} in epoch {self.epoch} "
                                    f"(one vote per epoch)")
        self._set(VotedState(epoch, candidate_id, self._election_deadline()))

    def transition_to_candidate(self) -> None:
        if not self.is_voter:
            raise IllegalStateError(f"observer {self.local_id} cannot stand for election")
        if isinstance(self.state, LeaderState):
            raise IllegalStateError("a leader cannot become a candidate")
        retries = self.state.retries + 1 if isinstance(self.state, CandidateState) else 1
        self._set(CandidateState(self.epoch + 1, self.local_id, self.voters, retries, self._election_deadline()))

    def transition_to_leader(self, epoch_start_offset: int) -> LeaderState:
        state = self.state
        if not isinstance(state, CandidateState) or not state.won:
            raise IllegalStateError(f"cannot become leader from {self.state.name} without a majority")
        leader = LeaderState(state.epoch, self.local_id, self.voters, epoch_start_offset, frozenset(state.granted),
                             check_quorum_timeout_s=CHECK_QUORUM_TIMEOUT_FACTOR * self.fetch_timeout_ms / 1000,
                             clock=self.clock)
        self._set(leader)
        return leader

    def transition_to_follower(self, epoch: int, leader_id: int) -> None:
        if leader_id == self.local_id:
            raise IllegalStateError("cannot follow itself")
        state = self.state
        if epoch < self.epoch or (epoch == self.epoch and not isinstance(
                state, (UnattachedState, VotedState, CandidateState, ProspectiveState))):
            raise IllegalStateError(f"cannot follow {leader_id} in epoch {epoch} from {state.name} "
                                    f"(leader {state.leader_id}) in epoch {self.epoch}")
        voted = state.voted_id if epoch == self.epoch else -1
        self._set(FollowerState(epoch, leader_id, self._fetch_deadline(), voted))

    def transition_to_resigned(self, preferred_successors: list[int]) -> None:
        if not isinstance(self.state, LeaderState):
            raise IllegalStateError(f"only a leader resigns, not a {self.state.name}")
        self._set(ResignedState(self.epoch, self.local_id, self._election_deadline(), list(preferred_successors)))
