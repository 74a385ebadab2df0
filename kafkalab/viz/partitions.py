"""Plots about partitions: how many records each partition got, and which member owned what when.

``plot_per_partition`` draws records per partition as bars (lesson 01: keys
and hot keys); ``plot_group_timeline`` draws a consumer group's members as
rows and, along the time axis, the partitions each member owned — so a
rebalance shows as the moment where the bars change (lesson 05).
Both return the figure (Jupyter shows a returned figure once).
"""
from __future__ import annotations

from matplotlib.figure import Figure

from .plots import PASTEL as PALETTE
from .plots import new_figure, records_per_partition, styled


def plot_per_partition(counts, title: str | None = None, highlight: dict | None = None,
                       ylabel: str = "records") -> Figure:
    """Bars of ``counts`` (a mapping or Series partition -> count); ``highlight={partition: note}`` marks bars.

    The same picture as :func:`kafkalab.viz.plots.records_per_partition`, under this older name."""
    return records_per_partition(counts, title=title, highlight=highlight, ylabel=ylabel)


def plot_group_timeline(events, members=None, title: str | None = None, end: float | None = None) -> Figure:
    """A consumer group over time: one row per member, one coloured bar per partition it owned.

    ``events`` is a list of ``(seconds, member, partitions)``: from that time on
    ``member`` owns ``partitions`` (an empty list: nothing). ``end`` is where
    the last bars stop (default: the last event + 10 %).
    """
    events = sorted(events, key=lambda e: e[0])
    if not events:
        raise ValueError("plot_group_timeline needs at least one event")
    members = list(members) if members is not None else list(dict.fromkeys(m for _, m, _ in events))
    t_end = end if end is not None else events[-1][0] + 0.1 * max(events[-1][0] - events[0][0], 1.0)
    partitions = sorted({p for _, _, parts in events for p in parts})
    colours = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(partitions)}
    fig, ax = new_figure((10, 0.7 * len(members) + 1.4))
    for row, member in enumerate(members):
        mine = [(t, parts) for t, m, parts in events if m == member]
        for i, (t, parts) in enumerate(mine):
            until = mine[i + 1][0] if i + 1 < len(mine) else t_end
            if not parts:
                continue
            height = 0.8 / len(parts)
            for j, p in enumerate(sorted(parts)):
                y = row - 0.4 + j * height
                ax.broken_barh([(t, until - t)], (y, height), facecolors=colours[p], edgecolor="black", linewidth=0.3)
                ax.text(t + (until - t) / 2, y + height / 2, str(p), ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(members)), members)
    ax.set_ylim(len(members) - 0.5, -0.5)
    ax.set_xlim(events[0][0], t_end)
    ax.set_xlabel("time (s)")
    with styled():
        if title:
            ax.set_title(title + "   (numbers: partitions owned)")
        fig.tight_layout()
    return fig
