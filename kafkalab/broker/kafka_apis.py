"""``KafkaApis``: the broker's one dispatch stage, as Kafka's ``KafkaApis.handle``.

The :class:`~kafkalab.broker.network.socket_server.SocketServer` hands over each
request frame as a :class:`~kafkalab.broker.network.request_channel.Request`;
:meth:`KafkaApis.handle` takes it through these steps, in this order, and returns
the response frame (or ``None``: no response):

1. **lookup**: the API and version in the registry (:mod:`kafkalab.broker.apis`).
   An unknown API key or a version not served closes the connection
   (InvalidRequest), except ApiVersions: an unsupported version gets an
   UNSUPPORTED_VERSION answer in v0, so the client can pick a version it shares
   with the broker (KIP-511).
2. **decode**: the header and body; a frame that cannot be parsed, or holds null
   where the API's schema forbids it (e.g. a null topic array), closes the
   connection, as Kafka's InvalidRequestException does.
3. **forward** (a KRaft broker): the admin requests the controller decides go to
   it whole in an Envelope (:mod:`kafkalab.kraft.forwarding_manager`) and its
   answer is the response; none of the steps below apply to them.
4. **count**: ``request_counts`` counts the requests served per (client id, API,
   version): a quick way to see which protocol versions a client really uses.
5. **handle**: the API's handler, or (a lab hook, not in Kafka) a fault of
   :mod:`kafkalab.broker.server.faults`, which may fail the request with an
   error code instead of running it, hold its response back, or lose it.
6. **throttle**: once handled, the request's bytes and time are recorded against
   the client's quotas (:mod:`kafkalab.broker.server.client_quota_manager`); a
   client over a quota gets ``throttle_time_ms`` in the response and the
   connection is muted for that time (``Request.throttle_ms``, KIP-219). A
   throttled consumer Fetch is answered empty, as Kafka's ``getThrottledResponse``.
7. **encode**: the response frame, with the request's correlation id.

Once the socket server has written the response, ``_request_sent`` records the request in Kafka's
``kafka.network:type=RequestMetrics`` (:mod:`kafkalab.broker.network.request_metrics`: RequestsPerSec, TotalTimeMs,
LocalTimeMs, RemoteTimeMs, ThrottleTimeMs, ResponseSendTimeMs; a Fetch as FetchConsumer or FetchFollower), unless
the broker keeps no metrics (``kafkalab.metrics.enabled=false``).

A handler reaches the quotas through its :class:`~kafkalab.broker.apis.RequestContext`
(``ctx.quotas``); the broker hands the quota manager and the fault injector in.

**Authentication** (a SASL listener, before step 1): a connection that has not authenticated yet may send only
what Kafka's ``SaslServerAuthenticator`` lets through (ApiVersions, SaslHandshake, SaslAuthenticate, each in its
state: :mod:`kafkalab.broker.common.security.authenticator.sasl_server_authenticator`); anything else fails the
authentication and closes the connection, without being decoded. A failed authentication is logged as Kafka's
``Selector`` logs it (``Failed authentication with /127.0.0.1 (channelId=...) (<message>)``), its response (if
Kafka sends one: SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE) is held back for
``connection.failed.authentication.delay.ms`` and written, then the connection is closed. After SaslHandshake v0
the frames are bare SASL tokens, answered bare. Once authenticated, the channel carries the principal
(``User:<name>``); with ``connections.max.reauth.ms`` a SaslHandshake begins a re-authentication (KIP-368) and any
other request after the session's end closes the connection (Kafka's ``Processor.processCompletedReceives``).
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time

from .apis import REGISTRY, ApiRegistry, ApiSpec, RequestContext, load_all
from .common.security.authenticator.credential_cache import CredentialCache
from .common.security.authenticator.sasl_server_authenticator import (
    SaslServerAuthenticator)
from .common.security.authenticator.sasl_server_config import SaslServerConfig
from .common.security.kafka_principal import ANONYMOUS
from .network.request_channel import CloseConnection, RemoteTime, Request, current_remote_time
from .network.request_metrics import CONSUMER_FETCH, FOLLOWER_FETCH, RequestChannelMetrics
from .server.client_quota_manager import ClientQuotaManager
from .server.faults import FaultInjector
from .server.kafka_broker import KafkaBroker
from .sasl_gate import SaslGate

log = logging.getLogger(__name__)
MAX_COUNTED_KEYS = 10_000  # request_counts stays small whatever client ids a client makes up


class KafkaApis(SaslGate):
    def __init__(self, broker: KafkaBroker, quotas: ClientQuotaManager, faults: FaultInjector,
                 registry: ApiRegistry = REGISTRY, sasl_configs: dict[str, SaslServerConfig] | None = None,
                 credentials: CredentialCache | None = None):
        """``quotas`` and ``faults``: the broker's, handed in (it creates them); ``sasl_configs``: each SASL
        listener's (by listener name), ``credentials``: the SCRAM credentials they authenticate against."""
        self.broker = broker
        self.quotas = quotas
        self.faults = faults
        self.registry = registry
        self.sasl_configs = sasl_configs or {}
        self.credentials = credentials if credentials is not None else CredentialCache()
        #: listener name -> the (host, port) it is bound to, for the log's channel ids (set by the broker once bound)
        self.local_addresses: dict[str, tuple[str, int]] = {}
        #: (client_id, api name, api version) -> requests served
        self.request_counts: collections.Counter = collections.Counter()
        #: Kafka's kafka.network RequestMetrics (None: the broker keeps no metrics)
        metrics = broker.metrics
        self.request_metrics = RequestChannelMetrics(metrics) if metrics is not None else None
        if registry is REGISTRY:
            load_all()

    async def handle(self, request: Request) -> bytes | bytearray | None:
        timed = self.request_metrics is not None   # Kafka's RequestMetrics
        if timed:
            request.start_s = time.perf_counter()
            request.remote_time = remote = RemoteTime()
            token = current_remote_time.set(remote)   # the purgatories add their waiting to it
        try:
            channel = request.channel
            authenticating: SaslServerAuthenticator | None = None
            if channel is not None and channel.uses_sasl:   # before authentication: only what Kafka lets through
                authenticating, early = await self._sasl_gate(request, channel)
                if early is not None:
                    return early
            # 1. lookup
            spec = self.registry.lookup(request)
            if spec is None:
                return self.registry.unsupported_api_versions(request.correlation_id)
            # 2. decode
            body = self.registry.decode(spec, request)
            if timed:
                request.metric_name = ((FOLLOWER_FETCH if _fetch_replica_id(body) >= 0 else CONSUMER_FETCH)
                                       if spec.name == "Fetch" else spec.name)
                request.on_sent = self._request_sent
            # 3. forward (KafkaBroker contract: forwarding_manager is None but on a KRaft broker)
            forwarding = self.broker.forwarding_manager
            if forwarding is not None and spec.key in forwarding.forwarded_apis:   # KRaft: the controller decides
                return await forwarding.forward(request.frame, body, request.client_host, request.api_version,
                                                request.correlation_id, _principal(request.channel))
            ctx = RequestContext(self.broker, spec.key, request.api_version, request.correlation_id,
                                 body.header.client_id, request.client_host, request.connection_id, self.quotas,
                                 request.channel)
            # 4. count
            self._count(ctx.client_id, spec.name, request.api_version)
            # 5. handle (or a lab fault)
            metered = self.quotas.enabled
            started = time.perf_counter() if metered else 0.0
            fault = self.faults.on_request(spec.name, body) if self.faults.active else None
            result: dict | None
            if fault is not None and fault.fail is not None:   # answered with the error, the request not run
                result = self.faults.answer_failed(spec.name, body, fault.fail)
            else:
                result = await spec.handler(ctx, body)
            handler_s = time.perf_counter() - started if metered else 0.0
            if fault is not None:
                if fault.delay_s:
                    await asyncio.sleep(fault.delay_s)
                if fault.drop:
                    if fault.close_connection:
                        raise CloseConnection(f"fault: {spec.name} response dropped")
                    return None
            # 6. throttle, 7. encode
            if result is None:
                if metered:
                    self._throttle(request, spec.name, ctx.client_id, body, 0, handler_s)
                return None
            encoded = self.registry.encode(spec, request.api_version, request.correlation_id, result)
            if authenticating is not None:
                await self._sasl_step_done(request, authenticating)
            if metered:
                throttle_ms = self._throttle(request, spec.name, ctx.client_id, body, len(encoded), handler_s)
                if ctx.fetch_commit is not None:   # a consumer's Fetch: its session learns what was sent
                    encoded = self.registry.encode(spec, request.api_version, request.correlation_id,
                                                   ctx.fetch_commit(throttle_ms))
                elif throttle_ms and "throttle_time_ms" in result:
                    encoded = self._throttled_response(spec, request, result, throttle_ms)
            return encoded
        finally:
            if timed:
                current_remote_time.reset(token)

    def _request_sent(self, request: Request, send_s: float) -> None:
        """The socket server wrote the response (or had none to write): the request's RequestMetrics."""
        metrics = self.request_metrics
        if metrics is not None:
            total = time.perf_counter() - request.start_s
            remote = request.remote_time
            metrics.update(request.metric_name, request.api_version, total, remote.seconds if remote else 0.0, send_s,
                           request.throttle_ms)

    def _count(self, client_id, api: str, version: int) -> None:
        key = (client_id, api, version)
        if key in self.request_counts or len(self.request_counts) < MAX_COUNTED_KEYS:
            self.request_counts[key] += 1

    def _throttle(self, request: Request, api: str, client_id, body, response_bytes: int, handler_s: float) -> int:
        """Record the request against the client's quotas; the connection is muted if it went over one.
        (A Fetch's time is not counted: most of it is the long poll's waiting, not work.)"""
        replica_id = _fetch_replica_id(body) if api == "Fetch" else -1
        throttle_ms = self.quotas.throttle_for_request(api, client_id, len(request.frame) + 4, response_bytes,
                                                       0.0 if api == "Fetch" else handler_s,
                                                       replica_id is not None and replica_id >= 0)
        if throttle_ms:
            request.throttle_ms = throttle_ms
        return throttle_ms

    def _throttled_response(self, spec: ApiSpec, request: Request, result: dict, throttle_ms: int) -> bytearray:
        """The response again, with ``throttle_time_ms`` set (a consumer Fetch: empty, getThrottledResponse)."""
        if spec.name == "Fetch":
            result = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": []}
        result["throttle_time_ms"] = throttle_ms
        return self.registry.encode(spec, request.api_version, request.correlation_id, result)


def _principal(channel):
    """The connection's principal (RequestContext.principal's): ``User:ANONYMOUS`` without a channel."""
    return channel.principal if channel is not None else ANONYMOUS


def _fetch_replica_id(body) -> int:
    """A Fetch's replica id (>= 0: a follower's; from v15 in ``replica_state``)."""
    replica_id = getattr(body, "replica_id", -1)
    if getattr(body, "replica_state", None) is not None:
        replica_id = body.replica_state.replica_id
    return -1 if replica_id is None else replica_id
