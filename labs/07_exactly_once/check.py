"""The automatic check of lab 07 (exactly once): ``check_07(...)``.

It reads the copier's output topic back with its own consumers, once at
``read_committed`` and once at ``read_uncommitted``, and asks the group
coordinator for the copier's committed offset: every input record must be in
the output exactly once for a ``read_committed`` reader, and the student's
answers must be what those readers really see.
"""
from __future__ import annotations

import collections
import time

from kafkalab.checks import Report, shown, unfilled, unfilled_detail

RECORDS = 60
BATCH = 10         # records per transaction
CRASH_AT = 25      # the first run crashes when it transforms the record at offset 25 (in its third transaction)
TRANSACTIONAL_ID = "lab-07-copier"


class Crash(Exception):
    """Raised by transform() to stand for the copier process dying."""


def expected_output() -> list[str]:
    return [f"reading-{i} (copied)" for i in range(RECORDS)]


def read_values(kafka, topic: str, isolation_level: str, timeout: float = 20.0) -> list[str]:
    """Every value of partition 0 of ``topic`` that a consumer at ``isolation_level`` returns, in order."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "lab-07-check",
                         "enable.auto.commit": False, "isolation.level": isolation_level,
                         "fetch.wait.max.ms": 50, "log_level": 4})
    try:
        tp = TopicPartition(topic, 0)
        low, end = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
        if end <= low:
            return []                                                  # nothing in the partition
        consumer.assign([TopicPartition(topic, 0, low)])
        values, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(500, timeout=0.3) if m.error() is None]
            values += [m.value().decode() if m.value() is not None else None for m in batch]
            if not batch and consumer.position([tp])[0].offset >= end:   # past the last record or marker
                break
        return values
    finally:
        consumer.close()


def committed_offset(kafka, group: str, topic: str):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False, "log_level": 4})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        consumer.close()


def _as_values(values) -> list[str]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"expected a list of values, got {type(values).__name__}")
    out = []
    for v in values:
        if hasattr(v, "value") and callable(v.value):
            raise TypeError("it holds records (Message objects): keep msg.value().decode() of each")
        out.append(v.decode() if isinstance(v, (bytes, bytearray)) else v)
    return out


def check_07(kafka, source, output, group, committed_values, uncommitted_count) -> None:
    """Check lab 07 (``labs/07_exactly_once``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 07 — a copier that crashes, exactly once (output {shown(output)}, group {shown(group)})")
    want = expected_output()
    committed = read_values(kafka, str(output), "read_committed")
    uncommitted = read_values(kafka, str(output), "read_uncommitted")
    seen = collections.Counter(committed)

    name = f"a read_committed reader sees each of the {RECORDS} records copied exactly once"
    duplicated = [v for v, n in seen.items() if n > 1]
    missing = [v for v in want if v not in seen]
    if not committed:
        hint = ("the output topic shows nothing to read_committed readers: copy() must produce transform(msg) for "
                "each record and commit_transaction() at the end of each batch (init_transactions() needs "
                "'transactional.id' in producer_config)")
    elif duplicated:
        hint = (f"{len(duplicated)} records duplicated, e.g. {duplicated[:3]} — the crashed batch was written again: "
                "were the output and the input offsets in one transaction? (begin_transaction(), produce, "
                "send_offsets_to_transaction(...), commit_transaction(); no consumer.commit())")
    elif missing:
        hint = (f"{len(missing)} records missing, e.g. {missing[:3]} — offsets were committed for records whose "
                "output was never committed: commit the offsets only inside the transaction")
    else:
        hint = "the records are all there once, but not in the input's order"
    report.step(name, committed == want, hint)

    name = f"the group's committed offset is {RECORDS} (committed by the transactions)"
    offset = committed_offset(kafka, str(group), str(source))
    report.step(name, offset == RECORDS,
                f"committed offset is {offset} (negative: none) — send the consumer's position, the offset of the "
                f"next record to read, with send_offsets_to_transaction(..., consumer.consumer_group_metadata())")

    name = "committed_values is what a read_committed consumer reads from the output"
    with report.answer(name, "committed_values"):
        if unfilled(committed_values):
            report.step(name, False, unfilled_detail("committed_values", committed_values,
                                                     "read the output with isolation.level=read_committed"))
        else:
            got = _as_values(committed_values)
            report.step(name, got == committed,
                        f"got {len(got)} values, a read_committed reader sees {len(committed)}"
                        + (" — the same as read_uncommitted: check the reader's isolation.level"
                           if len(got) == len(uncommitted) != len(committed) else ""))

    name = "uncommitted_count is how many records a read_uncommitted consumer reads from the output"
    with report.answer(name, "uncommitted_count"):
        if unfilled(uncommitted_count):
            report.step(name, False, unfilled_detail("uncommitted_count", uncommitted_count,
                                                     "count what a consumer with isolation.level=read_uncommitted reads"))
        else:
            report.step(name, int(uncommitted_count) == len(uncommitted),
                        f"got {uncommitted_count}, a read_uncommitted reader sees {len(uncommitted)} "
                        f"(the aborted transaction's records are still in the log; markers are not records)")
    report.finish()
