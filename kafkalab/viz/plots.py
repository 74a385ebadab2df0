"""The lessons' plots, in one style: records per partition, latencies, a failover, segments, lag, throughput,
one number per setting (bars) and values over time.

Every helper draws one kind of picture the lessons share, with axes labelled in their units, and
**returns the matplotlib Figure, already closed** (``plt.close``). How a lesson shows it:

* make the call the **last expression of the cell**: Jupyter shows the returned figure once, as
  the cell's result (``records_per_partition(counts)``);
* anywhere else in a cell (several figures, or a table after it): ``display(fig)``.

Never call ``plt.show()`` on these figures: a closed figure is not shown by the inline backend
by itself, which is what guarantees exactly one image per call. The helpers that take ``ax=``
draw into an axes the lesson made itself (``fig, (a, b) = plt.subplots(1, 2)``) and return
that axes' figure, which the lesson then closes and shows as above.

The look lives here, in one place: :data:`STYLE` (figure sizes, font sizes, grid), one colour per
broker id (:func:`broker_colour`) and per partition (:func:`partition_colour`), so that broker 2 or
partition 3 has the same colour in every lesson.
"""
from __future__ import annotations

import contextlib
from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titlelocation": "left",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
"""matplotlib rcParams every helper draws under."""

GRID = {"alpha": 0.3, "linewidth": 0.6}
"""The grid behind every plot (drawn on the value axis of bar charts, on both axes of line plots)."""

SIZES = {"bars": (6.5, 3.0), "lines": (9.0, 3.2), "wide": (11.0, 3.6), "failover": (11.0, 6.5)}
"""Figure sizes in inches, by kind of plot."""

PASTEL = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#c7e9c0", "#fcbba1", "#d9d9d9"]
"""Light fills for cells and bars that carry text (plot_log, plot_group_timeline)."""

PARTITION_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
BROKER_COLOURS = {0: "tab:cyan", 1: "tab:red", 2: "tab:orange", 3: "tab:purple", 4: "tab:brown", 5: "tab:pink"}
HIGHLIGHT = "#d62728"   # the one thing the plot is about (a hot partition)
HIGH_WATERMARK = "black"


def partition_colour(partition: int) -> str:
    """The colour of partition ``partition`` in every lesson's plots."""
    return PARTITION_COLOURS[int(partition) % len(PARTITION_COLOURS)]


def broker_colour(broker_id: int) -> str:
    """The colour of broker ``broker_id`` in every lesson's plots."""
    broker_id = int(broker_id)
    extra = ["tab:olive", "tab:gray", "tab:green", "tab:blue"]
    return BROKER_COLOURS.get(broker_id, extra[broker_id % len(extra)])


@contextlib.contextmanager
def styled():
    """Draw under :data:`STYLE` (``with styled(): ...``)."""
    import matplotlib.pyplot as plt
    with plt.rc_context(STYLE):
        yield


def new_figure(figsize, nrows: int = 1, ncols: int = 1, **subplots):
    """A closed figure and its axes (``plt.subplots`` arguments): shown once when returned or displayed.

    Importing pyplot here is what makes Jupyter's inline backend display a returned figure."""
    import matplotlib.pyplot as plt
    with styled():
        fig, axes = plt.subplots(nrows, ncols, figsize=figsize, **subplots)
    plt.close(fig)
    return fig, axes


def _figure_for(ax, figsize):
    """(figure, axes): the caller's ``ax`` and its figure, or a new closed figure."""
    if ax is not None:
        return ax.figure, ax
    return new_figure(figsize)


def _log_x(ax):
    """A logarithmic x axis labelled 1, 10, 100 (not 10⁰, 10¹, 10²)."""
    from matplotlib.ticker import FuncFormatter
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))


def _thousands(axis):
    """Tick labels 250,000 (not 250000 or 2.5 × 1e5) on ``axis`` (``ax.yaxis``)."""
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}" if abs(v) < 1e6 else f"{v:,.0f}"))


def _grid(ax, axis="both"):
    ax.set_axisbelow(True)
    ax.grid(True, axis=axis, **GRID)


def _finish(fig, ax, title):
    with styled():
        if title:
            ax.set_title(title)
        fig.tight_layout()
    return fig


def _frame(data, name: str, required=()) -> pd.DataFrame:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{name} needs a pandas DataFrame, got {type(data).__name__}")
    missing = [c for c in required if c not in data.columns]
    if missing:
        raise ValueError(f"{name}: the frame has no column(s) {missing}; it has {list(data.columns)}")
    if data.empty:
        raise ValueError(f"{name}: the frame is empty")
    return data


# -- records per partition ------------------------------------------------------------------------

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


# -- latencies --------------------------------------------------------------------------------------

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


