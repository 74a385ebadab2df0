"""Latency: distributions with p50/p99 marked, and throughput against latency for a sweep of settings."""
from __future__ import annotations

from collections.abc import Mapping
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .style import (SIZES, PARTITION_COLOURS, styled, _figure_for, _log_x, _thousands, _grid, _finish, _frame,
    _place_notes)


def latency_distributions(samples, *, unit: str = "ms", title: str | None = None, ax=None) -> Figure:
    """ECDFs of latencies, one line per label, with the p50 and p99 of each marked.

    ``samples``: a mapping label -> sequence of latencies in ``unit``. A point (x, y) on a line says:
    a share y of that label's samples took at most x. The x axis is logarithmic when the samples
    span more than two decades. The legend gives each line's p50 and p99.
    """
    if not isinstance(samples, Mapping) or not samples:
        raise ValueError("latency_distributions needs a non-empty mapping label -> latencies")
    cleaned = {}
    for label, values in samples.items():
        try:
            arr = np.asarray(pd.to_numeric(pd.Series(list(values)), errors="raise"), dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"latency_distributions: the samples of {label!r} are not numbers") from None
        arr = np.sort(arr[~np.isnan(arr)])
        if arr.size == 0:
            raise ValueError(f"latency_distributions: no samples for {label!r}")
        if arr[0] < 0:
            raise ValueError(f"latency_distributions: {label!r} has a negative latency")
        cleaned[str(label)] = arr

    fig, ax = _figure_for(ax, SIZES["lines"])
    notes = []
    with styled():
        for i, (label, arr) in enumerate(cleaned.items()):
            colour = PARTITION_COLOURS[i % len(PARTITION_COLOURS)]
            share = np.arange(1, arr.size + 1) / arr.size
            p50, p99 = np.percentile(arr, 50), np.percentile(arr, 99)
            ax.step(arr, share, where="post", color=colour, lw=1.5,
                    label=f"{label}: p50 {p50:,.3g} {unit}, p99 {p99:,.3g} {unit} (n={arr.size:,})")
            ax.plot([p50, p99], [0.5, 0.99], "o", color=colour, ms=5, mec="black", mew=0.5)
            notes += [("p50", p50, 0.5, colour), ("p99", p99, 0.99, colour)]
        low = min(a[0] for a in cleaned.values())
        high = max(a[-1] for a in cleaned.values())
        if low > 0 and high / low > 100:
            _log_x(ax)
        ax.axhline(0.5, color="grey", lw=0.6, ls=":")
        ax.axhline(0.99, color="grey", lw=0.6, ls=":")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"latency ({unit})")
        ax.set_ylabel("share of samples ≤ latency")
        _place_notes(ax, notes, first_dy=-10.0, width_pt=16.0)
        _grid(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)


def throughput_latency(frame, x: str, y: str, label: str | None = None, *, annotate: str | None = None,
                       xlabel: str | None = None, ylabel: str | None = None, log_x: bool = True, log_y: bool = False,
                       title: str | None = None, ax=None) -> Figure:
    """Throughput against latency of a sweep: one point per run, one line per ``label`` value.

    ``frame``: one row per run; ``x`` (a latency) and ``y`` (a throughput) are columns, ideally named
    with their unit (``"p50 latency ms"``, ``"records/s"``), which become the axis labels unless
    ``xlabel``/``ylabel`` say otherwise. ``label``: the column whose values make the lines
    (e.g. ``batch.size``); ``annotate``: a column written next to each point (e.g. ``linger.ms``);
    a note that would cover another is moved down. ``log_y``: a logarithmic throughput axis, for
    sweeps whose throughputs span decades. Up and to the left is better: more records per second,
    sooner.
    """
    needed = [x, y] + [c for c in (label, annotate) if c is not None]
    df = _frame(frame, "throughput_latency", needed)
    groups = list(df.groupby(label, sort=True)) if label is not None else [(None, df)]
    fig, ax = _figure_for(ax, (6.5, 4.0))
    notes = []
    with styled():
        for i, (value, rows) in enumerate(groups):
            rows = rows.sort_values(x)
            name = None if label is None else \
                f"{label}={value:,}" if isinstance(value, (int, np.integer)) else f"{label}={value}"
            ax.plot(rows[x].astype(float), rows[y].astype(float), "o-",
                    color=PARTITION_COLOURS[i % len(PARTITION_COLOURS)], label=name)
            if annotate is not None:
                for note, px, py in zip(rows[annotate], rows[x], rows[y]):
                    note = f"{note:g}" if isinstance(note, (int, float, np.number)) else note
                    notes.append((f"{annotate} {note}", float(px), float(py)))
        ax.margins(x=0.3, y=0.08)
        if log_x and (df[x].astype(float) > 0).all():
            _log_x(ax)
        if log_y and (df[y].astype(float) > 0).all():
            ax.set_yscale("log")
            from matplotlib.ticker import FuncFormatter
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
        else:
            _thousands(ax.yaxis)
        _place_notes(ax, notes)
        ax.set_xlabel(xlabel or str(x))
        ax.set_ylabel(ylabel or str(y))
        _grid(ax)
        if label is not None:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    return _finish(fig, ax, title)
