"""kafkalab.raft's KafkaRaftClient and its RPCs: Raft's safety cases, in one process.

The handlers are called directly where a single replica's answer is the point (a vote refused to an
older log, a stale leader fenced), and over real sockets (RaftServer, NetworkClient) where replicas
must talk: a diverged follower truncated by its leader, an election, a graceful resignation.
"""
from __future__ import annotations

import asyncio
import json
import random
import socket
import struct
import time

from kafkalab.broker.common.message.codec import build
from kafkalab.raft.epoch_state import FollowerState, ResignedState, UnattachedState, VotedState
from kafkalab.raft.kafka_raft_client import KafkaRaftClient, RaftConfig
from kafkalab.raft.leader_state import LeaderState
from kafkalab.raft.raft_apis import (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, handle_begin_quorum_epoch,
                                     handle_describe_quorum, handle_end_quorum_epoch, handle_fetch, handle_vote)
from kafkalab.raft.raft_messages import (METADATA_TOPIC, METADATA_TOPIC_ID, BeginQuorumEpochRequest,
                                         DescribeQuorumRequest, EndQuorumEpochRequest, FetchRequest, VoteRequest)
from kafkalab.raft.raft_node import RaftNode
from kafkalab.metadata.metadata_records import decode_control_record, decode_metadata_record


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(node_id: int, voters: dict | None = None) -> RaftConfig:
    voters = voters or {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
    return RaftConfig(node_id, voters, election_timeout_ms=300, fetch_timeout_ms=600, election_backoff_max_ms=200,
                      request_timeout_ms=1000, fetch_max_wait_ms=100)


def client(tmp_path, node_id=1, voters=None) -> KafkaRaftClient:
    c = KafkaRaftClient(config(node_id, voters), str(tmp_path / f"node-{node_id}"), random.Random(node_id))
    c.quorum.initialize()
    return c


def write(c: KafkaRaftClient, epoch: int, n: int) -> None:
    for i in range(n):
        c.log.append_as_leader([(None, f"e{epoch}-{i}".encode())], epoch)


def topics(**partition) -> list:
    return [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0, **partition}]}]


def vote(candidate: int, epoch: int, last_epoch: int, last_offset: int):
    return build(VoteRequest, 0, {"topics": topics(replica_epoch=epoch, replica_id=candidate,
                                                   last_offset_epoch=last_epoch, last_offset=last_offset)})


def fetch(replica: int, epoch: int, offset: int, last_epoch: int, max_wait_ms: int = 0):
    return build(FetchRequest, 17, {"replica_state": {"replica_id": replica, "replica_epoch": -1},
                                    "max_wait_ms": max_wait_ms, "min_bytes": 0, "max_bytes": 1 << 20,
                                    "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                                    "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [
                                        {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset,
                                         "last_fetched_epoch": last_epoch, "log_start_offset": 0,
                                         "partition_max_bytes": 1 << 20}]}],
                                    "forgotten_topics_data": [], "rack_id": ""})


def granted(answer: dict) -> bool:
    return answer["topics"][0]["partitions"][0]["vote_granted"]


def partition(answer: dict, key: str = "topics") -> dict:
    return answer[key][0]["partitions"][0]


async def make_leader(c: KafkaRaftClient, epochs: int = 1) -> LeaderState:
    for _ in range(epochs):
        c.quorum.transition_to_candidate()
    c.quorum.state.granted.add(2)
    c._maybe_become_leader()
    return c.quorum.state


# -- Vote ------------------------------------------------------------------------------------------------

def test_vote_refused_to_a_candidate_with_an_older_log(tmp_path):
    c = client(tmp_path)
    write(c, 1, 3)
    write(c, 2, 2)                                               # this log ends at (epoch 2, offset 5)
    assert not granted(handle_vote(c, vote(2, 3, 1, 9)))         # older last epoch, longer log: refused
    assert not granted(handle_vote(c, vote(2, 3, 2, 4)))         # same epoch, shorter: refused
    assert isinstance(c.quorum.state, UnattachedState) and c.quorum.epoch == 3   # it did move to epoch 3
    assert granted(handle_vote(c, vote(3, 3, 2, 5)))             # as up to date: granted
    assert isinstance(c.quorum.state, VotedState) and c.quorum.state.candidate_id == 3


