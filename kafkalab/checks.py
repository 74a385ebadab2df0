"""Automatic checks for the exercises in ``labs/``.

Each lab notebook ends with one call, e.g. ``check_00(kafka, topic, ...)``.
A check looks at two things: **the cluster itself** (it reads the topic back
with its own consumer, so it sees what the broker really stored) and **the
answers** the student computed. It prints one line per step — ``✓`` passed,
``✗`` with what was expected and a hint — and raises :class:`LabCheckFailed`
(an ``AssertionError``) if any step failed, so a notebook run stops there.
"""
from __future__ import annotations

import time
import uuid

import pandas as pd


class LabCheckFailed(AssertionError):
    """At least one step of a lab check failed; the message lists which and why."""


class Report:
    """Collects step results and prints them as a checklist."""

    def __init__(self, title: str):
        self.title = title
        self.results: list[tuple[str, bool, str]] = []

    def step(self, name: str, ok: bool, detail: str = "") -> bool:
        self.results.append((name, bool(ok), detail))
        return bool(ok)

    def render(self) -> str:
        lines = [self.title]
        for name, ok, detail in self.results:
            lines.append(f"  {'✓' if ok else '✗'} {name}")
            if not ok and detail:
                lines.extend(f"      {line}" for line in detail.splitlines())
        failed = sum(1 for _, ok, _ in self.results if not ok)
        lines.append("All checks passed. Well done!" if not failed else
                     f"{failed} of {len(self.results)} checks failed — fix the step(s) marked ✗ and run again.")
        return "\n".join(lines)

    def finish(self) -> None:
        print(self.render())
        failed = [name for name, ok, _ in self.results if not ok]
        if failed:
            raise LabCheckFailed(f"{len(failed)} of {len(self.results)} checks failed (see the checklist above); "
                                 f"first: {failed[0]}")


def _unfilled(value) -> bool:
    return value is ... or value is None


def read_partition(bootstrap_servers: str, topic: str, partition: int = 0, timeout: float = 20.0) -> list:
    """Every record of one partition, from its log start offset to its high watermark (confluent-kafka).

    The check's own reader: it assigns the partition (no consumer group is
    involved, nothing is committed) and stops at the high watermark.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"kafkalab-check-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        records, deadline = [], time.monotonic() + timeout
        while (not records or records[-1].offset() < high - 1) and high > low and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.5):
                if msg.error() is None:
                    records.append(msg)
        return records
    finally:
        consumer.close()


# --------------------------------------------------------------------------------------------
# Lab 00: first events
# --------------------------------------------------------------------------------------------

READINGS_00 = [
    # (sensor, celsius, timestamp in ms since the epoch) -- 2025-01-01 09:00 UTC onwards, one a minute
    ("greenhouse", "21.5", 1735722000000),
    ("cellar", "11.0", 1735722060000),
    ("greenhouse", "22.1", 1735722120000),
    ("attic", "30.4", 1735722180000),
    ("cellar", "10.8", 1735722240000),
]
"""The readings lab 00 asks the student to produce, in this order."""


def check_00(kafka, topic: str, delivered_offsets, readings, from_offset_3, watermarks) -> None:
    """Check lab 00 (``labs/00_first_events``).

    - ``kafka``: the ``kafkalab.connect()`` handle; ``topic``: the topic name it returned.
    - ``delivered_offsets``: offsets from the producer's delivery reports, in produce order.
    - ``readings``: DataFrame of the records read from offset 0 (columns offset, key, value, ...).
    - ``from_offset_3``: the values read after positioning the consumer at offset 3.
    - ``watermarks``: ``(low, high)`` of the partition after all the reading.
    """
    report = Report(f"Lab 00 — first events (topic {topic!r})")
    expected = READINGS_00
    stored = read_partition(kafka.bootstrap_servers, topic)

    # Step 1: what the broker stored.
    problems = []
    if len(stored) != len(expected):
        problems.append(f"the topic holds {len(stored)} record(s), expected {len(expected)} — "
                        f"produce every reading exactly once (re-running the produce cell adds duplicates: "
                        f"re-run the notebook from the top instead)")
    for i, (msg, (sensor, celsius, ts)) in enumerate(zip(stored, expected)):
        got = (msg.key(), msg.value(), msg.timestamp()[1])
        want = (sensor.encode(), celsius.encode(), ts)
        if got != want:
            problems.append(f"offset {i}: stored key/value/timestamp {got}, expected {want}")
        headers = dict(msg.headers() or [])
        if headers.get("unit") != b"celsius":
            problems.append(f"offset {i}: headers are {msg.headers()}, expected a header ('unit', b'celsius')")
    report.step("step 1: the five readings are in the topic, in order, with key, value, timestamp and header",
                not problems, "\n".join(problems[:6]))

    # Step 1b: delivery reports.
    if _unfilled(delivered_offsets):
        report.step("step 1: delivered_offsets holds the offsets from the delivery reports", False,
                    "delivered_offsets is still `...` — append msg.offset() in the delivery callback")
    else:
        got = list(delivered_offsets)
        report.step("step 1: delivered_offsets holds the offsets from the delivery reports", got == [0, 1, 2, 3, 4],
                    f"got {got}, expected [0, 1, 2, 3, 4] — did you flush() before looking at them?")

    # Step 2: the DataFrame.
    name = "step 2: `readings` is a DataFrame of all five records read from offset 0"
    if _unfilled(readings):
        report.step(name, False, "readings is still `...`")
    elif not isinstance(readings, pd.DataFrame):
        report.step(name, False, f"readings is a {type(readings).__name__}, expected a pandas DataFrame")
    elif missing := {"offset", "key", "value"} - set(readings.columns):
        report.step(name, False, f"readings lacks the column(s) {sorted(missing)}")
    else:
        def text(v):
            return v.decode() if isinstance(v, (bytes, bytearray)) else v
        got = [(int(o), text(k), text(v)) for o, k, v in zip(readings["offset"], readings["key"], readings["value"])]
        want = [(i, s, c) for i, (s, c, _) in enumerate(expected)]
        report.step(name, got == want, f"got rows (offset, key, value) {got}\nexpected {want}")

    # Step 3: the consumer chooses where to read.
    name = "step 3: reading from offset 3 gives exactly the last two values"
    if _unfilled(from_offset_3):
        report.step(name, False, "from_offset_3 is still `...`")
    else:
        got = [v.decode() if isinstance(v, (bytes, bytearray)) else v for v in from_offset_3]
        want = [c for _, c, _ in expected[3:]]
        report.step(name, got == want, f"got {got}, expected {want} — assign TopicPartition(topic, 0, 3)")

    # Step 4: reading deletes nothing.
    name = "step 4: after all that reading the log still starts at 0 and ends at 5"
    if _unfilled(watermarks):
        report.step(name, False, "watermarks is still `...` — use consumer.get_watermark_offsets(...)")
    else:
        got = tuple(int(x) for x in watermarks)
        report.step(name, got == (0, 5), f"got (low, high) = {got}, expected (0, 5)")

    report.finish()
