"""kafkalab.lessons.metrics on pure data: a fake cluster whose metrics() answers what we say."""
from __future__ import annotations

import threading
import time

import pandas as pd
import pytest

from kafkalab.lessons.metrics import COLUMNS, MetricsRecorder, per_broker

URP = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"


def answer(values: dict[int, dict[str, float]], labels=None) -> pd.DataFrame:
    """Cluster.metrics()' columns: one row per broker and metric."""
    return pd.DataFrame([(b, m, dict(labels or {}), v, pd.Timestamp.now(tz="UTC"))
                         for b, ms in values.items() for m, v in ms.items()],
                        columns=["broker", "metric", "labels", "value", "time"])


class FakeCluster:
    """metrics(names) returns the next of `answers` (the last one forever); an Exception in `answers` is raised."""

    def __init__(self, answers):
        self.answers, self.calls, self.asked = list(answers), 0, []

    def metrics(self, names=None):
        self.calls += 1
        self.asked.append(names)
        item = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(item, Exception):
            raise item
        return item


def wait_for(condition, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    assert condition()


ALL_UP = answer({1: {URP: 0, ACTIVE: 1}, 2: {URP: 0, ACTIVE: 0}, 3: {URP: 0, ACTIVE: 0}})
ONE_DOWN = answer({2: {URP: 1, ACTIVE: 1}, 3: {URP: 0, ACTIVE: 0}})   # broker 1 killed: no rows of it


def test_records_rounds_as_one_frame_of_t_broker_metric_value_and_a_broker_down_has_no_rows():
    cluster = FakeCluster([ALL_UP, RuntimeError("broker 1 went away mid-scrape"), ONE_DOWN])
    recorder = MetricsRecorder(cluster, [URP, ACTIVE], interval_s=0.01).start()
    killed_at = recorder.mark("kill 1")
    wait_for(lambda: len(recorder.rounds) >= 3)
    frame = recorder.stop()
    assert list(frame.columns) == COLUMNS
    assert cluster.asked[0] == [URP, ACTIVE]                       # the names, as given
    assert len(recorder.errors) == 1                               # the failed round: tried again
    first = frame[frame["t"] == frame["t"].min()]
    assert sorted(first["broker"]) == [1, 1, 2, 2, 3, 3]
    last = frame[frame["t"] == frame["t"].max()]
    assert sorted(last["broker"].unique()) == [2, 3]
    assert last.set_index(["broker", "metric"])["value"][(2, URP)] == 1.0
    assert (frame["t"] >= 0).all() and frame["t"].is_monotonic_increasing
    assert recorder.frame(since=killed_at)["t"].max() < frame["t"].max() + 1e-9   # t after another instant
    assert list(recorder.marks) == ["kill 1"]
    n = cluster.calls
    time.sleep(0.05)
    assert cluster.calls == n                                      # stopped means stopped


def test_per_broker_one_column_per_broker_nan_where_a_broker_did_not_answer():
    cluster = FakeCluster([ALL_UP, ONE_DOWN])
    recorder = MetricsRecorder(cluster, [URP], interval_s=0.01).start()
    wait_for(lambda: len(recorder.rounds) >= 2)
    table = per_broker(recorder.stop(), URP)
    assert list(table.columns) == [1, 2, 3]
    assert table.iloc[0].tolist() == [0.0, 0.0, 0.0]
    assert pd.isna(table.iloc[-1][1]) and table.iloc[-1][2] == 1.0
    assert per_broker(recorder.frame(), "no_such_metric").shape == (len(table), 0)
    with pytest.raises(ValueError, match="columns"):
        per_broker(pd.DataFrame({"t": [0.0]}), URP)


def test_a_block_that_raises_still_stops_the_thread():
    cluster = FakeCluster([ALL_UP])
    with pytest.raises(ZeroDivisionError):
        with MetricsRecorder(cluster, URP, interval_s=0.01) as recorder:
            wait_for(lambda: len(recorder.rounds) >= 1)
            1 / 0
    assert not any(t.name == "metrics-recorder" and t.is_alive() for t in threading.enumerate())
    assert not recorder._thread.is_alive() and len(recorder.frame()) >= 3


def test_labels_go_into_the_name_and_bad_arguments_are_refused():
    labelled = answer({1: {"kafka_server_brokertopicmetrics_messagesin_total": 5}}, labels={"topic": "orders"})
    recorder = MetricsRecorder(FakeCluster([labelled]), "kafka_server_brokertopicmetrics_", interval_s=0.01)
    with recorder:
        wait_for(lambda: len(recorder.rounds) >= 1)
    assert recorder.frame()["metric"].iloc[0] == 'kafka_server_brokertopicmetrics_messagesin_total{topic="orders"}'
    with pytest.raises(RuntimeError, match="once"):
        recorder.start()
    with pytest.raises(ValueError, match="positive"):
        MetricsRecorder(FakeCluster([ALL_UP]), URP, interval_s=0)
    with pytest.raises(ValueError, match="name the metrics"):
        MetricsRecorder(FakeCluster([ALL_UP]), None)


def test_an_empty_recording_is_an_empty_frame():
    recorder = MetricsRecorder(FakeCluster([ALL_UP]), URP)
    assert recorder.frame().empty and list(recorder.frame().columns) == COLUMNS
