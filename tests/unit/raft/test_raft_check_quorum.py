"""Check-quorum (Kafka 3.7+, KAFKA-15489): a leader that has had no Fetch from a majority of the voters for
1.5 × ``controller.quorum.fetch.timeout.ms`` resigns — :class:`LeaderState`'s timer, and the
:class:`KafkaRaftClient` of a 3-voter quorum whose two followers never fetch."""
from __future__ import annotations

import asyncio
import random
import time

import pytest

from kafkalab.raft.epoch_state import ResignedState
from kafkalab.raft.kafka_raft_client import KafkaRaftClient, NotLeaderError, RaftConfig
from kafkalab.raft.leader_state import CHECK_QUORUM_TIMEOUT_FACTOR, LeaderState


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def leader(voters=(1, 2, 3), timeout_s=1.5, clock=None) -> LeaderState:
    return LeaderState(1, local_id=1, voters=frozenset(voters), epoch_start_offset=0, check_quorum_timeout_s=timeout_s,
                       clock=clock or Clock())


def test_the_timer_runs_out_without_fetches_from_a_majority():
    clock = Clock()
    state = leader(clock=clock)
    assert state.time_until_check_quorum_expires(clock.now) == 1.5
    clock.now += 1.0
    assert state.time_until_check_quorum_expires(clock.now) == 0.5
    clock.now += 0.5
    assert state.time_until_check_quorum_expires(clock.now) == 0


def test_one_fetching_follower_of_three_voters_is_a_majority_with_the_leader():
    clock = Clock()
    state = leader(clock=clock)
    clock.now += 1.0
    state.update_replica(2, 0, 0, 0)          # voter 2 fetches: 2 of 3 (the leader counted)
    assert state.time_until_check_quorum_expires(clock.now) == 1.5
    assert state.fetched_voters == set()      # counted, and the count starts again


def test_five_voters_need_two_followers_and_observers_never_count():
    clock = Clock()
    state = leader(voters=(1, 2, 3, 4, 5), clock=clock)
    clock.now += 1.0
    state.update_replica(2, 0, 0, 0)
    state.update_replica(2, 0, 0, 0)          # the same voter twice is one
    state.update_replica(7, 0, 0, 0)          # an observer (a broker)
    assert state.fetched_voters == {2}
    assert state.time_until_check_quorum_expires(clock.now) == 0.5
    state.update_replica(4, 0, 0, 0)
    assert state.time_until_check_quorum_expires(clock.now) == 1.5


def test_a_quorum_of_one_never_expires():
    clock = Clock()
    state = leader(voters=(1,), clock=clock)
    clock.now += 1000
    assert state.time_until_check_quorum_expires(clock.now) == float("inf")


def test_a_client_leading_a_quorum_whose_followers_never_fetch_resigns(tmp_path):
    """Node 1 of three voters (the other two never run) is made leader by hand (as if voter 2 had granted its
    vote), and nobody fetches. After 1.5 × the fetch timeout it has resigned, appends are refused, and later it
    stands for election again."""
    async def scenario():
        voters = {1: ("127.0.0.1", 1), 2: ("127.0.0.1", 1), 3: ("127.0.0.1", 1)}   # port 1: nobody answers
        config = RaftConfig(1, voters, election_timeout_ms=300, fetch_timeout_ms=200, election_backoff_max_ms=100,
                            request_timeout_ms=100)
        client = KafkaRaftClient(config, str(tmp_path / "node-1"), rng=random.Random(1))
        await client.start()
        try:
            client.become_candidate()
            state = client.quorum.state
            state.granted.update({2})               # as if voter 2 had granted its vote
            became = time.monotonic()
            client._maybe_become_leader()
            assert client.quorum.is_leader
            epoch = client.quorum.epoch
            assert client.quorum.state.check_quorum_timeout_s == pytest.approx(CHECK_QUORUM_TIMEOUT_FACTOR * 0.2)
            client.append([b"x"])                  # leading: appends are taken (never committed)
            loop = asyncio.get_running_loop()
            started = loop.time()
            while client.quorum.is_leader and loop.time() - started < 5:
                await asyncio.sleep(0.01)
            assert not client.quorum.is_leader
            assert [r["epoch"] for r in client.check_quorum_resignations] == [epoch]
            assert client.check_quorum_resignations[0]["at"] - became >= 0.3    # not before its time
            assert isinstance(client.quorum.state, ResignedState) or client.quorum.epoch > epoch
            try:
                client.append([b"y"])
                raise AssertionError("a resigned leader took an append")
            except NotLeaderError:
                pass
            while client.quorum.epoch == epoch and loop.time() - started < 5:   # a candidate again, later
                await asyncio.sleep(0.01)
            assert client.quorum.epoch > epoch
        finally:
            await client.close()

    asyncio.run(scenario())
