"""Things over time: a partition's failover (leader, ISR, high watermark, each replica's log end
offset), a consumer's lag, and any measured series against a reference line."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .style import (SIZES, PARTITION_COLOURS, HIGHLIGHT, HIGH_WATERMARK, partition_colour, broker_colour, styled,
    new_figure, _figure_for, _thousands, _grid, _finish, _frame, _reference)


GAP_S = 1.0
"""A broker whose LEO samples are further apart than this was not answering in between (it was down)."""


def _events(events):
    out = []
    for item in events:
        try:
            t, label = item
            out.append((float(t), str(label)))
        except (TypeError, ValueError):
            raise ValueError(f"events must be (seconds, label) pairs, got {item!r}") from None
    return out


def _mark_events(axes, events, labelled) -> None:
    """Each ``(t, label)`` of ``events`` as a grey dotted vertical line on every axes of ``axes``, its label
    written along the line at the top of ``labelled`` (the plots over time share this look)."""
    for when, label in events:
        for ax in axes:
            ax.axvline(when, color="grey", ls=":")
        labelled.annotate(label, (when, 1), xycoords=("data", "axes fraction"), xytext=(-2, -4),
                          textcoords="offset points", fontsize=8, rotation=90, va="top", ha="right")


def failover_timeline(timeline, *, events=(), title: str | None = None, shade=None) -> Figure:
    """One partition through a failover: its leader, its ISR size, and its offsets over time.

    ``timeline``: a DataFrame of ``Cluster.describe`` rows of one partition sampled over time, with
    columns ``t`` (seconds since the start), ``leader``, ``isr`` (a list of broker ids) or
    ``isr_size``, ``high_watermark`` and one ``leo_<broker id>`` per replica (missing values: nobody
    answered). ``events``: ``(t, label)`` pairs drawn as vertical lines ("kill 1", "restart 1").
    ``shade``: ``(t0, t1)``, a stretch drawn red (e.g. no leader answering).

    Three rows share the time axis: the leader's broker id, the ISR size, and the high watermark
    with each replica's log end offset. A broker that stopped answering for a while is drawn with
    dots; across its silence a dotted line holds its last LEO (its log stayed as it was on disk),
    and a solid jump shows how far it caught up once it answered again.
    """
    df = _frame(timeline, "failover_timeline", ["t", "leader", "high_watermark"])
    if "isr_size" not in df.columns and "isr" not in df.columns:
        raise ValueError("failover_timeline: the frame needs an 'isr' (list of broker ids) or 'isr_size' column")
    leo_columns = sorted((c for c in df.columns if isinstance(c, str) and c.startswith("leo_")),
                         key=lambda c: int(c[4:]))
    if not leo_columns:
        raise ValueError("failover_timeline: the frame has no leo_<broker id> columns")
    events = _events(events)
    df = df.sort_values("t")
    t = df["t"].astype(float)
    isr_size = df["isr_size"] if "isr_size" in df.columns else \
        df["isr"].map(lambda ids: len(ids) if ids is not None else 0)
    brokers = [int(c[4:]) for c in leo_columns]
    leaders = sorted({int(x) for x in pd.to_numeric(df["leader"], errors="coerce").dropna()} | set(brokers))

    fig, (ax_leader, ax_isr, ax_offsets) = new_figure(SIZES["failover"], 3, 1, sharex=True,
                                                      gridspec_kw={"height_ratios": [1, 1, 2]})
    with styled():
        ax_leader.step(t, pd.to_numeric(df["leader"], errors="coerce").astype(float), where="post", color="tab:blue")
        ax_leader.set_ylabel("leader\n(broker id)")
        ax_leader.set_yticks(leaders)
        ax_leader.set_ylim(min(leaders) - 0.5, max(leaders) + 0.5)
        ax_isr.step(t, isr_size.astype(float), where="post", color="tab:green")
        ax_isr.set_ylabel("ISR size\n(replicas)")
        ax_isr.set_yticks(range(1, len(brokers) + 1))
        ax_isr.set_ylim(0.5, len(brokers) + 0.5)
        ax_offsets.plot(t, df["high_watermark"].astype(float), label="high watermark", color=HIGH_WATERMARK, lw=2)
        for broker, column in zip(brokers, leo_columns):
            leo = df[column].astype(float)
            colour = broker_colour(broker)
            first = leo.first_valid_index()
            went_quiet = first is not None and leo.loc[first:].isna().any()
            if not went_quiet:
                ax_offsets.plot(t, leo, label=f"LEO of broker {broker}", color=colour, lw=1, ls="--")
                continue
            ax_offsets.plot(t, leo, "-o", ms=2.5, lw=1.2, color=colour,
                            label=f"LEO of broker {broker} (dots: answered)")
            known = pd.DataFrame({"t": t, "leo": leo}).dropna()
            for i in np.flatnonzero(known["t"].diff().to_numpy() > GAP_S):
                before, after = known.iloc[i - 1], known.iloc[i]
                ax_offsets.plot([before["t"], after["t"]], [before["leo"]] * 2, color=colour, lw=0.8, ls=":")
                ax_offsets.plot([after["t"]] * 2, [before["leo"], after["leo"]], color=colour, lw=1.5)
        ax_offsets.set_ylabel("offset (records)")
        ax_offsets.set_xlabel("time (s)")
        ax_offsets.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        _mark_events((ax_leader, ax_isr, ax_offsets), events, ax_offsets)
        if shade is not None:
            t0, t1 = (float(x) for x in shade)
            for ax in (ax_leader, ax_isr, ax_offsets):
                ax.axvspan(t0, t1, color="tab:red", alpha=0.08)
        for ax in (ax_leader, ax_isr, ax_offsets):
            _grid(ax)
    return _finish(fig, ax_leader, title)


def lag_over_time(frame, *, title: str | None = None, ax=None, x: str = "t", xlabel: str | None = None,
                  offsets=None, events=()) -> Figure:
    """A consumer's lag over time: one line per partition, or one for the total.

    ``frame``: a column ``x`` (default ``t``, seconds) and lag columns in records: an integer
    partition number or ``lag_<partition>`` per partition (in the partition's colour), and/or a
    total (any other name, e.g. ``lag``: black, the area under it shaded when it is the only one).

    ``offsets=(high_watermark, position)``: draw where the lag comes from instead: the two named
    columns of ``frame`` as offsets (the high watermark in black, the consumer's position), the lag
    (high watermark − position) shaded between them and the largest lag marked with its size.
    The frame's other columns are not drawn.

    ``events``: ``(x, label)`` pairs drawn as dotted vertical lines ("SIGKILL", "rebalanced"), as
    ``failover_timeline`` and ``metrics_over_time`` draw them (per-partition and total lines only).
    """
    df = _frame(frame, "lag_over_time", [x])
    events = _events(events)
    if offsets is not None:
        if events:
            raise ValueError("lag_over_time: events are drawn on the lag lines, not with offsets=")
        return _lag_between(df, x, offsets, title=title, ax=ax, xlabel=xlabel)
    columns = [c for c in df.columns if c != x]
    if not columns:
        raise ValueError("lag_over_time: the frame has no lag column beside the time column")
    xs = df[x].astype(float)

    def partition_of(column):
        if isinstance(column, (int, np.integer)):
            return int(column)
        if isinstance(column, str) and column.startswith("lag_") and column[4:].isdigit():
            return int(column[4:])
        return None

    fig, ax = _figure_for(ax, SIZES["lines"])
    with styled():
        for column in columns:
            try:
                ys = pd.to_numeric(df[column]).astype(float)
            except (TypeError, ValueError):
                raise ValueError(f"lag_over_time: column {column!r} is not a number of records") from None
            p = partition_of(column)
            if p is not None:
                ax.plot(xs, ys, color=partition_colour(p), lw=1.3, label=f"partition {p}")
            else:
                ax.plot(xs, ys, color="black", lw=2, label=str(column))
                if len(columns) == 1:
                    ax.fill_between(xs, 0, ys, color="grey", alpha=0.2)
        _mark_events((ax,), events, ax)
        ax.set_xlabel(xlabel or ("time (s)" if x == "t" else str(x)))
        ax.set_ylabel("lag (records)")
        ax.set_ylim(bottom=0)
        _grid(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)


def _lag_between(df, x, offsets, *, title, ax, xlabel) -> Figure:
    """lag_over_time(offsets=...): the high watermark and the position, the lag shaded between them."""
    try:
        if isinstance(offsets, str):
            raise TypeError
        high_column, position_column = offsets
    except (TypeError, ValueError):
        raise ValueError(f"lag_over_time: offsets must be a (high watermark, position) pair of column names, "
                         f"got {offsets!r}") from None
    _frame(df, "lag_over_time", [x, high_column, position_column])
    xs = df[x].astype(float).to_numpy()
    try:
        high = pd.to_numeric(df[high_column]).astype(float).to_numpy()
        position = pd.to_numeric(df[position_column]).astype(float).to_numpy()
    except (TypeError, ValueError):
        raise ValueError(f"lag_over_time: columns {high_column!r} and {position_column!r} must be offsets "
                         "(numbers)") from None
    lag = high - position
    fig, ax = _figure_for(ax, SIZES["lines"])
    with styled():
        ax.plot(xs, high, color=HIGH_WATERMARK, lw=2, label=str(high_column))
        ax.plot(xs, position, color=partition_colour(0), lw=1.5, label=str(position_column))
        ax.fill_between(xs, position, high, color=HIGHLIGHT, alpha=0.15, lw=0,
                        label=f"lag = {high_column} − {position_column}")
        i = int(np.nanargmax(lag))
        if lag[i] > 0:
            ax.annotate("", xy=(xs[i], high[i]), xytext=(xs[i], position[i]),
                        arrowprops={"arrowstyle": "<->", "color": HIGHLIGHT, "lw": 1.2, "shrinkA": 0, "shrinkB": 0})
            ax.annotate(f"largest lag: {lag[i]:,.0f} records", (xs[i], (high[i] + position[i]) / 2),
                        xytext=(5, 0), textcoords="offset points", va="center", fontsize=8, color=HIGHLIGHT)
        ax.set_xlabel(xlabel or ("time (s)" if x == "t" else str(x)))
        ax.set_ylabel("offset (records)")
        ax.set_ylim(bottom=0)
        _thousands(ax.yaxis)
        _grid(ax)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)


def over_time(frame, *, ylabel: str, x: str = "t", xlabel: str | None = None, reference=None,
              points: bool = False, legend: bool = True, title: str | None = None, ax=None) -> Figure:
    """Values over time: one line per column of ``frame`` beside ``x`` (a rate, a throttle time).

    ``frame``: a column ``x`` (default ``t``, seconds) and one column per series, named for the
    legend (``"client.id=reporter"``). ``ylabel``: what the values are, with their unit.
    ``reference``: a ``(value, label)`` pair drawn as a dashed red line (a quota the values are held
    to). ``points``: dots only, no lines (events that happen now and then, e.g. each throttle).
    ``legend=False``: no legend (one series that the ``ylabel`` names).
    """
    df = _frame(frame, "over_time", [x])
    columns = [c for c in df.columns if c != x]
    if not columns:
        raise ValueError("over_time: the frame has no value column beside the time column")
    xs = df[x].astype(float)
    fig, ax = _figure_for(ax, SIZES["lines"])
    with styled():
        for i, column in enumerate(columns):
            try:
                ys = pd.to_numeric(df[column]).astype(float)
            except (TypeError, ValueError):
                raise ValueError(f"over_time: column {column!r} is not numbers") from None
            ax.plot(xs, ys, "." if points else "o-", ms=4 if points else 3.5, lw=1.3,
                    color=PARTITION_COLOURS[i % len(PARTITION_COLOURS)], label=str(column))
        _reference(ax, reference)
        _thousands(ax.yaxis)
        ax.set_xlabel(xlabel or ("time (s)" if x == "t" else str(x)))
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        _grid(ax)
        if legend:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _finish(fig, ax, title)
