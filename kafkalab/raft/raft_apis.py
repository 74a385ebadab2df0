"""The quorum's requests as a replica answers them (Kafka's ``KafkaRaftClient.handleXxxRequest``).

Each handler is registered in ``RAFT_APIS`` (:mod:`kafkalab.raft.raft_messages`) with the versions it
serves, as the broker's APIs are; :class:`~kafkalab.raft.raft_server.RaftServer` serves them.

Every handler first compares the request's epoch with the replica's own: an older epoch is answered
with FENCED_LEADER_EPOCH (74) and the replica's epoch and leader, so a stale leader or candidate
learns that it is out of date; a newer one moves this replica into it first
(:meth:`~kafkalab.raft.kafka_raft_client.KafkaRaftClient.maybe_transition`).

* **Vote**: granted only to a voter, only if this replica has not voted for another in that epoch
  (the vote is written to ``quorum-state`` before the answer goes out), and only if the
  candidate's log is at least as up to date: its (last epoch, end offset) compared with this
  log's, epoch first (Raft's election restriction: a leader always holds every committed record).
  A **pre-vote** (v2, ``PreVote=true``, KIP-996) is answered by the same log comparison and the
  state's own rule (a Follower that has fetched from its leader refuses), and changes nothing here.
* **BeginQuorumEpoch**: follow the new leader.
* **EndQuorumEpoch**: the leader steps down: a follower of it stands for election soon, sooner the
  higher it is in the preferred successors (the most up-to-date logs first): the first at once, the
  others after a strictly exponential back-off up to ``controller.quorum.election.backoff.max.ms``.
* **Fetch** (to the leader only: NOT_LEADER_OR_FOLLOWER otherwise, with the leader it knows): check
  the follower's (fetch offset, last fetched epoch) against the leader's log; if the follower's log
  went another way, answer with the *diverging epoch* (the largest epoch <= its last fetched epoch
  and where that epoch ends here) and no records. Else note the follower's end offset (which may
  move the high watermark) and return records from it, waiting up to ``max_wait_ms`` when there
  are none, or until the high watermark moves (as Kafka 4.x's leader completes every parked fetch
  when it does, KAFKA-14145: an observer learns at once that the records it has are committed).
  A fetch offset below the log start offset (the log was cleaned after a snapshot) is
  answered with the latest *snapshot id* instead, which the fetcher gets with FetchSnapshot
  (:mod:`kafkalab.raft.fetch_snapshot`).
* **DescribeQuorum** (to the leader only): the voters' and observers' end offsets and fetch times.
"""
from __future__ import annotations

import time

from .epoch_state import FollowerState, UnattachedState
from .kafka_metadata_log import OffsetAndEpoch
from .leader_state import LeaderState
from .metadata_log_snapshots import DIVERGING, SNAPSHOT
from .prospective_state import ProspectiveState
from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse

from .raft_messages import (BEGIN_QUORUM_EPOCH_VERSION, DESCRIBE_QUORUM_VERSION, END_QUORUM_EPOCH_VERSION,
                            FETCH_VERSION, METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID, RAFT_APIS,
                            VOTE_VERSION, BeginQuorumEpochRequest, BeginQuorumEpochResponse, DescribeQuorumRequest,
                            DescribeQuorumResponse, EndQuorumEpochRequest, EndQuorumEpochResponse, FetchRequest,
                            FetchResponse, VoteRequest, VoteResponse, single_partition)

NONE, NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST = 0, 6, 42
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, INCONSISTENT_VOTER_SET, UNKNOWN_TOPIC_ID = 74, 75, 94, 100
UNKNOWN_TOPIC_OR_PARTITION = 3


def _partition_answer(client, error: int, **extra) -> dict:
    return {"partition_index": METADATA_PARTITION, "error_code": error, "leader_id": client.quorum.leader_id,
            "leader_epoch": client.quorum.epoch, **extra}


