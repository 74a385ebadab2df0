"""``RequestMetrics``: ``kafka.network:type=RequestMetrics,request=<name>``, as Kafka's ``RequestMetrics`` in
``RequestChannel.scala``, recorded once a request's response has been written (Kafka's ``updateRequestMetrics``).

Per request name (Kafka's: the API's name, e.g. ``Produce``, ``Metadata``; a Fetch is ``FetchConsumer`` or
``FetchFollower`` by who sends it):

* ``RequestsPerSec`` (tags ``request``, ``version``): a meter, the requests answered;
* ``TotalTimeMs``: from the handler taking the request to its response written to the socket;
* ``LocalTimeMs``: the handler's own work (``TotalTimeMs`` without ``RemoteTimeMs`` and ``ResponseSendTimeMs``);
* ``RemoteTimeMs``: the time parked in a purgatory (a ``DelayedProduce`` waiting for the followers, a
  ``DelayedFetch`` waiting for data, a ``DelayedDeleteRecords``), summed by the purgatories into the request
  (:data:`~kafkalab.broker.network.request_channel.current_remote_time`);
* ``ThrottleTimeMs``: the throttle time given to the client, which the connection is muted for (KIP-219);
* ``ResponseSendTimeMs``: writing the response to the socket, until the kernel took it (``drain``).

What the mini broker cannot separate, and so does not register rather than show a made-up number:
``RequestQueueTimeMs`` and ``ResponseQueueTimeMs``. Kafka's network threads hand a request to the handler threads
through a queue and the response back through another; here one asyncio task per connection reads, handles and
writes, so both queues' times are zero, and the time a request waits for the event loop (busy with other
connections) counts in ``LocalTimeMs``. Neither are there ``RequestBytes``, ``ErrorsPerSec``,
``MessageConversionsTimeMs`` or ``TemporaryMemoryBytes`` yet. A request name's metrics appear with its first
request (Kafka registers every API's at start).
"""
from __future__ import annotations

from ..common.metrics import KafkaMetricsGroup, Meter, MetricsRegistry

CONSUMER_FETCH = "FetchConsumer"
FOLLOWER_FETCH = "FetchFollower"


class RequestMetrics:
    """One request name's histograms (ms)."""
    __slots__ = ("total_time", "local_time", "remote_time", "throttle_time", "response_send_time")

    def __init__(self, group: KafkaMetricsGroup, name: str):
        tags = {"request": name}
        self.total_time = group.new_histogram("TotalTimeMs", tags)
        self.local_time = group.new_histogram("LocalTimeMs", tags)
        self.remote_time = group.new_histogram("RemoteTimeMs", tags)
        self.throttle_time = group.new_histogram("ThrottleTimeMs", tags)
        self.response_send_time = group.new_histogram("ResponseSendTimeMs", tags)


class RequestChannelMetrics:
    """Every request name's :class:`RequestMetrics` and ``RequestsPerSec`` meters, created at first use."""

    def __init__(self, registry: MetricsRegistry):
        self._group = KafkaMetricsGroup(registry, "kafka.network", "RequestMetrics")
        self._metrics: dict[str, RequestMetrics] = {}
        self._rates: dict[tuple[str, int], Meter] = {}

    def update(self, name: str, version: int, total_s: float, remote_s: float, send_s: float,
               throttle_ms: int) -> None:
        """One answered request's times, in seconds (``throttle_ms`` in ms)."""
        rate = self._rates.get((name, version))
        if rate is None:
            rate = self._rates[(name, version)] = self._group.new_meter(
                "RequestsPerSec", {"request": name, "version": version})
        rate.mark()
        metrics = self._metrics.get(name)
        if metrics is None:
            metrics = self._metrics[name] = RequestMetrics(self._group, name)
        metrics.total_time.update(total_s * 1000.0)
        metrics.remote_time.update(remote_s * 1000.0)
        metrics.local_time.update(max(total_s - remote_s - send_s, 0.0) * 1000.0)
        metrics.response_send_time.update(send_s * 1000.0)
        metrics.throttle_time.update(float(throttle_ms))
