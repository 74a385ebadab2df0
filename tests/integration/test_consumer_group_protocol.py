"""KIP-848's consumer group protocol (``group.protocol=consumer``) with confluent-kafka, on the mini broker and on
real Apache Kafka 4.4 (KRaft) as the oracle: the same scenario, the same observable results.

Three members join one by one, one closes, one is SIGKILLed in a child process (its partitions move only after
the broker-side ``group.consumer.session.timeout.ms``), a static member restarts without a reassignment, offsets
are committed and fetched, and the admin API describes the group as a CONSUMER group. Assignments by the
``uniform`` assignor may differ in detail between the two brokers, so what is compared is what KIP-848
specifies: every partition owned by exactly one member, balanced counts, no partition ever owned by two members
at once (on_assign/on_revoke timestamps), member epochs only increasing.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab

SESSION_MS = 6000      # group.consumer.session.timeout.ms, short by lab config (Kafka's default: 45000)
HEARTBEAT_MS = 500     # group.consumer.heartbeat.interval.ms (Kafka's default: 5000)
PARTITIONS = 6
GROUP_CONFIGS = {"group.consumer.session.timeout.ms": SESSION_MS, "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS}
# Kafka 4.4 bounds them by group.consumer.min.session.timeout.ms / min.heartbeat.interval.ms (45000 / 5000)
KAFKA_GROUP_CONFIGS = {**GROUP_CONFIGS, "group.consumer.min.session.timeout.ms": SESSION_MS,
                       "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_MS}

CHILD = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer"})
    c.subscribe([sys.argv[3]], on_assign=lambda c, ps: print("ASSIGNED", len(ps), flush=True))
    while True:
        c.poll(0.1)
""")


@pytest.fixture(scope="module", params=["mini", "kafka-4.4"])
def bootstrap(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("kip848")), **GROUP_CONFIGS) as b:
            yield request.param, b.bootstrap_servers
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("kip848kraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", **KAFKA_GROUP_CONFIGS) as c:
        yield request.param, c.bootstrap_servers


class Members:
    """Consumers of one group polled round-robin in this thread, with every on_assign/on_revoke timestamped."""

    def __init__(self, bs: str, group: str, topic: str):
        self.bs, self.group, self.topic = bs, group, topic
        self.consumers: dict[str, Consumer] = {}
        self.events: list[tuple[float, str, str, int]] = []   # (time, member, "assign"/"revoke", partition)

    def add(self, name: str, **extra) -> Consumer:
        c = Consumer({"bootstrap.servers": self.bs, "group.id": self.group, "group.protocol": "consumer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})

        def on_assign(_c, ps, name=name):
            self.events += [(time.time(), name, "assign", p.partition) for p in ps]

        def on_revoke(_c, ps, name=name):
            self.events += [(time.time(), name, "revoke", p.partition) for p in ps]
        c.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        self.consumers[name] = c
        return c

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()

    def owned(self) -> dict[str, set[int]]:
        """Who owns what, by the callbacks."""
        out: dict[str, set[int]] = {n: set() for n in self.consumers}
        for _, name, kind, p in self.events:
            s = out.setdefault(name, set())
            s.add(p) if kind == "assign" else s.discard(p)
        return {n: s for n, s in out.items() if n in self.consumers}

    def poll_until(self, done, timeout: float = 60) -> float:
        t0 = time.time()
        while time.time() - t0 < timeout:
            for c in list(self.consumers.values()):
                c.poll(0.05)
            if done():
                return time.time() - t0
        raise AssertionError(f"not done within {timeout}s; owned {self.owned()}")

    def balanced(self, members: list[str]) -> bool:
        owned = self.owned()
        counts = [len(owned.get(m, ())) for m in members]
        every = sorted(p for m in members for p in owned.get(m, ()))
        return every == list(range(PARTITIONS)) and max(counts) - min(counts) <= 1

    def assert_never_owned_twice(self) -> None:
        """Replay the callbacks in time order: a partition is assigned only while nobody else holds it."""
        holder: dict[int, str] = {}
        for t, name, kind, p in sorted(self.events):
            if kind == "assign":
                assert p not in holder or holder[p] == name, f"partition {p} given to {name} at {t} while {holder[p]} owns it"
                holder[p] = name
            elif holder.get(p) == name:
                del holder[p]


def describe(admin: AdminClient, group: str):
    return admin.describe_consumer_groups([group])[group].result()


def test_consumer_group_protocol_scenario(bootstrap):
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic, group = f"kip848-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bs})
    for i in range(60):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    producer.flush(30)
    m = Members(bs, group, topic)
    epochs = []
    try:
        # three members join one by one: each time all partitions owned once, balanced
        for i, name in enumerate(["c1", "c2", "c3"]):
            m.add(name)
            m.poll_until(lambda: m.balanced(list(m.consumers)) and all(m.owned()[n] for n in m.consumers))
            d = describe(admin, group)
            assert d.type == ConsumerGroupType.CONSUMER
            assert len(d.members) == i + 1
        m.assert_never_owned_twice()
        # a member closes (epoch -1): its partitions move to the others
        m.close("c3")
        m.poll_until(lambda: m.balanced(["c1", "c2"]))
        m.assert_never_owned_twice()
        # a member SIGKILLed in a child process: nothing moves before the broker-side session timeout
        child = subprocess.Popen([sys.executable, "-c", CHILD, bs, group, topic], stdout=subprocess.PIPE, text=True)
        try:
            m.poll_until(lambda: sum(len(s) for s in m.owned().values()) == PARTITIONS - 2)  # the child holds 2
            assert child.stdout.readline().startswith("ASSIGNED")
            os.kill(child.pid, signal.SIGKILL)
            killed_at = time.time()
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
        moved_after = m.poll_until(lambda: m.balanced(["c1", "c2"]))
        assert moved_after >= SESSION_MS / 1000 - 2 * HEARTBEAT_MS / 1000, moved_after
        print(f"{backend}: partitions of the SIGKILLed member moved after {time.time() - killed_at:.1f}s")
        m.assert_never_owned_twice()
        # commit and fetch offsets with the member epoch
        c1 = m.consumers["c1"]
        mine = sorted(m.owned()["c1"])
        c1.commit(offsets=[TopicPartition(topic, p, 5) for p in mine], asynchronous=False)
        got = c1.committed([TopicPartition(topic, p) for p in mine], timeout=10)
        assert [tp.offset for tp in got] == [5] * len(mine)
        d = describe(admin, group)
        assert d.type == ConsumerGroupType.CONSUMER and str(d.state).endswith("STABLE"), d.state
        epochs.append(d)
        # a static member: closing (epoch -2) and restarting with its instance id gets the same partitions, and
        # the others see no rebalance
        m.add("s1", **{"group.instance.id": "static-1"})
        m.poll_until(lambda: m.balanced(["c1", "c2", "s1"]) and m.owned()["s1"])
        before = {n: set(s) for n, s in m.owned().items()}
        n_events = len(m.events)
        m.close("s1")
        m.add("s1", **{"group.instance.id": "static-1"})
        m.poll_until(lambda: m.owned().get("s1") == before["s1"])
        others = [e for e in m.events[n_events:] if e[1] != "s1"]
        assert others == [], others
        m.assert_never_owned_twice()
        groups = admin.list_consumer_groups().result().valid
        listed = {g.group_id: g for g in groups}
        assert listed[group].type == ConsumerGroupType.CONSUMER
    finally:
        for name in list(m.consumers):
            m.close(name)
