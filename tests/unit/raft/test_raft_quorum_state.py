"""kafkalab.raft's QuorumState: every state transition, legal and not, and the quorum-state file."""
from __future__ import annotations

import json
import random

import pytest

from kafkalab.raft.epoch_state import (CandidateState, FollowerState, ResignedState, UnattachedState, VotedState,
                                       random_election_timeout)
from kafkalab.raft.file_quorum_state_store import ElectionState, FileQuorumStateStore, QuorumStateError
from kafkalab.raft.leader_state import LeaderState
from kafkalab.raft.quorum_state import IllegalStateError, QuorumState


def quorum(tmp_path, local=1, voters=(1, 2, 3)) -> QuorumState:
    q = QuorumState(local, list(voters), FileQuorumStateStore(str(tmp_path)), election_timeout_ms=500,
                    fetch_timeout_ms=1000, rng=random.Random(1))
    q.initialize()
    return q


def file(tmp_path) -> dict:
    return json.loads((tmp_path / "quorum-state").read_text())


def test_first_start_is_unattached_in_epoch_0(tmp_path):
    q = quorum(tmp_path)
    assert isinstance(q.state, UnattachedState) and q.epoch == 0
    assert q.store.read() == ElectionState(0, -1, -1, [1, 2, 3])


def test_quorum_state_file_has_kafkas_layout(tmp_path):
    q = quorum(tmp_path)
    q.transition_to_voted(2, 3)
    # Kafka 4.4's FileQuorumStateStore, data_version 0 (a static quorum): keys and their order
    assert (tmp_path / "quorum-state").read_text() == (
        '{"clusterId":"","leaderId":-1,"leaderEpoch":2,"votedId":3,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    assert not (tmp_path / "quorum-state.tmp").exists()


def test_reads_a_file_kafka_wrote(tmp_path):
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":3002,"leaderEpoch":2,"votedId":3002,"appliedOffset":0,'
        '"currentVoters":[{"voterId":3001},{"voterId":3002},{"voterId":3003}],"data_version":0}')
    assert FileQuorumStateStore(str(tmp_path)).read() == ElectionState(2, 3002, 3002, [3001, 3002, 3003])
    q = quorum(tmp_path, 3001, (3001, 3002, 3003))
    assert isinstance(q.state, FollowerState) and q.state.leader == 3002 and q.state.voted_id == 3002


@pytest.mark.parametrize("text", ['{"leaderEpoch": 1}', "not json", '{"data_version": 7}'])
def test_a_damaged_file_is_refused_clearly(tmp_path, text):
    (tmp_path / "quorum-state").write_text(text)
    with pytest.raises(QuorumStateError, match="quorum-state"):
        FileQuorumStateStore(str(tmp_path)).read()


def test_one_vote_per_epoch_survives_a_restart(tmp_path):
    q = quorum(tmp_path)
    q.transition_to_voted(5, 2)
    with pytest.raises(IllegalStateError, match="one vote per epoch"):
        q.transition_to_voted(5, 3)
    again = quorum(tmp_path)          # the process restarted: the vote is still there
    assert isinstance(again.state, VotedState) and again.epoch == 5 and again.state.candidate_id == 2
    with pytest.raises(IllegalStateError):
        again.transition_to_voted(5, 3)
    again.transition_to_voted(6, 3)   # a new epoch, a new vote
    assert file(tmp_path)["votedId"] == 3 and file(tmp_path)["leaderEpoch"] == 6


def test_candidate_bumps_the_epoch_and_votes_for_itself(tmp_path):
    q = quorum(tmp_path)
    q.transition_to_candidate()
    assert isinstance(q.state, CandidateState) and q.epoch == 1 and q.state.granted == {1}
    assert file(tmp_path)["votedId"] == 1 and file(tmp_path)["leaderId"] == -1
    q.transition_to_candidate()       # lost: stands again, one epoch later
    assert q.epoch == 2 and q.state.retries == 2
    assert isinstance(quorum(tmp_path).state, CandidateState)   # restarted as a candidate of epoch 2