def _wrap(partition: dict, error: int = NONE) -> dict:
    return {"error_code": error, "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}]}


def _is_metadata_partition(request) -> bool:
    topics = request.topics or []
    return (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC and len(topics[0].partitions or []) == 1
            and topics[0].partitions[0].partition_index == METADATA_PARTITION)


# -- Vote -----------------------------------------------------------------------------------------------

@RAFT_APIS.api(VoteRequest, VoteResponse, versions=(0, VOTE_VERSION))
def handle_vote(client, request) -> dict:
    if not _is_metadata_partition(request):
        return {"error_code": INVALID_REQUEST, "topics": []}
    p = single_partition(request)
    quorum = client.quorum
    pre_vote = bool(getattr(p, "pre_vote", False))     # v2+ (KIP-996)
    # a candidate's last epoch is below the epoch it bumped to; a prospective's at most its current epoch
    if p.last_offset < 0 or p.last_offset_epoch < 0 or (
            p.last_offset_epoch > p.replica_epoch if pre_vote else p.last_offset_epoch >= p.replica_epoch):
        return _wrap(_partition_answer(client, INVALID_REQUEST, vote_granted=False))
    if p.replica_id not in quorum.voters or not quorum.is_voter:
        return _wrap(_partition_answer(client, INCONSISTENT_VOTER_SET, vote_granted=False))
    if p.replica_epoch < quorum.epoch:
        return _wrap(_partition_answer(client, FENCED_LEADER_EPOCH, vote_granted=False))
    client.maybe_transition(p.replica_epoch, -1)    # a higher epoch, even a pre-vote's: this replica is behind
    granted = can_grant_vote(client, p.replica_id, OffsetAndEpoch(p.last_offset_epoch, p.last_offset), pre_vote)
    if granted and not pre_vote:     # a pre-vote changes nothing, persists nothing
        if isinstance(quorum.state, UnattachedState):
            quorum.transition_to_voted(p.replica_epoch, p.replica_id)   # persisted before we answer
            client.notify()
        elif isinstance(quorum.state, ProspectiveState) and quorum.state.voted < 0:
            quorum.prospective_add_voted_state(p.replica_epoch, p.replica_id)   # a new Prospective: asks again
            client.notify()
            client._start_election_requests(pre_vote=True)
    return _wrap(_partition_answer(client, NONE, vote_granted=granted))


def can_grant_vote(client, replica_id: int, replica_end: OffsetAndEpoch, pre_vote: bool = False) -> bool:
    """The state's rule (Kafka's ``canGrantVote``, :mod:`kafkalab.raft.epoch_state`), given whether the asking
    replica's log is at least as up to date as this one: (last epoch, end offset), epoch first."""
    return client.quorum.state.can_grant_vote(replica_id, replica_end >= client.log.end_offset_and_epoch(), pre_vote)


# -- BeginQuorumEpoch, EndQuorumEpoch ----------------------------------------------------------------------

@RAFT_APIS.api(BeginQuorumEpochRequest, BeginQuorumEpochResponse, versions=(0, BEGIN_QUORUM_EPOCH_VERSION))
def handle_begin_quorum_epoch(client, request) -> dict:
    if not _is_metadata_partition(request):
        return {"error_code": INVALID_REQUEST, "topics": []}
    p = single_partition(request)
    quorum = client.quorum
    if p.leader_epoch < quorum.epoch:
        return _wrap(_partition_answer(client, FENCED_LEADER_EPOCH))
    if p.leader_id not in quorum.voters or p.leader_id == client.node_id:
        return _wrap(_partition_answer(client, INCONSISTENT_VOTER_SET))
    client.maybe_transition(p.leader_epoch, p.leader_id)
    return _wrap(_partition_answer(client, NONE))


@RAFT_APIS.api(EndQuorumEpochRequest, EndQuorumEpochResponse, versions=(0, END_QUORUM_EPOCH_VERSION))
def handle_end_quorum_epoch(client, request) -> dict:
    if not _is_metadata_partition(request):
        return {"error_code": INVALID_REQUEST, "topics": []}
    p = single_partition(request)
    quorum = client.quorum
    if p.leader_epoch < quorum.epoch:
        return _wrap(_partition_answer(client, FENCED_LEADER_EPOCH))
    if p.leader_id != client.node_id:
        client.maybe_transition(p.leader_epoch, p.leader_id)
    state = quorum.state
    if isinstance(state, FollowerState) and state.leader == p.leader_id and quorum.is_voter:
        # Kafka's endEpochElectionBackoff: the first preferred successor stands at once, the n-th (n >= 1) after
        # backoff_max / 2^(successors-1) * 2^(n-1) ms (at most backoff_max); one not in the list after backoff_max
        successors = list(p.preferred_successors or [])
        max_ms = client.config.election_backoff_max_ms
        position = successors.index(client.node_id) if client.node_id in successors else -1
        if position == 0:
            backoff_ms = 0
        elif position < 0:
            backoff_ms = max_ms
        else:
            backoff_ms = min(max_ms, (max_ms >> (len(successors) - 1)) << (position - 1))
        state.fetch_deadline = min(state.fetch_deadline, time.monotonic() + backoff_ms / 1000)
        client.notify()
    return _wrap(_partition_answer(client, NONE))


# -- Fetch ----------------------------------------------------------------------------------------------------

def _fetch_answer(client, error: int, hw: int = -1, records=None, diverging: OffsetAndEpoch | None = None,
                  snapshot=None) -> dict:
    partition = {"partition_index": METADATA_PARTITION, "error_code": error, "high_watermark": hw,
                 "last_stable_offset": hw, "log_start_offset": client.log.log.log_start_offset,
                 "current_leader": {"leader_id": client.quorum.leader_id, "leader_epoch": client.quorum.epoch},
                 "aborted_transactions": None, "preferred_read_replica": -1, "records": records}
    if diverging is not None:
        partition["diverging_epoch"] = {"epoch": diverging.epoch, "end_offset": diverging.offset}
    if snapshot is not None:
        partition["snapshot_id"] = {"end_offset": snapshot.offset, "epoch": snapshot.epoch}
    return {"throttle_time_ms": 0, "error_code": NONE, "session_id": 0,
            "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [partition]}]}


def _validate_leader_only(client, request_epoch: int) -> int:
    """Kafka's ``validateLeaderOnlyRequest``: an older epoch is fenced, a newer one unknown here, and only the
    leader answers."""
    if request_epoch < client.quorum.epoch:
        return FENCED_LEADER_EPOCH
    if request_epoch > client.quorum.epoch:
        return UNKNOWN_LEADER_EPOCH
    if not client.quorum.is_leader:
        return NOT_LEADER_OR_FOLLOWER
    return NONE


@RAFT_APIS.api(FetchRequest, FetchResponse, versions=(13, FETCH_VERSION))
async def handle_fetch(client, request) -> dict:
    topics = request.topics or []
    if len(topics) != 1 or len(topics[0].partitions or []) != 1:
        return {"throttle_time_ms": 0, "error_code": INVALID_REQUEST, "session_id": 0, "responses": []}
    if topics[0].topic_id != METADATA_TOPIC_ID:
        return {"throttle_time_ms": 0, "error_code": UNKNOWN_TOPIC_ID, "session_id": 0, "responses": []}
    p = topics[0].partitions[0]
    if p.partition != METADATA_PARTITION:
        return _fetch_answer(client, UNKNOWN_TOPIC_OR_PARTITION)
    if p.fetch_offset < 0 or p.last_fetched_epoch < 0 or p.last_fetched_epoch > p.current_leader_epoch:
        return _fetch_answer(client, INVALID_REQUEST)
    replica_id = request.replica_state.replica_id if request.replica_state is not None else -1
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    parked_at_hw = None     # the high watermark when this fetch was first parked
    while True:
        error = _validate_leader_only(client, p.current_leader_epoch)
        if error:
            return _fetch_answer(client, error)
        state: LeaderState = client.quorum.state
        kind, where = client.log.validate_offset_and_epoch(p.fetch_offset, p.last_fetched_epoch)
        if kind == SNAPSHOT:      # below the log start offset: fetch the latest snapshot (fetch_snapshot.py)
            return _fetch_answer(client, NONE, _hw(state), snapshot=where)
        if kind == DIVERGING:
            return _fetch_answer(client, NONE, _hw(state), diverging=where)
        if replica_id >= 0 and state.update_replica(replica_id, p.fetch_offset, client.now_ms(),
                                                    client.log.end_offset):
            client.update_leader_high_watermark(state)
        if p.fetch_offset < client.log.end_offset or time.monotonic() >= deadline:
            break
        # Kafka 4.x (KAFKA-14145): a high watermark that moved completes every parked fetch, so observers (the
        # brokers) learn that their records are committed at once, not at the next append or max_wait_ms later
        if parked_at_hw is None:
            parked_at_hw = _hw(state)
        elif _hw(state) != parked_at_hw:
            break
        await client.wait_for_change(max(0.0, deadline - time.monotonic()))
    records = client.log.read(p.fetch_offset, max(p.partition_max_bytes, 1)) \
        if p.fetch_offset < client.log.end_offset else b""
    return _fetch_answer(client, NONE, _hw(client.quorum.state), records=records)


def _hw(state: LeaderState) -> int:
    return -1 if state.high_watermark is None else state.high_watermark


# -- DescribeQuorum ------------------------------------------------------------------------------------------

@RAFT_APIS.api(DescribeQuorumRequest, DescribeQuorumResponse, versions=(0, DESCRIBE_QUORUM_VERSION))
def handle_describe_quorum(client, request) -> dict:
    quorum = client.quorum
    base = {"partition_index": METADATA_PARTITION, "leader_id": quorum.leader_id, "leader_epoch": quorum.epoch,
            "high_watermark": -1, "current_voters": [], "observers": []}
    if not quorum.is_leader:
        return {"error_code": NONE, "topics": [{"topic_name": METADATA_TOPIC, "partitions": [
            {**base, "error_code": NOT_LEADER_OR_FOLLOWER,
             "error_message": f"node {client.node_id} is not the leader"}]}], "nodes": []}
    state: LeaderState = quorum.state
    now = client.now_ms()

    def replica(r, leader: bool) -> dict:
        return {"replica_id": r.node_id, "replica_directory_id": None, "log_end_offset": r.end_offset,
                "last_fetch_timestamp": -1 if leader else r.last_fetch_timestamp,
                "last_caught_up_timestamp": now if leader else r.last_caught_up_timestamp}

    voters = [replica(r, r.node_id == client.node_id) for r in state.replicas.values()]
    observers = [replica(r, False) for r in state.observers.values()]
    nodes = [{"node_id": v, "listeners": [{"name": "CONTROLLER", "host": h, "port": port}]}
             for v, (h, port) in sorted(client.config.voters.items())]
    return {"error_code": NONE, "topics": [{"topic_name": METADATA_TOPIC, "partitions": [
        {**base, "error_code": NONE, "high_watermark": _hw(state), "current_voters": voters,
         "observers": observers}]}], "nodes": nodes}


# -- DescribeCluster (KIP-919: an admin client bootstrapped from the controllers) ------------------------------

CONTROLLER_ENDPOINT, MISMATCHED_ENDPOINT_TYPE, UNSUPPORTED_ENDPOINT_TYPE = 2, 114, 115


@RAFT_APIS.api(DescribeClusterRequest, DescribeClusterResponse, versions=(1, 2))
def handle_describe_cluster(client, request) -> dict:
    """What a controller answers an admin client (``kafka-metadata-quorum.sh --bootstrap-controller``): the
    controllers as its nodes and the Raft leader as the controller id (-1 when none is known)."""
    answer = {"throttle_time_ms": 0, "error_code": NONE, "error_message": None, "endpoint_type": CONTROLLER_ENDPOINT,
              "cluster_id": client.config.cluster_id or "", "controller_id": client.quorum.leader_id, "brokers": []}
    requested = getattr(request, "endpoint_type", 1)
    if requested != CONTROLLER_ENDPOINT:
        version_0 = requested == 1 and not hasattr(request, "endpoint_type")
        known = requested in (1, CONTROLLER_ENDPOINT)
        answer["error_code"] = INVALID_REQUEST if version_0 else (
            MISMATCHED_ENDPOINT_TYPE if known else UNSUPPORTED_ENDPOINT_TYPE)
        answer["error_message"] = f"this is a controller endpoint; endpoint type {requested} was asked for"
        return answer
    answer["brokers"] = [{"broker_id": v, "host": h, "port": port, "rack": None, "is_fenced": False}
                         for v, (h, port) in sorted(client.config.voters.items())]
    return answer
