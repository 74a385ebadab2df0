"""``RaftServer``: the controller listener (Kafka's ``CONTROLLER`` listener of a KRaft controller).

The broker's :class:`~kafkalab.broker.network.socket_server.SocketServer` frames the requests (4-byte
size, request header, one request at a time per connection, responses in order); this server answers
them from its own registry of APIs (:class:`~kafkalab.broker.apis.ApiRegistry`), filled the same way as
the broker's: the quorum's APIs (``RAFT_APIS``: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch of
``__cluster_metadata``, FetchSnapshot v0, DescribeQuorum, and DescribeCluster v1-v2, KIP-919, so that
Kafka's own ``kafka-metadata-quorum.sh --bootstrap-controller`` can ask the mini quorum), each
handler given the replica, plus ApiVersions, built from this registry. A KRaft controller adds its own
APIs (BrokerRegistration, BrokerHeartbeat, CreateTopics, ...) with :meth:`RaftServer.serve`.

A secured controller listener (``listener.security.protocol.map`` gives ``CONTROLLER`` SSL, SASL_PLAINTEXT or
SASL_SSL; ``security``, a :class:`~kafkalab.broker.server.listener_config.ServerListenerSecurity`) runs the TLS
handshake first, as a broker's listener (the same
:class:`~kafkalab.broker.network.socket_server.SocketServer`), and on a SASL one lets a connection that has not
authenticated send only ApiVersions, SaslHandshake and SaslAuthenticate (the broker's
:class:`~kafkalab.broker.sasl_gate.SaslGate`; PLAIN with the JAAS entry's ``user_<name>`` users). The listener's
``socket-server-metrics`` count its connections and authentications.

Bad input closes that one connection, never the controller: a frame size out of range, an unknown
API or version (ApiVersions excepted: an unsupported version is answered in v0 with
UNSUPPORTED_VERSION, KIP-511), a request that cannot be parsed or holds a null where its schema
forbids one.
"""
from __future__ import annotations

import contextvars
import inspect
import logging
from typing import Callable

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from ..broker.apis import ApiRegistry
from ..broker.network.request_channel import Request
from ..broker.server.broker_features import FinalizedFeatures, api_versions_features
from ..broker.common.errors import ErrorCode
from ..broker.common.security.authenticator.credential_cache import CredentialCache
from ..broker.network.socket_server import SocketServer
from ..broker.sasl_gate import SaslGate
from ..broker.server.listener_config import ServerListenerSecurity
from . import fetch_snapshot, raft_apis  # noqa: F401 (each registers its APIs in RAFT_APIS)
from .raft_messages import RAFT_APIS

log = logging.getLogger(__name__)
#: the request being handled on this listener (its handlers run in the task that set it)
current_request: contextvars.ContextVar[Request | None] = contextvars.ContextVar("current_request", default=None)
MAX_REQUEST_BYTES = 100 * 1024 * 1024
API_VERSIONS_MAX = 4

#: what the listener answers itself; each handler takes the RaftServer
LISTENER_APIS = ApiRegistry()


@LISTENER_APIS.api(ApiVersionsRequest, ApiVersionsResponse, versions=(0, API_VERSIONS_MAX))
def handle_api_versions(server: "RaftServer", request) -> dict:
    """The APIs of this listener and, from v3, the features (KIP-584) of the node's ``features`` provider: a
    controller reports what its brokers support and what its metadata finalized, as Kafka's controllers do."""
    supported, finalized = server.features() if server.features is not None else ({}, FinalizedFeatures())
    return {"error_code": 0, "api_keys": server.apis.advertised(), "throttle_time_ms": 0,
            **api_versions_features(supported, finalized, request.version)}


#: what a SASL listener answers besides (Kafka's controllers list both on every listener; a PLAINTEXT or SSL mini
#: controller listener does not)
SASL_APIS = ApiRegistry()


