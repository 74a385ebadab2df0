"""Replication under real failures, modelled on Kafka's own replication system test.

One cluster for the module: a real ZooKeeper and three mini broker processes.
Brokers are killed with SIGKILL, frozen with SIGSTOP and restarted; clients are
unmodified confluent-kafka and kafka-python. Every test leaves all three
brokers running (the ``all_brokers_up`` fixture restarts or resumes what a
test broke), so the tests can share the cluster.
"""
from __future__ import annotations

import functools
import threading
import time
import uuid

import pandas as pd
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.lessons.reading import watermark_offsets
from tests.helpers.cluster_helpers import broker_states, duplicates_report, leader_of, partition_row, restore_brokers

pytestmark = pytest.mark.cluster

WAIT_S = 45
LAB = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
       "leader.imbalance.check.interval.seconds": 5}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("cluster")), **LAB) as c:
        yield c


@pytest.fixture(autouse=True)
def all_brokers_up(cluster):
    yield
    restore_brokers(cluster, timeout=WAIT_S)


# -- helpers -------------------------------------------------------------------------

wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S, interval=0.2)


def broker_ids(cluster) -> list[int]:
    return sorted(b["id"] for b in broker_states(cluster))


def isr_of(cluster, topic: str, partition: int) -> list[int]:
    return sorted(int(b) for b in partition_row(cluster, topic, partition)["isr"])


def replica_leos(cluster, topic: str, partition: int) -> list:
    """Each replica's log end offset (describe's leo_<id> columns; missing for a replica that is down)."""
    row = partition_row(cluster, topic, partition)
    return [None if pd.isna(row[f"leo_{r}"]) else int(row[f"leo_{r}"]) for r in row["replicas"]]


def create_topic(cluster, prefix: str, partitions: int = 1, rf: int = 3, **configs) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    fut = admin.create_topics([NewTopic(name, partitions, rf, config={k: str(v) for k, v in configs.items()})],
                              operation_timeout=30)[name]
    fut.result(60)
    wait_until(lambda: all(len(isr_of(cluster, name, p)) == rf for p in range(partitions)),
               f"{name}: every partition with a full ISR")
    return name


