"""Kafka's Yammer metrics of a broker: :class:`MetricsRegistry` (Yammer's ``MetricsRegistry``, one per broker) and
:class:`KafkaMetricsGroup` (Kafka's ``org.apache.kafka.server.metrics.KafkaMetricsGroup``: the helper a class uses
to register its metrics under its group and type).

A metric is named as Kafka's MBean is, ``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` or
``kafka.log:type=Log,name=LogEndOffset,topic=t,partition=0`` (:class:`MetricName`: group, type, name and the tags
in their order). The kinds are Yammer's, reduced to what the JMX exporter reads of them:

* :class:`Gauge`: a callable, evaluated when the metric is read (``Value``);
* :class:`Meter`: a count of events (``Count``; Yammer's rates are left out: Prometheus computes rates itself);
* :class:`Histogram`: ``Count``, ``Mean``, ``Max``, ``Min`` and Kafka's percentiles (50th, 75th, 95th, 98th, 99th,
  999th) over a bounded reservoir of the last :data:`RESERVOIR_SIZE` values (Yammer's default reservoir keeps 1028
  values too, exponentially decaying; this one is a sliding window, simpler and as cheap);
* :class:`Timer`: a histogram of durations in milliseconds that is also a meter (Kafka's ``...RateAndTimeMs``).

The hot path stays cheap: marking a meter is an integer add, updating a histogram one list store.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Union

#: Yammer's ``ExponentiallyDecayingReservoir`` default size, kept here as a window of the newest values
RESERVOIR_SIZE = 1028
#: the percentiles Yammer's JMX reporter shows (``50thPercentile`` ... ``999thPercentile``) and their quantiles
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("50", 0.50), ("75", 0.75), ("95", 0.95), ("98", 0.98), ("99", 0.99), ("999", 0.999))

_GROUP = re.compile(r"kafka(\.\w+)+")   # kafka.server, kafka.coordinator.group
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class MetricName:
    """A metric's MBean name: ``group:type=T,name=N[,tag=value...]`` (tags in the order given, as Kafka's
    ``KafkaMetricsGroup.explicitMetricName``; a tag with an empty value is left out, as Kafka leaves it out)."""
    group: str
    type: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()
    #: a Kafka (``org.apache.kafka.common.metrics``) metric, not a Yammer one: the MBean is ``group:type=T`` and
    #: ``name`` its attribute, e.g. ``kafka.server:type=raft-metrics`` attribute ``current-leader``
    kafka_metric: bool = False

    @classmethod
    def of(cls, group: str, type_: str, name: str, tags: dict | None = None) -> "MetricName":
        if not isinstance(group, str) or not _GROUP.fullmatch(group):
            raise ValueError(f"metric group must be 'kafka.<word>[.<word>...]' (e.g. 'kafka.server'), not {group!r}")
        for what, value in (("type", type_), ("name", name)):
            if not isinstance(value, str) or not _WORD.fullmatch(value):
                raise ValueError(f"metric {what} must be a word (e.g. 'ReplicaManager'), not {value!r}")
        items = tuple((str(k), str(v)) for k, v in (tags or {}).items() if str(v) != "")
        for key, _ in items:
            if not _WORD.fullmatch(key) or key in ("type", "name"):
                raise ValueError(f"metric tag must be a word other than type and name, not {key!r}")
        if len(items) > 4:   # kafkalab's exporter rules (cluster/jmx_exporter/kafka.yml) match at most four tags
            raise ValueError(f"{group}:{type_},{name}: at most four tags, not {dict(items)}")
        return cls(group, type_, name, items)

    @classmethod
    def of_kafka_metric(cls, group: str, type_: str, name: str, tags: dict | None = None) -> "MetricName":
        """A Kafka metric (``Metrics.metricName(name, group[, tags])`` in Kafka's code, e.g. ``KafkaRaftMetrics``'):
        the MBean ``group:type=type_[,tag=value...]`` with the attribute ``name``. Tags keep their order and one
        with an empty value is left out, as Kafka's ``JmxReporter.getMBeanName`` does (a client quota's
        ``kafka.server:type=Produce,user=ANONYMOUS,client-id=p1`` or, for a client-id quota, ``...,client-id=p1``)."""
        checked = cls.of(group, type_, name, tags)
        return cls(checked.group, checked.type, checked.name, checked.tags, kafka_metric=True)

    @property
    def mbean_name(self) -> str:
        if self.kafka_metric:
            return ",".join([f"{self.group}:type={self.type}"] + [f"{k}={v}" for k, v in self.tags])
        return ",".join([f"{self.group}:type={self.type}", f"name={self.name}"] + [f"{k}={v}" for k, v in self.tags])

    def __str__(self) -> str:
        return f"{self.mbean_name} {self.name}" if self.kafka_metric else self.mbean_name


class Gauge:
    """Yammer's ``Gauge``: ``value`` is the callable's answer, asked when the metric is read."""
    kind = "gauge"
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], float | str]):
        if not callable(fn):
            raise TypeError(f"a gauge needs a callable, not {fn!r}")
        self.fn = fn

    @property
    def value(self) -> float | str:
        return self.fn()


class Meter:
    """Yammer's ``Meter`` as the exporter reads it: ``count``, the events marked so far."""
    kind = "meter"
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def mark(self, n: int = 1) -> None:
        self.count += n