# -- a failover -------------------------------------------------------------------------------------

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
    isr_size = df["isr_size"] if "isr_size" in df.columns else df["isr"].map(lambda ids: len(ids) if ids is not None else 0)
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
            ax_offsets.plot(t, leo, "-o", ms=2.5, lw=1.2, color=colour, label=f"LEO of broker {broker} (dots: answered)")
            known = pd.DataFrame({"t": t, "leo": leo}).dropna()
            for i in np.flatnonzero(known["t"].diff().to_numpy() > GAP_S):
                before, after = known.iloc[i - 1], known.iloc[i]
                ax_offsets.plot([before["t"], after["t"]], [before["leo"]] * 2, color=colour, lw=0.8, ls=":")
                ax_offsets.plot([after["t"]] * 2, [before["leo"], after["leo"]], color=colour, lw=1.5)
        ax_offsets.set_ylabel("offset (records)")
        ax_offsets.set_xlabel("time (s)")
        ax_offsets.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        for when, label in events:
            for ax in (ax_leader, ax_isr, ax_offsets):
                ax.axvline(when, color="grey", ls=":")
            ax_offsets.annotate(label, (when, 1), xycoords=("data", "axes fraction"), xytext=(-2, -4),
                                textcoords="offset points", fontsize=8, rotation=90, va="top", ha="right")
        if shade is not None:
            t0, t1 = (float(x) for x in shade)
            for ax in (ax_leader, ax_isr, ax_offsets):
                ax.axvspan(t0, t1, color="tab:red", alpha=0.08)
        for ax in (ax_leader, ax_isr, ax_offsets):
            _grid(ax)
    return _finish(fig, ax_leader, title)


# -- segments ---------------------------------------------------------------------------------------

def _snapshots(frame) -> list[tuple[str, pd.DataFrame]]:
    if isinstance(frame, pd.DataFrame):
        _frame(frame, "segments_over_time", ["snapshot", "baseOffset", "bytes", "active"])
        return [(str(label), rows) for label, rows in frame.groupby("snapshot", sort=False)]
    try:
        pairs = [(str(label), seg) for label, seg in frame]
    except (TypeError, ValueError):
        raise TypeError("segments_over_time needs a DataFrame with a 'snapshot' column or (label, frame) pairs") from None
    if not pairs:
        raise ValueError("segments_over_time needs at least one snapshot")
    for label, seg in pairs:
        _frame(seg, f"segments_over_time (snapshot {label!r})", ["baseOffset", "bytes", "active"])
    return pairs


def segments_over_time(frame, *, title: str | None = None, ax=None) -> Figure:
    """A partition's segment files at several moments: one stacked bar per moment, one colour per segment.

    ``frame``: ``list_segments`` rows with a ``snapshot`` column naming the moment (bars in the order
    the snapshots first appear), or a list of ``(label, list_segments frame)`` pairs. Each bar stacks
    the sizes of the ``.log`` files oldest first; the active segment is hatched. A segment keeps its
    colour from bar to bar (by base offset), so a segment deleted by retention is a colour that
    disappears from the bottom.
    """
    snapshots = _snapshots(frame)
    bases = sorted({int(b) for _, seg in snapshots for b in seg["baseOffset"]})
    fig, ax = _figure_for(ax, SIZES["wide"])
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    colours = {b: plt.cm.tab20(i % 20) for i, b in enumerate(bases)}
    with styled():
        for x, (_, seg) in enumerate(snapshots):
            bottom = 0
            for base, size, active in zip(seg["baseOffset"], seg["bytes"], seg["active"]):
                ax.bar(x, int(size), bottom=bottom, color=colours[int(base)], edgecolor="black", linewidth=0.5,
                       hatch="//" if active else None)
                bottom += int(size)
        ax.set_xticks(range(len(snapshots)), [label for label, _ in snapshots],
                      rotation=90 if len(snapshots) > 8 else 0)
        ax.set_ylabel("size of the .log files (bytes)")
        _grid(ax, "y")
        shown = bases if len(bases) <= 12 else bases[:5] + bases[-6:]
        handles = [Patch(facecolor=colours[b], edgecolor="black", linewidth=0.5, label=f"segment {b}") for b in shown]
        if len(shown) < len(bases):
            handles.insert(5, Patch(color="none", label="…"))
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//", label="active segment"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="base offset", title_fontsize=8)
    return _finish(fig, ax, title)


