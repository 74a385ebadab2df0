"""Kafka's own Java client (kafka-clients 4.4, the jars of the Kafka 4.4 distribution ``kafkalab fetch-kafka 4``
fetches) in a KIP-848 consumer group (``group.protocol=consumer``) on the mini broker, standalone and as a 3-broker
cluster: two KafkaConsumers in processes of their own share a topic's partitions, read every record once between
them, commit, and the group is a CONSUMER group to the admin API.

The client is ``tests/java/GroupClient.java``, compiled with ``javac`` (kafkalab.streams.jvm); the test is skipped
only where Java or the distribution cannot be had, never because the broker misbehaves.
"""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab

SOURCE = Path(__file__).resolve().parent.parent / "java" / "GroupClient.java"
GROUP_CONFIGS = {"group.consumer.session.timeout.ms": 6000, "group.consumer.heartbeat.interval.ms": 500}
PARTITIONS, N = 4, 400


@pytest.fixture(scope="module")
def group_client():
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.streams.jvm import StreamsJvmError, java_command
    try:
        home = Path(fetch_kafka("4"))
        prefix = java_command(home, [], ["-Xmx128m", "-Dlog4j2.level=warn"], source=SOURCE)
    except Exception as e:   # no Java, no javac-compatible JDK, no distribution
        if isinstance(e, (StreamsJvmError, OSError)) or "fetch" in type(e).__name__.lower():
            pytest.skip(f"no Java client here: {e}")
        raise
    return prefix


@pytest.fixture(params=["standalone", pytest.param("cluster", marks=pytest.mark.cluster)])
def bootstrap(request, tmp_path):
    if request.param == "standalone":
        with kafkalab.mini(log_dir=str(tmp_path / "broker"), **GROUP_CONFIGS) as b:
            yield b.bootstrap_servers, 1
        return
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **GROUP_CONFIGS) as c:
        yield c.bootstrap_servers, 3


def test_two_java_consumers_share_a_topic_with_the_consumer_protocol(group_client, bootstrap):
    bs, rf = bootstrap
    topic, group = f"java-{uuid.uuid4().hex[:6]}", f"jg-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(topic, PARTITIONS, rf)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bs})
    for i in range(N):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    procs = [subprocess.Popen([*group_client, "consume", bs, topic, group, "consumer", str(N), "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
             for _ in range(2)]
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, f"GroupClient failed:\n{out}\n{err[-3000:]}"
            outs.append(out.splitlines())
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    consumed = [int(next(line.split()[1] for line in out if line.startswith("CONSUMED"))) for out in outs]
    assigned = [[line.split()[1] for line in out if line.startswith("ASSIGNED")] for out in outs]
    epochs = [int(next(line.split()[2] for line in out if line.startswith("GROUP_METADATA"))) for out in outs]
    # between them every record once (each commits after every poll, and a partition moves only once released)
    assert sum(consumed) == N, (consumed, outs)
    assert all(any(a != "-" for a in member) for member in assigned), assigned   # both members got partitions
    assert all(e > 0 for e in epochs), epochs                                   # member epochs from the coordinator
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        committed = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
    finally:
        c.close()
    assert [tp.offset for tp in committed] == [N // PARTITIONS] * PARTITIONS
    listed = {g.group_id: g for g in admin.list_consumer_groups().result().valid}
    assert listed[group].type == ConsumerGroupType.CONSUMER
