"""Kafka's own metrics over time: a thread that samples ``cluster.metrics(names)`` while a lesson breaks brokers.

:class:`MetricsRecorder` asks the cluster for the named metrics (``Cluster.metrics``: each running broker's
Prometheus text, under the names the JMX exporter gives Kafka's MBeans, e.g.
``kafka_server_replicamanager_underreplicatedpartitions``) every ``interval_s`` in a background thread, as
:class:`~kafkalab.lessons.timeline.Timeline` samples a partition's state. A broker that is down or paused has no
rows in the rounds it missed. Use it around a block, or across cells::

    with MetricsRecorder(cluster, [URP]) as recorder:      # stops its thread even if the block raises
        cluster.kill(1)
    recorder.frame()

    recorder = MetricsRecorder(cluster, [URP]).start()      # ... cells that kill and wait ...
    frame = recorder.stop()

``frame(since)`` is one DataFrame of ``t`` (seconds after ``since``; by default after the recorder started; one
``t`` per round, shared by the brokers sampled in it), ``broker``, ``metric`` and ``value``: what
:func:`kafkalab.viz.plots.metrics_over_time` plots. A sample with labels has them in its metric's name, as
Prometheus writes them (``..._messagesin_total{topic="orders"}``). :func:`per_broker` is one metric as a table,
one column per broker.
"""
from __future__ import annotations

import threading
import time

import pandas as pd

COLUMNS = ["t", "broker", "metric", "value"]


def _named(metric: str, labels) -> str:
    if not labels:
        return metric
    return metric + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(dict(labels).items())) + "}"


class MetricsRecorder:
    """Samples ``cluster.metrics(names)`` every ``interval_s`` (about; a round takes as long as the scrapes).

    ``rounds``: ``(time.time(), DataFrame)`` per round that answered; ``errors``: the rounds that failed (a broker
    dying in the middle of its scrape), as their exceptions: the next round tries again. ``mark(label)`` notes an
    instant for a plot's dotted lines, as ``Timeline.mark``.
    """

    def __init__(self, cluster, names, interval_s: float = 0.5):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s!r}")
        if names is None:
            raise ValueError("name the metrics to record (a name, a prefix or a list of them), not None: all of them "
                             "every half second is more than a lesson needs")
        self.cluster, self.names, self.interval_s = cluster, names, interval_s
        self.rounds: list[tuple[float, pd.DataFrame]] = []
        self.errors: list[Exception] = []
        self.marks: dict[str, float] = {}
        self.started_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="metrics-recorder")

    def sample(self) -> tuple[float, pd.DataFrame]:
        """One round, taken now (the thread appends these)."""
        at = time.time()
        return at, self.cluster.metrics(self.names)

    def _run(self):
        while not self._stop.is_set():
            try:
                self.rounds.append(self.sample())
            except Exception as exc:   # noqa: BLE001 - a broker went away mid-scrape: the next round tries again
                self.errors.append(exc)
            self._stop.wait(self.interval_s)

    def start(self) -> "MetricsRecorder":
        if self._thread.is_alive() or self._stop.is_set():
            raise RuntimeError("a MetricsRecorder records once: make a new one")
        self.started_at = time.time()
        self._thread.start()
        return self

    def mark(self, label: str) -> float:
        self.marks[label] = time.time()
        return self.marks[label]

    def stop(self) -> pd.DataFrame:
        """Stop the thread (after the round it is in) and return :meth:`frame`."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.frame()

    def __enter__(self) -> "MetricsRecorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def frame(self, since: float | None = None) -> pd.DataFrame:
        """Every sample so far: ``t`` (seconds after ``since``, default the start), ``broker``, ``metric``,
        ``value``."""
        zero = self.started_at if since is None else since
        rows = [(at - (zero or at), int(broker), _named(metric, labels), float(value))
                for at, samples in list(self.rounds)
                for broker, metric, labels, value in samples[["broker", "metric", "labels", "value"]].itertuples(
                    index=False)]
        return pd.DataFrame(rows, columns=COLUMNS)


def per_broker(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One metric of a :meth:`MetricsRecorder.frame`: one row per round (``t``), one column per broker; a broker
    missing from a round (down, paused) is NaN there."""
    missing = set(COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"per_broker: the frame has no {sorted(missing)} columns (a MetricsRecorder.frame() has them)")
    rounds = sorted(frame["t"].unique())
    picked = frame[frame["metric"] == metric]
    if picked.empty:
        return pd.DataFrame(index=pd.Index(rounds, name="t"), columns=pd.Index([], name="broker"), dtype=float)
    table = picked.pivot_table(index="t", columns="broker", values="value", aggfunc="last")
    table = table.reindex(rounds)
    table.columns.name = "broker"
    return table
