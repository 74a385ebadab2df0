"""A listener's connection and authentication counts, as Kafka's ``Selector.SelectorMetrics`` keeps them for each
of a broker's network processors (``kafka.server:type=socket-server-metrics,listener=<name>,networkProcessor=<id>``,
Kafka metrics: one MBean, one attribute each):

* ``connection-count``: the connections open now (accepted, whether or not authenticated yet);
* ``connection-creation-total`` / ``connection-close-total``: connections accepted / closed so far;
* ``successful-authentication-total``: connections that completed their authentication: an SSL listener's TLS
  handshake (and the principal built from its certificate), a SASL listener's SASL exchange. A PLAINTEXT
  connection never counts: its channel is ready from the start, so Kafka's ``Selector.pollSelectionKeys`` never
  calls ``prepare()`` on it, where the count is kept;
* ``successful-authentication-no-reauth-total``: of those, the clients that cannot re-authenticate (KIP-368): every
  SSL one, and a SASL one that authenticated with SaslHandshake v0 or SaslAuthenticate v0;
* ``failed-authentication-total``: a TLS handshake that failed (plain bytes, an untrusted certificate, a missing
  client certificate under ``ssl.client.auth=required``), a principal that ``ssl.principal.mapping.rules`` cannot
  map, and a SASL exchange that failed (wrong credentials, an unknown mechanism, a request other than ApiVersions
  or a SASL one before the exchange ends): what Kafka counts when ``prepare()`` throws an
  ``AuthenticationException``;
* ``successful-reauthentication-total`` / ``failed-reauthentication-total``: KIP-368's re-authentications.

The Prometheus names are ``kafka_server_socket_server_metrics_failed_authentication_total{listener="SASL_PLAINTEXT",
networkProcessor="1"}`` and so on (kafkalab's exporter rules give real Kafka's the same).

Simplified: Kafka runs ``num.network.threads`` processors per listener (3 by default), each with its own counts and
its own ``networkProcessor`` id, numbered across the listeners in the order of ``listeners``; a mini broker's
listener is one asyncio server, so it has one processor, numbered as Kafka would number it with
``num.network.threads=1`` (the first listener's 0, the next one's 1, ...). Sum over ``networkProcessor`` to compare
with Kafka. A meter's windowed ``-rate`` attributes are not kept (Prometheus computes rates from the totals), nor
the ``network-io``, byte, request, select-time, ``reauthentication-latency`` and per-cipher/per-client-software
``connections`` metrics.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..common.metrics import MetricName

if TYPE_CHECKING:
    from ..common.metrics import MetricsRegistry

GROUP = "socket-server-metrics"
COUNTS = ("connection-creation-total", "connection-close-total", "successful-authentication-total",
          "successful-authentication-no-reauth-total", "failed-authentication-total",
          "successful-reauthentication-total", "failed-reauthentication-total")


class SocketServerMetrics:
    """One listener's counts (one network processor's, in Kafka's terms). Counting is an integer add; the counts
    become metrics once :meth:`register` puts them in a broker's registry."""

    __slots__ = ("listener_name", "network_processor", "counts", "_registered")

    def __init__(self, listener_name: str, network_processor: int = 0):
        self.listener_name = listener_name
        self.network_processor = network_processor
        self.counts = dict.fromkeys(COUNTS, 0)
        self._registered: list[MetricName] = []

    @property
    def tags(self) -> dict[str, str]:
        return {"listener": self.listener_name, "networkProcessor": str(self.network_processor)}

    def record(self, name: str) -> None:
        self.counts[name] += 1

    def authentication_succeeded(self, reauthentication: bool = False, supports_reauthentication: bool = False
                                 ) -> None:
        """Kafka's ``Selector``: a first authentication counts ``successful-authentication`` (and ``-no-reauth`` for
        a client that cannot re-authenticate), a re-authentication ``successful-reauthentication``."""
        if reauthentication:
            self.counts["successful-reauthentication-total"] += 1
            return
        self.counts["successful-authentication-total"] += 1
        if not supports_reauthentication:
            self.counts["successful-authentication-no-reauth-total"] += 1

    def authentication_failed(self, reauthentication: bool = False) -> None:
        self.counts["failed-reauthentication-total" if reauthentication else "failed-authentication-total"] += 1

    def register(self, registry: "MetricsRegistry", connection_count: Callable[[], int]) -> None:
        """Add the counts (and ``connection-count``, read from ``connection_count``) to ``registry``."""
        tags = self.tags
        name = MetricName.of_kafka_metric("kafka.server", GROUP, "connection-count", tags)
        registry.new_gauge(name, connection_count)
        self._registered.append(name)
        for count in COUNTS:
            name = MetricName.of_kafka_metric("kafka.server", GROUP, count, tags)
            registry.new_gauge(name, lambda count=count: self.counts[count])
            self._registered.append(name)

    def unregister(self, registry: "MetricsRegistry") -> None:
        for name in self._registered:
            registry.remove(name)
        self._registered.clear()


__all__ = ["SocketServerMetrics", "COUNTS", "GROUP"]
