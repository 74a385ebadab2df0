"""A broker's Kafka metrics as Prometheus text over HTTP, under the names the Prometheus JMX exporter gives them.

The exporter's example Kafka configuration (``example_configs/kafka-2_0_0.yml`` and ``kafka-kraft-3_0_0.yml`` of
``prometheus/jmx_exporter``, ``lowercaseOutputName: true``) turns an MBean and attribute into a Prometheus sample;
:func:`prometheus_samples` follows its generic rules, so one query works on a mini broker and on real Kafka run with
the ``jmx_prometheus_javaagent``:

=====================================================  =============================================================
MBean (attribute)                                      Prometheus sample
=====================================================  =============================================================
``kafka.X:type=T,name=NPerSec[,k=v[,k2=v2]]`` (Count)  ``kafka_x_t_n_total{k="v",...}`` counter (``n`` without
                                                       ``PerSec``: ``kafka_server_brokertopicmetrics_messagesin_total``)
``kafka.X:type=T,name=N[,k=v...]`` (Value)             ``kafka_x_t_n{k="v",...}`` gauge
``kafka.X:type=T,name=N[,k=v...]`` (Count)             ``kafka_x_t_n_count{...}`` (a histogram or timer)
``kafka.X:type=T,name=N[,k=v...]`` (99thPercentile)    ``kafka_x_t_n{...,quantile="0.99"}``
``kafka.server:type=T`` (``a-b``), a Kafka metric      ``kafka_server_t_a_b`` gauge (``kafka-kraft-3_0_0.yml``'s rules
                                                       for raft-metrics: ``kafka_server_raft_metrics_current_leader``)
``kafka.server:type=T,k=v[,k2=v2]`` (``a-b``)          ``kafka_server_t_a_b{k="v",...}`` gauge, label names made safe
                                                       (kafkalab's rules for the client quota metrics:
                                                       ``kafka.server:type=Produce,user=U,client-id=C`` (byte-rate) ->
                                                       ``kafka_server_produce_byte_rate{user="U",client_id="C"}``)
``kafka.server:type=T[,k=v]`` (``a-count``), a Meter  ``kafka_server_t_a_count{k="v"}`` untyped: a Kafka sensor's
                                                       cumulative count (kafkalab's rules for group-coordinator-metrics:
                                                       ``kafka_server_group_coordinator_metrics_offset_commit_count``)
``kafka.server:type=raft-metrics`` (current-state)     ``kafka_server_raft_metrics_current_state_info{state="leader"}``
                                                       1 (a string: the other string-valued Kafka metrics are left
                                                       out, as the exporter leaves out what no rule matches)
=====================================================  =============================================================

Names are lowercased (label names are not), characters Prometheus does not allow become ``_`` and runs of ``_``
collapse, as the exporter's ``safeName``. The exporter's rules export no ``Mean``, ``Max`` or ``Min`` of a histogram,
and no ``_sum``: neither does this (the registry keeps them, :class:`~.kafka_metrics_group.Histogram`).

:class:`MetricsHttpServer` serves one broker's registry with ``prometheus_client`` (a :class:`KafkaCollector` on a
``CollectorRegistry`` of its own) at ``http://host:port/metrics``. Values are read on the broker's event loop when
the broker hands its loop in (its state is the loop's), else in the HTTP server's thread.
"""
from __future__ import annotations

import asyncio
import logging
import re
import socket
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server
from typing import Any, Callable, Iterable, Iterator

from prometheus_client.core import CollectorRegistry, Metric
from prometheus_client.exposition import ThreadingWSGIServer, make_wsgi_app

from .kafka_metrics_group import Gauge, Histogram, Meter, MetricName, MetricsRegistry, quantile_of, PERCENTILES

log = logging.getLogger(__name__)

_PER_SEC = re.compile(r"(.+)PerSec\w*")
_UNSAFE = re.compile(r"[^a-zA-Z0-9:_]")
_UNDERSCORES = re.compile(r"__+")
#: how long a scrape waits for the broker's loop to read the values
READ_TIMEOUT_S = 5.0
#: how often the server's thread looks whether it should stop (what stop() may wait)
POLL_INTERVAL_S = 0.05


