"""A client's own metrics: librdkafka's statistics, as a table and as a series over time.

librdkafka (and so confluent-kafka) emits a JSON document every ``statistics.interval.ms``
(librdkafka's STATISTICS.md), handed to ``stats_cb``. Some fields are counters since the client
started (``tx``: requests sent, ``txmsgs``: records sent), some are gauges (``outbuf_cnt``: requests
waiting to be sent, ``waitresp_cnt``: requests sent and waiting for their response, ``msg_cnt``: records
in the producer's queue), and the latency and batch fields are **windows**: min/avg/max/percentiles of
what happened since the previous document, in microseconds (``rtt``: request round trip,
``int_latency``: a record's time in the producer's queue, from ``produce()`` to being put in a batch,
``outbuf_latency``: a request's wait before it is written to the socket, ``throttle``: the throttle times
brokers answered) or bytes and records (``batchsize``, ``batchcnt`` per topic). A window with ``cnt`` 0
saw nothing, and is left out here.

Kafka's Java clients keep the same numbers as JMX metrics (``kafka.producer:type=producer-metrics``:
``request-latency-avg``, ``record-queue-time-avg``, ``batch-size-avg``, ``records-per-request-avg``,
``requests-in-flight``, ``produce-throttle-time-avg``); librdkafka's names are its own.

    stats = ClientStats(interval_ms=200)
    producer = Producer({**kafka.client_config(), **stats.config()})
    ...                       # produce, then producer.flush(); stats.wait_for_next()
    stats.broker_table()      # one row per broker: requests, round trip, queue time, throttle
    stats.topic_table()       # one row per topic: batches, bytes and records per batch
    stats.frame()             # long form: t, source, metric, value
    over_time(stats.series("rtt_ms_avg"), ylabel="round trip (ms)")   # kafkalab.viz.plots
"""
from __future__ import annotations

import json
import threading
import time

import pandas as pd

# The window fields kept, in librdkafka's units (µs, bytes, records), and the name each gets here
BROKER_WINDOWS = {"rtt": "rtt_ms", "int_latency": "queue_time_ms", "outbuf_latency": "outbuf_latency_ms",
                  "throttle": "throttle_ms"}
TOPIC_WINDOWS = {"batchsize": "batch_bytes", "batchcnt": "batch_records"}
BROKER_GAUGES = ("outbuf_cnt", "waitresp_cnt")
BROKER_COUNTERS = ("tx", "txbytes", "txretries", "req_timeouts")
CLIENT_FIELDS = ("msg_cnt", "txmsgs", "rxmsgs")
MICROSECONDS = {"rtt", "int_latency", "outbuf_latency"}   # throttle is in ms already


