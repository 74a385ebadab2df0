"""``SaslGate``: a SASL listener's connections before (and between) authentications, as Kafka's
``SaslServerAuthenticator`` and ``Selector`` take them; shared by the broker's
:class:`~kafkalab.broker.kafka_apis.KafkaApis` and a KRaft controller's listener
(:class:`~kafkalab.raft.raft_server.RaftServer`).

A connection that has not authenticated yet may send only ApiVersions, SaslHandshake and SaslAuthenticate, each in
its state (:mod:`kafkalab.broker.common.security.authenticator.sasl_server_authenticator`); anything else fails the
authentication and closes the connection, without being decoded. A failed authentication is logged as Kafka's
``Selector`` logs it, counted in ``socket-server-metrics``, its response held back for
``connection.failed.authentication.delay.ms`` and written, then the connection is closed. With
``connections.max.reauth.ms`` a SaslHandshake on an authenticated connection begins a re-authentication (KIP-368).

The class using it has ``registry`` (an :class:`~kafkalab.broker.apis.ApiRegistry` serving SaslHandshake and
SaslAuthenticate), ``sasl_configs`` (listener name -> SaslServerConfig), ``credentials`` (a CredentialCache) and
``local_addresses`` (listener name -> its bound (host, port), for the log's channel ids).
"""
from __future__ import annotations

import asyncio
import logging
import re
import struct

from typing import TYPE_CHECKING

from .common.errors import ErrorCode
from .common.security.authenticator.sasl_server_authenticator import (
    API_VERSIONS, FAILED, INITIAL_REQUEST, SASL_HANDSHAKE, IllegalStateError, SaslServerAuthenticator)
from .common.security.authenticator.sasl_server_config import SaslServerConfig
from .common.security.errors import AuthenticationException, SaslException, UnsupportedSaslMechanismException
from .network.kafka_channel import KafkaChannel
from .network.request_channel import CloseConnection, InvalidRequest, Request
from .server.faults import error_response

if TYPE_CHECKING:
    from .apis import ApiRegistry
    from .common.security.authenticator.credential_cache import CredentialCache

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


