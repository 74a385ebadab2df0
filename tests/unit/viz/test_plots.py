"""kafkalab.viz.plots: each helper draws what its docstring says, with labelled axes, and rejects bad input."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from kafkalab.viz import plots  # noqa: E402
from kafkalab.viz.plots import (bars, compacted_log, failover_timeline, lag_over_time,  # noqa: E402
                                latency_distributions, over_time, records_per_partition, segments_over_time,
                                throughput_latency)


def labelled_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def legend_texts(ax):
    legend = ax.get_legend()
    return [t.get_text() for t in legend.get_texts()] if legend else []


def is_closed(fig):
    return fig.number not in plt.get_fignums() if hasattr(fig, "number") else True


# -- records_per_partition ------------------------------------------------------------------------

def test_records_per_partition_one_bar_per_partition_with_its_count():
    fig = records_per_partition({2: 9, 0: 5, 1: 0}, title="keyed records", highlight={2: "hot"})
    assert isinstance(fig, Figure) and is_closed(fig)
    ax, = fig.axes
    assert [round(p.get_height()) for p in ax.patches] == [5, 0, 9]          # sorted by partition
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "2"]
    assert ax.get_xlabel() == "partition" and ax.get_ylabel() == "records"
    assert ax.get_title("left") == "keyed records"
    texts = [t.get_text() for t in ax.texts]
    assert {"5", "0", "9", "hot"} <= set(texts)
    assert ax.patches[2].get_facecolor() != ax.patches[0].get_facecolor()   # the highlighted bar stands out


def test_records_per_partition_compares_series_side_by_side():
    frame = pd.DataFrame({"murmur2": [3, 1, 2], "consistent_random": [2, 2, 2]}, index=[0, 1, 2])
    ax, = records_per_partition(frame).axes
    assert len(ax.patches) == 6
    assert legend_texts(ax) == ["murmur2", "consistent_random"]


def test_records_per_partition_draws_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    plt.close(fig)
    assert records_per_partition(pd.Series({0: 1, 1: 2}), ax=right) is fig
    assert len(right.patches) == 2 and not left.patches


@pytest.mark.parametrize("counts, message", [({}, "at least one partition"), ({"a": 1}, "integers"),
                                             ({0: -1}, "negative"), ([1, 2], "mapping")])
def test_records_per_partition_rejects_bad_counts(counts, message):
    with pytest.raises((ValueError, TypeError), match=message):
        records_per_partition(counts)


# -- latency_distributions ------------------------------------------------------------------------

def test_latency_distributions_one_ecdf_per_label_with_p50_and_p99():
    fig = latency_distributions({"acks=1": [1, 2, 3, 4, 100], "acks=all": np.arange(1, 101)}, unit="ms")
    ax, = fig.axes
    assert ax.get_xlabel() == "latency (ms)" and "share" in ax.get_ylabel()
    assert len(labelled_lines(ax)) == 2
    first, second = legend_texts(ax)
    assert first.startswith("acks=1: p50 3 ms, p99") and "(n=5)" in first
    assert second.startswith("acks=all: p50 50.5 ms, p99 99 ms")
    assert ax.get_xscale() == "linear"            # 1 to 100: two decades, not more
    assert ax.get_ylim()[1] <= 1.05


def test_latency_distributions_goes_logarithmic_over_wide_ranges_and_names_the_unit():
    ax, = latency_distributions({"x": [0.01, 0.1, 10, 50]}, unit="s").axes
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "latency (s)"


@pytest.mark.parametrize("samples, message", [({}, "non-empty"), ({"a": []}, "no samples for 'a'"),
                                              ({"a": ["fast"]}, "not numbers"), ({"a": [-1.0]}, "negative")])
def test_latency_distributions_rejects_bad_samples(samples, message):
    with pytest.raises(ValueError, match=message):
        latency_distributions(samples)


# -- failover_timeline ------------------------------------------------------------------------------

def failover_frame():
    t = np.round(np.arange(-1.0, 8.0, 0.1), 1)
    down = (t > 0) & (t < 5)
    hw = np.cumsum(np.where((t > 0) & (t < 3), 0, 4)).astype(float)
    return pd.DataFrame({
        "t": t,
        "leader": np.where(t < 3, 1, 2).astype(float),
        "isr": [[1, 2, 3] if x < 3 else [2, 3] for x in t],
        "high_watermark": np.where((t > 0) & (t < 3), np.nan, hw),
        "leo_1": np.where(down, np.nan, hw),
        "leo_2": hw,
        "leo_3": hw,
    })


def test_failover_timeline_leader_isr_and_offsets_share_the_time_axis():
    fig = failover_timeline(failover_frame(), events=[(0, "kill 1"), (5, "restart 1")], title="orders-0",
                            shade=(0, 3))
    assert is_closed(fig)
    ax_leader, ax_isr, ax_offsets = fig.axes
    assert ax_leader.get_title("left") == "orders-0"
    assert ax_leader.get_ylabel() == "leader\n(broker id)" and ax_isr.get_ylabel() == "ISR size\n(replicas)"
    assert ax_offsets.get_ylabel() == "offset (records)" and ax_offsets.get_xlabel() == "time (s)"
    assert ax_leader.get_shared_x_axes().joined(ax_leader, ax_offsets)
    isr_line = ax_isr.get_lines()[0]
    assert list(isr_line.get_ydata()[:3]) == [3, 3, 3] and isr_line.get_ydata()[-1] == 2
    names = legend_texts(ax_offsets)
    assert names == ["high watermark", "LEO of broker 1 (dots: answered)", "LEO of broker 2", "LEO of broker 3"]
    # broker 1 went quiet for 5 s: its last LEO held (dotted), then the jump when it answered again
    dotted = [ln for ln in ax_offsets.get_lines()
              if ln.get_linestyle() == ":" and ln.get_color() == plots.broker_colour(1)]
    assert len(dotted) == 1 and list(dotted[0].get_xdata()) == [0.0, 5.0]
    assert [t.get_text() for t in ax_offsets.texts] == ["kill 1", "restart 1"]
    assert sum(1 for ln in ax_leader.get_lines() if list(ln.get_xdata()) == [5.0, 5.0]) == 1   # the event line
    assert len(ax_leader.patches) == 1                                                      # the shaded span


def test_failover_timeline_takes_isr_size_and_colours_brokers_alike():
    frame = failover_frame().drop(columns=["isr"]).assign(isr_size=3)
    ax_offsets = failover_timeline(frame).axes[2]
    by_label = {ln.get_label(): ln for ln in ax_offsets.get_lines()}
    assert by_label["LEO of broker 2"].get_color() == plots.broker_colour(2)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.drop(columns=["high_watermark"]), "high_watermark"),
    (lambda f: f.drop(columns=["isr"]), "'isr'"),
    (lambda f: f.drop(columns=["leo_1", "leo_2", "leo_3"]), "leo_"),
    (lambda f: f.iloc[0:0], "empty"),
    (lambda f: f.to_dict(), "DataFrame"),
])
def test_failover_timeline_says_what_is_missing(change, message):
    with pytest.raises((ValueError, TypeError), match=message):
        failover_timeline(change(failover_frame()))


def test_failover_timeline_rejects_malformed_events():
    with pytest.raises(ValueError, match=r"\(seconds, label\) pairs"):
        failover_timeline(failover_frame(), events=["kill 1"])


# -- segments_over_time -----------------------------------------------------------------------------

def segments(sizes, active_last=True):
    return pd.DataFrame({"baseOffset": [10 * i for i in range(len(sizes))], "bytes": sizes,
                         "active": [False] * (len(sizes) - 1) + [active_last]})


def test_segments_over_time_one_stacked_bar_per_snapshot():
    snapshots = [("3 records", segments([300])), ("9 records", segments([900, 100])),
                 ("after retention", segments([900, 100]).iloc[1:])]
    ax, = segments_over_time(snapshots, title="growth").axes
    assert len(ax.patches) == 1 + 2 + 1
    assert [t.get_text() for t in ax.get_xticklabels()] == ["3 records", "9 records", "after retention"]
    assert ax.get_ylabel() == "size of the .log files (bytes)"
    tops = [p.get_y() + p.get_height() for p in ax.patches]
    assert tops == [300, 900, 1000, 100]
    hatched = [p.get_hatch() for p in ax.patches]
    assert hatched == ["//", None, "//", "//"]           # the active segment of each snapshot
    assert ax.patches[1].get_facecolor() != ax.patches[2].get_facecolor()   # one colour per segment ...
    assert ax.patches[2].get_facecolor() == ax.patches[3].get_facecolor()   # ... kept from bar to bar
    assert legend_texts(ax) == ["segment 0", "segment 10", "active segment"]


def test_segments_over_time_takes_a_long_frame():
    long = pd.concat([segments([300]).assign(snapshot="a"), segments([900, 10]).assign(snapshot="b")])
    ax, = segments_over_time(long).axes
    assert len(ax.patches) == 3 and [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]


def test_segments_over_time_rejects_frames_without_segment_columns():
    with pytest.raises(ValueError, match="bytes"):
        segments_over_time([("x", pd.DataFrame({"baseOffset": [0], "active": [True]}))])
    with pytest.raises(ValueError, match="at least one snapshot"):
        segments_over_time([])


def test_compacted_log_marks_kept_removed_and_tombstones():
    before = pd.DataFrame({"offset": [0, 1, 2, 3], "key": ["a", "b", "a", "b"], "value": ["1", "2", "3", None]})
    ax, = compacted_log(before, before.iloc[2:], active_base=3).axes
    assert len(ax.collections) == 4 and ax.get_xlabel() == "offset" and ax.get_ylabel() == "key"
    assert "X: tombstone" in ax.get_title("left")


# -- lag_over_time ----------------------------------------------------------------------------------

def test_lag_over_time_one_line_per_partition_and_the_total():
    frame = pd.DataFrame({"t": [0.0, 1.0, 2.0], 0: [0, 5, 1], "lag_1": [0, 2, 0], "total": [0, 7, 1]})
    ax, = lag_over_time(frame, title="lag").axes
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == "lag (records)"
    assert legend_texts(ax) == ["partition 0", "partition 1", "total"]
    assert by_colour(ax, "partition 1") == plots.partition_colour(1)


def by_colour(ax, label):
    return next(line.get_color() for line in ax.get_lines() if line.get_label() == label)


def test_lag_over_time_with_another_x_column():
    ax, = lag_over_time(pd.DataFrame({"step": [0, 1], "lag": [3, 0]}), x="step").axes
    assert ax.get_xlabel() == "step" and len(labelled_lines(ax)) == 1
    assert ax.collections                                 # a single total is shaded


def test_lag_over_time_marks_events():
    frame = pd.DataFrame({"t": [0.0, 1.0, 2.0, 3.0], 0: [0, 4, 8, 0], 1: [0, 0, 1, 0]})
    ax, = lag_over_time(frame, events=[(1.0, "SIGKILL"), (2.5, "rebalanced")]).axes
    assert [t.get_text() for t in ax.texts] == ["SIGKILL", "rebalanced"]
    assert len(labelled_lines(ax)) == 2                    # the event lines are not in the legend
    assert sorted(line.get_xdata()[0] for line in ax.get_lines() if line.get_linestyle() == ":") == [1.0, 2.5]
    with pytest.raises(ValueError, match="pairs"):
        lag_over_time(frame, events=[1.0])


def test_lag_over_time_rejects_frames_without_lag():
    with pytest.raises(ValueError, match="no lag column"):
        lag_over_time(pd.DataFrame({"t": [0, 1]}))
    with pytest.raises(ValueError, match="column\\(s\\) \\['t'\\]"):
        lag_over_time(pd.DataFrame({"lag": [0, 1]}))
    with pytest.raises(ValueError, match="not a number"):
        lag_over_time(pd.DataFrame({"t": [0, 1], "lag": ["a", "b"]}))


# -- throughput_latency -----------------------------------------------------------------------------

def test_throughput_latency_one_line_per_label():
    sweep = pd.DataFrame([{"batch.size": b, "linger.ms": ms, "records/s": b / 10 + ms, "p50 latency ms": 1 + ms}
                          for b in (1_000, 16_384) for ms in (0, 5, 50)])
    ax, = throughput_latency(sweep, "p50 latency ms", "records/s", "batch.size", annotate="linger.ms").axes
    assert ax.get_xlabel() == "p50 latency ms" and ax.get_ylabel() == "records/s"
    assert legend_texts(ax) == ["batch.size=1,000", "batch.size=16,384"]
    assert len(labelled_lines(ax)) == 2 and ax.get_xscale() == "log"
    assert "linger.ms 50" in [t.get_text() for t in ax.texts]


def test_throughput_latency_names_a_missing_column():
    with pytest.raises(ValueError, match="records/s"):
        throughput_latency(pd.DataFrame({"x": [1]}), "x", "records/s")


# -- bars -------------------------------------------------------------------------------------------

def test_bars_one_bar_per_label_in_order_with_its_value():
    fig = bars({"acks=0": 73_205, "acks=1": 249_300, "acks=all": 229_495}, ylabel="records/s", title="flat out")
    assert isinstance(fig, Figure) and is_closed(fig)
    ax, = fig.axes
    assert [round(p.get_height()) for p in ax.patches] == [73_205, 249_300, 229_495]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["acks=0", "acks=1", "acks=all"]
    assert ax.get_ylabel() == "records/s" and ax.get_title("left") == "flat out"
    assert {"73,205", "249,300", "229,495"} <= {t.get_text() for t in ax.texts}
    assert len({p.get_facecolor() for p in ax.patches}) == 3


def test_bars_draws_a_reference_line_into_a_given_axes():
    fig, (left, right) = plt.subplots(1, 2)
    plt.close(fig)
    assert bars(pd.Series({"quota": 318_000.0, "free": 9e6}), ylabel="bytes/s", reference=(300_000, "quota"),
                ax=right) is fig
    assert len(right.patches) == 2 and not left.patches
    line, = labelled_lines(right)
    assert line.get_ydata()[0] == 300_000 and legend_texts(right) == ["quota"]
    assert right.get_ylim()[1] > 9e6


def test_bars_rejects_empty_or_non_numbers():
    with pytest.raises(ValueError, match="non-empty"):
        bars({}, ylabel="x")
    with pytest.raises(ValueError, match="numbers"):
        bars({"a": "many"}, ylabel="x")
    with pytest.raises(ValueError, match="missing"):
        bars({"a": float("nan")}, ylabel="x")
    with pytest.raises(ValueError, match="pair"):
        bars({"a": 1}, ylabel="x", reference=5)


# -- over_time --------------------------------------------------------------------------------------

def test_over_time_one_line_per_column_and_a_reference():
    frame = pd.DataFrame({"t": [0.0, 1.0, 2.0], "client.id=reporter": [900, 310, 300]})
    ax, = over_time(frame, ylabel="kB/s", reference=(300, "producer_byte_rate"), title="quota").axes
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == "kB/s"
    assert legend_texts(ax) == ["client.id=reporter", "producer_byte_rate"]
    assert list(labelled_lines(ax)[0].get_ydata()) == [900, 310, 300]
    assert ax.get_ylim()[0] == 0


def test_over_time_points_only_and_another_x():
    ax, = over_time(pd.DataFrame({"s": [0.5, 1.5], "throttle ms": [40.0, 12.0]}), x="s", ylabel="ms",
                    points=True).axes
    line, = labelled_lines(ax)
    assert line.get_linestyle() == "None" and ax.get_xlabel() == "s"


def test_over_time_rejects_frames_without_values():
    with pytest.raises(ValueError, match="no value column"):
        over_time(pd.DataFrame({"t": [0, 1]}), ylabel="x")
    with pytest.raises(ValueError, match="not numbers"):
        over_time(pd.DataFrame({"t": [0, 1], "v": ["a", "b"]}), ylabel="x")


def test_throughput_latency_log_y_and_notes_that_do_not_cover_each_other():
    # three runs close together on screen (the 1 kB batches of lesson 02): their notes must not overlap
    sweep = pd.DataFrame({"batch.size": [1_000] * 3 + [1_000_000] * 3, "linger.ms": [0, 5, 50] * 2,
                          "records/s": [3_720, 4_669, 5_280, 40_000, 322_000, 356_000],
                          "p50 latency ms": [2_778, 2_172, 1_738, 150, 1.5, 15]})
    fig = throughput_latency(sweep, "p50 latency ms", "records/s", "batch.size", annotate="linger.ms", log_y=True)
    ax, = fig.axes
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert len(boxes) == 6
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_value_axes_are_written_with_thousands_separators():
    ax, = bars({"a": 250_000, "b": 1_000}, ylabel="records/s").axes
    ax.figure.canvas.draw()
    assert any("," in t.get_text() for t in ax.get_yticklabels())


# -- lag_over_time(offsets=...) and bars(log=True), for lesson 05 -----------------------------------

def test_lag_over_time_between_the_high_watermark_and_the_position():
    frame = pd.DataFrame({"step": [0, 1, 2, 3], "high watermark": [3, 6, 9, 9], "position": [2, 4, 5, 9],
                          "lag": [1, 2, 4, 0]})
    fig = lag_over_time(frame, x="step", offsets=("high watermark", "position"), title="a slow consumer")
    ax, = fig.axes
    assert is_closed(fig)
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == "offset (records)"
    assert legend_texts(ax) == ["high watermark", "position", "lag = high watermark − position"]
    assert len(labelled_lines(ax)) == 2                     # the lag column is the shaded area, not a line
    assert by_colour(ax, "high watermark") == plots.HIGH_WATERMARK
    high, position = (line.get_ydata().tolist() for line in labelled_lines(ax))
    assert high == [3, 6, 9, 9] and position == [2, 4, 5, 9]
    shaded, = ax.collections
    assert shaded.get_label() == "lag = high watermark − position"
    notes = [t.get_text() for t in ax.texts]
    assert "largest lag: 4 records" in notes                 # at step 2: 9 - 5
    arrow = next(t for t in ax.texts if t.get_text() == "" and t.arrow_patch is not None)
    assert arrow.xy == (2.0, 9.0) and arrow.xyann == (2.0, 5.0)


def test_lag_over_time_without_lag_marks_nothing():
    ax, = lag_over_time(pd.DataFrame({"t": [0, 1], "hw": [5, 5], "pos": [5, 5]}), offsets=("hw", "pos")).axes
    assert ax.get_xlabel() == "time (s)" and not [t for t in ax.texts if t.get_text().startswith("largest")]


def test_lag_over_time_offsets_says_what_is_wrong():
    frame = pd.DataFrame({"t": [0, 1], "hw": [5, 6], "pos": [1, 2]})
    with pytest.raises(ValueError, match="pair of column names"):
        lag_over_time(frame, offsets="hw")
    with pytest.raises(ValueError, match="column\\(s\\) \\['position'\\]"):
        lag_over_time(frame, offsets=("hw", "position"))
    with pytest.raises(ValueError, match="must be offsets"):
        lag_over_time(frame.assign(pos=["a", "b"]), offsets=("hw", "pos"))


def test_bars_on_a_log_axis_for_values_that_span_decades():
    fig = bars({"sync": 4_555, "async": 240_069, "auto": 1_246_078}, ylabel="records/s", log=True)
    ax, = fig.axes
    assert ax.get_yscale() == "log"
    low, high = ax.get_ylim()
    assert 0 < low < 4_555 and high > 1_246_078                # every bar and its value fit
    assert [t.get_text() for t in ax.texts] == ["4,555", "240,069", "1,246,078"]
    assert [round(p.get_height()) for p in ax.patches] == [4_555, 240_069, 1_246_078]
    labels = [ax.yaxis.get_major_formatter()(v, 0) for v in (1e4, 1e6)]
    assert labels == ["10,000", "1,000,000"]
    assert bars({"a": 1, "b": 2}, ylabel="x").axes[0].get_yscale() == "linear"   # linear unless asked


def test_bars_log_axis_rejects_values_that_are_not_positive():
    with pytest.raises(ValueError, match="logarithmic axis needs positive values"):
        bars({"a": 0, "b": 10}, ylabel="records/s", log=True)