def test_leader_needs_a_majority(tmp_path):
    q = quorum(tmp_path)
    q.transition_to_candidate()
    with pytest.raises(IllegalStateError, match="majority"):
        q.transition_to_leader(0)
    q.state.granted.add(3)
    leader = q.transition_to_leader(0)
    assert isinstance(leader, LeaderState) and leader.epoch == 1
    assert file(tmp_path)["leaderId"] == 1
    with pytest.raises(IllegalStateError):
        q.transition_to_candidate()
    # a leader restarted comes back Resigned: it may have been replaced meanwhile
    assert isinstance(quorum(tmp_path).state, ResignedState)


def test_a_candidate_loses_when_a_majority_refuses(tmp_path):
    q = quorum(tmp_path, voters=(1, 2, 3, 4, 5))
    q.transition_to_candidate()
    q.state.rejected.update({2, 3})
    assert not q.state.lost
    q.state.rejected.add(4)
    assert q.state.lost and not q.state.won


def test_follower_transitions(tmp_path):
    q = quorum(tmp_path)
    q.transition_to_follower(3, 2)
    assert isinstance(q.state, FollowerState) and file(tmp_path)["leaderId"] == 2
    with pytest.raises(IllegalStateError, match="cannot follow 3 in epoch 3"):
        q.transition_to_follower(3, 3)          # never two leaders in one epoch
    with pytest.raises(IllegalStateError):
        q.transition_to_follower(2, 3)          # never back to an older epoch
    with pytest.raises(IllegalStateError):
        q.transition_to_unattached(3)           # Unattached only in a higher epoch
    q.transition_to_unattached(4)
    q.transition_to_voted(4, 3)
    q.transition_to_follower(4, 3)              # the candidate it voted for won
    assert q.state.voted_id == 3 and file(tmp_path)["votedId"] == 3
    q.transition_to_candidate()                 # its leader went quiet: stands in epoch 5
    q.transition_to_follower(5, 2)              # another won epoch 5 first (BeginQuorumEpoch)
    assert isinstance(q.state, FollowerState) and q.state.leader == 2 and q.state.voted_id == 1


def test_only_a_leader_resigns_and_observers_never_stand(tmp_path):
    q = quorum(tmp_path)
    with pytest.raises(IllegalStateError, match="only a leader"):
        q.transition_to_resigned([])
    observer = quorum(tmp_path / "o", local=9)
    assert observer.is_observer
    with pytest.raises(IllegalStateError, match="observer"):
        observer.transition_to_candidate()
    with pytest.raises(IllegalStateError):
        observer.transition_to_voted(1, 2)


def test_randomised_election_timeout_lies_between_one_and_two_timeouts():
    rng = random.Random(7)
    values = [random_election_timeout(500, rng) for _ in range(200)]
    assert all(0.5 <= v < 1.0 for v in values) and len(set(values)) > 50


def test_high_watermark_needs_a_majority_and_an_offset_of_the_leaders_epoch():
    state = LeaderState(3, local_id=1, voters=frozenset({1, 2, 3}), epoch_start_offset=10)
    assert not state.update_local_end_offset(11, 0)        # the leader alone is no majority
    assert not state.update_replica(2, 10, 0, 11)          # only up to the epoch start: not yet
    assert state.high_watermark is None
    assert state.update_replica(2, 11, 0, 11) and state.high_watermark == 11
    state.update_local_end_offset(20, 0)
    assert not state.update_replica(9, 20, 0, 20)          # an observer never counts
    assert state.high_watermark == 11 and 9 in state.observers
    assert state.update_replica(3, 15, 0, 20) and state.high_watermark == 15
    assert not state.update_replica(3, 12, 0, 20) and state.high_watermark == 15   # never backwards


def test_a_higher_epoch_does_not_reset_a_running_election_timer(tmp_path):
    """A candidate whose log is behind keeps bumping the epoch and losing; the voters it asks move to each new
    epoch but keep their election timer (as Kafka's transitionToUnattached), so one of them stands in time."""
    q = quorum(tmp_path)
    deadline = q.state.election_deadline
    for epoch in range(1, 6):
        q.transition_to_unattached(epoch)
        assert q.state.election_deadline == deadline
    q.transition_to_follower(6, 2)
    q.transition_to_unattached(7)                   # from a follower: a fresh random timeout
    assert q.state.election_deadline != deadline