class SaslGate:
    registry: "ApiRegistry"
    sasl_configs: dict[str, SaslServerConfig]
    credentials: "CredentialCache"
    local_addresses: dict[str, tuple[str, int]]

    async def _sasl_gate(self, request: Request, channel: KafkaChannel
                         ) -> tuple[SaslServerAuthenticator | None, bytes | None]:
        """(the authenticator if this request is a step of the exchange, else None; a response to send at once
        instead of handling the request, else None). Raises CloseConnection / InvalidRequest to close."""
        auth = channel.authenticator
        if channel.authenticated:
            if auth is None:
                return None, None
            if request.api_key == SASL_HANDSHAKE and auth.may_begin_reauthentication():   # KIP-368
                log.debug("Beginning re-authentication: %s", auth.description)
                auth = channel.authenticator = auth.begin_reauthentication()
                channel.authenticated = False
            elif auth.session_expired():
                log.debug("Disconnecting expired channel: %s", auth.description)
                raise CloseConnection("the SASL session has expired (connections.max.reauth.ms)")
            else:
                return None, None
        if auth is None:
            auth = channel.authenticator = SaslServerAuthenticator(
                self._sasl_config(channel.listener_name), self.credentials, self._describe(channel))
        if auth.raw_tokens:   # SaslHandshake v0: the frame is a bare token
            return None, await self._raw_sasl_token(request, channel, auth)
        spec = self.registry.get(request.api_key)
        try:
            if spec is None:
                if auth.state != INITIAL_REQUEST:
                    raise InvalidRequest(f"unknown API key {request.api_key}")
                auth.state = FAILED
                auth.failure = UnsupportedSaslMechanismException(
                    "Exception handling first SASL packet from client, GSSAPI is not supported by server")
                raise auth.failure
            auth.check_request(request.api_key, _kafka_api_name(spec.name))
        except AuthenticationException as exc:
            response = None
            if getattr(exc, "respond", False) and spec is not None:   # an ILLEGAL_SASL_STATE answer of that API
                try:
                    body = self.registry.decode(spec, request)
                    response = self.registry.encode(spec, request.api_version, request.correlation_id,
                                                    error_response(spec.name, body, ErrorCode.ILLEGAL_SASL_STATE))
                except Exception:   # noqa: BLE001 - a body we cannot parse or answer: closed without an answer
                    response = None
            await self._authentication_failed(request, auth)
            if response is None:
                raise CloseConnection(f"failed {auth.authentication_text()}: {exc}") from None
            return auth, bytes(response)
        except IllegalStateError as exc:
            raise InvalidRequest(str(exc)) from None
        return auth, None

    async def _sasl_step_done(self, request: Request, auth: SaslServerAuthenticator) -> None:
        """After ApiVersions, SaslHandshake or SaslAuthenticate before authentication: the next state; the
        principal once complete; a failure logged, its response held back, then the connection closed."""
        channel = request.channel
        assert channel is not None
        if auth.failure is not None:
            await self._authentication_failed(request, auth)
        elif request.api_key == API_VERSIONS:
            auth.api_versions_answered()
        elif auth.complete:
            self._authenticated(channel, auth)

    async def _raw_sasl_token(self, request: Request, channel: KafkaChannel, auth: SaslServerAuthenticator
                              ) -> bytes:
        try:
            token = auth.evaluate_raw_token(request.frame)
        except AuthenticationException as exc:
            await self._authentication_failed(request, auth)
            raise CloseConnection(f"failed {auth.authentication_text()}: {exc}") from None
        except SaslException as exc:
            raise CloseConnection(f"SASL token refused: {exc}") from None
        if auth.complete:
            self._authenticated(channel, auth)
        return _SIZE.pack(len(token)) + token

    @staticmethod
    def _authenticated(channel: KafkaChannel, auth: SaslServerAuthenticator) -> None:
        assert auth.principal is not None
        channel.principal = auth.principal
        channel.authenticated = True
        if channel.metrics is not None:   # socket-server-metrics, as Kafka's Selector counts a ready channel
            channel.metrics.authentication_succeeded(auth.reauthenticating,
                                                     auth.connected_client_supports_reauthentication)
        log.debug("Successfully %sauthenticated with %s as %s", "re-" if auth.reauthenticating else "",
                  auth.description, auth.principal)

    async def _authentication_failed(self, request: Request, auth: SaslServerAuthenticator) -> None:
        """Kafka's Selector: log, hold the response back for connection.failed.authentication.delay.ms, and close
        the connection once it is written."""
        auth.log_failure()
        channel = request.channel
        if channel is not None and channel.metrics is not None:
            channel.metrics.authentication_failed(auth.reauthenticating)
        delay_ms = auth.config.failed_authentication_delay_ms
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        request.on_sent = _close_after_response

    def _sasl_config(self, listener_name: str) -> SaslServerConfig:
        config = self.sasl_configs.get(listener_name)
        if config is None:
            raise InvalidRequest(f"listener {listener_name} has no SASL configuration")
        return config

    def _describe(self, channel: KafkaChannel) -> str:
        """How Kafka's log names a connection: ``/127.0.0.1 (channelId=127.0.0.1:9092-127.0.0.1:54321-0)``."""
        host, port = self.local_addresses.get(channel.listener_name, ("", 0))
        return (f"/{channel.client_host} (channelId={host}:{port}-{channel.client_host}:{channel.client_port}-"
                f"{channel.connection_id})")


def _kafka_api_name(name: str) -> str:
    """``FindCoordinator`` -> ``FIND_COORDINATOR`` (Kafka's ``ApiKeys`` names, as its log messages print them)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def _close_after_response(request: Request, send_s: float) -> None:
    """``Request.on_sent`` of a failed authentication: the socket server has written the response (if any) and
    closes the connection on this."""
    raise CloseConnection("authentication failed")
