"""check_01 and check_05 (labs/01_partitions, labs/05_consumer_groups): right answers pass, wrong ones are named."""
from __future__ import annotations

import importlib.util
import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import kafkalab
from kafkalab.checks import LabCheckFailed
from kafkalab.partitioner import murmur2_partition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(lab):
    spec = importlib.util.spec_from_file_location(f"{lab}_check", os.path.join(ROOT, "labs", lab, "check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lab01, lab05 = _load("01_partitions"), _load("05_consumer_groups")


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.connect(log_dir=str(tmp_path_factory.mktemp("broker")),
                          **{"group.initial.rebalance.delay.ms": 0}) as kafka:
        yield kafka


def _produce_payments(kafka, name, key, partitions=6, **config):
    topic = kafka.create_topic(name, partitions=partitions)
    producer = Producer(kafka.client_config(**config))
    for account, customer, seq, amount in lab01.PAYMENTS:
        producer.produce(topic, key=key(account, customer), value=f"{account},{customer},{seq},{amount}")
    assert producer.flush(10) == 0
    producer.close()
    return topic


def _answers_01(topic_partitions):
    where, order = {}, {}
    for account, *_ in lab01.PAYMENTS:
        where[account] = {murmur2_partition(account, 6)}
        order[account] = True
    return dict(predicted_partition=murmur2_partition("acct-07", 6), partitions_of=where, in_order=order)


def test_check_01_passes_right_answers(kafka, capsys):
    topic = _produce_payments(kafka, "payments-right", lambda a, c: a, partitioner="murmur2_random")
    lab01.check_01(kafka, topic, **_answers_01(6))
    assert "All checks passed" in capsys.readouterr().out


def test_check_01_names_a_customer_key(kafka, capsys):
    topic = _produce_payments(kafka, "payments-by-customer", lambda a, c: c, partitioner="murmur2_random")
    with pytest.raises(LabCheckFailed):
        lab01.check_01(kafka, topic, **_answers_01(6))
    out = capsys.readouterr().out
    assert "✗ step 1: every account's payments are in one partition" in out
    assert "your key is the customer" in out and "acct-06" in out


def test_check_01_names_the_crc32_partitioner(kafka, capsys):
    topic = _produce_payments(kafka, "payments-crc", lambda a, c: a)   # confluent-kafka's default partitioner
    answers = _answers_01(6)
    answers["predicted_partition"] = (answers["predicted_partition"] + 1) % 6
    with pytest.raises(LabCheckFailed, match="3 of 6 checks failed"):
        lab01.check_01(kafka, topic, **answers)
    out = capsys.readouterr().out
    assert "partitioner='murmur2_random'" in out and "✗ step 2" in out and "✗ step 3" in out


def test_check_01_unfilled(kafka, capsys):
    with pytest.raises(LabCheckFailed, match="6 of 6 checks failed"):
        lab01.check_01(kafka, ..., ..., ..., ...)
    assert "Traceback" not in capsys.readouterr().out


def _run_05(kafka, group, commit_before):
    topic = kafka.create_topic(f"transfers-{group}", partitions=1)
    producer = Producer(kafka.client_config())
    for i in range(lab05.RECORDS):
        producer.produce(topic, value=f"transfer-{i}")
    producer.flush(10)
    producer.close()
    processed, crash = [], [True]
    for run in range(2):
        consumer = Consumer(kafka.client_config(group_id=group, enable_auto_commit=False, auto_offset_reset="earliest"))
        consumer.assign([TopicPartition(topic, 0)])
        try:
            while True:
                batch = [m for m in consumer.consume(10, timeout=3) if m.error() is None]
                if not batch:
                    break
                if commit_before:
                    consumer.commit(message=batch[-1], asynchronous=False)
                for msg in batch:
                    if crash[0] and len(processed) == lab05.CRASH_AT - 1:
                        crash[0] = False
                        raise lab05.Crash()
                    processed.append(msg.offset())
                if not commit_before:
                    consumer.commit(message=batch[-1], asynchronous=False)
        except lab05.Crash:
            pass
        finally:
            consumer.close()
    return topic, processed


def test_check_05_passes_at_least_once(kafka, capsys):
    topic, processed = _run_05(kafka, "after", commit_before=False)
    lab05.check_05(kafka, topic, "after", processed, 2)
    assert "All checks passed" in capsys.readouterr().out


def test_check_05_names_lost_records(kafka, capsys):
    topic, processed = _run_05(kafka, "before", commit_before=True)
    with pytest.raises(LabCheckFailed):
        lab05.check_05(kafka, topic, "before", processed, 1)
    out = capsys.readouterr().out
    assert "8 never processed" in out and "commit only after process()" in out
    assert "✗ duplicates is the number" in out
