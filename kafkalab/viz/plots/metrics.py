"""A broker metric over time: one line per broker, the lesson's events (a kill, a pause) marked as in the
failover timelines."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .style import SIZES, broker_colour, styled, _figure_for, _grid, _finish, _frame
from .timelines import _events, _mark_events


def _held(xs, ys):
    """A gauge's samples as a step line, each value held until the next sample, but not into a round the broker
    missed (down, paused): there the line stops at its last sample, and a NaN breaks it."""
    px, py = [], []
    for i, (x, y) in enumerate(zip(xs, ys)):
        if np.isnan(y):
            if py and not np.isnan(py[-1]):
                px.append(x)
                py.append(np.nan)
            continue
        px.append(x)
        py.append(y)
        if i + 1 < len(xs) and not np.isnan(ys[i + 1]):
            px.append(xs[i + 1])
            py.append(y)
    return px, py


def metrics_over_time(frame, *, metric: str, events=(), ylabel: str | None = None, title: str | None = None,
                      ax=None) -> Figure:
    """One metric of every broker over time, as ``kafkalab.lessons.metrics.MetricsRecorder.frame()`` records it.

    ``frame``: columns ``t`` (seconds), ``broker``, ``metric`` (a Prometheus name, e.g.
    ``kafka_server_replicamanager_underreplicatedpartitions``) and ``value``; ``metric``: the one to draw.
    ``events``: ``(t, label)`` pairs drawn as dotted vertical lines ("kill 2"), as ``failover_timeline`` draws them.

    Each broker is a step line in its colour, a dot per sample (a gauge holds its value until the next sample); a
    broker that did not answer a round (down, paused) has a gap there: its line stops at its last sample. Brokers
    with the same values overlap: the lines get thinner broker by broker, so that each stays visible.
    ``ylabel``: default the metric's name.
    """
    df = _frame(frame, "metrics_over_time", ["t", "broker", "metric", "value"])
    picked = df[df["metric"] == metric]
    if picked.empty:
        raise ValueError(f"metrics_over_time: no samples of {metric!r}; the frame has {sorted(df['metric'].unique())}")
    events = _events(events)
    rounds = sorted(df["t"].astype(float).unique())
    table = picked.assign(t=picked["t"].astype(float)).pivot_table(index="t", columns="broker", values="value",
                                                                   aggfunc="last").reindex(rounds)
    brokers = sorted(int(b) for b in table.columns)
    fig, ax = _figure_for(ax, SIZES["lines"])
    with styled():
        for i, broker in enumerate(brokers):
            ys = pd.to_numeric(table[broker]).astype(float).to_numpy()
            colour = broker_colour(broker)
            ax.plot(*_held(table.index.to_numpy(), ys), color=colour, lw=max(4.5 - 1.5 * i, 1.2), alpha=0.8,
                    label=f"broker {broker}")
            ax.plot(table.index, ys, "o", ms=2.5, color=colour, label="_samples")
        values = picked["value"].astype(float)
        if (values == values.round()).all():
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        low, high = float(values.min()), float(values.max())
        ax.set_ylim(min(0.0, low) - 0.1 * max(high - low, 1), high + 0.15 * max(high - low, 1))
        _mark_events((ax,), events, ax)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(ylabel or metric)
        _grid(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)
