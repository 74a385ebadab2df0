"""kafkalab.lessons.timeline on pure data: a fake cluster whose describe() and ZooKeeper answer what we say."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd

from kafkalab.lessons.timeline import Timeline, partition_state


class FakeZk:
    def __init__(self, ids):
        self.ids = ids

    def get_children(self, path):
        assert path == "/brokers/ids"
        return [str(i) for i in self.ids]


class FakeCluster:
    """describe() returns the next of `rows` (the last one forever); an Exception in `rows` is raised."""

    def __init__(self, rows, ids=(1, 2, 3)):
        self.rows, self.zk, self.calls = list(rows), FakeZk(list(ids)), 0

    def describe(self, topic):
        self.calls += 1
        row = self.rows.pop(0) if len(self.rows) > 1 else self.rows[0]
        if isinstance(row, Exception):
            raise row
        return pd.DataFrame([row])


LED = {"topic": "t", "partition": 0, "leader": 2.0, "isr": [3, 2], "leader_epoch": 1, "high_watermark": 40.0,
       "leo_1": 38.0, "leo_2": 40.0, "leo_3": 40.0}
NO_LEADER = {**LED, "leader": np.nan, "high_watermark": np.nan, "leo_2": np.nan}


def test_partition_state_as_ints_sorted_isr_and_none_where_nobody_answers():
    s = partition_state(FakeCluster([LED]), "t")
    assert s == {"leader": 2, "isr": [2, 3], "leader_epoch": 1, "high_watermark": 40,
                 "leo_1": 38, "leo_2": 40, "leo_3": 40}
    assert all(type(v) is int for k, v in s.items() if k != "isr")
    gone = partition_state(FakeCluster([NO_LEADER]), "t")
    assert gone["leader"] is None and gone["high_watermark"] is None and gone["leo_2"] is None
    assert gone["leo_1"] == 38


def test_partition_state_picks_the_row_of_the_partition():
    class TwoPartitions(FakeCluster):
        def describe(self, topic):
            return pd.DataFrame([LED, {**LED, "partition": 1, "leader": 3.0}])

    assert partition_state(TwoPartitions([LED]), "t", partition=1)["leader"] == 3


def test_timeline_samples_marks_and_frames():
    cluster = FakeCluster([RuntimeError("ZooKeeper busy"), LED, LED, NO_LEADER], ids=(2, 3))
    timeline = Timeline(cluster, "t", interval_s=0.01).start()
    t0 = timeline.mark("kill broker 1")
    deadline = time.monotonic() + 5
    while len(timeline.samples) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    timeline.stop()
    assert len(timeline.samples) >= 5                     # the failed sample was tried again
    assert timeline.samples[0]["leader"] == 2 and timeline.samples[0]["isr_size"] == 2
    assert timeline.samples[0]["registered"] == [2, 3]
    assert timeline.samples[-1]["leader"] is None
    assert list(timeline.marks) == ["kill broker 1"]
    frame = timeline.frame(since=t0)
    assert {"t", "leader", "isr", "high_watermark", "leo_1", "isr_size", "registered"} <= set(frame.columns)
    assert frame["t"].is_monotonic_increasing and frame["t"].iloc[-1] < 5
    n = len(timeline.samples)
    time.sleep(0.05)
    assert len(timeline.samples) == n                      # stopped means stopped
