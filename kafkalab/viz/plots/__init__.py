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

The look lives in one place, :mod:`.style`: :data:`STYLE` (figure sizes, font sizes, grid), one colour per
broker id (:func:`broker_colour`) and per partition (:func:`partition_colour`), so that broker 2 or
partition 3 has the same colour in every lesson.

The helpers live in small modules — :mod:`.style` (the look, colours), :mod:`.counts` (bars),
:mod:`.latency`, :mod:`.timelines` (failover, lag, series over time), :mod:`.metrics` (a broker metric over time,
one line per broker) and :mod:`.logs` (segments, compaction) — and are all importable from here:
``from kafkalab.viz.plots import failover_timeline``.
"""
from .counts import bars, records_per_partition
from .failovers import failover_comparison
from .latency import latency_distributions, throughput_latency
from .logs import compacted_log, segments_over_time
from .metrics import metrics_over_time
from .style import (BROKER_COLOURS, GRID, HIGH_WATERMARK, HIGHLIGHT, PARTITION_COLOURS, PASTEL, SIZES, STYLE,
                    broker_colour, new_figure, partition_colour, styled)
from .timelines import failover_timeline, lag_over_time, over_time

__all__ = ["records_per_partition", "latency_distributions", "failover_timeline", "segments_over_time",
           "compacted_log", "failover_comparison", "lag_over_time", "throughput_latency", "bars", "over_time",
           "metrics_over_time",
           "new_figure", "styled",
           "partition_colour", "broker_colour", "STYLE", "SIZES", "PASTEL", "PARTITION_COLOURS", "BROKER_COLOURS",
           "GRID", "HIGHLIGHT", "HIGH_WATERMARK"]
