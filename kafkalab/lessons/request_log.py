"""A producer's requests, rebuilt from librdkafka's debug log: lesson 02's reordering experiment.

With ``debug="msg,protocol"`` librdkafka logs each Produce request it builds (``Produce MessageSet
with N message(s)``), sends (``Sent ProduceRequest``) and gets an answer for (``... encountered error:
X (actions ...)`` or ``... delivered``). :class:`RequestLog` keeps those lines (a ``logging`` handler
for the producer's ``logger``); :func:`request_timeline` turns them into one row per event, numbering
the requests and counting how many awaited an answer at each moment — how many were *in flight*,
which is what ``max.in.flight.requests.per.connection`` limits. :func:`produce_attempts` times each Produce
request sent and answered (the retry backoff and timeout steps).
"""
from __future__ import annotations

import logging
import re
import time

import pandas as pd


class RequestLog(logging.Handler):
    """librdkafka's log lines as they come (``lines``), to reconstruct the producer's requests, and when each
    reached Python (``times``, ``time.monotonic()``; librdkafka hands its log lines to the application's
    ``poll()``/``flush()``, which a producing loop calls all the time, so a line arrives within a millisecond or
    so of being written)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []
        self.times: list[float] = []

    def emit(self, record):
        self.lines.append(record.getMessage())
        self.times.append(time.monotonic())


REQUEST_EVENTS = [("built", re.compile(r"Produce MessageSet with (\d+) message")),
                  ("sent", re.compile(r"Sent ProduceRequest")),
                  ("error", re.compile(r"MessageSet with (\d+) message\(s\) .*encountered error: (.*?) \(actions")),
                  ("stored", re.compile(r"MessageSet with (\d+) message\(s\) .*delivered"))]
"""(event, pattern) of the librdkafka debug lines that mark a Produce request's life."""


def request_timeline(lines, reports) -> pd.DataFrame:
    """One row per produce request event (``request``, ``event``, ``records``, ``awaiting an answer``), in order.

    On one connection requests are sent and answered in the order they were built, so counting each
    kind of event numbers the requests. ``reports``: the values of the delivery reports, in the order
    librdkafka handled the answers; they name the first and last record a stored request held.
    A request that failed before it was sent (its connection closed) counts as sent and answered.
    """
    rows, counts, reported = [], {"built": 0, "sent": 0, "answered": 0}, 0
    for line in lines:
        kind, m = next(((k, p.search(line)) for k, p in REQUEST_EVENTS if p.search(line)), (None, None))
        if kind is None:
            continue
        counter = "answered" if kind in ("error", "stored") else kind
        counts[counter] += 1
        row = {"request": counts[counter], "event": kind, "records": ""}
        if kind == "built":
            row["records"] = f"{m[1]} records"
        elif kind == "error":
            row["event"], row["records"] = f"answered: {m[2]}, retried", f"{m[1]} records"
            if counts["answered"] > counts["sent"]:     # failed before it was sent (its connection closed)
                counts["sent"] += 1
                row["event"] = f"failed unsent: {m[2]}, retried"
        elif kind == "stored":
            n = int(m[1])
            row["event"], row["records"] = "answered: stored", f"{reports[reported]}…{reports[reported + n - 1]}"
            reported += n
        row["awaiting an answer"] = counts["sent"] - counts["answered"]
        rows.append(row)
    return pd.DataFrame(rows)


ATTEMPT_EVENTS = [("sent", re.compile(r"Sent ProduceRequest")),
                  ("answered", re.compile(r"Received ProduceResponse .*rtt ([\d.]+)ms")),
                  ("timed out", re.compile(r"Timed out ProduceRequest in flight \(after (\d+)ms")),
                  ("error", re.compile(r"MessageSet with \d+ message\(s\) .*encountered error: (.*?) \(actions")),
                  ("delivered", re.compile(r"MessageSet with \d+ message\(s\) .*delivered")),
                  ("gave up", re.compile(r"message\.timeout\.ms exceeded"))]
"""(event, pattern) of the librdkafka debug lines (``debug="msg,protocol"``) of one Produce request's attempts."""


def produce_attempts(log: RequestLog) -> pd.DataFrame:
    """One row per Produce request sent: ``attempt`` (1, 2, ...), ``sent ms`` (from the first), ``waited ms`` (the
    round trip librdkafka measured, or how long it waited before it timed the request out), ``outcome`` (the
    error, ``delivered``) and ``gap ms`` (since the previous attempt's answer: the retry backoff). For one
    record at a time: its requests follow each other, each answered (or timed out) before the next is sent."""
    rows: list[dict] = []
    answered_at = None
    for line, t in zip(log.lines, log.times):
        kind, m = next(((k, p.search(line)) for k, p in ATTEMPT_EVENTS if p.search(line)), (None, None))
        if kind == "sent":
            rows.append({"attempt": len(rows) + 1, "sent_at": t, "waited ms": None, "outcome": None,
                         "gap ms": None if answered_at is None else (t - answered_at) * 1000})
        elif not rows:
            continue
        elif kind in ("answered", "timed out"):
            rows[-1]["waited ms"] = float(m[1])
            answered_at = t
            if kind == "timed out":
                rows[-1]["outcome"] = "no answer: timed out"
        elif kind == "error" and rows[-1]["outcome"] is None:
            rows[-1]["outcome"] = m[1]
        elif kind == "delivered":
            rows[-1]["outcome"] = "delivered"
        elif kind == "gave up" and rows[-1]["outcome"] is None:
            rows[-1]["outcome"] = "message.timeout.ms exceeded"
    frame = pd.DataFrame(rows, columns=["attempt", "sent_at", "waited ms", "outcome", "gap ms"])
    sent_at = frame.pop("sent_at")
    frame.insert(1, "sent ms", (sent_at - sent_at.iloc[0]) * 1000 if len(frame) else sent_at)
    return frame
