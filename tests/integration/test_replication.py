"""Replication between real in-process brokers: followers fetching, HW, ISR, acks=all, truncation.

Each broker is a ``kafkalab.mini(broker_id=N)`` (its own loop in its own thread). No ZooKeeper and
no controller: the test plays the controller, calling ``ReplicaManager.become_leader_or_follower``
on each broker as a LeaderAndIsr would, and answering the leader's AlterPartition requests
in-process (``FakeController.alter_partition``). Produce goes over the wire to the leader.
"""
from __future__ import annotations

import threading
import time

import pytest
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from kafkalab.broker.server.alter_partition_manager import AlterPartitionManager
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.cluster.partition_state import LeaderAndIsrPartitionState
from kafkalab.broker.common.records import Record, build_batch, iter_batches

FAST = {"replica.fetch.wait.max.ms": 100, "replica.fetch.backoff.ms": 100, "replica.lag.time.max.ms": 1500,
        "replica.high.watermark.checkpoint.interval.ms": 200}


def wait_until(condition, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


class FakeController:
    """Stands in for the ZooKeeper controller: LeaderAndIsr by direct calls, AlterPartition answered here."""

    def __init__(self, brokers: dict):
        self.brokers = brokers
        self.epoch = 1
        self.state: dict[tuple[str, int], dict] = {}
        self.lock = threading.Lock()
        self.alter_requests = []

    def elect(self, topic, leader, isr, replicas, leader_epoch, to=None):
        """A new leader and ISR (a new version of the partition's state), sent to ``to`` (default: all)."""
        with self.lock:
            old = self.state.get((topic, 0))
            self.state[(topic, 0)] = {"leader": leader, "leader_epoch": leader_epoch, "isr": list(isr),
                                      "replicas": list(replicas),
                                      "partition_epoch": (old["partition_epoch"] + 1) if old else 0}
        self.send_leader_and_isr(topic, to or replicas)

    def send_leader_and_isr(self, topic, to):
        with self.lock:
            st = dict(self.state[(topic, 0)])
        leader, leader_epoch, isr, replicas = st["leader"], st["leader_epoch"], st["isr"], st["replicas"]
        for b in to:
            broker = self.brokers[b]
            rm = broker.server.replica_manager
            if b == leader:
                broker.call(setattr, rm, "alter_partition_manager",
                            AlterPartitionManager(b, send=self.alter_partition))
            state = LeaderAndIsrPartitionState(topic, 0, self.epoch, leader, leader_epoch, list(isr),
                                               st["partition_epoch"], list(replicas))
            live = {leader: ("127.0.0.1", self.brokers[leader].port)}
            errors = broker.call(rm.become_leader_or_follower, 0, self.epoch, [state], {}, live)
            assert errors == {(topic, 0): 0}, errors

    async def alter_partition(self, request):
        self.alter_requests.append(request)
        topics = []
        for t in request["topics"]:
            parts = []
            for p in t["partitions"]:
                with self.lock:
                    st = self.state[(t["topic_name"], p["partition_index"])]
                    if p["leader_epoch"] != st["leader_epoch"]:
                        error = ErrorCode.FENCED_LEADER_EPOCH
                    elif p["partition_epoch"] != st["partition_epoch"]:
                        error = ErrorCode.INVALID_UPDATE_VERSION
                    else:
                        error = 0
                        st["isr"] = list(p["new_isr"])
                        st["partition_epoch"] += 1
                    parts.append({"partition_index": p["partition_index"], "error_code": error,
                                  "leader_id": st["leader"], "leader_epoch": st["leader_epoch"], "isr": st["isr"],
                                  "leader_recovery_state": 0, "partition_epoch": st["partition_epoch"]})
            topics.append({"topic_name": t["topic_name"], "partitions": parts})
        return {"error_code": 0, "topics": topics}


@pytest.fixture
def cluster(tmp_path):
    brokers = {}
    try:
        for i in (1, 2, 3):
            brokers[i] = kafkalab.mini(broker_id=i, log_dir=str(tmp_path / f"b{i}"), **FAST)
        yield FakeController(brokers)
    finally:
        for b in brokers.values():
            b.close()


def create(cluster, topic, **configs):
    for b in cluster.brokers.values():
        if not b.closed:
            b.call(b.server.admin_manager.create_topic, topic, 1, 1, {k: str(v) for k, v in configs.items()})


def produce(broker, topic, n, acks=-1, timeout_ms=15_000, tag=b"", version=9, whole=False):
    records = build_batch([Record(i, 1_700_000_000_000 + i, b"k%d" % i, tag + b"v%d" % i, []) for i in range(n)])
    req = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=timeout_ms, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])
    response = wire.call(broker.bootstrap_servers, req, ProduceResponse, version)
    if whole:
        return response
    p = response.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def partition(broker, topic):
    return broker.server.replica_manager.partitions[(topic, 0)]


