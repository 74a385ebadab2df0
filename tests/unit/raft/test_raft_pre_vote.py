"""Pre-vote (KIP-996, Kafka 4.0+) in kafkalab.raft: the Prospective state's transitions, each state's
granting rule (Kafka's ``canGrantVote``), Vote v2 on the wire, and the client's timers.

As in Kafka 4.4: Prospective is in memory only (``quorum-state`` keeps the state before it); a
pre-vote carries the prospective's current epoch and changes nothing at the voter; a Follower that
has fetched from its leader refuses pre-votes; a lost pre-vote goes back to the leader it knew (same
epoch), else Unattached (same epoch); a won one makes a Candidate in epoch + 1.
"""
from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from kafkalab.broker.common.message.codec import build
from kafkalab.raft.epoch_state import CandidateState, FollowerState, ResignedState, UnattachedState, VotedState
from kafkalab.raft.leader_state import LeaderState
from kafkalab.raft.prospective_state import ProspectiveState
from kafkalab.raft.quorum_state import IllegalStateError
from kafkalab.raft.raft_apis import FENCED_LEADER_EPOCH, INVALID_REQUEST, handle_vote
from kafkalab.raft.kafka_raft_client import KafkaRaftClient
from kafkalab.raft.raft_messages import VoteRequest, VoteResponse
from kafkalab.raft.raft_node import RaftNode
from test_raft_client import client, config, free_port, topics, write   # the same fixtures


def partition(answer: dict) -> dict:
    return answer["topics"][0]["partitions"][0]


def granted(answer: dict) -> bool:
    return partition(answer)["vote_granted"]


async def make_leader(c: KafkaRaftClient) -> LeaderState:
    c.quorum.transition_to_candidate()
    c.quorum.state.granted.add(2)
    c._maybe_become_leader()
    return c.quorum.state


def pre_vote(replica: int, epoch: int, last_epoch: int, last_offset: int, version: int = 2, pre: bool = True):
    return build(VoteRequest, version, {"topics": topics(replica_epoch=epoch, replica_id=replica, pre_vote=pre,
                                                         last_offset_epoch=last_epoch, last_offset=last_offset)})


def quorum_state_file(tmp_path, node_id=1) -> dict:
    return json.loads((tmp_path / f"node-{node_id}" / "__cluster_metadata-0" / "quorum-state").read_text())


# -- Vote v2 on the wire --------------------------------------------------------------------------------------------

def test_vote_v2_carries_pre_vote_and_v0_is_still_served(tmp_path):
    request = pre_vote(2, 3, 2, 7)
    wire = request.encode(header=False)
    back = VoteRequest.decode(wire, version=2)
    p = back.topics[0].partitions[0]
    assert (p.replica_epoch, p.replica_id, p.last_offset_epoch, p.last_offset, p.pre_vote) == (3, 2, 2, 7, True)
    v0 = VoteRequest.decode(pre_vote(2, 3, 2, 7, version=0).encode(header=False), version=0)
    assert not hasattr(v0.topics[0].partitions[0], "pre_vote") or not v0.topics[0].partitions[0].pre_vote
    c = client(tmp_path)
    answer = handle_vote(c, v0)                                       # a v0 vote: a real vote, as before
    assert granted(answer) and isinstance(c.quorum.state, VotedState)
    response = build(VoteResponse, 2, answer)
    assert VoteResponse.decode(response.encode(header=False), version=2).topics[0].partitions[0].vote_granted


# -- granting rules ---------------------------------------------------------------------------------------------------

