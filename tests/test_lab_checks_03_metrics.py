"""labs/03_metrics_drill: the drill's table from hand-made scrapes, and its check: right diagnoses pass, each kind
of wrong answer is named with the signal that tells the incident apart. (The drill itself runs in CI as the lab's
solution, through nbval.)"""
from __future__ import annotations

import importlib.util
import os
import sys

import pandas as pd
import pytest

from kafkalab.checks import LabCheckFailed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("lab03_metrics_check",
                                               os.path.join(ROOT, "labs", "03_metrics_drill", "check.py"))
lab = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = lab   # its dataclass looks its module up by name
_spec.loader.exec_module(lab)

URP = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"


def scrape(phase, values):
    """values: broker -> {metric: value}; a broker missing did not answer."""
    return pd.DataFrame([{"phase": phase, "broker": b, "metric": m, "labels": {}, "value": v, "time": None}
                         for b, metrics in values.items() for m, v in metrics.items()])


def healthy():
    return {b: {URP: 0, ACTIVE: int(b == 1), lab.THROTTLE: 0} for b in (1, 2, 3)}


def drill():
    d = lab.Drill([1, 2, 3])
    d.metrics["A"] = pd.concat([scrape("before", healthy()), scrape("during", {
        1: {URP: 1, ACTIVE: 1}, 2: {URP: 0, ACTIVE: 0}, 3: {URP: 1, ACTIVE: 0}})], ignore_index=True)
    d.metrics["B"] = pd.concat([scrape("before", healthy()), scrape("during", {
        2: {URP: 2, ACTIVE: 1}, 3: {URP: 1, ACTIVE: 0}})], ignore_index=True)
    d.metrics["C"] = pd.concat([scrape("before", healthy()), scrape("during", {
        1: {URP: 0, ACTIVE: 1, lab.THROTTLE: 2500.0, "kafka_server_produce_byte_rate": float("nan")},
        2: {URP: 0, ACTIVE: 0}, 3: {URP: 0, ACTIVE: 0}})],
        ignore_index=True)
    d._truth = {"A": ("stuck follower", 2), "B": ("dead controller", 1), "C": ("quota", None)}
    return d


RIGHT = {"A": ("stuck follower", 2), "B": ("dead controller", 1), "C": ("quota", None)}


def test_the_table_has_a_row_per_phase_and_broker_and_a_silent_broker_is_named():
    table = drill().table("B")
    assert list(table.index) == [(p, b) for p in ("before", "during") for b in (1, 2, 3)]
    during = table.loc["during"]
    assert list(during["serving metrics"]) == [False, True, True]
    assert pd.isna(during.loc[1, "UnderReplicatedPartitions"]) and during.loc[2, "UnderReplicatedPartitions"] == 2
    # a broker that throttled nobody has no throttle-time series (Kafka creates the sensors at a client's first
    # request): 0 in the table
    assert during.loc[2, "Produce throttle-time (ms, largest client)"] == 0
    assert drill().table("C").loc[("during", 1), "Produce throttle-time (ms, largest client)"] == 2500.0
    assert drill().table("C").loc[("during", 1), "Produce byte-rate (B/s, largest client)"] == 0   # NaN: none measured
    with pytest.raises(KeyError, match="no incident 'D'"):
        drill().table("D")


def test_the_right_diagnosis_passes(capsys):
    lab.check_metrics_drill(drill(), RIGHT)
    assert "All checks passed" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, said", [
    ({"A": ("quota", None)},
     "it was not a quota. Look again at drill.table('A'): in a quota, nothing is under-replicated"),
    ({"B": ("stuck follower", 1)}, "in a stuck follower, every broker still serves its metrics"),
    ({"A": ("stuck follower", 1)}, "right kind; the broker is wrong"),
    ({"C": ("quota", 1)}, "no broker (None): a quota is a client's"),
    ({"B": ("crash", 1)}, "'crash' is not one of"),
    ({"C": ...}, "diagnosis['C'] is still `...`"),
])
def test_each_wrong_answer_is_named(capsys, wrong, said):
    with pytest.raises(LabCheckFailed):
        lab.check_metrics_drill(drill(), {**RIGHT, **wrong})
    out = capsys.readouterr().out
    assert said in out, out
    assert sum(line.strip().startswith("✗") for line in out.splitlines()) == 1, out


def test_an_unfilled_or_short_diagnosis_and_a_drill_that_did_not_run(capsys):
    with pytest.raises(LabCheckFailed):
        lab.check_metrics_drill(drill(), ...)
    assert "diagnosis is still `...`" in capsys.readouterr().out
    with pytest.raises(LabCheckFailed):
        lab.check_metrics_drill(drill(), {"A": RIGHT["A"]})
    assert "it answers ['A']; the incidents are ['A', 'B', 'C']" in capsys.readouterr().out
    with pytest.raises(LabCheckFailed):
        lab.check_metrics_drill(None, RIGHT)
    assert "did not run to the end" in capsys.readouterr().out


def test_the_drill_refuses_a_cluster_it_cannot_break():
    class NoCluster:
        cluster = None
    with pytest.raises(RuntimeError, match="connect\\(brokers=3, local=True\\)"):
        lab.run_incidents(NoCluster())
