"""Kafka's own Java client (kafka-clients 3.9.2) running transactions against the mini broker, standalone
and as a 3-broker cluster: a consume-transform-produce copier with ``sendOffsetsToTransaction`` that
aborts some of its transactions on purpose, ``read_committed`` consumers in Java and in librdkafka
counting its output, and zombie fencing.

The client is ``tests/java/TxnClient.java``, compiled with ``javac`` against the jars kafkalab.streams
fetches for Kafka Streams (they include kafka-clients); the test is skipped only where Java or the jars
cannot be had, never because the broker misbehaves.
"""
from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from tests.helpers.cluster_helpers import wait_until
from tests.helpers.txn_helpers import read_committed

SOURCE = Path(__file__).resolve().parent.parent / "java" / "TxnClient.java"
N = 300
#: short lab timeouts for the cluster (the transaction topic small, so the test's ids spread over it)
CLUSTER = {"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}


class Target:
    """Where the clients go: the standalone broker fixture, or a 3-broker cluster (replication factor 3)."""

    def __init__(self, bootstrap_servers: str, replication_factor: int):
        self.bootstrap_servers = bootstrap_servers
        self.replication_factor = replication_factor

    def create_topic(self, name: str, partitions: int) -> None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        admin.create_topics([NewTopic(name, partitions, self.replication_factor)])[name].result(30)

    def committed(self, group: str, topic: str, partitions: int) -> int:
        c = Consumer({"bootstrap.servers": self.bootstrap_servers, "group.id": group})
        try:
            offsets = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
        finally:
            c.close()
        return sum(max(tp.offset, 0) for tp in offsets)

    def read_committed(self, topic: str, expected: int, timeout_s: float = 20) -> list[bytes]:
        return read_committed(self.bootstrap_servers, topic, expected, timeout_s)


@pytest.fixture(scope="module")
def mini_cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("java-txn")), **CLUSTER) as c:
        yield c


@pytest.fixture(params=["standalone", "cluster"])
def target(request):
    if request.param == "standalone":
        broker = request.getfixturevalue("broker")
        return Target(broker.bootstrap_servers, 1)
    return Target(request.getfixturevalue("mini_cluster").bootstrap_servers, 3)


@pytest.fixture(scope="module")
def txn_client():
    from kafkalab.streams.jvm import StreamsJvmError, fetch_streams, java_command
    try:
        home = fetch_streams()
        prefix = java_command(home, [], ["-Xmx128m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"], source=SOURCE)
    except StreamsJvmError as e:
        pytest.skip(f"no Java client here: {e}")

    def run(*args, timeout=90):
        done = subprocess.run([*prefix, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"TxnClient {args[0]} failed:\n{done.stdout}\n{done.stderr[-3000:]}"
        return dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    return run


def test_java_copier_with_aborts_writes_each_record_once(target, txn_client):
    suffix = uuid.uuid4().hex[:6]
    source, sink, group = f"java-in-{suffix}", f"java-out-{suffix}", f"java-copier-{suffix}"
    target.create_topic(source, 2)
    target.create_topic(sink, 2)
    p = Producer({"bootstrap.servers": target.bootstrap_servers, "linger.ms": 20})
    for i in range(N):
        p.produce(source, key=str(i % 7), value=f"record-{i}")
    assert p.flush(20) == 0

    out = txn_client("copy", target.bootstrap_servers, source, sink, group, f"{group}-txn", N, 3)
    assert int(out["COPIED"]) == N, out
    assert int(out["ABORTED"]) >= 1 and int(out["COMMITTED"]) >= 1, out

    # read_committed: every input record once, in Java and in librdkafka
    counted = txn_client("count", target.bootstrap_servers, sink, "read_committed", N)
    assert counted["VALUES"] == f"{N} {N}", counted
    values = target.read_committed(sink, expected=N)
    assert sorted(values) == sorted(f"RECORD-{i}".encode() for i in range(N))
    # read_uncommitted also sees what the aborted transactions wrote: more values, some twice
    seen, distinct = map(int, txn_client("count", target.bootstrap_servers, sink, "read_uncommitted",
                                         N)["VALUES"].split())
    assert seen > N and distinct == N
    # the group's offsets are the committed transactions' ones: all of the input (the last transaction's
    # offsets are stable once its COMMIT marker is in __consumer_offsets, which follows EndTxn's answer)
    wait_until(lambda: target.committed(group, source, 2) == N, "the group's offsets of the last transaction",
               timeout=30, retry_on=())


def test_java_zombie_producer_is_fenced(target, txn_client):
    topic = f"java-fence-{uuid.uuid4().hex[:6]}"
    target.create_topic(topic, 1)
    out = txn_client("fence", target.bootstrap_servers, topic, f"{topic}-txn")
    # what Kafka 3.9.2 answers the same client (checked by hand with a 1-broker Kafka 3.9 cluster): the
    # zombie's write is refused with INVALID_PRODUCER_EPOCH (abortable), its abort with PRODUCER_FENCED
    assert out["COMMIT"] == "InvalidProducerEpochException"
    assert out["ABORT"] == "ProducerFencedException"
    assert target.read_committed(topic, expected=1, timeout_s=10) == [b"from the new producer"]