def test_a_pre_vote_changes_nothing_and_persists_nothing(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_unattached(3)
    before = quorum_state_file(tmp_path)
    assert granted(handle_vote(c, pre_vote(2, 3, 2, 0)))              # as up to date: granted ...
    assert type(c.quorum.state) is UnattachedState and c.quorum.epoch == 3   # ... but no vote given
    assert quorum_state_file(tmp_path) == before
    assert granted(handle_vote(c, pre_vote(3, 3, 2, 0)))              # so another may have one too
    assert granted(handle_vote(c, pre_vote(2, 3, 2, 0, pre=False)))   # and a real vote still goes to anyone
    assert isinstance(c.quorum.state, VotedState) and quorum_state_file(tmp_path)["votedId"] == 2
    assert granted(handle_vote(c, pre_vote(3, 3, 2, 0)))              # voted: a pre-vote needs only the log
    assert not granted(handle_vote(c, pre_vote(3, 3, 2, 0, pre=False)))   # but one real vote per epoch


def test_a_pre_vote_needs_a_log_at_least_as_up_to_date(tmp_path):
    c = client(tmp_path)
    write(c, 1, 3)
    write(c, 2, 2)                                                    # this log ends at (epoch 2, offset 5)
    c.quorum.transition_to_unattached(2)
    assert not granted(handle_vote(c, pre_vote(2, 2, 1, 9)))          # older last epoch
    assert not granted(handle_vote(c, pre_vote(2, 2, 2, 4)))          # same epoch, shorter
    assert granted(handle_vote(c, pre_vote(2, 2, 2, 5)))


def test_a_follower_that_heard_from_its_leader_refuses_pre_votes(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_follower(4, 3)
    assert granted(handle_vote(c, pre_vote(2, 4, 0, 0)))              # not fetched yet: its leader may be gone
    assert not granted(handle_vote(c, pre_vote(2, 4, 0, 0, pre=False)))   # a real vote never: it has a leader
    c.quorum.state.has_fetched_from_leader = True                     # what a successful Fetch answer sets
    assert not granted(handle_vote(c, pre_vote(2, 4, 0, 0)))
    assert isinstance(c.quorum.state, FollowerState) and c.quorum.state.leader == 3 and c.quorum.epoch == 4


def test_leader_refuses_candidate_and_resigned_grant_pre_votes_only(tmp_path):
    async def scenario():
        c = client(tmp_path)
        c.quorum.transition_to_candidate()                            # epoch 1, voted for itself
        assert granted(handle_vote(c, pre_vote(2, 1, 0, 0)))
        assert not granted(handle_vote(c, pre_vote(3, 1, 0, 0, pre=False)))   # it voted for itself
        assert isinstance(c.quorum.state, CandidateState) and c.quorum.epoch == 1
        c.quorum.state.granted.add(2)
        c._maybe_become_leader()
        assert isinstance(c.quorum.state, LeaderState)
        assert not granted(handle_vote(c, pre_vote(2, 1, 1, 1)))      # a leader refuses, even an up-to-date log
        c._resign(c.quorum.state)
        assert isinstance(c.quorum.state, ResignedState)
        assert granted(handle_vote(c, pre_vote(2, 1, 1, 1)))
        assert not granted(handle_vote(c, pre_vote(2, 1, 1, 0)))      # behind it
        await c.close()
    asyncio.run(scenario())


def test_a_pre_vote_in_a_higher_epoch_moves_the_voter_there_an_older_one_is_fenced(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_follower(4, 3)
    c.quorum.state.has_fetched_from_leader = True
    assert granted(handle_vote(c, pre_vote(2, 6, 0, 0)))             # as Kafka 4.4: this replica was behind
    assert type(c.quorum.state) is UnattachedState and c.quorum.epoch == 6
    answer = handle_vote(c, pre_vote(2, 5, 0, 0))
    assert partition(answer)["error_code"] == FENCED_LEADER_EPOCH and not granted(answer)


def test_a_last_epoch_beyond_the_request_epoch_is_an_invalid_request(tmp_path):
    c = client(tmp_path)
    assert partition(handle_vote(c, pre_vote(2, 3, 4, 0)))["error_code"] == INVALID_REQUEST
    assert partition(handle_vote(c, pre_vote(2, 3, 3, 0)))["error_code"] == 0     # a pre-vote: its own epoch
    assert partition(handle_vote(c, pre_vote(2, 3, 3, 0, pre=False)))["error_code"] == INVALID_REQUEST
    assert c.quorum.epoch == 3


# -- QuorumState: the Prospective transitions ------------------------------------------------------------------------

def test_follower_to_prospective_keeps_epoch_leader_and_vote_in_memory_only(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_voted(5, 2)
    c.quorum.transition_to_follower(5, 2)
    before = quorum_state_file(tmp_path)
    state = c.quorum.transition_to_prospective()
    assert (state.epoch, state.leader_id, state.voted_id, state.granted) == (5, 2, 2, {1})
    assert quorum_state_file(tmp_path) == before                      # not persisted (Kafka's memoryTransitionTo)
    assert ("Prospective", 5) in [(name, epoch) for _, name, epoch, _ in c.quorum.history]
    c.quorum.transition_to_follower(5, 2)                             # lost: back to the same leader, same epoch
    assert isinstance(c.quorum.state, FollowerState) and c.quorum.epoch == 5 and c.quorum.state.voted == 2


def test_a_restart_while_prospective_comes_back_as_the_state_before(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_follower(3, 2)
    c.quorum.transition_to_prospective()
    c.log.close()
    again = client(tmp_path)
    assert isinstance(again.quorum.state, FollowerState) and again.quorum.epoch == 3 and again.quorum.leader_id == 2


def test_prospective_without_leader_goes_back_to_unattached_or_voted_in_the_same_epoch(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_unattached(2)
    c.quorum.transition_to_prospective()
    c.quorum.state.rejected |= {2, 3}
    assert c.quorum.state.lost
    c.quorum.transition_to_unattached(2)                              # same epoch: only from Prospective
    assert type(c.quorum.state) is UnattachedState and c.quorum.epoch == 2
    with pytest.raises(IllegalStateError):
        c.quorum.transition_to_unattached(2)
    c.quorum.transition_to_prospective()
    c.quorum.prospective_add_voted_state(2, 3)                        # votes while Prospective: stays one
    assert isinstance(c.quorum.state, ProspectiveState) and c.quorum.state.voted == 3
    assert quorum_state_file(tmp_path)["votedId"] == 3                # that vote is persisted
    c.quorum.transition_to_unattached(2)
    assert isinstance(c.quorum.state, VotedState) and c.quorum.state.candidate_id == 3   # the vote stays


def test_prospective_to_candidate_bumps_and_persists_the_epoch(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_unattached(4)
    c.quorum.transition_to_prospective()
    c.quorum.transition_to_candidate()
    assert isinstance(c.quorum.state, CandidateState) and c.quorum.epoch == 5
    assert quorum_state_file(tmp_path)["leaderEpoch"] == 5 and quorum_state_file(tmp_path)["votedId"] == 1


def test_illegal_prospective_transitions(tmp_path):
    async def scenario():
        c = client(tmp_path)
        c.quorum.transition_to_prospective()
        with pytest.raises(IllegalStateError):
            c.quorum.transition_to_prospective()                      # already one
        c.quorum.transition_to_candidate()
        c.quorum.state.granted.add(2)
        c._maybe_become_leader()
        with pytest.raises(IllegalStateError):
            c.quorum.transition_to_prospective()                      # a leader never
        await c.close()
    asyncio.run(scenario())
    observer = client(tmp_path, node_id=9)
    with pytest.raises(IllegalStateError):
        observer.quorum.transition_to_prospective()                   # an observer never


# -- the client's timers -------------------------------------------------------------------------------------------

def test_timers_lead_to_prospective_not_candidate(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_follower(3, 2)
    c._start_election_requests = lambda pre_vote: None                # no network here: only the transitions
    c._poll(time.monotonic() + 10)                                    # fetch timeout
    assert isinstance(c.quorum.state, ProspectiveState) and c.quorum.epoch == 3 and c.quorum.leader_id == 2
    c._poll(time.monotonic() + 10)                                    # its election timeout: back to the leader
    assert isinstance(c.quorum.state, FollowerState) and c.quorum.epoch == 3 and c.quorum.state.leader == 2
    assert c.pre_votes[-1]["won"] is False and c.pre_votes[-1]["epoch"] == 3
    c.quorum.transition_to_unattached(4)
    c._poll(time.monotonic() + 10)                                    # election timeout
    assert isinstance(c.quorum.state, ProspectiveState) and c.quorum.epoch == 4
    c.quorum.state.granted.add(3)                                     # a majority of pre-votes
    c.become_candidate()
    assert isinstance(c.quorum.state, CandidateState) and c.quorum.epoch == 5
    c._poll(time.monotonic() + 10)                                    # not won in its election timeout
    assert isinstance(c.quorum.state, ProspectiveState) and c.quorum.epoch == 5 and c.quorum.state.voted == 1


def test_a_resigned_leader_goes_unattached_in_the_next_epoch(tmp_path):
    async def scenario():
        c = client(tmp_path)
        await make_leader(c)
        c._resign(c.quorum.state)
        c._poll(time.monotonic() + 10)
        assert type(c.quorum.state) is UnattachedState and c.quorum.epoch == 2   # Kafka 4.4's pollResigned
        await c.close()
    asyncio.run(scenario())


# -- over the wire --------------------------------------------------------------------------------------------------

def test_a_voter_cut_off_from_a_healthy_quorum_does_not_unseat_its_leader(tmp_path):
    """Three RaftNodes; one follower's fetch deadline is forced into the past (as after a long pause): it becomes
    Prospective, the leader and the other follower refuse its pre-votes, it follows the same leader in the same
    epoch. A lone voter (a quorum of one) wins its own pre-vote and leads."""
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
        nodes = {i: RaftNode(config(i, voters), str(tmp_path / f"node-{i}"), idle_interval_ms=50,
                             rng=random.Random(i)) for i in voters}
        for n in nodes.values():
            await n.start()
        try:
            for _ in range(300):
                leaders = [i for i, n in nodes.items() if n.client.quorum.is_leader]
                followers = [n for n in nodes.values() if isinstance(n.client.quorum.state, FollowerState)
                             and n.client.quorum.state.has_fetched_from_leader]
                if leaders and len(followers) == 2:
                    break
                await asyncio.sleep(0.02)
            leader, epoch = leaders[0], nodes[leaders[0]].client.quorum.epoch
            cut_off = nodes[next(i for i in voters if i != leader)].client
            rounds = len(cut_off.pre_votes)
            cut_off.quorum.state.fetch_deadline = time.monotonic() - 1
            cut_off.notify()
            for _ in range(300):
                if len(cut_off.pre_votes) > rounds:
                    break
                await asyncio.sleep(0.02)
            result = cut_off.pre_votes[rounds]
            assert result["epoch"] == epoch and not result["won"] and result["granted"] == [cut_off.node_id]
            assert len(result["rejected"]) == 2
            await asyncio.sleep(0.3)
            assert nodes[leader].client.quorum.is_leader and all(n.client.quorum.epoch == epoch
                                                                 for n in nodes.values())
            assert isinstance(cut_off.quorum.state, FollowerState) and cut_off.quorum.state.leader == leader
        finally:
            for n in nodes.values():
                await n.stop(resign=False)
    asyncio.run(scenario())


def test_a_quorum_of_one_wins_its_own_pre_vote(tmp_path):
    async def scenario():
        voters = {1: ("127.0.0.1", free_port())}
        node = RaftNode(config(1, voters), str(tmp_path / "n1"), idle_interval_ms=0)
        await node.start()
        try:
            for _ in range(200):
                if node.client.quorum.is_leader:
                    break
                await asyncio.sleep(0.02)
            assert node.client.quorum.is_leader and node.client.quorum.epoch == 1
            assert node.client.pre_votes[0] == {**node.client.pre_votes[0], "epoch": 0, "won": True, "granted": [1]}
        finally:
            await node.stop(resign=False)
    asyncio.run(scenario())


def test_a_prospective_that_learns_of_a_leader_in_its_epoch_follows_it(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_unattached(3)
    c.quorum.transition_to_prospective()
    c.maybe_transition(3, 2)                      # a pre-vote answer (or BeginQuorumEpoch) names leader 2 of epoch 3
    assert isinstance(c.quorum.state, FollowerState) and c.quorum.state.leader == 2 and c.quorum.epoch == 3
    c.quorum.transition_to_prospective()          # it knows its leader: an answer naming another changes nothing
    c.maybe_transition(3, 3)
    assert isinstance(c.quorum.state, ProspectiveState) and c.quorum.state.leader == 2
    c.maybe_transition(4, 3)                      # a higher epoch: follow
    assert isinstance(c.quorum.state, FollowerState) and c.quorum.state.leader == 3 and c.quorum.epoch == 4


def test_pre_vote_requests_end_with_their_prospective_even_in_the_same_epoch(tmp_path):
    """A Prospective whose pre-vote times out comes back in the same epoch again and again while the others are
    unreachable: each round's requests stop with it, so they do not pile up."""
    async def scenario():
        c = client(tmp_path)                                          # voters 2 and 3 listen nowhere
        c._running = True
        c.become_prospective()
        assert len(c._tasks) == 2
        for _ in range(5):
            c._poll(time.monotonic() + 10)                            # timed out: Unattached, same epoch
            assert type(c.quorum.state) is UnattachedState and c.quorum.epoch == 0
            c._poll(time.monotonic() + 10)                            # and Prospective again at once
            assert isinstance(c.quorum.state, ProspectiveState)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)                                      # old requests notice at their next retry
        assert len(c._tasks) == 2, len(c._tasks)
        await c.close()
    asyncio.run(scenario())
