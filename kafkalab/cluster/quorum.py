"""Asking a KRaft cluster over the Kafka protocol: DescribeQuorum (API 55) and DescribeCluster (API 60).

A KRaft cluster has no znodes to read: what ZooKeeper held is in the
``__cluster_metadata`` log, replicated by the Raft quorum of controllers. So
the lab asks, as ``kafka-metadata-quorum.sh`` and ``kafka-cluster.sh`` do:

* :func:`describe_quorum` sends **DescribeQuorum** (v2) for ``__cluster_metadata``
  partition 0 to a controller's CONTROLLER listener (what
  ``kafka-metadata-quorum.sh --bootstrap-controller`` does). Only the active
  controller — the Raft leader — can answer; another controller answers with
  ``NOT_LEADER_OR_FOLLOWER`` (6), and the caller asks the next one. A broker
  also takes the request and forwards it to the active controller.
* :func:`quorum_answer` turns the response into plain data, and
  :func:`quorum_table` into the table ``kafka-metadata-quorum.sh describe
  --status --replication`` prints: per voter and observer its node id, log end
  offset, lag behind the leader's log end offset, last fetch and last caught-up
  time, and status (Leader, Follower, Observer).
* :func:`describe_cluster` sends **DescribeCluster** (v2, KIP-1073's
  ``include_fenced_brokers``) to a broker: every registered broker, fenced or
  not (Metadata lists only the unfenced ones), and the controller id the
  brokers give clients (in KRaft a random live broker, not the active controller).

Both use kafka-python's protocol classes, through :func:`~kafkalab.cluster.kafka_requests.kafka_request`.
"""
from __future__ import annotations

import time

from .kafka_requests import kafka_request

METADATA_TOPIC = "__cluster_metadata"
NOT_LEADER_OR_FOLLOWER = 6
QUORUM_COLUMNS = ["node_id", "status", "log_end_offset", "lag", "last_fetch_ms_ago", "last_caught_up_ms_ago",
                  "last_fetch_timestamp", "last_caught_up_timestamp"]


class QuorumError(RuntimeError):
    """DescribeQuorum answered with an error (``error_code``: Kafka's)."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


class QuorumUnavailableError(RuntimeError):
    """No controller answers DescribeQuorum as leader: the quorum has no leader (a majority of the voters is down
    or paused, or an election is under way). ``voters``, ``running``, ``down`` (ids), ``states`` (id -> process
    state) and ``answers`` (id -> what a running voter answered) say why, in the message too."""

    def __init__(self, voters: list[int], states: dict[int, str], answers: dict[int, str]):
        self.voters, self.states, self.answers = sorted(voters), dict(states), dict(answers)
        self.running = [i for i in self.voters if states.get(i) == "running"]
        self.down = [i for i in self.voters if i not in self.running]
        majority = len(self.voters) // 2 + 1
        said = "; ".join(f"{i}: {answers.get(i, 'no answer')}" for i in self.running) or "none"
        if self.down:
            why = (f"{len(self.down)} of the {len(self.voters)} controllers are down or paused ("
                   + ", ".join(f"{i} {states.get(i, 'unknown')}" for i in self.down) + ")")
        else:
            why = f"all {len(self.voters)} controllers run, but none leads yet (an election under way?)"
        stall = (f"A leader needs the votes of a majority ({majority} of {len(self.voters)}): until that many run, "
                 "nothing can be committed to __cluster_metadata — CreateTopics, DeleteTopics, broker fencing and "
                 "ISR changes wait and time out — while the brokers keep serving produce and fetch on the "
                 "partitions they lead.") if len(self.running) < majority else ""
        super().__init__(f"the quorum has no leader: {why}. Running controllers say: {said}. {stall}".rstrip())


def why_not_leader(exc: Exception) -> str:
    """What a controller's failed DescribeQuorum means, in a few words."""
    if isinstance(exc, QuorumError) and exc.error_code == 6:
        return "not the leader (NOT_LEADER_OR_FOLLOWER)"
    if isinstance(exc, TimeoutError):     # socket.timeout
        return "no answer in time"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return f"{type(exc).__name__}: {exc}"


def describe_quorum(host: str, port: int, timeout_s: float = 1.0, version: int = 2, security=None):
    """A DescribeQuorum response for ``__cluster_metadata``-0 from ``host:port`` (kafka-python's object).
    Raises as :func:`~kafkalab.cluster.kafka_requests.kafka_request` (``security``: a secured CONTROLLER
    listener's ClientSecurity)."""
    from kafka.protocol.admin import DescribeQuorumRequest
    return kafka_request(host, port, DescribeQuorumRequest, version,
                         {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]},
                         timeout_s, security)


def _replica(r) -> dict:
    return {"node_id": r.replica_id, "log_end_offset": r.log_end_offset,
            "last_fetch_timestamp": getattr(r, "last_fetch_timestamp", -1),
            "last_caught_up_timestamp": getattr(r, "last_caught_up_timestamp", -1)}