def test_one_vote_per_epoch_even_after_a_restart(tmp_path):
    c = client(tmp_path)
    assert granted(handle_vote(c, vote(2, 4, 0, 0)))
    assert granted(handle_vote(c, vote(2, 4, 0, 0)))             # the same candidate asking again: still yes
    assert not granted(handle_vote(c, vote(3, 4, 0, 0)))         # another candidate, same epoch: no
    c.log.close()
    restarted = client(tmp_path)
    assert json.loads((tmp_path / "node-1" / "__cluster_metadata-0" / "quorum-state").read_text())["votedId"] == 2
    assert not granted(handle_vote(restarted, vote(3, 4, 0, 0)))
    assert granted(handle_vote(restarted, vote(3, 5, 0, 0)))     # next epoch: free to vote again


def test_vote_in_an_older_epoch_is_fenced(tmp_path):
    c = client(tmp_path)
    c.quorum.transition_to_unattached(7)
    answer = handle_vote(c, vote(2, 6, 0, 0))
    assert partition(answer)["error_code"] == FENCED_LEADER_EPOCH and partition(answer)["leader_epoch"] == 7
    assert not granted(answer)
    assert partition(handle_vote(c, vote(9, 8, 0, 0)))["error_code"] == 94   # INCONSISTENT_VOTER_SET


# -- a stale leader -------------------------------------------------------------------------------------------

def test_a_stale_leader_is_fenced_by_a_higher_epoch(tmp_path):
    async def scenario():
        c = client(tmp_path)
        leader = await make_leader(c)
        assert isinstance(leader, LeaderState) and c.log.batches()[0]["control"]
        # a voter asks for a fetch in the old epoch after a newer leader appeared: refused as fenced
        answer = handle_begin_quorum_epoch(c, build(BeginQuorumEpochRequest, 0,
                                                    {"topics": topics(leader_id=3, leader_epoch=2)}))
        assert partition(answer)["error_code"] == 0
        assert isinstance(c.quorum.state, FollowerState) and c.quorum.state.leader == 3 and c.quorum.epoch == 2
        old = await handle_fetch(c, fetch(2, 1, 1, 1))
        assert partition(old, "responses")["error_code"] == FENCED_LEADER_EPOCH
        assert partition(old, "responses")["current_leader"] == {"leader_id": 3, "leader_epoch": 2}
        new = await handle_fetch(c, fetch(2, 2, 1, 1))                # right epoch, but not the leader
        assert partition(new, "responses")["error_code"] == NOT_LEADER_OR_FOLLOWER
        stale = handle_begin_quorum_epoch(c, build(BeginQuorumEpochRequest, 0,
                                                   {"topics": topics(leader_id=1, leader_epoch=1)}))
        assert partition(stale)["error_code"] == FENCED_LEADER_EPOCH
        dq = handle_describe_quorum(c, build(DescribeQuorumRequest, 2, {"topics": topics()}))
        assert partition(dq)["error_code"] == NOT_LEADER_OR_FOLLOWER
        await c.close()
    asyncio.run(scenario())


def test_end_quorum_epoch_makes_the_preferred_successor_stand_soon(tmp_path):
    def resign_to(node_id: int) -> tuple[float, float, float]:
        c = client(tmp_path, node_id=node_id)
        c.quorum.transition_to_follower(3, 1)
        before = time.monotonic()
        handle_end_quorum_epoch(c, build(EndQuorumEpochRequest, 0, {"topics": topics(
            leader_id=1, leader_epoch=3, preferred_successors=[2, 3])}))
        return before, c.quorum.state.fetch_deadline, time.monotonic()

    before, deadline, after = resign_to(2)
    assert deadline <= after                                   # first in line: stands at once
    before, deadline, after = resign_to(3)
    # second of two: Kafka's strict exponential back-off, election.backoff.max.ms (200) >> 1 = 100 ms
    assert before + 0.1 <= deadline <= after + 0.1


