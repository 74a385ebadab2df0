"""The automatic check of lab 05 (consumer groups and offsets): ``check_05(...)``.

It asks the broker for the group's committed offset and compares what the
student's consumer processed (offsets, in order, across the crash and the
restart) with the topic: nothing may be missing (at-least-once), and the
duplicates the student reports must be the ones that really happened.
"""
from __future__ import annotations

import collections

from kafkalab.checks import Report, unfilled, unfilled_detail, shown

RECORDS = 50
CRASH_AT = 23      # the first run crashes while processing its 23rd record


class Crash(Exception):
    """Raised by process() to stand for the consumer process dying."""


def committed_offset(kafka, group: str, topic: str):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                         "enable.auto.commit": False, "log_level": 4})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=15)[0].offset
    finally:
        consumer.close()


def check_05(kafka, topic, group, processed, duplicates) -> None:
    """Check lab 05 (``labs/05_consumer_groups``); the arguments are the variables the lab asks for."""
    report = Report(f"Lab 05 — an at-least-once consumer (topic {shown(topic)}, group {shown(group)})")
    offsets = [int(o) for o in processed]
    seen = collections.Counter(offsets)

    name = f"every record was processed at least once (offsets 0..{RECORDS - 1})"
    missing = [o for o in range(RECORDS) if o not in seen]
    hint = ""
    if not offsets:
        hint = " — nothing was processed: consume() must call process(msg) for each record it reads"
    elif missing:
        hint = (" — records lost at the crash: the consumer committed offsets of records it had not processed yet "
                "(commit only after process(); with enable.auto.commit=true, librdkafka stores each offset as "
                "soon as it hands you the record — commit by hand, or set enable.auto.offset.store=false and "
                "store_offsets() after processing)")
    report.step(name, not missing, f"{len(missing)} never processed, e.g. {missing[:5]}{hint}")

    name = f"the group's committed offset is {RECORDS} at the end (the next record to read)"
    committed = committed_offset(kafka, str(group), str(topic))
    report.step(name, committed == RECORDS,
                f"committed offset is {committed} — commit after processing the last batch too "
                f"(a negative value means nothing was committed)")

    name = "duplicates is the number of records processed more than once"
    want = sum(1 for n in seen.values() if n > 1)
    with report.answer(name, "duplicates"):
        if unfilled(duplicates):
            report.step(name, False, unfilled_detail("duplicates", duplicates,
                                                     "count the offsets that appear more than once in processed"))
        else:
            report.step(name, int(duplicates) == want, f"got {duplicates}, the processed offsets show {want}")

    name = "the duplicates are only what the crash caused (fewer than one commit interval, at most 10)"
    report.step(name, want <= 10, f"{want} records were processed twice — commit at least every 10 records")
    report.finish()
