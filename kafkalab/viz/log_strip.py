"""``plot_log``: a partition's log drawn as a row of numbered cells.

A partition is an append-only sequence: record *n* sits at offset *n*, new
records go on the right end, and readers are just positions (offsets) that
point somewhere into the row. This picture is used from the first lesson on.
"""
from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .plots import PASTEL as PALETTE


def plot_log(offsets, labels=None, groups=None, positions=None, title=None, log_start_offset=None) -> Figure:
    """Draw records at ``offsets`` as cells; return the figure (Jupyter shows it).

    - ``labels``: text under each offset (e.g. the record keys).
    - ``groups``: one name per record; cells of a group share a colour and a
      legend entry (e.g. "first batch", "second batch").
    - ``positions``: ``{"consumer position": 3, ...}`` draws an arrow at the
      left edge of that offset, i.e. at the next record the reader will get.
      A position equal to the log end offset points just past the last cell.
    - ``log_start_offset``: earlier offsets are drawn as deleted (greyed).
    """
    offsets = [int(o) for o in offsets]
    if not offsets:
        raise ValueError("plot_log needs at least one offset")
    labels = list(labels) if labels is not None else [""] * len(offsets)
    groups = list(groups) if groups is not None else [None] * len(offsets)
    if not (len(labels) == len(groups) == len(offsets)):
        raise ValueError("offsets, labels and groups must have the same length")
    positions = dict(positions or {})

    first = min([min(offsets), *positions.values()])   # a position may point before the first cell drawn
    end = max([max(offsets) + 1, *positions.values()])
    width = max(6.0, 0.9 * (end - first + 2))
    import matplotlib.pyplot as plt  # importing pyplot makes Jupyter's inline backend show returned figures

    fig = plt.figure(figsize=(min(width, 14.0), 2.0 + 0.35 * len(positions)))
    plt.close(fig)  # shown once, as the cell's result, not a second time by the inline backend
    ax = fig.add_subplot()
    colours = {}
    for offset, label, group in zip(offsets, labels, groups):
        if group not in colours:
            colours[group] = PALETTE[len(colours) % len(PALETTE)]
        deleted = log_start_offset is not None and offset < log_start_offset
        ax.add_patch(Rectangle((offset, 0), 1, 1, facecolor="#eeeeee" if deleted else colours[group],
                               edgecolor="black", hatch="//" if deleted else None,
                               label=f"deleted (below log start offset {log_start_offset})" if deleted else group))
        ax.text(offset + 0.5, 0.62, str(offset), ha="center", va="center", fontsize=12, weight="bold")
        ax.text(offset + 0.5, 0.28, str(label), ha="center", va="center", fontsize=8)
    ax.annotate("", xy=(end + 0.9, 0.5), xytext=(end + 0.1, 0.5),
                arrowprops=dict(arrowstyle="->", color="grey"))
    ax.text(end + 0.5, 1.12, "appends\ngo here", ha="center", va="bottom", fontsize=8, color="grey")
    for i, (name, pos) in enumerate(sorted(positions.items(), key=lambda kv: kv[1])):
        y = -0.35 - 0.45 * i
        ax.annotate(f"{name} = {pos}", xy=(pos, 0), xytext=(pos, y), ha="center", va="top", fontsize=9,
                    arrowprops=dict(arrowstyle="->", color="crimson"), color="crimson")
    handles, names = ax.get_legend_handles_labels()
    seen = {}
    for h, n in zip(handles, names):
        if n and not n.startswith("_") and n not in seen:
            seen[n] = h
    if seen:
        ax.legend(seen.values(), seen.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    ax.set_xlim(first - 0.2, end + 1.2)
    ax.set_ylim(-0.5 - 0.45 * len(positions), 1.6)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    return fig
