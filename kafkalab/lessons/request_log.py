"""A producer's requests, rebuilt from librdkafka's debug log: lesson 02's reordering experiment.

With ``debug="msg,protocol"`` librdkafka logs each Produce request it builds (``Produce MessageSet
with N message(s)``), sends (``Sent ProduceRequest``) and gets an answer for (``... encountered error:
X (actions ...)`` or ``... delivered``). :class:`RequestLog` keeps those lines (a ``logging`` handler
for the producer's ``logger``); :func:`request_timeline` turns them into one row per event, numbering
the requests and counting how many awaited an answer at each moment — how many were *in flight*,
which is what ``max.in.flight.requests.per.connection`` limits.
"""
from __future__ import annotations

import logging
import re

import pandas as pd


class RequestLog(logging.Handler):
    """librdkafka's log lines as they come (``lines``), to reconstruct the producer's requests."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


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