# -- Fetch: the high watermark and divergence -------------------------------------------------------------------

def test_fetch_moves_the_high_watermark_once_a_majority_has_the_leaders_epoch(tmp_path):
    async def scenario():
        c = client(tmp_path)
        write(c, 1, 2)
        leader = await make_leader(c, epochs=2)                       # epoch 2, LeaderChange at offset 2
        assert leader.epoch_start_offset == 2 and c.log.end_offset == 3
        write(c, 2, 0)
        c.append([b"a", b"b"])                                       # offsets 3, 4
        answer = await handle_fetch(c, fetch(2, 2, 2, 1))            # voter 2 has 0..1: gets 2.. (no HW yet)
        assert partition(answer, "responses")["high_watermark"] == -1
        assert len(partition(answer, "responses")["records"]) > 0
        answer = await handle_fetch(c, fetch(2, 2, 5, 2))            # voter 2 has everything
        assert partition(answer, "responses")["high_watermark"] == 5 and c.high_watermark == 5
        await handle_fetch(c, fetch(9, 2, 1, 1))                     # an observer: listed, never counted
        dq = partition(handle_describe_quorum(c, build(DescribeQuorumRequest, 2, {"topics": topics()})))
        assert dq["high_watermark"] == 5 and [v["log_end_offset"] for v in dq["current_voters"]] == [5, 5, -1]
        assert [o["replica_id"] for o in dq["observers"]] == [9]
        await c.close()
    asyncio.run(scenario())


def test_fetch_with_a_diverged_log_gets_the_diverging_epoch(tmp_path):
    async def scenario():
        c = client(tmp_path)
        write(c, 1, 3)
        await make_leader(c, epochs=3)                              # epoch 3 starts at 3
        answer = partition(await handle_fetch(c, fetch(2, 3, 6, 2)), "responses")
        # the follower wrote epoch 2 at offsets 3-5, which this leader never had: its epoch 1 ends at 3
        assert answer["diverging_epoch"] == {"epoch": 1, "end_offset": 3} and answer["records"] is None
        answer = partition(await handle_fetch(c, fetch(2, 3, 5, 1)), "responses")
        assert answer["diverging_epoch"] == {"epoch": 1, "end_offset": 3}     # epoch 1 ends at 3, not 5
        answer = partition(await handle_fetch(c, fetch(2, 3, 3, 1)), "responses")
        assert "diverging_epoch" not in answer and len(answer["records"]) > 0
        await c.close()
    asyncio.run(scenario())


def test_a_follower_with_a_diverged_log_is_truncated_by_its_leader(tmp_path):
    """Node 2 led epoch 2 and wrote 3 records nobody else got; node 1 won epoch 3. Over the wire, node 2's
    Fetch (offset 6, epoch 2) gets a diverging epoch, node 2 cuts its log to 3 and fetches node 1's."""
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
        leader = RaftNode(config(1, voters), str(tmp_path / "node-1"), idle_interval_ms=0)
        follower_dir = tmp_path / "node-2"
        follower = KafkaRaftClient(config(2, voters), str(follower_dir), random.Random(2))
        write(leader.client, 1, 3)
        write(follower, 1, 3)
        write(follower, 2, 3)                                        # the diverged tail: offsets 3-5, epoch 2
        follower.quorum.store.write(__import__("kafkalab.raft.file_quorum_state_store", fromlist=["x"])
                                    .ElectionState(3, 1, -1, [1, 2, 3]))
        leader.client.quorum.initialize()
        await leader.server.start()
        await make_leader(leader.client, epochs=3)
        leader.client.append([b"after"])
        await follower.start()
        assert isinstance(follower.quorum.state, FollowerState) and follower.quorum.state.leader == 1
        for _ in range(200):
            if follower.log.end_offset == leader.client.log.end_offset and follower.high_watermark:
                break
            await asyncio.sleep(0.02)
        assert follower.truncations[0] == (1, 3, 6, 3)                # (epoch, its end, LEO before, after)
        assert [(b["base_offset"], b["epoch"], b["values"]) for b in follower.log.batches()] == \
               [(b["base_offset"], b["epoch"], b["values"]) for b in leader.client.log.batches()]
        assert not any(b"e2-" in v for b in follower.log.batches() for v in b["values"] if v)
        assert leader.client.high_watermark == leader.client.log.end_offset == 5
        await follower.close()
        await leader.stop(resign=False)
    asyncio.run(scenario())