def offsets(broker, topic):
    """(log end offset, high watermark) of the local replica."""
    return broker.call(lambda: (partition(broker, topic).log.log_end_offset,
                                partition(broker, topic).log.high_watermark))


def log_bytes(broker, topic):
    return broker.call(lambda: bytes(partition(broker, topic).log.read(0, 2**30)))


def test_followers_copy_the_leader_byte_for_byte_and_acks_all_waits_for_them(cluster):
    b1, b2, b3 = (cluster.brokers[i] for i in (1, 2, 3))
    create(cluster, "rep")
    cluster.elect("rep", leader=1, isr=[1, 2, 3], replicas=[1, 2, 3], leader_epoch=0)   # a new topic's epoch
    for i in range(5):
        assert produce(b1, "rep", 3, tag=b"%d" % i) == (0, 3 * i)
        leo, hw = offsets(b1, "rep")
        assert hw == leo == 3 * (i + 1)       # acks=all answered: every ISR member had it
    wait_until(lambda: offsets(b2, "rep") == offsets(b3, "rep") == (15, 15), what="followers' HW")
    data = log_bytes(b1, "rep")
    assert log_bytes(b2, "rep") == log_bytes(b3, "rep") == data
    assert {h.partition_leader_epoch for _, h in iter_batches(data)} == {0}
    assert b2.call(lambda: [(e.epoch, e.start_offset)
                            for e in partition(b2, "rep").log.leader_epoch_cache.entries]) == [(0, 0)]
    # followers refuse producers: they are not the leader (v10+ names the leader, KIP-951)
    assert produce(b2, "rep", 1)[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    hint = produce(b2, "rep", 1, version=10, whole=True).responses[0].partition_responses[0].current_leader
    assert (hint.leader_id, hint.leader_epoch) == (1, 0)

    # the HW only moves when the whole ISR has the data: hold back follower 3's fetcher
    fetchers3 = b3.server.replica_manager.replica_fetcher_manager
    b3.call(fetchers3.remove_fetcher_for_partitions, [("rep", 0)])
    assert produce(b1, "rep", 4, acks=1) == (0, 15)
    wait_until(lambda: offsets(b2, "rep")[0] == 19, what="follower 2 to fetch")
    time.sleep(0.3)
    assert offsets(b1, "rep") == (19, 15)   # 3 is in the ISR and does not have 15..18
    assert produce(b1, "rep", 1, acks=-1, timeout_ms=300) == (ErrorCode.REQUEST_TIMED_OUT, -1)
    from kafkalab.broker.server.replica_fetcher_thread import InitialFetchState
    b3.call(fetchers3.add_fetcher_for_partitions, {("rep", 0): InitialFetchState(1, "127.0.0.1", b1.port, 0)})
    wait_until(lambda: offsets(b1, "rep") == (20, 20), what="the HW once follower 3 caught up")
    assert cluster.state[("rep", 0)]["isr"] == [1, 2, 3] and not cluster.alter_requests
    wait_until(lambda: log_bytes(b3, "rep") == log_bytes(b1, "rep"), what="follower 3's copy")


def test_a_stopped_follower_leaves_the_isr_and_min_insync_replicas_refuses(cluster, tmp_path):
    b1, b2, b3 = (cluster.brokers[i] for i in (1, 2, 3))
    create(cluster, "lag")
    create(cluster, "strict", **{"min.insync.replicas": 3})
    for topic in ("lag", "strict"):
        cluster.elect(topic, leader=1, isr=[1, 2, 3], replicas=[1, 2, 3], leader_epoch=1)
        assert produce(b1, topic, 2) == (0, 0)
    b3.close()
    started = time.monotonic()
    # acks=all waits while 3 is still in the ISR, then succeeds once the leader drops it
    assert produce(b1, "lag", 2) == (0, 2)
    waited = time.monotonic() - started
    assert 1.0 < waited < 8, waited                        # replica.lag.time.max.ms = 1.5 s
    assert cluster.state[("lag", 0)]["isr"] == [1, 2]
    assert b1.call(lambda: partition(b1, "lag").isr) == [1, 2]
    assert offsets(b1, "lag") == (4, 4)
    # a follower that has everything is in sync however long it is silent: 3 falls behind on "strict" first
    assert produce(b1, "strict", 1, acks=1) == (0, 2)
    wait_until(lambda: b1.call(lambda: partition(b1, "strict").isr) == [1, 2], what="strict's ISR shrink")
    assert produce(b1, "strict", 1) == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
    assert offsets(b1, "strict") == (3, 2)                 # refused before appending; under min ISR the HW stays
    assert produce(b1, "strict", 1, acks=1) == (0, 3)      # acks=1 is still written
    # the HW checkpoint (replication-offset-checkpoint), Kafka's format
    path = tmp_path / "b1" / "replication-offset-checkpoint"
    wait_until(lambda: path.exists() and "lag 0 4" in path.read_text(), what="the HW checkpoint")
    assert path.read_text().splitlines()[:2] == ["0", "2"]


def test_a_follower_truncates_its_divergent_tail_when_the_leader_changes(cluster, tmp_path):
    b1, b2 = cluster.brokers[1], cluster.brokers[2]
    cluster.brokers[3].close()
    create(cluster, "div")
    cluster.elect("div", leader=1, isr=[1, 2], replicas=[1, 2], leader_epoch=1)
    assert produce(b1, "div", 3) == (0, 0)                 # committed on both
    wait_until(lambda: offsets(b2, "div") == (3, 3), what="the follower's HW (one fetch behind the leader's)")
    b2.call(b2.server.replica_manager.replica_fetcher_manager.remove_fetcher_for_partitions, [("div", 0)])
    assert produce(b1, "div", 2, acks=1, tag=b"lost") == (0, 3)   # only on the old leader
    assert offsets(b1, "div") == (5, 3) and offsets(b2, "div") == (3, 3)
    # the old leader restarts: a clean shutdown wrote its HW to replication-offset-checkpoint, and its
    # first LeaderAndIsr takes the HW from there (not its log end offset)
    b1.close()
    assert "div 0 3" in (tmp_path / "b1" / "replication-offset-checkpoint").read_text().splitlines()
    b1 = cluster.brokers[1] = kafkalab.mini(broker_id=1, log_dir=str(tmp_path / "b1"), **FAST)
    # broker 2 becomes leader (it was in the ISR), writes under epoch 2; broker 1 follows it
    cluster.elect("div", leader=2, isr=[2], replicas=[1, 2], leader_epoch=2, to=[2])
    assert produce(b2, "div", 4, tag=b"new") == (0, 3)
    seen = []   # a leadership listener (the group coordinator's hook) sees the change before any fetch
    b1.call(b1.server.replica_manager.leadership_listeners.append,
            lambda t, i, leads, epoch: seen.append((t, i, leads, epoch, partition(b1, t).log.high_watermark,
                                                    partition(b1, t).log.log_end_offset)))
    assert offsets(b1, "div") == (5, 5)                    # restarted standalone-like: HW = LEO until then
    cluster.send_leader_and_isr("div", to=[1])
    assert seen == [("div", 0, False, 2, 3, 5)]            # follower at epoch 2, HW from the checkpoint
    wait_until(lambda: log_bytes(b1, "div") == log_bytes(b2, "div"), what="broker 1 to truncate and catch up")
    data = log_bytes(b1, "div")
    assert b"lost" not in data and b"new" in data
    assert [(h.base_offset, h.partition_leader_epoch) for _, h in iter_batches(data)] == [(0, 1), (3, 2)]
    assert b1.call(lambda: [(e.epoch, e.start_offset)
                            for e in partition(b1, "div").log.leader_epoch_cache.entries]) == [(1, 0), (2, 3)]
    # broker 1 caught up: the leader proposes it back into the ISR
    wait_until(lambda: cluster.state[("div", 0)]["isr"] == [1, 2], what="ISR expansion")
    assert b2.call(lambda: partition(b2, "div").isr) == [1, 2]
