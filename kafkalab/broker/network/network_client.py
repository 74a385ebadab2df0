"""``NetworkClient``: how one broker talks to another over Kafka's wire protocol.

In cluster mode brokers are each other's clients: the controller sends
LeaderAndIsr, UpdateMetadata and StopReplica to every broker (Kafka's
``ControllerChannelManager``), a follower sends Fetch to the leader
(``ReplicaFetcherThread``), a leader sends AlterPartition to the controller
(``AlterPartitionManager``) and a stopping broker sends ControlledShutdown.
They all use this small async client: one TCP connection to one broker, one
request at a time, each request a kafka-python message class built with
:func:`kafkalab.broker.common.message.codec.build`::

    conn = NetworkClient(host, port, client_id="broker-1-fetcher")
    response = await conn.send(build(FetchRequest, 12, {...}))

A failed connection or a timeout raises ``ConnectionError`` /
``asyncio.TimeoutError`` and closes the socket; the next ``send`` connects
again (callers back off, as Kafka's do with ``reconnect.backoff.ms``).

``security`` (a :class:`~kafkalab.broker.network.client_security.ClientSecurity`,
the inter-broker listener's) secures the connection as that listener asks:
TLS first for SSL and SASL_SSL, then for SASL_* a SaslHandshake and
SaslAuthenticate before the first request, and a re-authentication on the
same connection when the session is near its end (KIP-368). A refusal raises
:class:`~kafkalab.broker.network.client_security.AuthenticationError` (a
ConnectionError) with the broker's message.
"""
from __future__ import annotations

import asyncio
import itertools
import ssl
import struct

from kafka.protocol.api_header import ResponseClassRegistry

from ..common.security.authenticator.sasl_client_authenticator import SaslClientAuthenticator
from ..common.security.errors import AuthenticationException
from ..utils.async_util import wait_for
from .client_security import AuthenticationError, ClientSecurity

_SIZE = struct.Struct(">i")
API_VERSIONS_KEY = 18


class NetworkClient:
    def __init__(self, host: str, port: int, client_id: str = "kafkalab-broker", timeout_s: float = 30.0,
                 max_response_bytes: int = 200 * 1024 * 1024, security: ClientSecurity | None = None):
        self.host = host
        self.security = security
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()          # one request in flight: responses come back in order anyway
        self._correlation = itertools.count(1)
        #: the connection's SASL authenticator (SASL_* listeners only)
        self._authenticator: SaslClientAuthenticator | None = None

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self) -> None:
        if self.connected:
            if self._authenticator is not None and self._authenticator.needs_reauthentication():
                await self._authenticate()   # KIP-368: on the same connection, before the session ends
            return
        security = self.security
        ssl_context = security.ssl_context if security is not None else None
        try:
            self._reader, self._writer = await wait_for(asyncio.open_connection(
                self.host, self.port, limit=2**20, ssl=ssl_context,
                server_hostname=self.host if ssl_context is not None else None), self.timeout_s)
        except ssl.SSLError as exc:   # Kafka: SslAuthenticationException "SSL handshake failed"
            listener = security.listener_name if security is not None else "PLAINTEXT"
            raise AuthenticationError(f"SSL handshake with {self.host}:{self.port} ({listener}) failed: {exc}") from exc
        self._authenticator = security.authenticator() if security is not None else None
        if self._authenticator is not None:
            try:
                await self._authenticate()
            except BaseException:
                await self.close()
                raise

    async def _authenticate(self) -> None:
        authenticator, security = self._authenticator, self.security
        assert authenticator is not None and security is not None
        try:
            await authenticator.authenticate(self._roundtrip)
        except AuthenticationException as exc:
            raise AuthenticationError(f"SASL/{authenticator.mechanism} authentication with {self.host}:{self.port} "
                                      f"({security.listener_name}) failed: {exc}") from exc

    async def send(self, request, timeout_s: float | None = None):
        """Send ``request`` (its ``API_VERSION`` set) and return the decoded response.

        The whole exchange is bounded by ``timeout_s`` (default: the client's); on
        any failure the connection is closed and the error raised.
        """
        async with self._lock:
            try:
                # (not asyncio.wait_for: on Python < 3.12 it can lose a cancellation; see async_util)
                return await wait_for(self._exchange(request), timeout_s or self.timeout_s)
            except BaseException:
                await self.close()
                raise

    async def _exchange(self, request):
        await self.connect()
        return await self._roundtrip(request)

    async def _roundtrip(self, request):
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        request.with_header(correlation_id=correlation_id, client_id=self.client_id)
        self._writer.write(request.encode(header=True, framed=True))
        await self._writer.drain()
        (size,) = _SIZE.unpack(await self._reader.readexactly(4))
        if not 0 < size <= self.max_response_bytes:
            raise ConnectionError(f"{self.host}:{self.port} sent a response frame of {size} bytes")
        frame = await self._reader.readexactly(size)
        response_cls = ResponseClassRegistry.get_response_class(request.header)
        if response_cls is None:
            raise ValueError(f"no response class for API key {request.API_KEY}")
        # ApiVersions responses always use response header v0 (KIP-511); the codec knows that
        response = response_cls.decode(frame, version=request.API_VERSION, header=True)
        if response.header.correlation_id != correlation_id:
            raise ConnectionError(f"{self.host}:{self.port} answered correlation id "
                                  f"{response.header.correlation_id}, expected {correlation_id}")
        return response

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        self._authenticator = None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass

    def __repr__(self) -> str:
        return f"<NetworkClient {self.client_id} -> {self.host}:{self.port}>"
