"""kafkalab.viz.plot_log: what it draws is what the lesson says it shows."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from kafkalab.viz import plot_log  # noqa: E402


def test_a_position_before_the_first_cell_is_in_view():
    # after retention the cells start at 3, but a reader may still point at offset 1 (out of range)
    fig = plot_log([3, 4, 5], positions={"stale consumer": 1, "high watermark": 6})
    ax = fig.axes[0]
    left, right = ax.get_xlim()
    assert left < 1 and right > 6
    arrows = [a for a in ax.texts if a.get_text().startswith("stale consumer")]
    assert arrows and left < arrows[0].xy[0] < right


def test_deleted_cells_have_a_legend_entry():
    fig = plot_log([0, 1, 2, 3], groups=["batch"] * 4, log_start_offset=2)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["deleted (below log start offset 2)", "batch"]