# -- three replicas over the wire ----------------------------------------------------------------------------------

def test_election_records_and_graceful_resignation(tmp_path):
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
        nodes = {i: RaftNode(config(i, voters), str(tmp_path / f"node-{i}"), idle_interval_ms=100,
                             rng=random.Random(i)) for i in voters}
        for n in nodes.values():
            await n.start()

        async def leader(exclude=()):
            for _ in range(300):
                found = [i for i, n in nodes.items() if i not in exclude and n.client.quorum.is_leader]
                if found and nodes[found[0]].client.high_watermark:
                    return found[0]
                await asyncio.sleep(0.02)
            raise AssertionError("no leader")

        first = await leader()
        epoch = nodes[first].client.quorum.epoch
        await asyncio.sleep(0.5)
        batches = nodes[first].client.log.batches()
        change = [b for b in batches if b["control"] and b["epoch"] == epoch][0]
        name, _, data = decode_control_record(struct.unpack(">hh", change["keys"][0])[1], change["values"][0])
        assert name == "LeaderChangeMessage" and data["leaderId"] == first
        assert [v["voterId"] for v in data["voters"]] == [1, 2, 3] and len(data["grantingVoters"]) >= 2
        noops = [decode_metadata_record(v).name for b in batches if not b["control"] for v in b["values"]]
        assert noops and set(noops) == {"NoOpRecord"}
        assert all(n.client.quorum.epoch == epoch for n in nodes.values())
        await nodes[first].stop(resign=True)                         # EndQuorumEpoch, not a fetch timeout
        old = nodes[first].client.quorum
        assert ("Resigned", epoch) in [(name, ep) for _, name, ep, _ in old.history]
        # as Kafka's graceful shutdown, it stayed until an election in a higher epoch (it may have voted in it)
        assert old.epoch > epoch and not isinstance(old.state, ResignedState)
        second = await leader(exclude={first})
        assert nodes[second].client.quorum.epoch > epoch
        for i, n in nodes.items():
            if i != first:
                await n.stop(resign=False)
    asyncio.run(scenario())


def test_an_observer_fetches_the_log_but_never_votes_or_counts(tmp_path):
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
        nodes = {i: RaftNode(config(i, voters), str(tmp_path / f"node-{i}"), idle_interval_ms=50,
                             rng=random.Random(i)) for i in (1, 2)}          # voter 3 never starts
        observer = RaftNode(config(9, voters), str(tmp_path / "observer"), idle_interval_ms=50,
                            listen=("127.0.0.1", free_port()))
        for n in [*nodes.values(), observer]:
            await n.start()
        assert observer.client.quorum.is_observer
        for _ in range(300):
            leaders = [n for n in nodes.values() if n.client.quorum.is_leader]
            if leaders and observer.client.high_watermark and observer.client.high_watermark > 3:
                break
            await asyncio.sleep(0.02)
        leader = leaders[0].client
        assert isinstance(observer.client.quorum.state, FollowerState)
        assert observer.client.quorum.leader_id == leader.node_id
        assert [b["epoch"] for b in observer.client.log.batches()][:1] == [leader.quorum.epoch]
        dq = partition(handle_describe_quorum(leader, build(DescribeQuorumRequest, 2, {"topics": topics()})))
        assert [o["replica_id"] for o in dq["observers"]] == [9]
        assert [v["replica_id"] for v in dq["current_voters"]] == [1, 2, 3]
        # the observer is never a candidate and never asked; it did not write a vote
        assert all(name in ("Unattached", "Follower") for _, name, _, _ in observer.client.quorum.history)
        assert observer.client.quorum.state.voted_id == -1
        for n in [observer, *nodes.values()]:
            await n.stop(resign=False)
    asyncio.run(scenario())