def _safe(name: str) -> str:
    return _UNDERSCORES.sub("_", _UNSAFE.sub("_", name))


def prometheus_name(name: MetricName, attribute: str = "Value") -> str:
    """The sample name the exporter's rules give ``name``'s ``attribute`` (``Value``, ``Count`` or
    ``NNthPercentile``): e.g. ``kafka_server_replicamanager_underreplicatedpartitions``."""
    domain = name.group.split(".", 1)[1]
    base = f"kafka_{domain}_{name.type}_"
    if name.kafka_metric:   # kafka.server<type=(.+)><>([a-z-]+) -> kafka_server_$1_$2 (a -total one: a counter)
        if attribute != "Value":
            raise ValueError(f"a Kafka metric has one value, not {attribute!r}")
        return _safe((base + name.name).lower())
    if attribute == "Count":
        m = _PER_SEC.fullmatch(name.name)
        full = base + (f"{m.group(1)}_total" if m else f"{name.name}_count")
    elif attribute == "Value" or attribute.endswith("thPercentile"):
        full = base + name.name
    else:
        raise ValueError(f"the exporter's rules export no {attribute!r} attribute")
    return _safe(full.lower())


def _family_name(name: MetricName) -> str:
    m = _PER_SEC.fullmatch(name.name)
    if m:
        return prometheus_name(name, "Count").removesuffix("_total")
    return prometheus_name(name)


# a snapshot: (name, kind, value) with value a number (gauge, meter) or (count, [reservoir values]) (histogram)
Snapshot = list[tuple[MetricName, str, Any]]


def snapshot(registry: MetricsRegistry) -> Snapshot:
    """Every metric's value now (gauges evaluated; a gauge that fails is left out and logged)."""
    out: Snapshot = []
    for name, metric in registry.items():
        if isinstance(metric, Gauge):
            try:
                raw = metric.value
                if isinstance(raw, str):   # a Kafka metric's string (raft-metrics current-state)
                    if name.kafka_metric and name.name == "current-state":
                        out.append((name, "info", raw))
                    continue
                value = float(raw)
            except Exception:   # noqa: BLE001 - one bad gauge must not end the scrape
                log.debug("gauge %s failed", name, exc_info=True)
                continue
            out.append((name, "gauge", value))
        elif isinstance(metric, Meter):
            out.append((name, "meter", metric.count))
        elif isinstance(metric, Histogram):
            out.append((name, "histogram", (metric.count, list(metric._values))))
    return out


def prometheus_samples(values: Snapshot) -> list[Metric]:
    """The Prometheus metric families of a :func:`snapshot`, by the exporter's rules."""
    families: dict[str, Metric] = {}

    def family(fname: str, doc: str, kind: str) -> Metric:
        fam = families.get(fname)
        if fam is None:
            fam = families[fname] = Metric(fname, doc, kind)
        return fam

    for name, kind, value in values:
        labels = {_safe(k): v for k, v in name.tags}   # a Kafka metric's client-id tag: the label client_id
        doc = name.mbean_name if name.kafka_metric else f"{name.group}:type={name.type},name={name.name}"
        if kind == "info":   # kafka-kraft-3_0_0.yml: current-state: ([a-z]+) -> ..._current_state_info{state=$1} 1
            info = prometheus_name(name) + "_info"
            family(info, f"{doc} {name.name}", "gauge").add_sample(info, {**labels, "state": value}, 1.0)
        elif kind == "gauge" and name.kafka_metric and name.name.endswith("-total"):
            family(prometheus_name(name).removesuffix("_total"), f"{doc} {name.name}", "counter").add_sample(
                prometheus_name(name), labels, value)
        elif kind == "gauge":
            family(_family_name(name), doc, "gauge").add_sample(prometheus_name(name), labels, value)
        elif kind == "meter" and name.kafka_metric:   # a sensor's cumulative -count: kafkalab's rules, UNTYPED
            family(prometheus_name(name), f"{doc} {name.name}", "untyped").add_sample(prometheus_name(name), labels,
                                                                                     value)
        elif kind == "meter" and _PER_SEC.fullmatch(name.name):
            family(_family_name(name), doc, "counter").add_sample(prometheus_name(name, "Count"), labels, value)
        elif kind == "meter":
            family(prometheus_name(name, "Count"), doc, "untyped").add_sample(
                prometheus_name(name, "Count"), labels, value)
        else:   # a histogram or timer: the exporter's emulated summary (quantiles and _count, no _sum)
            count, reservoir = value
            ordered = sorted(reservoir)
            fam = family(_family_name(name), doc, "summary")
            for label, q in PERCENTILES:
                fam.add_sample(prometheus_name(name, f"{label}thPercentile"), {**labels, "quantile": f"0.{label}"},
                               quantile_of(ordered, q))
            fam.add_sample(prometheus_name(name, "Count"), labels, count)
    return list(families.values())