def consume_all(cluster, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    """(offset, value) of every record of every partition, read up to the high watermark."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {}
        for p in range(partitions):
            ends[p] = watermark_offsets(c, topic, p, 20)[1]   # asks again after a NOT_LEADER (a leader moved)
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        deadline = time.monotonic() + WAIT_S
        while any((out[p][-1][0] + 1 if out[p] else 0) < ends[p] for p in range(partitions)):
            assert time.monotonic() < deadline, f"could not read {topic} up to {ends}"
            msg = c.poll(0.5)
            if msg is None or msg.error():
                continue
            out[msg.partition()].append((msg.offset(), msg.value()))
        return out
    finally:
        c.close()


# -- the tests ---------------------------------------------------------------------------

def test_acks_all_loses_nothing_when_the_leader_is_killed_five_times(cluster):
    """3 partitions, RF 3, min.insync.replicas=2, an idempotent acks=all producer; SIGKILL the
    leader of partition 0 five times while records flow, restarting it each time."""
    five_leader_kills(cluster, {"bootstrap.servers": cluster.bootstrap_servers})


INTERNAL_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
                 'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def secured_cluster(tmp_path_factory):
    """Three brokers whose inter-broker listener INTERNAL is SASL_SSL (PLAIN, User:broker), the producer's too."""
    from kafkalab.security import CertificateAuthority
    ca = CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))
    configs = {**LAB, "listeners": "PLAINTEXT://:0,INTERNAL://:0",
               "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
               "inter.broker.listener.name": "INTERNAL", "sasl.mechanism.inter.broker.protocol": "PLAIN",
               "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
               "listener.name.internal.plain.sasl.jaas.config": INTERNAL_JAAS,
               **ca.broker_configs(listener="INTERNAL")}
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("secured")), **configs) as c:
        yield c, {**ca.client_configs(), "bootstrap.servers": c.listeners["INTERNAL"], "security.protocol": "SASL_SSL",
                  "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    ca.close()


def test_acks_all_loses_nothing_when_the_leader_is_killed_five_times_behind_sasl_ssl(secured_cluster):
    """The same on a cluster whose brokers replicate over SASL_SSL, the producer on SASL_SSL too."""
    cluster, client = secured_cluster
    five_leader_kills(cluster, client)
    restore_brokers(cluster, timeout=WAIT_S)


def five_leader_kills(cluster, client: dict) -> None:
    """SIGKILL partition 0's leader five times under an idempotent acks=all producer (``client``: its connection
    configs); then every acknowledged record is there, once and in order."""
    topic = create_topic(cluster, "kill-leader", partitions=3, rf=3, **{"min.insync.replicas": 2})
    acked: list[tuple[int, int, bytes]] = []   # (partition, offset, value)
    failed: list[str] = []

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            failed.append(f"{msg.value()!r}: {err}")

    producer = Producer({**client, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5, "delivery.timeout.ms": 120000,
                         "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 2000})
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set():
            try:
                producer.produce(topic, key=b"k%d" % (i % 12), value=b"%08d" % i, on_delivery=on_delivery)
                i += 1
            except BufferError:
                pass
            producer.poll(0.002)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        for _ in range(5):
            time.sleep(1.0)
            old = leader_of(cluster, topic, 0)
            cluster.kill(old)
            wait_until(lambda: leader_of(cluster, topic, 0) not in (old, -1), "a new leader of partition 0")
            time.sleep(1.0)
            cluster.restart(old)
            wait_until(lambda: old in isr_of(cluster, topic, 0), f"broker {old} back in the ISR")
    finally:
        stop.set()
        thread.join(30)
    assert producer.flush(120) == 0
    assert not failed, f"{len(failed)} records were not acknowledged, e.g. {failed[:3]}"
    assert len(acked) > 1000

    consumed = consume_all(cluster, topic, 3)
    for p in range(3):
        values = [v for _, v in consumed[p]]
        assert len(values) == len(set(values)), \
            f"partition {p}: a record was read twice\n{duplicates_report(cluster, topic, p, consumed[p])}"
        assert values == sorted(values), f"partition {p}: records out of order"
        want = sorted(v for q, _, v in acked if q == p)
        missing = sorted(set(want) - set(values))
        assert not missing, f"partition {p}: acknowledged records lost: {missing[:10]}"


def test_not_enough_replicas_with_two_of_three_brokers_down(cluster):
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError

    topic = create_topic(cluster, "min-isr", partitions=1, rf=3, **{"min.insync.replicas": 2})
    leader = leader_of(cluster, topic, 0)
    others = [b for b in broker_ids(cluster) if b != leader]
    for b in others:
        cluster.kill(b)
    wait_until(lambda: isr_of(cluster, topic, 0) == [leader], "the ISR to shrink to the leader alone")

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=0,
                             request_timeout_ms=10000)
    try:
        with pytest.raises(NotEnoughReplicasError):
            producer.send(topic, b"refused").get(timeout=20)
        cluster.restart(others[0])
        wait_until(lambda: len(isr_of(cluster, topic, 0)) >= 2, "a second replica back in the ISR")
        metadata = producer.send(topic, b"accepted").get(timeout=20)
        assert metadata.offset >= 0
    finally:
        producer.close(5)


def _acked_writes(cluster, topic: str, acks: str, n: int, tag: str = "") -> tuple[list[bytes], list[str]]:
    acked, errors = [], []

    def on_delivery(err, msg):
        (errors.append(str(err)) if err else acked.append(msg.value()))

    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": acks, "message.timeout.ms": 8000,
                  "enable.idempotence": False, "retries": 2})
    for i in range(n):
        p.produce(topic, value=b"%s%s-%03d" % (tag.encode(), acks.encode(), i), partition=0, on_delivery=on_delivery)
    p.flush(30)
    return acked, errors


def test_unclean_election_with_acks_1_loses_acknowledged_records(cluster):
    """Followers b and c die; the leader a alone acknowledges acks=1 writes; a dies; the stale b comes
    back and is elected although it is not in the ISR (unclean.leader.election.enable=true)."""
    topic = create_topic(cluster, "unclean", partitions=1, rf=3, **{"unclean.leader.election.enable": "true"})
    before, _ = _acked_writes(cluster, topic, "1", 5)
    assert len(before) == 5
    # in the ISR is not the same as caught up this instant: wait until every replica has the 5 records
    wait_until(lambda: replica_leos(cluster, topic, 0) == [5, 5, 5], "the followers caught up")
    a = leader_of(cluster, topic, 0)
    b, c = [x for x in broker_ids(cluster) if x != a]
    cluster.kill(b)
    cluster.kill(c)
    wait_until(lambda: isr_of(cluster, topic, 0) == [a], "the ISR to shrink to the leader")
    lost_candidates, errors = _acked_writes(cluster, topic, "1", 10, tag="alone-")
    assert len(lost_candidates) == 10, errors
    cluster.kill(a)
    cluster.restart(b)
    wait_until(lambda: leader_of(cluster, topic, 0) == b, f"broker {b} elected uncleanly")
    cluster.restart(a)
    cluster.restart(c)
    wait_until(lambda: len(isr_of(cluster, topic, 0)) == 3, "every replica back in the ISR")
    values = [v for _, v in consume_all(cluster, topic, 1)[0]]
    lost = [v for v in lost_candidates if v not in values]
    assert set(before) <= set(values)
    assert lost == lost_candidates, f"expected all 10 writes acknowledged by broker {a} alone to be lost, " \
                                    f"lost {lost}"


