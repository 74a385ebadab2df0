"""Automatic checks for the exercises in ``labs/``.

Each lab notebook ends with one call, e.g. ``check_00(kafka, topic, ...)``.
A check looks at two things: **the cluster itself** (it reads the topic back
with its own consumer, so it sees what the broker really stored) and **the
answers** the student computed. It prints one line per step — ``✓`` passed,
``✗`` with what was expected and a hint — and raises :class:`LabCheckFailed`
(an ``AssertionError``) if any step failed, so a notebook run stops there.
"""
from __future__ import annotations

import contextlib
import time
import uuid
from collections import Counter

import pandas as pd


class LabCheckFailed(AssertionError):
    """At least one step of a lab check failed; the message lists which and why.

    The checklist printed above it says everything: in a notebook the error shows as one line instead of a
    traceback into kafkalab's code (IPython's ``_render_traceback_``); it still stops a "Run All".
    """

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[0;31mLabCheckFailed\x1b[0m: {self}"]


def shown(value) -> str:
    """A student's value for a check's title or message: ``...`` reads as not filled in, not as ``Ellipsis``."""
    return "`...` (not filled in yet)" if value is ... else repr(value)


class Report:
    """Collects step results and prints them as a checklist."""

    def __init__(self, title: str):
        self.title = title
        self.results: list[tuple[str, bool, str]] = []
        self.skipped: list[tuple[int, str, str]] = []    # (where in results, name, why): checks not run

    def step(self, name: str, ok: bool, detail: str = "") -> bool:
        self.results.append((name, bool(ok), detail))
        return bool(ok)

    def skip(self, name: str, why: str) -> None:
        """A step this check cannot judge here (e.g. it needs kafkalab's broker): listed with ``–`` and why."""
        self.skipped.append((len(self.results), name, why))

    def render(self) -> str:
        lines = [self.title]
        skipped = {}
        for at, name, why in self.skipped:
            skipped.setdefault(at, []).append(f"  – {name} (not checked: {why})")
        for i, (name, ok, detail) in enumerate(self.results):
            lines.extend(skipped.pop(i, []))
            lines.append(f"  {'✓' if ok else '✗'} {name}")
            if not ok and detail:
                lines.extend(f"      {line}" for line in detail.splitlines())
        lines.extend(line for at in sorted(skipped) for line in skipped[at])
        failed = sum(1 for _, ok, _ in self.results if not ok)
        lines.append(("All checks passed. Well done!" if not self.skipped else
                      f"All the checks run passed ({len(self.skipped)} not checked here).") if not failed else
                     f"{failed} of {len(self.results)} checks failed — fix the step(s) marked ✗ and run again.")
        return "\n".join(lines)

    @contextlib.contextmanager
    def answer(self, name: str, variable: str):
        """Check one of the student's answers inside this block.

        An answer of a shape the check did not expect (a list where a tuple was
        asked for, Message objects instead of values, ...) becomes a ✗ line
        that says so, instead of a traceback from inside the check.
        """
        try:
            yield
        except Exception as exc:  # noqa: BLE001 -- whatever failed, it failed on the student's value
            self.step(name, False, f"could not check `{variable}` ({type(exc).__name__}: {exc}) — "
                                   f"print it and compare its type and shape with what the step asks for")

    def finish(self) -> None:
        print(self.render())
        failed = [name for name, ok, _ in self.results if not ok]
        if failed:
            raise LabCheckFailed(f"{len(failed)} of {len(self.results)} checks failed (see the checklist above); "
                                 f"first: {failed[0]}")


def unfilled(value) -> bool:
    """True for an answer still at its placeholder (``...``) or ``None``."""
    return value is ... or value is None


def unfilled_detail(variable: str, value, hint: str = "") -> str:
    """The ✗ detail for an unfilled answer: ``...`` means the TODO is untouched, ``None`` that it produced nothing."""
    said = "is still `...` (the TODO is not filled in yet)" if value is ... else "is None"
    return f"{variable} {said}" + (f" — {hint}" if hint else "")


def as_text(value):
    """Keys and values may come as bytes (from the client) or str (decoded): compare them as str."""
    return bytes(value).decode() if isinstance(value, (bytes, bytearray)) else value


def read_partition(bootstrap_servers: str, topic: str, partition: int = 0, timeout: float = 20.0) -> list:
    """Every record of one partition, from its log start offset to its high watermark (confluent-kafka).

    The check's own reader: it assigns the partition (no consumer group is
    involved, nothing is committed) and stops at the high watermark.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from .lessons.reading import watermark_offsets

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"kafkalab-check-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False})
    try:
        low, high = watermark_offsets(consumer, topic, partition, timeout)
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
    report = Report(f"Lab 00 — first events (topic {shown(topic)})")
    expected = READINGS_00
    stored = read_partition(kafka.bootstrap_servers, topic)

    # Step 1: what the broker stored.
    problems = []
    if len(stored) != len(expected):
        problems.append(f"the topic holds {len(stored)} record(s), expected {len(expected)} — "
                        f"produce every reading exactly once (re-running the produce cell adds duplicates: "
                        f"re-run the notebook from the top instead)")
    got_events = [(m.key(), m.value(), m.timestamp()[1]) for m in stored]
    want_events = [(s.encode(), c.encode(), ts) for s, c, ts in expected]
    if Counter(got_events) == Counter(want_events) and got_events != want_events:   # (keys may be None: no sort)
        problems.append("all five readings are there, but in another order — produce them in the order READINGS "
                        "lists them: offsets follow the order in which they were produced")
    else:
        if any(ts not in {t for _, _, t in want_events} for _, _, ts in got_events):
            problems.append("(a timestamp you do not pass to produce(timestamp=...) is the client's clock)")
        for i, (key, value, ts), (want_key, want_value, want_ts) in zip(range(len(stored)), got_events, want_events):
            if key != want_key:
                problems.append(f"offset {i}: key {key!r}, expected {want_key!r} (the sensor)")
            if value != want_value:
                problems.append(f"offset {i}: value {value!r}, expected {want_value!r} (the temperature)")
            if ts != want_ts:
                problems.append(f"offset {i}: timestamp {ts}, expected {want_ts}")
    for i, msg in enumerate(stored):
        headers = dict(msg.headers() or [])
        if headers.get("unit") != b"celsius":
            problems.append(f"offset {i}: headers are {msg.headers()}, expected a header ('unit', b'celsius')")
    report.step("step 1: the five readings are in the topic, in order, with key, value, timestamp and header",
                not problems, "\n".join(problems[:6]))

    # Step 1b: delivery reports.
    name = "step 1: delivered_offsets holds the offsets from the delivery reports"
    with report.answer(name, "delivered_offsets"):
        if unfilled(delivered_offsets):
            report.step(name, False, unfilled_detail("delivered_offsets", delivered_offsets,
                                                     "append msg.offset() in the delivery callback"))
        elif not (got := [int(o) for o in delivered_offsets]):
            report.step(name, False, "delivered_offsets is empty: no delivery report reached your callback — "
                                     "pass it to produce(..., on_delivery=on_delivery), append msg.offset() in "
                                     "it, and call flush() (reports are delivered inside poll()/flush())")
        else:
            report.step(name, got == [0, 1, 2, 3, 4],
                        f"got {got}, expected [0, 1, 2, 3, 4] — one offset per reading, in produce order "
                        f"(did you flush() before looking at them?)")

    # Step 2: the DataFrame.
    name = "step 2: `readings` is a DataFrame of all five records read from offset 0"
    with report.answer(name, "readings"):
        if unfilled(readings):
            report.step(name, False, unfilled_detail("readings", readings))
        elif not isinstance(readings, pd.DataFrame):
            report.step(name, False, f"readings is a {type(readings).__name__}, expected a pandas DataFrame — "
                                     f"pd.DataFrame([{{'offset': m.offset(), 'key': ..., 'value': ...}} for m in ...])")
        elif missing := {"offset", "key", "value"} - set(readings.columns):
            report.step(name, False, f"readings lacks the column(s) {sorted(missing)}; "
                                     f"it has {list(readings.columns)}")
        else:
            raw = [v for column in ("key", "value") for v in readings[column]]
            if any(isinstance(v, (bytes, bytearray)) for v in raw):
                sample = next(v for v in raw if isinstance(v, (bytes, bytearray)))
                report.step(name, False, f"keys and values in readings are bytes (like {sample!r}); "
                                         f"the step asks for str — decode them: m.key().decode(), m.value().decode()")
            else:
                got = [(int(o), as_text(k), as_text(v))
                       for o, k, v in zip(readings["offset"], readings["key"], readings["value"])]
                want = [(i, s, c) for i, (s, c, _) in enumerate(expected)]
                report.step(name, got == want, f"got rows (offset, key, value) {got}\nexpected {want}")

    # Step 3: the consumer chooses where to read.
    name = "step 3: reading from offset 3 gives exactly the last two values"
    with report.answer(name, "from_offset_3"):
        if unfilled(from_offset_3):
            report.step(name, False, unfilled_detail("from_offset_3", from_offset_3))
        else:
            got = list(from_offset_3)
            want = [c for _, c, _ in expected[3:]]
            if any(callable(getattr(v, "value", None)) for v in got):
                report.step(name, False, "from_offset_3 holds records (Message objects), expected their values "
                                         "as str — [m.value().decode() for m in ...]")
            elif any(isinstance(v, (bytes, bytearray)) for v in got):
                report.step(name, False, f"from_offset_3 holds bytes ({got!r}); the step asks for the values as "
                                         f"str, like {want!r} — m.value().decode()")
            elif not all(isinstance(v, str) for v in got):
                report.step(name, False, f"from_offset_3 is {got!r}, expected the values as str, like {want!r}")
            else:
                got = [as_text(v) for v in got]
                report.step(name, got == want,
                            f"got {got}, expected {want} — assign (or seek to) TopicPartition(topic, 0, 3), "
                            f"then read to the end of the log")

    # Step 4: reading deletes nothing.
    name = "step 4: after all that reading the log still starts at 0 and ends at 5"
    with report.answer(name, "watermarks"):
        if unfilled(watermarks):
            report.step(name, False, unfilled_detail("watermarks", watermarks,
                                                     "use consumer.get_watermark_offsets(...)"))
        elif not isinstance(watermarks, (tuple, list)) or len(watermarks) != 2:
            report.step(name, False, f"watermarks is {watermarks!r}, expected a pair (low, high) — what "
                                     f"consumer.get_watermark_offsets(TopicPartition(topic, 0)) returns "
                                     f"(consumer.position() is where one consumer is, not the log's extent)")
        else:
            got = tuple(int(x) for x in watermarks)
            report.step(name, got == (0, 5), f"got (low, high) = {got}, expected (0, 5)")

    report.finish()