def test_bad_input_closes_one_connection_and_the_controller_keeps_serving(tmp_path):
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1,)}
        node = RaftNode(config(1, voters), str(tmp_path / "n1"), idle_interval_ms=0)
        await node.start()
        host, port = voters[1]
        for garbage in (struct.pack(">i", -5), struct.pack(">ihhi", 10, 52, 9, 1) + b"\0\0",
                        struct.pack(">ihhi", 10, 999, 0, 1) + b"\0\0", struct.pack(">ihhi", 12, 52, 0, 1) + b"\xff" * 4):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(garbage)
            await writer.drain()
            assert await reader.read() == b""                          # closed, no answer
            writer.close()
        for _ in range(100):                                           # a quorum of one elects itself
            if node.client.quorum.is_leader:
                break
            await asyncio.sleep(0.02)
        from kafkalab.broker.network.network_client import NetworkClient
        conn = NetworkClient(host, port)
        answer = await conn.send(build(DescribeQuorumRequest, 2, {"topics": topics()}))
        assert answer.topics[0].partitions[0].leader_id == 1
        await conn.close()
        await node.stop()
    asyncio.run(scenario())


def test_describe_cluster_names_the_controllers_and_refuses_a_broker_endpoint(tmp_path):
    from kafka.protocol.admin import DescribeClusterRequest
    from kafkalab.raft.raft_apis import MISMATCHED_ENDPOINT_TYPE, handle_describe_cluster
    c = client(tmp_path)
    c.config.cluster_id = "g1lziIowRQ-BfTpnNmKScA"
    c.quorum.transition_to_follower(2, 3)
    answer = handle_describe_cluster(c, build(DescribeClusterRequest, 2, {"include_cluster_authorized_operations": False,
                                                                          "endpoint_type": 2}))
    assert answer["error_code"] == 0 and answer["controller_id"] == 3 and answer["cluster_id"] == c.config.cluster_id
    assert [b["broker_id"] for b in answer["brokers"]] == [1, 2, 3]
    wrong = handle_describe_cluster(c, build(DescribeClusterRequest, 2, {"include_cluster_authorized_operations": False,
                                                                         "endpoint_type": 1}))
    assert wrong["error_code"] == MISMATCHED_ENDPOINT_TYPE and wrong["brokers"] == []


def test_api_versions_lists_the_quorum_apis_and_answers_an_unknown_version_in_v0(tmp_path):
    async def scenario():
        from kafka.protocol.metadata import ApiVersionsRequest
        from kafkalab.broker.network.network_client import NetworkClient
        voters = {1: ("127.0.0.1", free_port())}
        node = RaftNode(config(1, voters), str(tmp_path / "n1"), idle_interval_ms=0)
        await node.start()
        conn = NetworkClient(*voters[1])
        answer = await conn.send(build(ApiVersionsRequest, 3, {"client_software_name": "t",
                                                                "client_software_version": "1"}))
        assert answer.error_code == 0
        assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys} == {
            1: (13, 17), 18: (0, 4), 52: (0, 2), 53: (0, 0), 54: (0, 0), 55: (0, 2), 59: (0, 0), 60: (1, 2)}
        await conn.close()
        reader, writer = await asyncio.open_connection(*voters[1])
        writer.write(struct.pack(">ihhih", 10, 18, 99, 7, -1))              # ApiVersions v99
        await writer.drain()
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        frame = await reader.readexactly(size)
        correlation, error = struct.unpack_from(">ih", frame)
        assert (correlation, error) == (7, 35)                             # v0 header and body: UNSUPPORTED_VERSION
        writer.close()
        await node.stop()
    asyncio.run(scenario())
