"""The automatic check of lab 06 (word counts per minute): ``check_06(...)``.

Like the checks in :mod:`kafkalab.checks`, it looks at the cluster itself —
it reads the output topic back with its own consumer, as a changelog — and
at the student's answer, and prints a ✓/✗ checklist, raising
:class:`kafkalab.checks.LabCheckFailed` if a step is wrong. The expected
counts are computed here from ``LINES`` and their timestamps, not read from
the student's results.
"""
from __future__ import annotations

from collections import Counter

from kafkalab.checks import Report, read_partition, unfilled, unfilled_detail

T0 = 1735722000000   # 2025-01-01 09:00:00 UTC
SECOND = 1000

#: (seconds after 09:00, line): when each line was written, its record timestamp
LINES = [
    (5, "the quick brown fox"),
    (20, "the lazy dog"),
    (50, "quick quick"),
    (65, "the fox jumps"),
    (100, "over the dog"),
    (130, "the end"),
    (170, "THE FOX, the dog!"),
]


def minute_of(seconds: int) -> str:
    return f"09:{seconds // 60:02d}"


def expected_counts() -> dict:
    """{"09:MM word": count} for every one-minute window (event time = the record timestamp)."""
    import re

    counts = Counter()
    for seconds, line in LINES:
        for word in re.split(r"\W+", line.lower()):
            if word:
                counts[f"{minute_of(seconds)} {word}"] += 1
    return dict(counts)


def _changelog(kafka, topic):
    from confluent_kafka import Consumer

    consumer = Consumer(kafka.client_config(group_id="lab-06-check-meta"))
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    finally:
        consumer.close()
    return [m for p in partitions for m in read_partition(kafka.bootstrap_servers, topic, p)]


def check_06(kafka, out_topic: str, per_minute) -> None:
    report = Report("Lab 06 · word counts per minute")
    expected = expected_counts()

    # step 1: the output topic, read as a changelog by the check itself
    try:
        records = _changelog(kafka, out_topic)
    except Exception as exc:   # noqa: BLE001
        records = None
        report.step("step 1: the windowed counts in the output topic", False,
                    f"could not read topic {out_topic!r}: {exc}")
    if records is not None:
        table, problems = {}, []
        for m in records:
            if m.key() is None:
                problems.append(f"offset {m.offset()}: a record without a key (the key is \"09:MM word\")")
                continue
            if m.value() is None or len(m.value()) != 8:
                problems.append(f"key {m.key()!r}: value {m.value()!r} is not 8 bytes — write the count as a "
                                f"big-endian long, F.unhex(F.lpad(F.hex('count'), 16, '0'))")
                continue
            table[m.key().decode(errors="replace")] = int.from_bytes(m.value(), "big")
        if not records:
            problems.append(f"topic {out_topic!r} is empty — did the query run to the end "
                            f"(trigger(availableNow=True), then awaitTermination())?")
        elif not problems:
            missing = sorted(set(expected) - set(table))
            extra = sorted(set(table) - set(expected))
            wrong = sorted(k for k in set(table) & set(expected) if table[k] != expected[k])
            if extra and all(" " not in k or len(k.split(" ", 1)[0]) != 5 for k in extra):
                problems.append(f"keys like {extra[0]!r}: expected \"09:MM word\", e.g. \"09:00 quick\" — "
                                f"date_format(window.start, 'HH:mm'), a space, the word")
            else:
                if missing:
                    problems.append(f"missing keys, e.g. {missing[:3]} — counted by the record timestamp's minute?")
                if extra:
                    problems.append(f"unexpected keys, e.g. {extra[:3]} — lower-case the words and drop empty ones")
                for k in wrong[:3]:
                    problems.append(f"{k!r}: latest count {table[k]}, expected {expected[k]}")
        report.step("step 1: the windowed counts in the output topic", not problems, "\n".join(problems))

    # step 2: the student's table from the changelog
    name = "step 2: per_minute, the final table read back from the changelog"
    if unfilled(per_minute):
        report.step(name, False, unfilled_detail("per_minute", per_minute, "a dict {\"09:MM word\": count}"))
    else:
        with report.answer(name, "per_minute"):
            got = {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in dict(per_minute).items()}
            ok = got == expected
            detail = ""
            if not ok:
                diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
                detail = (f"{len(diff)} key(s) differ, e.g. {diff[0]!r}: {got.get(diff[0])} here, expected "
                          f"{expected.get(diff[0])} — keep the *latest* record of each key")
            report.step(name, ok, detail)
    report.finish()