class KafkaCollector:
    """A ``prometheus_client`` collector of one broker's :class:`MetricsRegistry`. ``read(fn)`` runs ``fn`` where
    the broker's state may be read (its loop); by default, here."""

    def __init__(self, registry: MetricsRegistry, read: Callable[[Callable[[], Snapshot]], Snapshot] | None = None):
        self.registry = registry
        self.read = read

    def collect(self) -> Iterator[Metric]:
        take = lambda: snapshot(self.registry)   # noqa: E731
        values = self.read(take) if self.read is not None else take()
        yield from prometheus_samples(values)

    def describe(self) -> Iterable[Metric]:
        return []   # not known in advance: CollectorRegistry must not call collect() at registration


def loop_reader(loop: asyncio.AbstractEventLoop, timeout_s: float = READ_TIMEOUT_S):
    """A ``read`` for :class:`KafkaCollector` that runs the snapshot on ``loop`` (in this thread once the loop
    has stopped)."""
    def read(fn: Callable[[], Snapshot]) -> Snapshot:
        if loop.is_closed() or not loop.is_running():
            return fn()

        async def run() -> Snapshot:
            return fn()
        return asyncio.run_coroutine_threadsafe(run(), loop).result(timeout_s)
    return read


class MetricsHttpServer:
    """``http://host:port/metrics``: one broker's metrics in Prometheus text. Port 0: a free port."""

    def __init__(self, registry: MetricsRegistry, host: str = "127.0.0.1", port: int = 0,
                 read: Callable[[Callable[[], Snapshot]], Snapshot] | None = None):
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"the metrics port must be 0 (a free port) to 65535, not {port!r}")
        self.host = host
        self.requested_port = port
        self.collector_registry = CollectorRegistry(auto_describe=False)
        self.collector_registry.register(KafkaCollector(registry, read))   # type: ignore[arg-type]
        self._server: Any = None
        self._thread: Any = None

    def start(self) -> None:
        """Bind and serve in a thread of its own (prometheus-client's WSGI app and threading server, as its
        ``start_http_server``, but polled every :data:`POLL_INTERVAL_S` so that stopping is quick)."""
        server_class = _IPv6Server if ":" in self.host else ThreadingWSGIServer
        server = make_server(self.host, self.requested_port, make_wsgi_app(self.collector_registry),
                             server_class, handler_class=_QuietHandler)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S},
                                  name=f"kafkalab-metrics-{server.server_address[1]}", daemon=True)
        thread.start()
        self._server, self._thread = server, thread

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the metrics server is not running")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        """Stop serving and close the socket; its thread has ended when this returns. Safe to call twice."""
        server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()


class _QuietHandler(WSGIRequestHandler):
    """No line on stderr per scrape."""

    def log_message(self, format: str, *args) -> None:   # noqa: A002 - the overridden method's name
        pass


class _IPv6Server(ThreadingWSGIServer):
    address_family = socket.AF_INET6

