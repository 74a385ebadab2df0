import pytest

from kafkalab.viz.partitions import plot_group_timeline, plot_per_partition


def test_plot_per_partition_draws_one_bar_per_partition():
    fig = plot_per_partition({0: 5, 1: 0, 2: 9}, title="t", highlight={2: "hot"})
    assert len(fig.axes[0].patches) == 3
    with pytest.raises(ValueError):
        plot_per_partition({})


def test_plot_group_timeline_draws_owned_partitions():
    fig = plot_group_timeline([(0.0, "a", [0, 1]), (2.0, "a", [0]), (2.0, "b", [1])], end=3.0)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a", "b"]
    assert len(fig.axes[0].collections) == 4      # a: 0 and 1, then 0; b: 1
    with pytest.raises(ValueError):
        plot_group_timeline([])
