"""Plots about partitions: how many records each partition got, and which member owned what when.

``plot_per_partition`` draws records per partition as bars (lesson 01: keys
and hot keys); ``plot_group_timeline`` draws a consumer group's members as
rows and, along the time axis, the partitions each member owned — so a
rebalance shows as the moment where the bars change (lesson 05).
Both return the figure (Jupyter shows a returned figure once).
"""
from __future__ import annotations

from matplotlib.figure import Figure

PALETTE = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#c7e9c0", "#fcbba1", "#d9d9d9"]


def plot_per_partition(counts, title: str | None = None, highlight: dict | None = None,
                       ylabel: str = "records") -> Figure:
    """Bars of ``counts`` (a mapping or Series partition -> count); ``highlight={partition: note}`` marks bars."""
    import matplotlib.pyplot as plt  # importing pyplot makes Jupyter's inline backend show returned figures

    items = sorted(dict(counts).items())
    if not items:
        raise ValueError("plot_per_partition needs at least one partition")
    highlight = dict(highlight or {})
    fig = plt.figure(figsize=(max(4.0, 0.9 * len(items) + 2), 2.8))
    plt.close(fig)
    ax = fig.add_subplot()
    xs = [int(p) for p, _ in items]
    ys = [int(c) for _, c in items]
    colours = ["#fb6a4a" if p in highlight else PALETTE[0] for p in xs]
    ax.bar(xs, ys, color=colours, edgecolor="black", linewidth=0.5)
    for x, y in zip(xs, ys):
        ax.text(x, y, str(y), ha="center", va="bottom", fontsize=9)
        if x in highlight:
            ax.text(x, y / 2, str(highlight[x]), ha="center", va="center", fontsize=8, rotation=90)
    ax.set_xticks(xs, [f"partition {x}" for x in xs], fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, max(ys) * 1.15 + 1)
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    return fig


def plot_group_timeline(events, members=None, title: str | None = None, end: float | None = None) -> Figure:
    """A consumer group over time: one row per member, one coloured bar per partition it owned.

    ``events`` is a list of ``(seconds, member, partitions)``: from that time on
    ``member`` owns ``partitions`` (an empty list: nothing). ``end`` is where
    the last bars stop (default: the last event + 10 %).
    """
    import matplotlib.pyplot as plt

    events = sorted(events, key=lambda e: e[0])
    if not events:
        raise ValueError("plot_group_timeline needs at least one event")
    members = list(members) if members is not None else list(dict.fromkeys(m for _, m, _ in events))
    t_end = end if end is not None else events[-1][0] + 0.1 * max(events[-1][0] - events[0][0], 1.0)
    partitions = sorted({p for _, _, parts in events for p in parts})
    colours = {p: PALETTE[i % len(PALETTE)] for i, p in enumerate(partitions)}
    fig = plt.figure(figsize=(10, 0.7 * len(members) + 1.4))
    plt.close(fig)
    ax = fig.add_subplot()
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
    ax.set_xlabel("seconds")
    if title:
        ax.set_title(title + "   (numbers: partitions owned)", fontsize=10, loc="left")
    fig.tight_layout()
    return fig