def test_acks_all_with_min_isr_2_loses_nothing_in_the_same_sequence(cluster):
    topic = create_topic(cluster, "clean", partitions=1, rf=3, **{"min.insync.replicas": 2})
    before, _ = _acked_writes(cluster, topic, "all", 5)
    assert len(before) == 5
    a = leader_of(cluster, topic, 0)
    b, c = [x for x in broker_ids(cluster) if x != a]
    cluster.kill(b)
    cluster.kill(c)
    wait_until(lambda: isr_of(cluster, topic, 0) == [a], "the ISR to shrink to the leader")
    acked, errors = _acked_writes(cluster, topic, "all", 10, tag="alone-")
    assert acked == [] and errors, "with one in-sync replica, acks=all writes must be refused"
    cluster.kill(a)
    cluster.restart(b)
    # the controller learns that a is gone when a's ZooKeeper session expires
    wait_until(lambda: leader_of(cluster, topic, 0) != a, f"the controller to see broker {a} gone")
    time.sleep(2)   # b is alive but not in the ISR, and unclean election is off: the partition stays offline
    assert leader_of(cluster, topic, 0) == -1
    assert isr_of(cluster, topic, 0) == [a]   # the last in-sync replica stays in the ISR
    cluster.restart(a)
    cluster.restart(c)
    wait_until(lambda: leader_of(cluster, topic, 0) == a, f"broker {a}, the last ISR member, leads again")
    # a restarted leader takes its high watermark from its last checkpoint, and (Kafka 3.9) moves it
    # only once the ISR is back to min.insync.replicas: wait for that before reading
    wait_until(lambda: len(isr_of(cluster, topic, 0)) >= 2
               and int(partition_row(cluster, topic, 0)["high_watermark"]) == len(before),
               "the ISR back to min.insync.replicas and the high watermark past the 5 records")
    values = [v for _, v in consume_all(cluster, topic, 1)[0]]
    assert values == before


def test_killing_the_controller_elects_another(cluster):
    old = cluster.controller
    old_epoch = int(cluster.zk.get("/controller_epoch")[0])
    cluster.kill(old)
    new = wait_until(lambda: cluster.controller not in (old, None, -1) and cluster.controller, "a new controller")
    assert new != old
    assert int(cluster.zk.get("/controller_epoch")[0]) > old_epoch
    topic = create_topic(cluster, "after-controller", partitions=2, rf=2)   # the new controller works
    assert set(cluster.describe(topic)["leader"]) <= set(broker_ids(cluster)) - {old}


def test_a_paused_leader_is_replaced_then_fenced_and_rejoins(cluster):
    topic = create_topic(cluster, "paused", partitions=1, rf=3, **{"min.insync.replicas": 2})
    before, _ = _acked_writes(cluster, topic, "all", 5)
    old = leader_of(cluster, topic, 0)
    epoch = int(partition_row(cluster, topic, 0)["leader_epoch"])
    cluster.pause(old)
    new = wait_until(lambda: (lambda lead: lead not in (old, -1) and lead)(leader_of(cluster, topic, 0)),
                     "a new leader after the session timeout")
    assert int(partition_row(cluster, topic, 0)["leader_epoch"]) > epoch
    during, errors = _acked_writes(cluster, topic, "all", 5, tag="during-")
    assert len(during) == 5, errors
    cluster.resume(old)
    wait_until(lambda: old in isr_of(cluster, topic, 0), f"broker {old} back in the ISR")
    assert leader_of(cluster, topic, 0) in (new, old)   # the preferred leader may take over again
    values = [v for _, v in consume_all(cluster, topic, 1)[0]]
    assert values == before + during


def test_a_group_keeps_its_offsets_when_its_coordinator_dies(cluster):
    from kafkalab.broker.coordinator.group.offsets_topic import partition_for

    topic = create_topic(cluster, "group-topic", partitions=2, rf=3)
    group = f"g-{uuid.uuid4().hex[:6]}"
    acked, _ = _acked_writes(cluster, topic, "all", 20)
    assert len(acked) == 20
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    while len(got) < 12:
        m = c.poll(1.0)
        if m is not None and not m.error():
            got.append(m.value())
    c.commit(offsets=[TopicPartition(topic, 0, 12)], asynchronous=False)
    c.close()

    offsets_partitions = len(cluster.describe("__consumer_offsets"))
    coordinator = leader_of(cluster, "__consumer_offsets", partition_for(group, offsets_partitions))
    cluster.kill(coordinator)
    wait_until(lambda: leader_of(cluster, "__consumer_offsets", partition_for(group, offsets_partitions))
               not in (coordinator, -1), "a new coordinator")
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        committed = c.committed([TopicPartition(topic, 0)], timeout=30)
        assert committed[0].offset == 12
    finally:
        c.close()


def test_kafka_python_reads_what_confluent_kafka_wrote(cluster):
    from kafka import KafkaConsumer

    topic = create_topic(cluster, "two-clients", partitions=1, rf=3)
    acked, _ = _acked_writes(cluster, topic, "all", 10)
    consumer = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                             consumer_timeout_ms=10000, enable_auto_commit=False)
    try:
        values = [m.value for m in consumer][:10]
    finally:
        consumer.close()
    assert values == acked
