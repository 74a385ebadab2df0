"""Kafka's own metrics of a broker, under Kafka's names: the Yammer registry the broker's parts register in
(:mod:`.kafka_metrics_group`: Kafka's ``KafkaMetricsGroup``) and its Prometheus face (:mod:`.prometheus`:
the names the Prometheus JMX exporter's example Kafka configuration gives Kafka's MBeans, served over HTTP).

One :class:`MetricsRegistry` per broker (several brokers may run in one process), kept by the broker and handed
to its parts; nothing here is module-global.
"""
from .kafka_metrics_group import (  # noqa: F401 (the package's API)
    PERCENTILES, Gauge, Histogram, KafkaMetricsGroup, Meter, MetricName, MetricsRegistry, Timer)