def compacted_log(before: pd.DataFrame, after: pd.DataFrame, *, active_base: int | None = None,
                  title: str | None = None, ax=None) -> Figure:
    """What log compaction kept: one row per key, one marker per record of ``before`` at its offset.

    ``before``/``after``: the partition's records (columns ``offset``, ``key``, ``value``; a ``None``
    value is a tombstone) before and after cleaning. Filled: still in the log; hollow grey: removed;
    X: a tombstone. ``active_base``: the active segment's base offset, marked by a dashed line.
    """
    _frame(before, "compacted_log (before)", ["offset", "key", "value"])
    if not isinstance(after, pd.DataFrame) or "offset" not in after.columns:
        raise ValueError("compacted_log: after needs an 'offset' column")
    kept = set(after["offset"])
    keys = sorted(set(before["key"]), key=str)
    fig, ax = _figure_for(ax, (SIZES["wide"][0], 0.4 * len(keys) + 1.4))
    with styled():
        for offset, key, value in zip(before["offset"], before["key"], before["value"]):
            y = keys.index(key)
            if offset not in kept:
                ax.scatter(offset, y, marker="o", s=70, facecolors="none", edgecolors="#bbbbbb")
            elif value is None:
                ax.scatter(offset, y, marker="X", s=80, color=HIGHLIGHT)
            else:
                ax.scatter(offset, y, marker="o", s=70, color=PARTITION_COLOURS[0])
        if active_base is not None:
            ax.axvline(active_base - 0.5, color="black", linestyle="--")
            ax.text(active_base - 0.3, -0.9, "active segment →", fontsize=8)
        ax.set_ylim(-1.2, len(keys) - 0.5)
        ax.set_yticks(range(len(keys)), [str(k) for k in keys])
        ax.set_xlabel("offset")
        ax.set_ylabel("key")
        _grid(ax, "x")
    return _finish(fig, ax, (title + "   " if title else "") + "(filled: kept, hollow: removed, X: tombstone)")


# -- lag ----------------------------------------------------------------------------------------------

def lag_over_time(frame, *, title: str | None = None, ax=None, x: str = "t", xlabel: str | None = None,
                  offsets=None) -> Figure:
    """A consumer's lag over time: one line per partition, or one for the total.

    ``frame``: a column ``x`` (default ``t``, seconds) and lag columns in records: an integer
    partition number or ``lag_<partition>`` per partition (in the partition's colour), and/or a
    total (any other name, e.g. ``lag``: black, the area under it shaded when it is the only one).

    ``offsets=(high_watermark, position)``: draw where the lag comes from instead: the two named
    columns of ``frame`` as offsets (the high watermark in black, the consumer's position), the lag
    (high watermark − position) shaded between them and the largest lag marked with its size.
    The frame's other columns are not drawn.
    """
    df = _frame(frame, "lag_over_time", [x])
    if offsets is not None:
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
        raise ValueError(f"lag_over_time: columns {high_column!r} and {position_column!r} must be offsets (numbers)") from None
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


# -- throughput against latency ---------------------------------------------------------------------

def _place_notes(ax, notes, *, width_pt: float = 62.0, height_pt: float = 9.0, first_dy: float = 3.0):
    """Write ``(text, x, y[, colour])`` notes beside their points (``first_dy`` points above), each moved
    down or up until it covers no earlier note (notes ``width_pt`` wide, ``height_pt`` high).

    Positions are compared on screen (points), after the axes' scales and limits are set."""
    ax.get_xlim(), ax.get_ylim()                       # settle the autoscaled limits first
    to_points = 72.0 / ax.figure.dpi
    placed = []
    for text, px, py, *colour in notes:
        sx, sy = (v * to_points for v in ax.transData.transform((px, py)))
        tries = (first_dy + sign * k * height_pt for k in range(40) for sign in ((1,) if k == 0 else (-1, 1)))
        dy = next((d for d in tries
                   if not any(abs(sx - qx) < width_pt and abs(sy + d - qy) < height_pt for qx, qy in placed)), first_dy)
        placed.append((sx, sy + dy))
        ax.annotate(text, (px, py), xytext=(3, dy), textcoords="offset points", fontsize=7,
                    color=colour[0] if colour else None)


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
            name = None if label is None else f"{label}={value:,}" if isinstance(value, (int, np.integer)) else f"{label}={value}"
            ax.plot(rows[x].astype(float), rows[y].astype(float), "o-", color=PARTITION_COLOURS[i % len(PARTITION_COLOURS)],
                    label=name)
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


# -- one number per setting, and values over time ---------------------------------------------------

def _reference(ax, reference):
    """A dashed red horizontal line at ``reference = (value, label)`` (a limit the data is held to)."""
    if reference is None:
        return
    try:
        value, label = reference
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"reference must be a (value, label) pair, got {reference!r}") from None
    ax.axhline(value, color=HIGHLIGHT, ls="--", lw=1.2, label=str(label))


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


__all__ = ["records_per_partition", "latency_distributions", "failover_timeline", "segments_over_time",
           "compacted_log", "lag_over_time", "throughput_latency", "bars", "over_time", "new_figure", "styled",
           "partition_colour", "broker_colour", "STYLE", "SIZES", "PASTEL", "PARTITION_COLOURS", "BROKER_COLOURS"]
