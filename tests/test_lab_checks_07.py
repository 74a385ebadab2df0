"""check_07 (labs/07_exactly_once): a transactional copier passes, a copier without transactions is named
for its duplicates, and wrong or unfilled answers are named."""
from __future__ import annotations

import importlib.util
import logging
import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import kafkalab
from kafkalab.checks import LabCheckFailed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("lab07_check", os.path.join(ROOT, "labs", "07_exactly_once", "check.py"))
lab07 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab07)

QUIET = logging.getLogger("test-lab-07-clients")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.connect(log_dir=str(tmp_path_factory.mktemp("broker"))) as kafka:
        yield kafka


def _copy_with_crash(kafka, name, transactions):
    """The lab's two runs (crash in the third batch, then a second copier), with or without transactions."""
    source = kafka.create_topic(f"{name}-readings")
    output = kafka.create_topic(f"{name}-copied")
    group = f"{name}-copier"
    p = Producer(kafka.client_config())
    for i in range(lab07.RECORDS):
        p.produce(source, value=f"reading-{i}")
    assert p.flush(10) == 0
    p.close()
    crash = [True]
    producers = []

    def run():
        consumer = Consumer(kafka.client_config(group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
                                                isolation_level="read_committed"), logger=QUIET)
        consumer.assign([TopicPartition(source, 0)])
        producer = Producer(kafka.client_config(**({"transactional.id": f"{name}-txn"} if transactions else {})),
                            logger=QUIET)
        producers.append(producer)
        if transactions:
            producer.init_transactions(30)
        try:
            while True:
                batch = [m for m in consumer.consume(lab07.BATCH, timeout=3) if m.error() is None]
                if not batch:
                    return
                if transactions:
                    producer.begin_transaction()
                for msg in batch:
                    if crash[0] and msg.offset() == lab07.CRASH_AT:
                        crash[0] = False
                        producer.flush(10)
                        return
                    producer.produce(output, value=msg.value() + b" (copied)")
                if transactions:
                    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                                         consumer.consumer_group_metadata())
                    producer.commit_transaction()
                else:
                    producer.flush(10)
                    consumer.commit(asynchronous=False)
        finally:
            consumer.close()

    run()
    run()
    producers[-1].close()
    return source, output, group


@pytest.fixture(scope="module")
def transactional(kafka):
    return _copy_with_crash(kafka, "txn", transactions=True)


def test_check_07_passes_a_transactional_copier(kafka, transactional, capsys):
    source, output, group = transactional
    committed = lab07.read_values(kafka, output, "read_committed")
    uncommitted = lab07.read_values(kafka, output, "read_uncommitted")
    assert committed == lab07.expected_output()
    assert len(uncommitted) == lab07.RECORDS + (lab07.CRASH_AT % lab07.BATCH)   # the aborted records are in the log
    lab07.check_07(kafka, source, output, group, committed, len(uncommitted))
    assert "All checks passed" in capsys.readouterr().out


def test_check_07_names_wrong_and_unfilled_answers(kafka, transactional, capsys):
    source, output, group = transactional
    uncommitted = lab07.read_values(kafka, output, "read_uncommitted")
    with pytest.raises(LabCheckFailed, match="2 of 4 checks failed"):
        lab07.check_07(kafka, source, output, group, uncommitted, lab07.RECORDS)
    out = capsys.readouterr().out
    assert "✓ a read_committed reader sees each of the 60 records copied exactly once" in out
    assert "the same as read_uncommitted: check the reader's isolation.level" in out
    assert "got 60, a read_uncommitted reader sees 65" in out
    with pytest.raises(LabCheckFailed, match="2 of 4 checks failed"):
        lab07.check_07(kafka, source, output, group, ..., ...)
    out = capsys.readouterr().out
    assert "committed_values is still `...`" in out and "uncommitted_count is still `...`" in out


def test_check_07_names_the_duplicates_of_a_copier_without_transactions(kafka, capsys):
    source, output, group = _copy_with_crash(kafka, "plain", transactions=False)
    committed = lab07.read_values(kafka, output, "read_committed")
    assert len(committed) == lab07.RECORDS + lab07.CRASH_AT % lab07.BATCH        # the crashed batch, written twice
    with pytest.raises(LabCheckFailed, match="1 of 4 checks failed"):
        lab07.check_07(kafka, source, output, group, committed, len(committed))
    out = capsys.readouterr().out
    assert "✗ a read_committed reader sees each of the 60 records copied exactly once" in out
    assert "5 records duplicated, e.g. ['reading-20 (copied)'" in out
    assert "send_offsets_to_transaction" in out


def test_check_07_names_an_empty_output(kafka, capsys):
    source = kafka.create_topic("empty-readings")
    output = kafka.create_topic("empty-copied")
    with pytest.raises(LabCheckFailed, match="2 of 4 checks failed"):
        lab07.check_07(kafka, source, output, "nobody", [], 0)
    out = capsys.readouterr().out
    assert "shows nothing to read_committed readers" in out and "committed offset is -1001" in out
