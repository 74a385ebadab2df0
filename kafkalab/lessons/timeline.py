"""One partition's state as plain values, and a thread that samples it: lesson 03's failover timelines.

:func:`partition_state` turns a partition's row of ``cluster.describe(topic)`` (the controller's
view in ZooKeeper: leader, ISR, leader epoch; the brokers' answers: high watermark, each replica's
log end offset) into ints and lists, ``None`` where nobody answers — a partition without a leader
has no high watermark. :class:`Timeline` samples that row, and which brokers are registered under
``/brokers/ids``, every ~0.1 s in a background thread while a lesson kills and restarts brokers;
``frame(since=...)`` is what :func:`kafkalab.viz.plots.failover_timeline` plots.
"""
from __future__ import annotations

import threading
import time

import pandas as pd


def _int(value):
    return None if pd.isna(value) else int(value)


def partition_state(cluster, topic: str, partition: int = 0) -> dict:
    """``{"leader", "isr", "leader_epoch", "high_watermark", "leo_<id>"...}`` of one partition, ``None`` where unknown.

    ``cluster``: a :class:`~kafkalab.cluster.Cluster` or an external one (anything with
    ``describe(topic)`` returning kafkalab's partition table). ``isr`` is sorted; there is one
    ``leo_<id>`` per ``leo_`` column of the table (the log end offset of broker ``<id>``'s replica).
    """
    row = cluster.describe(topic).iloc[partition]
    leos = {column: _int(row[column]) for column in row.index if str(column).startswith("leo_")}
    return {"leader": _int(row["leader"]), "isr": sorted(int(b) for b in row["isr"]),
            "leader_epoch": int(row["leader_epoch"]), "high_watermark": _int(row["high_watermark"]), **leos}


class Timeline:
    """Samples one partition's :func:`partition_state`, and the registered broker ids, every ``interval_s``.

    ``samples``: one dict per sample, with ``t`` (``time.time()``), the state, ``isr_size`` and
    ``registered`` (the ids under ZooKeeper's ``/brokers/ids``). A sample that fails (ZooKeeper busy,
    a broker half gone) is tried again. ``mark(label)`` notes an instant (a kill, a restart) for the
    plot's dotted lines; ``frame(since)`` is the samples as a DataFrame, ``t`` in seconds after ``since``.
    """

    def __init__(self, cluster, topic: str, partition: int = 0, interval_s: float = 0.1):
        self.cluster, self.topic, self.partition, self.interval_s = cluster, topic, partition, interval_s
        self.samples: list[dict] = []
        self.marks: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"timeline-{topic}-{partition}")

    def sample(self) -> dict:
        """One sample, taken now (the thread appends these)."""
        t = time.time()
        row = partition_state(self.cluster, self.topic, self.partition)
        registered = sorted(int(b) for b in self.cluster.zk.get_children("/brokers/ids"))
        return {"t": t, **row, "isr_size": len(row["isr"]), "registered": registered}

    def _run(self):
        while not self._stop.is_set():
            try:
                sample = self.sample()
            except Exception:   # noqa: BLE001 - ZooKeeper busy, a broker half gone: try again
                continue
            self.samples.append(sample)
            self._stop.wait(self.interval_s)

    def start(self) -> "Timeline":
        self._thread.start()
        return self

    def mark(self, label: str) -> float:
        self.marks[label] = time.time()
        return self.marks[label]

    def frame(self, since: float) -> pd.DataFrame:
        df = pd.DataFrame(self.samples)
        df["t"] = df["t"] - since
        return df

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
