"""A partition's log on disk: segment files over time, and a log before and after compaction."""
from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from .style import SIZES, PARTITION_COLOURS, HIGHLIGHT, styled, _figure_for, _grid, _finish, _frame


def _snapshots(frame) -> list[tuple[str, pd.DataFrame]]:
    if isinstance(frame, pd.DataFrame):
        _frame(frame, "segments_over_time", ["snapshot", "baseOffset", "bytes", "active"])
        return [(str(label), rows) for label, rows in frame.groupby("snapshot", sort=False)]
    try:
        pairs = [(str(label), seg) for label, seg in frame]
    except (TypeError, ValueError):
        raise TypeError("segments_over_time needs a DataFrame with a 'snapshot' column or (label, frame) "
                        "pairs") from None
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
