"""``kafkalab dump-log --offsets-decoder`` against Kafka 3.9's own ``kafka-dump-log.sh --offsets-decoder``.

Kafka's tool is the oracle: on the ``__consumer_offsets`` partition of a group that committed offsets, it and
kafkalab's dump print the same lines, for the files of a mini broker and for those of a Kafka 3.9 broker
(lesson 05, section 15, reads the committed offsets from that dump).
"""
from __future__ import annotations

import glob
import io
import os
import subprocess
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.broker.coordinator.group.offsets_topic import partition_for
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.tools.dump_log import dump_files

GROUP = "offsets-decoder-check"


def _commit_some(bootstrap: str) -> dict[int, int]:
    """A classic group reads 30 records of 3 partitions, committing twice; its committed offsets."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("decoded", 3, 1)])["decoded"].result(60)
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        p.produce("decoded", value=f"v{i}", partition=i % 3)
    p.flush(30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.subscribe(["decoded"])
    read, deadline = 0, time.monotonic() + 90
    while read < 30 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            read += 1
            if read in (15, 30):
                c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition("decoded", i) for i in range(3)], 30)}
    c.close()
    assert read == 30
    return committed


def _same_as_kafkas_tool(log_dir: str, tmp_path, committed: dict[int, int], partitions: int) -> None:
    segments = sorted(glob.glob(os.path.join(log_dir, f"__consumer_offsets-{partition_for(GROUP, partitions)}",
                                             "*.log")))
    home = fetch_kafka("3.9")
    theirs = subprocess.run(["java", "-cp", str(home / "libs" / "*"), "kafka.tools.DumpLogSegments",
                             "--offsets-decoder", "--files", ",".join(segments)],
                            capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert theirs.returncode == 0, theirs.stderr
    ours = io.StringIO()
    assert dump_files(segments, print_data_log=True, offsets_decoder=True, file=ours)
    assert ours.getvalue().splitlines() == theirs.stdout.splitlines()
    for p, offset in committed.items():   # the last commit of each partition is the committed offset
        key = f'key: {{"type":"1","data":{{"group":"{GROUP}","topic":"decoded","partition":{p}}}}}'
        last = [line for line in ours.getvalue().splitlines() if key in line][-1]
        assert f'"data":{{"offset":{offset},' in last


def test_a_mini_brokers_consumer_offsets_dump_as_kafka_dumps_them(tmp_path):
    log_dir = str(tmp_path / "mini")
    with kafkalab.mini(log_dir=log_dir, **{"group.initial.rebalance.delay.ms": 0}) as b:
        committed = _commit_some(b.bootstrap_servers)
    _same_as_kafkas_tool(log_dir, tmp_path, committed, 50)


@pytest.mark.cluster
def test_a_kafka_39_brokers_consumer_offsets_dump_as_kafka_dumps_them(tmp_path):
    from kafkalab.cluster.cluster import cluster
    fetch_kafka("3.9")
    real = cluster(brokers=1, dir=str(tmp_path / "kafka"), backend="kafka",
                   **{"offsets.topic.replication.factor": 1, "group.initial.rebalance.delay.ms": 0})
    try:
        committed = _commit_some(real.bootstrap_servers)
        log_dir = real.brokers["log_dir"][0]
    finally:
        real.close()
    _same_as_kafkas_tool(log_dir, tmp_path, committed, 50)
