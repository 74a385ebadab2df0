"""Stopping (controlled shutdown) and restarting a partition leader under load, again and again.

What a benchmark of failover found (benchmarks/cluster.py, ``stop-leader``):

* ``Cluster.stop`` sometimes hung 30 s, then killed the broker: the controlled shutdown had
  succeeded in milliseconds, but a connection whose waiting Fetch or acks=all Produce was woken by
  the LeaderAndIsr in the same loop step as the broker cancelled it lost the cancellation
  (``asyncio.wait_for`` on Python < 3.12), and the broker's stop waited for that client to hang up;
* meanwhile the stopping broker went on fetching as a follower, and the new leader proposed it for
  the ISR at every fetch, refused by the controller each time (the broker is shutting down):
  thousands of AlterPartitions and log lines;
* a follower that had been leader for an epoch in which it wrote nothing diverged from the new
  leader at its own log end, again at every fetch, without end.

One module-scoped cluster (a real ZooKeeper, three broker processes); a producer writes with
``acks=all`` every few milliseconds and a consumer long-polls while the leader of its partition is
stopped and restarted several times. Every stop must finish in seconds, the restarted broker must be
back in the ISR within ``replica.lag.time.max.ms`` plus a margin, no record acknowledged may be lost,
and no broker log may fill with ISR proposals or diverging-epoch lines.
"""
from __future__ import annotations

import collections
import functools
import re
import threading
import time
import uuid
import warnings

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from tests.helpers.cluster_helpers import leader_of, partition_row

pytestmark = pytest.mark.cluster

LAG_MS = 3000
LAB = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": LAG_MS,
       "leader.imbalance.check.interval.seconds": 300}   # leadership stays where the stops put it
RUNS = 8
STOP_LIMIT_S = 5.0                       # a controlled shutdown of a mini broker takes well under a second
REJOIN_LIMIT_S = LAG_MS / 1000 + 5.0     # after restart() returned


wait_until = functools.partial(cluster_helpers.wait_until, timeout=30.0, interval=0.05)


def full_isr(cluster, topic: str, partitions: int) -> bool:
    df = cluster.describe(topic)
    return len(df) == partitions and all(len(isr) == 3 for isr in df["isr"])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("stop-restart")), **LAB) as c:
        yield c


class Load:
    """A producer writing to partition 0 every ~3 ms (acks=all) and a consumer long-polling it."""

    def __init__(self, cluster, topic: str):
        self.topic = topic
        self.acked: list[int] = []
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0,
                                  "retry.backoff.max.ms": 100})
        self.consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{topic}",
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "fetch.wait.max.ms": 500})
        self.threads = [threading.Thread(target=self._produce, daemon=True),
                        threading.Thread(target=self._consume, daemon=True)]
        for t in self.threads:
            t.start()

    def _on_delivery(self, err, msg):
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.append(msg.offset())

    def _produce(self):
        seq = 0
        while not self.stop.is_set():
            self.producer.produce(self.topic, b"%08d" % seq, partition=0, on_delivery=self._on_delivery)
            seq += 1
            self.producer.poll(0.003)
        self.producer.flush(30)

    def _consume(self):
        self.consumer.assign([TopicPartition(self.topic, 0, 0)])
        try:
            while not self.stop.is_set():
                self.consumer.poll(0.2)
        finally:
            self.consumer.close()

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(60)


def test_stopping_and_restarting_a_leader_under_load(cluster):
    topic = f"stop-restart-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})],
                        operation_timeout=30)[topic].result(60)
    wait_until(lambda: full_isr(cluster, topic, 3), f"{topic} with full ISRs")
    logs = {b["id"]: b["log"] for b in cluster.brokers.to_dict("records")}
    log_starts = {b: _size(path) for b, path in logs.items()}

    load = Load(cluster, topic)
    stops, rejoins = [], []
    try:
        for run in range(RUNS):
            wait_until(lambda: len(load.acked) > 50 * (run + 1), "acknowledged writes before the stop")
            leader = leader_of(cluster, topic, 0)
            assert leader > 0
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.monotonic()
                cluster.stop(leader, timeout_s=15)
                stops.append(time.monotonic() - t0)
            state = next(b for b in cluster.brokers.to_dict("records") if b["id"] == leader)["alive"]
            assert state == "stopped" and not [w for w in caught if "did not stop" in str(w.message)], \
                f"run {run}: broker {leader} did not stop by itself ({state}) after {stops[-1]:.1f} s"
            assert stops[-1] < STOP_LIMIT_S, f"run {run}: stopping broker {leader} took {stops[-1]:.1f} s"
            wait_until(lambda: leader_of(cluster, topic, 0) not in (-1, leader), "a new leader")
            cluster.restart(leader)
            t1 = time.monotonic()
            wait_until(lambda: full_isr(cluster, topic, 3), f"run {run}: broker {leader} back in every ISR",
                       timeout=REJOIN_LIMIT_S)
            rejoins.append(time.monotonic() - t1)
    finally:
        load.close()

    assert load.errors == [], f"writes failed: {collections.Counter(load.errors)}"
    acked = sorted(load.acked)
    assert len(acked) == len(set(acked)) > 50 * RUNS
    # every replica ends up with every acknowledged record
    wait_until(lambda: (lambda r: len({r[f"leo_{b}"] for b in r["replicas"]}) == 1
                        and r[f"leo_{r['replicas'][0]}"] > acked[-1])(partition_row(cluster, topic, 0)),
               "all replicas of partition 0 at the same end, past the last acknowledged record")

    # the brokers' logs: a handful of ISR proposals and refusals per partition (one per restart or stop), no floods
    for broker, path in logs.items():
        with open(path, errors="replace") as f:
            f.seek(log_starts[broker])
            text = f.read()
        expanding = collections.Counter(re.findall(r"([\w.-]+-\d+): expanding ISR", text))
        refused = collections.Counter(re.findall(r"([\w.-]+-\d+): AlterPartition \[[\d, ]*\] not applied", text) +
                                      re.findall(r"AlterPartition for ([\w.-]+-\d+) refused", text))
        diverging = collections.Counter(re.findall(r"([\w.-]+-\d+) diverges from the leader", text))
        assert max(expanding.values(), default=0) <= 2 * RUNS, f"broker {broker}: 'expanding ISR' {expanding}"
        assert max(refused.values(), default=0) <= 2 * RUNS, f"broker {broker}: refused ISR changes {refused}"
        assert max(diverging.values(), default=0) <= 2 * RUNS, f"broker {broker}: diverging epochs {diverging}"
    print(f"stops {[round(s, 2) for s in stops]} s, back in the ISR after {[round(r, 2) for r in rejoins]} s")


def _size(path: str) -> int:
    try:
        with open(path, "rb") as f:
            return f.seek(0, 2)
    except OSError:
        return 0