class Histogram:
    """Yammer's ``Histogram``: count, sum (for the mean), max and min of every value; percentiles over the
    newest :data:`RESERVOIR_SIZE` values (a ring: the list is filled once, then overwritten in place)."""
    kind = "histogram"
    __slots__ = ("count", "sum", "max", "min", "_values")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self.max = 0.0
        self.min = 0.0
        self._values: list[float] = []

    def update(self, value: float) -> None:
        n = self.count
        if n < RESERVOIR_SIZE:
            self._values.append(value)
        else:
            self._values[n % RESERVOIR_SIZE] = value
        if n == 0 or value > self.max:
            self.max = value
        if n == 0 or value < self.min:
            self.min = value
        self.count = n + 1
        self.sum += value

    @property
    def mean(self) -> float:
        return self.sum / self.count if self.count else 0.0

    def percentiles(self) -> dict[str, float]:
        """``{"50": p50, ..., "999": p99.9}`` of the reservoir, as Yammer's ``Snapshot.getValue``: the value at
        position ``q * (n + 1)`` of the sorted values, interpolated between its neighbours."""
        values = sorted(self._values)
        return {label: quantile_of(values, q) for label, q in PERCENTILES}


class Timer(Histogram):
    """Yammer's ``Timer``: a histogram of durations (ms) whose count is also a meter's (``...RateAndTimeMs``)."""
    kind = "timer"
    __slots__ = ()


def quantile_of(sorted_values: list[float], q: float) -> float:
    """Yammer's ``Snapshot.getValue(q)`` on sorted values (0.0 when there are none)."""
    n = len(sorted_values)
    if n == 0:
        return 0.0
    pos = q * (n + 1)
    if pos < 1:
        return sorted_values[0]
    if pos >= n:
        return sorted_values[-1]
    index = int(pos)
    lower, upper = sorted_values[index - 1], sorted_values[index]
    return lower + (pos - index) * (upper - lower)


Metric = Union[Gauge, Meter, Histogram, Timer]


class MetricsRegistry:
    """Yammer's ``MetricsRegistry``, one per broker: :class:`MetricName` -> metric. Registering and removing take a
    lock (the HTTP server reads from its own thread); marking and updating do not."""

    def __init__(self) -> None:
        self._metrics: dict[MetricName, Metric] = {}
        self._lock = threading.Lock()

    def _get_or_add(self, name: MetricName, make: Callable[[], Metric]) -> Metric:
        with self._lock:
            metric = self._metrics.get(name)
            if metric is None:
                metric = self._metrics[name] = make()
            return metric

    def new_gauge(self, name: MetricName, fn: Callable[[], float | str]) -> Gauge:
        """A gauge; registered again under the same name, the new callable replaces the old one (the object it
        read, e.g. a re-created partition's log, is gone)."""
        gauge = Gauge(fn)
        with self._lock:
            old = self._metrics.get(name)
            if old is not None and not isinstance(old, Gauge):
                raise ValueError(f"{name} is already registered as a {old.kind}")
            self._metrics[name] = gauge
        return gauge

    def new_meter(self, name: MetricName) -> Meter:
        return self._checked(name, self._get_or_add(name, Meter), Meter)

    def new_histogram(self, name: MetricName) -> Histogram:
        return self._checked(name, self._get_or_add(name, Histogram), Histogram)

    def new_timer(self, name: MetricName) -> Timer:
        return self._checked(name, self._get_or_add(name, Timer), Timer)

    @staticmethod
    def _checked(name: MetricName, metric: Metric, kind: type):
        if type(metric) is not kind:
            raise ValueError(f"{name} is already registered as a {metric.kind}")
        return metric

    def remove(self, name: MetricName) -> bool:
        """Remove one metric; whether it was there."""
        with self._lock:
            return self._metrics.pop(name, None) is not None

    def remove_matching(self, predicate: Callable[[MetricName], bool]) -> int:
        """Remove every metric whose name ``predicate`` accepts (e.g. all of a deleted topic's); how many."""
        with self._lock:
            gone = [n for n in self._metrics if predicate(n)]
            for n in gone:
                del self._metrics[n]
            return len(gone)

    def get(self, name: MetricName) -> Metric | None:
        return self._metrics.get(name)

    def items(self) -> list[tuple[MetricName, Metric]]:
        """A copy: the registry may change while the caller reads."""
        with self._lock:
            return list(self._metrics.items())

    def __len__(self) -> int:
        return len(self._metrics)

    def __contains__(self, name: object) -> bool:
        return name in self._metrics


class KafkaMetricsGroup:
    """Kafka's ``KafkaMetricsGroup``: registers a class's metrics in ``registry`` under its group and type,
    e.g. ``KafkaMetricsGroup(registry, "kafka.server", "ReplicaManager").new_gauge("LeaderCount", fn)``."""

    def __init__(self, registry: MetricsRegistry, group: str, type_: str):
        MetricName.of(group, type_, "check")   # a bad group or type fails here, not at the first metric
        self.registry = registry
        self.group = group
        self.type = type_

    def metric_name(self, name: str, tags: dict | None = None) -> MetricName:
        return MetricName.of(self.group, self.type, name, tags)

    def new_gauge(self, name: str, fn: Callable[[], float], tags: dict | None = None) -> Gauge:
        return self.registry.new_gauge(self.metric_name(name, tags), fn)

    def new_meter(self, name: str, tags: dict | None = None) -> Meter:
        return self.registry.new_meter(self.metric_name(name, tags))

    def new_histogram(self, name: str, tags: dict | None = None) -> Histogram:
        return self.registry.new_histogram(self.metric_name(name, tags))

    def new_timer(self, name: str, tags: dict | None = None) -> Timer:
        return self.registry.new_timer(self.metric_name(name, tags))

    def remove_metric(self, name: str, tags: dict | None = None) -> bool:
        return self.registry.remove(self.metric_name(name, tags))

    def remove_metrics(self, names: Iterable[str], tags: dict | None = None) -> None:
        for name in names:
            self.remove_metric(name, tags)
