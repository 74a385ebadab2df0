"""Several failovers on one time axis: :func:`failover_comparison` (lesson 10: ZooKeeper mode against KRaft)."""
from __future__ import annotations

from matplotlib.figure import Figure

from .style import SIZES, _finish, _frame, _grid, new_figure, styled

#: event column -> (label, marker, colour, offset from the row's centre line)
EVENTS = {"detected_s": ("death noticed (session expired / fenced)", "v", "tab:red", 0.16),
          "new_controller_s": ("a new controller", "o", "tab:blue", 0.0),
          "new_leader_s": ("the partition has a new leader", "s", "tab:green", -0.16)}


def failover_comparison(frame, *, title: str | None = None, limits=None) -> Figure:
    """One row per failover (``frame``'s index: its label), seconds after the SIGKILL on the x axis.

    ``frame`` has the columns ``detected_s``, ``new_controller_s`` (NaN when the controller did not die) and
    ``new_leader_s`` (as :func:`kafkalab.cluster.failover_probe.kill_and_watch` returns them). The stretch
    from the kill to the new partition leader is shaded: the partition had no leader to write to. ``limits``:
    an optional column name whose value per row (seconds) is drawn as a grey tick, e.g. the configured timeout.
    """
    df = _frame(frame, "failover_comparison", ["detected_s", "new_leader_s"])
    rows = list(df.index)[::-1]
    fig, ax = new_figure((SIZES["wide"][0], 0.7 * len(rows) + 1.4))
    seen = set()
    with styled():
        for y, label in enumerate(rows):
            row = df.loc[label]
            ax.barh(y, row["new_leader_s"], left=0, height=0.5, color="tab:red", alpha=0.12)
            if limits is not None and row.get(limits) == row.get(limits):
                ax.plot([row[limits]] * 2, [y - 0.3, y + 0.3], color="grey", lw=2,
                        label=None if limits in seen else limits)
                seen.add(limits)
            for column, (name, marker, colour, dy) in EVENTS.items():
                value = row.get(column)
                if value is not None and value == value:   # NaN: did not happen (no controller died)
                    ax.plot(value, y + dy, marker=marker, color=colour, ms=8, ls="none",
                            label=None if name in seen else name)
                    seen.add(name)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlabel("seconds after the SIGKILL (shaded: the partition had no leader)")
        ax.set_xlim(left=0)
        _grid(ax, "x")
    return _finish(fig, ax, title)
