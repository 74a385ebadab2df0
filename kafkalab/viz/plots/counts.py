"""Bar charts: records per partition, and one bar per setting (throughput, bytes on disk, a rate)."""
from __future__ import annotations

from collections.abc import Mapping
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .style import (SIZES, PARTITION_COLOURS, HIGHLIGHT, partition_colour, styled, _figure_for, _thousands, _grid,
    _finish, _reference)


def records_per_partition(counts, *, title: str | None = None, ax=None, highlight: Mapping | None = None,
                          ylabel: str = "records") -> Figure:
    """Bars: how many records each partition got.

    ``counts``: a mapping or Series partition -> records (one bar per partition, in the partition's
    colour, its count on top; ``highlight={partition: note}`` draws those bars red with the note
    inside), or a DataFrame indexed by partition with one column per series, drawn side by side
    (e.g. columns ``murmur2`` and ``consistent_random``: the same keys under two partitioners).
    """
    if isinstance(counts, pd.DataFrame):
        table = counts
    elif isinstance(counts, (Mapping, pd.Series)):
        table = pd.DataFrame({None: pd.Series(dict(counts), dtype=object)})
    else:
        raise TypeError(f"records_per_partition needs a mapping, Series or DataFrame, got {type(counts).__name__}")
    if table.empty or len(table.columns) == 0:
        raise ValueError("records_per_partition needs at least one partition")
    try:
        partitions = [int(p) for p in table.index]
        values = table.apply(pd.to_numeric).fillna(0).astype(float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"records_per_partition: partitions must be integers and counts numbers ({exc})") from None
    if (values.to_numpy() < 0).any():
        raise ValueError("records_per_partition: a count is negative")
    order = np.argsort(partitions)
    partitions = [partitions[i] for i in order]
    values = values.iloc[order]
    highlight = dict(highlight or {})

    series = list(values.columns)
    width_in = 2.0 + 0.9 * len(partitions) * max(1.0, 0.7 * len(series)) + (1.5 if len(series) > 1 else 0.0)
    fig, ax = _figure_for(ax, (max(4.0, min(width_in, SIZES["wide"][0])), SIZES["bars"][1]))
    with styled():
        width = 0.8 / len(series)
        single = len(series) == 1
        for k, name in enumerate(series):
            xs = np.arange(len(partitions)) + (k - (len(series) - 1) / 2) * width
            ys = values[name].to_numpy()
            if single:
                colours = [HIGHLIGHT if p in highlight else partition_colour(p) for p in partitions]
                ax.bar(xs, ys, width=width * 0.95, color=colours, edgecolor="black", linewidth=0.5)
            else:
                ax.bar(xs, ys, width=width * 0.95, color=PARTITION_COLOURS[k % len(PARTITION_COLOURS)],
                       edgecolor="black", linewidth=0.5, label=str(name))
            for x, y, p in zip(xs, ys, partitions):
                ax.text(x, y, f"{y:,.0f}", ha="center", va="bottom", fontsize=8)
                if single and p in highlight:
                    ax.text(x, y / 2, str(highlight[p]), ha="center", va="center", fontsize=8, rotation=90,
                            color="white", weight="bold")
        ax.set_xticks(range(len(partitions)), [str(p) for p in partitions])
        ax.set_xlabel("partition")
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, float(values.to_numpy().max()) * 1.15 + 1)
        _grid(ax, "y")
        if not single:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)


def bars(values, *, ylabel: str, xlabel: str | None = None, reference=None, fmt: str = "{:,.0f}",
         log: bool = False, title: str | None = None, ax=None) -> Figure:
    """Bars: one number per setting (records/s per ``acks``, bytes on disk per codec), the value on top.

    ``values``: a mapping or Series label -> number, drawn in that order, one colour per bar.
    ``ylabel``: what the numbers are, with their unit (``"records/s"``). ``reference``: a
    ``(value, label)`` pair drawn as a dashed red line (a quota). ``fmt``: how the values on top
    are written. ``log``: a logarithmic value axis, for numbers that span decades (each must be
    positive): records/s of a loop that waits for every commit and of one that never does.
    """
    if not isinstance(values, (Mapping, pd.Series)) or len(values) == 0:
        raise ValueError("bars needs a non-empty mapping or Series label -> number")
    labels = [str(k) for k in dict(values)]
    try:
        heights = [float(v) for v in dict(values).values()]
    except (TypeError, ValueError):
        raise ValueError("bars: the values must be numbers") from None
    if any(np.isnan(h) for h in heights):
        raise ValueError("bars: a value is missing (NaN)")
    if log and min(heights) <= 0:
        raise ValueError("bars: a logarithmic axis needs positive values")
    fig, ax = _figure_for(ax, (max(3.5, min(1.8 + 1.0 * len(labels), SIZES["wide"][0])), SIZES["bars"][1]))
    with styled():
        xs = np.arange(len(labels))
        ax.bar(xs, heights, width=0.7, color=[PARTITION_COLOURS[i % len(PARTITION_COLOURS)] for i in xs],
               edgecolor="black", linewidth=0.5)
        for x, h in zip(xs, heights):
            ax.text(x, h, fmt.format(h), ha="center", va="bottom", fontsize=8)
        _reference(ax, reference)
        ax.set_xticks(xs, labels)
        top = max(heights + [float(reference[0]) if reference is not None else 0.0])
        if log:
            from matplotlib.ticker import NullFormatter
            ax.set_yscale("log")
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(min(heights) / 2, top * 2.5)    # room for the value on top, on a log scale
        else:
            ax.set_ylim(min(0.0, min(heights) * 1.15), top * 1.15 if top > 0 else 1)
        _thousands(ax.yaxis)
        if xlabel:
            ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        _grid(ax, "y")
        if reference is not None:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)
