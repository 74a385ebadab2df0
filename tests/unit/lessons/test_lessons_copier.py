"""kafkalab/lessons/copier.py run as lesson 07 runs it: a process, told to go on batch by batch, or SIGKILLed."""
from __future__ import annotations

import collections
import subprocess
import sys

import pytest
from confluent_kafka import Producer

from kafkalab.lab import LabKafka
from kafkalab.lessons import copier
from kafkalab.lessons.reading import read_to_end

N, BATCH = 50, 10


@pytest.fixture(scope="module")
def kafka(shared_broker):
    return LabKafka(shared_broker.bootstrap_servers)


def source_topic(kafka, name):
    topic = kafka.create_topic(name, partitions=1)
    producer = Producer(kafka.client_config(enable_idempotence=True))
    for i in range(N):
        producer.produce(topic, value=f"order-{i}")
    assert producer.flush(10) == 0
    return topic


def run(kafka, source, output, mode, side_effects, kill_at=None):
    """One copier process: 'go' after each batch, or SIGKILL at the kill_at-th batch; (exit code, lines)."""
    child = subprocess.Popen([sys.executable, copier.__file__, kafka.bootstrap_servers, source, output,
                              f"group-{output}", mode, str(BATCH), str(side_effects)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in child.stdout:
        lines.append(line.strip())
        if line.startswith("written"):
            if kill_at is not None and sum(line.startswith("written") for line in lines) == kill_at:
                child.kill()
                break
            child.stdin.write("go\n")
            child.stdin.flush()
    child.stdin.close()
    stderr = child.stderr.read()
    code = child.wait(60)
    assert code in (0, -9), stderr
    return code, lines


def duplicates(values):
    return sum(n - 1 for n in collections.Counter(values).values() if n > 1)


@pytest.mark.parametrize("mode", ["transactions", "no transactions"])
def test_a_copier_left_alone_copies_every_record_once(kafka, tmp_path, mode):
    slug = mode.replace(" ", "-")
    source = source_topic(kafka, f"copier-src-{slug}")
    output = kafka.create_topic(f"copier-out-{slug}", partitions=1)
    code, lines = run(kafka, source, output, mode, tmp_path / "effects.txt")
    assert code == 0 and lines[-1] == "done"
    assert [line for line in lines if line.startswith("written")] == [f"written {i} {i + BATCH - 1}"
                                                                      for i in range(0, N, BATCH)]
    assert read_to_end(kafka, output, "read_committed") == [f"order-{i} (copied)" for i in range(N)]
    assert (tmp_path / "effects.txt").read_text().splitlines() == [f"order-{i}" for i in range(N)]


def test_sigkilled_mid_transaction_the_next_copier_redoes_the_batch_exactly_once(kafka, tmp_path):
    source = source_topic(kafka, "copier-src-killed-txn")
    output = kafka.create_topic("copier-out-killed-txn", partitions=1)
    effects = tmp_path / "effects.txt"
    assert run(kafka, source, output, "transactions", effects, kill_at=2)[0] == -9
    assert run(kafka, source, output, "transactions", effects)[0] == 0
    committed = read_to_end(kafka, output, "read_committed")
    assert sorted(committed) == sorted(f"order-{i} (copied)" for i in range(N)) and duplicates(committed) == 0
    assert duplicates(read_to_end(kafka, output, "read_uncommitted")) == BATCH    # the aborted batch, still in the log
    assert duplicates(effects.read_text().splitlines()) == BATCH                  # outside Kafka: done twice


def test_sigkilled_without_transactions_the_batch_is_written_twice(kafka, tmp_path):
    source = source_topic(kafka, "copier-src-killed-plain")
    output = kafka.create_topic("copier-out-killed-plain", partitions=1)
    effects = tmp_path / "effects.txt"
    assert run(kafka, source, output, "no transactions", effects, kill_at=2)[0] == -9
    assert run(kafka, source, output, "no transactions", effects)[0] == 0
    assert duplicates(read_to_end(kafka, output, "read_committed")) == BATCH      # at-least-once
