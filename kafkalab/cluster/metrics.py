"""Brokers' Kafka metrics as a pandas DataFrame: ``MiniBroker.metrics()`` and ``Cluster.metrics()``.

Each broker serves its metrics as Prometheus text at its ``metrics_url`` (:mod:`kafkalab.broker.common.metrics`),
under the names the Prometheus JMX exporter's example Kafka configuration gives Kafka's MBeans, e.g.
``kafka_server_replicamanager_underreplicatedpartitions``. :func:`metrics_frame` scrapes each URL and returns one
row per sample: ``broker`` (its id), ``metric`` (the sample's Prometheus name, e.g. ``..._messagesin_total`` or
``..._totaltimems_count``), ``labels`` (a dict, e.g. ``{"topic": "orders"}``), ``value`` and ``time`` (when it was
scraped, UTC). ``names`` keeps the samples whose name is one of them or starts with one of them::

    broker.metrics("kafka_server_replicamanager_")        # the ReplicaManager's
    cluster.metrics(["kafka_controller_kafkacontroller_activecontrollercount"])
"""
from __future__ import annotations

import urllib.request
from typing import Iterable

COLUMNS = ["broker", "metric", "labels", "value", "time"]
SCRAPE_TIMEOUT_S = 10.0


def name_filter(names) -> tuple[str, ...] | None:
    """``names`` as a tuple of prefixes (None: keep everything); a clear error for anything else."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    try:
        wanted = tuple(names)
    except TypeError:
        raise TypeError(f"names must be a metric name, a prefix or a list of them, not {names!r}") from None
    bad = [n for n in wanted if not isinstance(n, str) or not n]
    if bad:
        raise TypeError(f"names must be non-empty strings (metric names or prefixes), not {bad!r}")
    return wanted


def scrape(url: str, timeout_s: float = SCRAPE_TIMEOUT_S) -> list[tuple[str, dict, float]]:
    """(metric, labels, value) of every sample ``url`` serves."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        text = response.read().decode()
    return [(s.name, dict(s.labels), float(s.value)) for family in text_string_to_metric_families(text)
            for s in family.samples]


def metrics_frame(urls: dict[int, str] | Iterable[tuple[int, str]], names=None):
    """The samples of each ``broker id -> metrics URL``, as a DataFrame with :data:`COLUMNS`."""
    import pandas as pd

    wanted = name_filter(names)
    rows = []
    for broker, url in (urls.items() if isinstance(urls, dict) else urls):
        at = pd.Timestamp.now(tz="UTC")
        try:
            samples = scrape(url)
        except OSError as exc:
            raise RuntimeError(f"broker {broker}: its metrics at {url} cannot be read: {exc}") from exc
        rows += [(broker, metric, labels, value, at) for metric, labels, value in samples
                 if wanted is None or metric.startswith(wanted)]
    return pd.DataFrame(rows, columns=COLUMNS)
