"""Kafka's own Java client (kafka-clients 3.9.2) running transactions against the mini broker: a
consume-transform-produce copier with ``sendOffsetsToTransaction`` that aborts some of its transactions on
purpose, ``read_committed`` consumers in Java and in librdkafka counting its output, and zombie fencing.

The client is ``tests/java/TxnClient.java``, compiled with ``javac`` against the jars kafkalab.streams
fetches for Kafka Streams (they include kafka-clients); the test is skipped only where Java or the jars
cannot be had, never because the broker misbehaves.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer

from test_transactions import consume_all, create_topic

SOURCE = Path(__file__).resolve().parent.parent / "java" / "TxnClient.java"
N = 300


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


def test_java_copier_with_aborts_writes_each_record_once(broker, txn_client):
    create_topic(broker, "java-in", partitions=2)
    create_topic(broker, "java-out", partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    for i in range(N):
        p.produce("java-in", key=str(i % 7), value=f"record-{i}")
    assert p.flush(20) == 0

    out = txn_client("copy", broker.bootstrap_servers, "java-in", "java-out", "java-copier", "java-copier-txn", N, 3)
    assert int(out["COPIED"]) == N
    assert int(out["ABORTED"]) >= 1 and int(out["COMMITTED"]) >= 1

    # read_committed: every input record once, in Java and in librdkafka
    assert txn_client("count", broker.bootstrap_servers, "java-out", "read_committed", N)["VALUES"] == f"{N} {N}"
    values = consume_all(broker, "java-out", "read_committed", expected=N, timeout_s=15)
    assert sorted(values) == sorted(f"RECORD-{i}".encode() for i in range(N))
    # read_uncommitted also sees what the aborted transactions wrote: more values, some twice
    seen, distinct = map(int, txn_client("count", broker.bootstrap_servers, "java-out", "read_uncommitted",
                                         N)["VALUES"].split())
    assert seen > N and distinct == N
    # the group's offsets are the committed transactions' ones: all of the input
    committed = broker.call(lambda: broker.server.group_coordinator.fetch_offsets("java-copier", None))
    assert sum(o.offset for (topic, _), o in committed.items() if topic == "java-in") == N


def test_java_zombie_producer_is_fenced(broker, txn_client):
    create_topic(broker, "java-fence", partitions=1)
    out = txn_client("fence", broker.bootstrap_servers, "java-fence", "java-fence-txn")
    # what Kafka 3.9.2 answers the same client (checked by hand with a 1-broker Kafka 3.9 cluster): the
    # zombie's write is refused with INVALID_PRODUCER_EPOCH (abortable), its abort with PRODUCER_FENCED
    assert out["COMMIT"] == "InvalidProducerEpochException"
    assert out["ABORT"] == "ProducerFencedException"
    assert consume_all(broker, "java-fence", "read_committed", expected=1, timeout_s=10) == [b"from the new producer"]