def _exchange_in_progress():
    """(the request being handled, its connection's authenticator), the authenticator None unless the connection
    is still authenticating."""
    current = current_request.get()
    channel = current.channel if current is not None else None
    if channel is None or channel.authenticator is None or channel.authenticated:
        return current, None
    return current, channel.authenticator


@SASL_APIS.api(SaslHandshakeRequest, SaslHandshakeResponse, versions=(0, 1))
def handle_sasl_handshake(server: "RaftServer", request) -> dict:
    """As a broker's (:mod:`kafkalab.broker.apis.sasl_handshake`): the connection's authenticator answers."""
    current, authenticator = _exchange_in_progress()
    if authenticator is None:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    return authenticator.handshake(request.mechanism, current.api_version)


@SASL_APIS.api(SaslAuthenticateRequest, SaslAuthenticateResponse, versions=(0, 2))
def handle_sasl_authenticate(server: "RaftServer", request) -> dict:
    """As a broker's (:mod:`kafkalab.broker.apis.sasl_authenticate`)."""
    current, authenticator = _exchange_in_progress()
    if authenticator is None:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                "error_message": "SaslAuthenticate request received after successful authentication",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    return authenticator.authenticate(request.auth_bytes or b"", current.api_version)


class RaftServer(SaslGate):
    def __init__(self, client, host: str, port: int, security: ServerListenerSecurity | None = None):
        self.client = client
        #: api key -> ApiSpec whose handler takes the request only (its target bound by serve())
        self.apis = self.registry = ApiRegistry()
        #: the listener's security (None: PLAINTEXT) and, for SASL, what the SaslGate reads
        self.security = security
        self.sasl_configs = ({security.listener_name: security.sasl_config}
                             if security is not None and security.sasl_config is not None else {})
        self.credentials = CredentialCache()
        self.local_addresses: dict[str, tuple[str, int]] = {}
        #: () -> (supported features, FinalizedFeatures) for ApiVersions; None: no features (a bare Raft node)
        self.features: Callable[[], tuple[dict, FinalizedFeatures]] | None = None
        self.serve(RAFT_APIS, client)
        self.serve(LISTENER_APIS, self)
        if self.sasl_configs:
            self.serve(SASL_APIS, self)
        if security is None:
            self.socket_server = SocketServer(host, port, MAX_REQUEST_BYTES, self.handle)
        else:
            self.socket_server = SocketServer(host, port, MAX_REQUEST_BYTES, self.handle, security.listener_name,
                                              security.security_protocol, security.ssl_context,
                                              security.principal_mapper)

    def serve(self, registry: ApiRegistry, target) -> None:
        """Serve ``registry``'s APIs on this listener too, each handler called as ``handler(target, request)``
        (a KRaft controller's QuorumController adds its own)."""
        for spec in registry.bound(target):
            self.apis.add(spec)

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def listener_name(self) -> str:
        return self.socket_server.listener_name

    async def start(self) -> None:
        await self.socket_server.start()
        self.local_addresses[self.listener_name] = (self.host, self.port)

    async def stop(self) -> None:
        await self.socket_server.stop()

    async def handle(self, request: Request) -> bytes | bytearray:
        current_request.set(request)   # who asks (the client's host), for a KRaft controller's authorizer
        channel = request.channel
        authenticating = None
        if channel is not None and channel.uses_sasl:   # before authentication: only what Kafka lets through
            authenticating, early = await self._sasl_gate(request, channel)
            if early is not None:
                return early
        response = await self._handle(request)
        if authenticating is not None:
            await self._sasl_step_done(request, authenticating)
        return response

    async def _handle(self, request: Request) -> bytearray:
        """Lookup, decode, handler, encode: the steps of the broker's ``KafkaApis.handle`` that a controller
        listener takes (no quotas, faults or forwarding here)."""
        spec = self.apis.lookup(request)
        if spec is None:
            return self.apis.unsupported_api_versions(request.correlation_id)
        body = self.apis.decode(spec, request)
        result = spec.handler(body)
        if inspect.isawaitable(result):
            result = await result
        return self.apis.encode(spec, request.api_version, request.correlation_id, result)