class ClientStats:
    """Collects the statistics documents of one client (give :meth:`config` to its constructor)."""

    def __init__(self, interval_ms: int = 500):
        if interval_ms <= 0:
            raise ValueError("statistics.interval.ms must be positive (0 turns librdkafka's statistics off)")
        self.interval_ms = interval_ms
        self.snapshots: list[tuple[float, dict]] = []   # (seconds since this object was made, the document)
        self._t0 = time.monotonic()
        self._arrived = threading.Condition()

    def config(self) -> dict:
        """``statistics.interval.ms`` and the ``stats_cb`` that keeps each document."""
        return {"statistics.interval.ms": self.interval_ms, "stats_cb": self._on_stats}

    def _on_stats(self, text: str) -> None:
        with self._arrived:
            self.snapshots.append((time.monotonic() - self._t0, json.loads(text)))
            self._arrived.notify_all()

    def wait_for_next(self, client, timeout_s: float = 10.0) -> None:
        """Serve ``client``'s callbacks (``poll``) until one more document came: the last window then holds
        what the client did up to now. Raises TimeoutError if none comes within ``timeout_s``."""
        seen, deadline = len(self.snapshots), time.monotonic() + timeout_s
        while len(self.snapshots) == seen:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no statistics from the client within {timeout_s} s "
                                   f"(statistics.interval.ms={self.interval_ms})")
            client.poll(0.05)

    def frame(self) -> pd.DataFrame:
        """Every kept value: ``t`` (s), ``source`` (``client``, ``broker <id>`` or ``topic <name>``), ``metric``,
        ``value``. Windows give ``<name>_avg``, ``<name>_p99``, ``<name>_max``, ``<name>_sum`` and ``<name>_cnt``."""
        rows = []
        for t, doc in self.snapshots:
            rows += [(t, "client", f, doc[f]) for f in CLIENT_FIELDS if f in doc]
            for b in doc.get("brokers", {}).values():
                if b.get("nodeid", -1) < 0:   # the bootstrap connections, before a broker id is known
                    continue
                source = f"broker {b['nodeid']}"
                rows += [(t, source, f, b[f]) for f in BROKER_GAUGES + BROKER_COUNTERS if f in b]
                rows += _window_rows(t, source, b, BROKER_WINDOWS)
            for name, topic in doc.get("topics", {}).items():
                rows += _window_rows(t, f"topic {name}", topic, TOPIC_WINDOWS)
        return pd.DataFrame(rows, columns=["t", "source", "metric", "value"])

    def series(self, metric: str) -> pd.DataFrame:
        """One ``metric`` of :meth:`frame` (e.g. ``rtt_ms_avg``, ``waitresp_cnt``, ``batch_records_avg``) over time:
        a column ``t`` and one column per source that has it, as ``kafkalab.viz.plots.over_time`` draws them. A
        window that saw nothing has no value (a gap, not a 0)."""
        frame = self.frame()
        part = frame[frame["metric"] == metric]
        if part.empty:
            known = sorted(set(frame["metric"]))
            raise KeyError(f"no {metric!r} in the statistics kept" + (f"; there are {', '.join(known)}" if known else
                                                                     " (none came yet: wait_for_next)"))
        wide = part.pivot_table(index="t", columns="source", values="value", aggfunc="last")
        wide.columns = [str(c) for c in wide.columns]
        return wide.reset_index()

    def broker_table(self) -> pd.DataFrame:
        """One row per broker over the whole run: requests sent (a counter since the client started), the most
        in flight at once (as the documents caught it), round trip, queue time and throttle (the mean over every
        window, as one long window would have it: their sums over their counts; and the worst window's p99)."""
        return self._table("broker", (("rtt_ms", "round trip ms"), ("queue_time_ms", "queue time ms"),
                                      ("throttle_ms", "throttle ms")),
                           lambda by: {"requests": _last(by.get("tx")), "max in flight": _max(by.get("waitresp_cnt"))})

    def topic_table(self) -> pd.DataFrame:
        """One row per topic: batches sent, bytes and records per batch (mean, and the worst window's p99)."""
        return self._table("topic", (("batch_bytes", "bytes per batch"), ("batch_records", "records per batch")),
                           lambda by: {"batches": int(by["batch_bytes_cnt"].sum()) if "batch_bytes_cnt" in by else 0})

    def _table(self, kind, windows, first_columns) -> pd.DataFrame:
        frame = self.frame()
        rows = {}
        for source, part in frame[frame["source"].str.startswith(kind)].groupby("source", sort=True):
            by = {m: g["value"] for m, g in part.groupby("metric")}
            row = first_columns(by)
            for name, label in windows:
                mean = _mean(by.get(f"{name}_sum"), by.get(f"{name}_cnt"))
                if mean is not None:
                    row[f"{label} (mean)"] = round(mean, 3)
                    row[f"{label} (p99, worst window)"] = round(float(by[f"{name}_p99"].max()), 3)
            name = source.split(" ", 1)[1]
            rows[int(name) if kind == "broker" else name] = row
        table = pd.DataFrame.from_dict(rows, orient="index")
        table.index.name = kind
        return table


def _window_rows(t, source, fields, windows) -> list:
    rows = []
    for field, name in windows.items():
        w = fields.get(field)
        if not w or not w.get("cnt"):
            continue
        scale = 1000.0 if field in MICROSECONDS else 1.0
        rows += [(t, source, f"{name}_{stat}", w[stat] / scale) for stat in ("avg", "p99", "max", "sum")]
        rows.append((t, source, f"{name}_cnt", w["cnt"]))
    return rows


def _last(series) -> int:
    return 0 if series is None or series.empty else int(series.iloc[-1])


def _max(series) -> int:
    return 0 if series is None or series.empty else int(series.max())


def _mean(sums, counts):
    """The mean over every window: their sums over their counts (librdkafka's ``avg`` of a window is an integer from
    its histogram's buckets, approximate; ``sum`` and ``cnt`` are exact)."""
    if sums is None or counts is None or counts.sum() == 0:
        return None
    return float(sums.sum() / counts.sum())
