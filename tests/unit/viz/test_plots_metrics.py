"""kafkalab.viz.plots.metrics_over_time: one line per broker, the events marked, bad input refused."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from kafkalab.viz import plots  # noqa: E402
from kafkalab.viz.plots import metrics_over_time  # noqa: E402

URP = "kafka_server_replicamanager_underreplicatedpartitions"
ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"


def recorded():
    """A MetricsRecorder.frame(): broker 1 killed at t=1 (no rows after), broker 2 counting 3 URPs from t=2."""
    rows = []
    for t in np.arange(0, 4, 0.5):
        for broker in (1, 2, 3):
            if broker == 1 and t >= 1:
                continue
            rows.append((t, broker, URP, 3.0 if broker == 2 and t >= 2 else 0.0))
            rows.append((t, broker, ACTIVE, 1.0 if broker == 2 else 0.0))
    return pd.DataFrame(rows, columns=["t", "broker", "metric", "value"])


def test_one_line_per_broker_in_its_colour_and_the_events_marked():
    fig = metrics_over_time(recorded(), metric=URP, events=[(1, "kill 1"), (2.1, "new leader: 2")],
                            title="UnderReplicatedPartitions")
    assert isinstance(fig, Figure) and fig.number not in plt.get_fignums()      # returned closed
    ax, = fig.axes
    lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    assert [ln.get_label() for ln in lines] == ["broker 1", "broker 2", "broker 3"]
    assert [ln.get_color() for ln in lines] == [plots.broker_colour(b) for b in (1, 2, 3)]
    broker_1 = lines[0]
    assert np.isnan(broker_1.get_ydata()[-1]) and broker_1.get_ydata()[0] == 0   # killed: a gap ...
    assert np.nanmax(broker_1.get_xdata()[:-1]) == 0.5          # ... the line stops at its last sample (t=0.5)
    assert list(lines[1].get_xdata()[:3]) == [0.0, 0.5, 0.5]    # a step: each value held until the next sample
    dots = [ln for ln in ax.get_lines() if ln.get_label() == "_samples"]
    assert len(dots) == 3 and len(dots[1].get_xdata()) == 8     # a dot per sample, every broker
    assert max(lines[1].get_ydata()) == 3
    assert [t.get_text() for t in ax.texts] == ["kill 1", "new leader: 2"]
    assert sum(1 for ln in ax.get_lines() if list(ln.get_xdata()) == [1.0, 1.0]) == 1   # the event's dotted line
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == URP
    assert ax.get_title("left") == "UnderReplicatedPartitions"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["broker 1", "broker 2", "broker 3"]


def test_draws_into_a_given_axes_with_a_given_label():
    fig, (left, right) = plt.subplots(1, 2)
    plt.close(fig)
    assert metrics_over_time(recorded(), metric=ACTIVE, ax=right, ylabel="ActiveControllerCount") is fig
    assert right.get_ylabel() == "ActiveControllerCount" and not left.get_lines()


def test_refuses_a_metric_it_does_not_have_and_malformed_input():
    with pytest.raises(ValueError, match="no samples of 'nope'"):
        metrics_over_time(recorded(), metric="nope")
    with pytest.raises(ValueError, match="broker"):
        metrics_over_time(recorded().drop(columns=["broker"]), metric=URP)
    with pytest.raises(ValueError, match=r"\(seconds, label\) pairs"):
        metrics_over_time(recorded(), metric=URP, events=["kill 1"])
    with pytest.raises(TypeError, match="DataFrame"):
        metrics_over_time(recorded().to_dict(), metric=URP)