def quorum_answer(response) -> dict:
    """A DescribeQuorum response as plain data: ``{"leader_id", "leader_epoch", "high_watermark", "voters":
    [{"node_id", "log_end_offset", "last_fetch_timestamp", "last_caught_up_timestamp"}, ...], "observers": [...],
    "nodes": {id: [(listener, host, port), ...]}}``. Raises QuorumError for an error code (top level or the
    partition's), e.g. NOT_LEADER_OR_FOLLOWER from a controller that is not the leader."""
    if response.error_code:
        raise QuorumError(response.error_code, f"DescribeQuorum error {response.error_code}: "
                                               f"{getattr(response, 'error_message', None) or ''}".rstrip(": "))
    for t in response.topics:
        for p in t.partitions:
            if t.topic_name != METADATA_TOPIC or p.partition_index != 0:
                continue
            if p.error_code:
                raise QuorumError(p.error_code, f"DescribeQuorum error {p.error_code} for {METADATA_TOPIC}-0: "
                                                f"{getattr(p, 'error_message', None) or ''}".rstrip(": "))
            nodes = {n.node_id: [(li.name, li.host, li.port) for li in n.listeners]
                     for n in (getattr(response, "nodes", None) or [])}
            return {"leader_id": p.leader_id if p.leader_id >= 0 else None, "leader_epoch": p.leader_epoch,
                    "high_watermark": p.high_watermark,
                    "voters": [_replica(r) for r in p.current_voters],
                    "observers": [_replica(r) for r in p.observers], "nodes": nodes}
    raise QuorumError(-1, f"DescribeQuorum answered without {METADATA_TOPIC}-0")


def quorum_rows(answer: dict, now_ms: int | None = None) -> list[dict]:
    """One row per voter and observer, as ``kafka-metadata-quorum describe --replication``: node_id, status
    (Leader, Follower, Observer), log_end_offset, lag (the leader's log end offset minus this one's), the
    last fetch and last caught-up timestamps (ms since the epoch, None when unknown, as Kafka's -1) and how
    long ago they were (ms)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    leader = answer["leader_id"]
    leader_leo = next((v["log_end_offset"] for v in answer["voters"] if v["node_id"] == leader), None)
    rows = []
    for kind, replicas in (("voter", answer["voters"]), ("observer", answer["observers"])):
        for r in sorted(replicas, key=lambda r: (r["node_id"] != leader, r["node_id"])):
            status = "Observer" if kind == "observer" else ("Leader" if r["node_id"] == leader else "Follower")
            leo = r["log_end_offset"] if r["log_end_offset"] >= 0 else None
            fetch = r["last_fetch_timestamp"] if r["last_fetch_timestamp"] >= 0 else None
            caught = r["last_caught_up_timestamp"] if r["last_caught_up_timestamp"] >= 0 else None
            rows.append({"node_id": r["node_id"], "status": status, "log_end_offset": leo,
                         "lag": None if leo is None or leader_leo is None else leader_leo - leo,
                         "last_fetch_ms_ago": None if fetch is None else now_ms - fetch,
                         "last_caught_up_ms_ago": None if caught is None else now_ms - caught,
                         "last_fetch_timestamp": fetch, "last_caught_up_timestamp": caught})
    return rows


def quorum_table(answer: dict, now_ms: int | None = None):
    """:func:`quorum_rows` as a pandas DataFrame (integer columns nullable); the status line
    (``leader_id``, ``leader_epoch``, ``high_watermark``, ``max_follower_lag``) is in ``df.attrs``."""
    import pandas as pd
    rows = quorum_rows(answer, now_ms)
    df = pd.DataFrame(rows, columns=QUORUM_COLUMNS)
    for column in QUORUM_COLUMNS:
        if column != "status":
            df[column] = df[column].astype("Int64")
    lags = [r["lag"] for r in rows if r["status"] == "Follower" and r["lag"] is not None]
    df.attrs.update(leader_id=answer["leader_id"], leader_epoch=answer["leader_epoch"],
                    high_watermark=answer["high_watermark"], max_follower_lag=max(lags) if lags else 0)
    return df


def describe_cluster(host: str, port: int, timeout_s: float = 1.0) -> dict:
    """DescribeCluster (v2, fenced brokers included) asked of one broker: ``{"cluster_id", "controller_id",
    "brokers": {id: {"host", "port", "fenced"}}}``. Raises as :func:`~kafkalab.cluster.kafka_requests.kafka_request`,
    and RuntimeError for an error code."""
    from kafka.protocol.admin import DescribeClusterRequest
    response = kafka_request(host, port, DescribeClusterRequest, 2,
                             {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                              "include_fenced_brokers": True}, timeout_s)
    if response.error_code:
        raise RuntimeError(f"DescribeCluster error {response.error_code}: {response.error_message or ''}")
    return {"cluster_id": response.cluster_id,
            "controller_id": response.controller_id if response.controller_id >= 0 else None,
            "brokers": {b.broker_id: {"host": b.host, "port": b.port, "fenced": bool(b.is_fenced)}
                        for b in response.brokers}}
