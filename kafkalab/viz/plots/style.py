"""The look every lesson plot shares: rcParams (:data:`STYLE`), sizes, one colour per broker and per
partition, and the small helpers the plotting modules build on (a closed figure, a grid, a title)."""
from __future__ import annotations

import contextlib
import pandas as pd


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
