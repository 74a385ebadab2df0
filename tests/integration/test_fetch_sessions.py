"""Incremental fetch sessions (KIP-227) with real clients and between mini brokers.

What must hold: kafka-python's consumer (which, like the Java client, asks for a session) gets every record once
through incremental fetches, and the broker holds its session; librdkafka's consumer (which never asks: epoch -1)
makes none; on a 3-broker cluster each follower replicates in one session per leader (Kafka's
``kafka.server:type=FetchSessionCache`` NumIncrementalFetchSessions counts them), every ISR is whole and nothing
acknowledged is lost, also after a leader is SIGKILLed and restarted: its own fetchers start new sessions with
the leaders they follow (their old ones stay cached until evicted, as in Kafka). What each step of a session
answers, compared with Kafka 3.9, is ``test_differential``'s ``fetch_session`` case.
"""
from __future__ import annotations

import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

import kafkalab
from tests.helpers.cluster_helpers import wait_until

SESSIONS = "kafka_server_fetchsessioncache_numincrementalfetchsessions"


def sessions(broker) -> dict[int, tuple[int, int]]:
    """The mini broker's fetch sessions: id -> (epoch, partitions), read on its loop."""
    cache = broker.server.fetch_manager.cache
    return broker.call(lambda: {s.id: (s.epoch, len(s.partitions)) for s in cache.sessions.values()})


def test_kafka_python_consumes_through_a_session_and_librdkafka_without(shared_broker):
    topic = f"sessions-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    producer = KafkaProducer(bootstrap_servers=shared_broker.bootstrap_servers)
    before = sessions(shared_broker)
    sent = [f"first-{i}".encode() for i in range(30)]
    for i, v in enumerate(sent):
        producer.send(topic, v, partition=i % 3)
    producer.flush()
    consumer = KafkaConsumer(topic, bootstrap_servers=shared_broker.bootstrap_servers, auto_offset_reset="earliest",
                             group_id=None, consumer_timeout_ms=3000)
    try:
        got = [m.value for m in consumer]
        more = [f"second-{i}".encode() for i in range(30)]
        for i, v in enumerate(more):
            producer.send(topic, v, partition=i % 3)
        producer.flush()
        got += [m.value for m in consumer]
        new = {sid: s for sid, s in sessions(shared_broker).items() if sid not in before}
    finally:
        consumer.close()
        producer.close()
    assert sorted(got) == sorted(sent + more)   # every record once
    assert len(new) == 1, new                   # one session, of the topic's three partitions ...
    [(epoch, partitions)] = new.values()
    assert partitions == 3 and epoch > 2        # ... used by several incremental fetches
    # librdkafka: epoch -1 fetches, no session
    before = sessions(shared_broker)
    c = Consumer({"bootstrap.servers": shared_broker.bootstrap_servers, "group.id": f"g-{topic}",
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
        values = []
        wait_until(lambda: values.extend(m.value() for m in c.consume(100, 0.5) if m.error() is None)
                   or len(values) >= 60, "librdkafka to read the topic", 60)
    finally:
        c.close()
    assert sorted(values) == sorted(sent + more)
    assert set(sessions(shared_broker)) <= set(before)


def produce(cluster, topic: str, values: list[str]) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True})
    errors = []
    for v in values:
        p.produce(topic, v.encode(), on_delivery=lambda err, _msg: err and errors.append(err))
    assert p.flush(60) == 0 and not errors, errors


def consume_all(cluster, topic: str, n: int, partitions: int = 30) -> list[str]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest"})
    values: list[str] = []
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        wait_until(lambda: values.extend(m.value().decode() for m in c.consume(500, 0.5) if m.error() is None)
                   or len(values) >= n, f"{n} records", 60)
    finally:
        c.close()
    return values


def whole_isr(cluster, topic: str) -> bool:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(topic, timeout=10)
    return all(len(p.isrs) == 3 for p in md.topics[topic].partitions.values())


def follower_sessions(cluster) -> dict[int, float]:
    frame = cluster.metrics(SESSIONS)
    return {int(row.broker): row.value for row in frame.itertuples()}


def test_followers_replicate_in_sessions_and_start_new_ones_after_a_leader_restart(tmp_path):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "c")) as c:
        topic = "replicated"
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 30, 3, config={"min.insync.replicas": "2"})])[topic].result(60)
        wait_until(lambda: whole_isr(c, topic), "every ISR whole", 60)
        produce(c, topic, [f"before-{i}" for i in range(300)])
        # every broker leads some of the 30 partitions and the two others follow them: one session each
        wait_until(lambda: follower_sessions(c) == {1: 2, 2: 2, 3: 2}, "two follower sessions per leader", 30)
        leader = 1
        c.kill(leader)
        produce(c, topic, [f"while-{i}" for i in range(100)])
        c.restart(leader)   # a new process: its fetchers make new sessions at brokers 2 and 3
        wait_until(lambda: whole_isr(c, topic), "every ISR whole after the restart", 90)
        produce(c, topic, [f"after-{i}" for i in range(100)])
        wait_until(lambda: {b: n for b, n in follower_sessions(c).items() if b != leader} == {2: 3, 3: 3},
                   "the restarted broker's new sessions beside its old ones", 30)
        assert sorted(consume_all(c, topic, 500)) == sorted([f"before-{i}" for i in range(300)]
                                                             + [f"while-{i}" for i in range(100)]
                                                             + [f"after-{i}" for i in range(100)])
