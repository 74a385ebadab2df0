"""``SocketServer``: Kafka's wire protocol framing, one request at a time per connection.

Every request and response is a *frame*: a 4-byte big-endian size, then that
many bytes. A request frame starts with the request header::

    api_key: int16, api_version: int16, correlation_id: int32,
    client_id: nullable string (int16 length), [tagged fields if flexible]

The socket server binds and accepts, reads each frame, parses the header's
fixed start into a :class:`~kafkalab.broker.network.request_channel.Request`
and hands it to the handler it was given (a broker's
:class:`~kafkalab.broker.kafka_apis.KafkaApis`, a controller's
:class:`~kafkalab.raft.raft_server.RaftServer`); it writes back the framed
response the handler returns (none for ``None``).

Like Kafka, the server handles a connection's requests strictly in order
(Kafka "mutes" a channel until its response is sent), so a client that
pipelines requests gets its responses in the order it sent them.

Bad input never takes the server down. A frame size that is negative, too small
to hold the header's fixed start, or over ``socket.request.max.bytes`` closes
that connection before anything is allocated, as does a connection that closes
in the middle of a frame. What the handler cannot serve it raises as
``InvalidRequest`` (see :mod:`~kafkalab.broker.network.request_channel` and
:mod:`~kafkalab.broker.kafka_apis` for which requests), and the connection is
closed; a handler that asks for it (``CloseConnection``) closes the connection
the way Kafka does; an unexpected error in a handler is logged and closes only
that connection.

Throttling (KIP-219): a handler that sets ``throttle_ms`` on the request has
the connection *muted* for that time once the response is written: no further
request of it is read until the throttle time has passed.

An SSL or SASL_SSL listener (``ssl_context``) runs the TLS handshake first (``StreamWriter.start_tls``, so that
a failed handshake is seen, logged with the client's address and closes that connection only); an SSL
connection's principal comes from the client certificate (``ssl.principal.mapping.rules``).

Each listener counts its connections and authentications as Kafka's ``Selector`` does
(:mod:`~kafkalab.broker.network.socket_server_metrics`, ``kafka.server:type=socket-server-metrics``): here the TLS
handshake's outcome, in ``KafkaApis`` the SASL exchange's.

When a connection closes, for whatever reason, every listener registered with
:meth:`SocketServer.add_connection_close_listener` is called with its id (a
broker's share sessions end with their connection, KIP-932).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import struct
import time
from typing import Awaitable, Callable

from ..common.security.ssl_principal_mapper import SslPrincipalMapper, ssl_principal
from ..utils.async_util import cancel_and_wait
from .kafka_channel import KafkaChannel
from .request_channel import HEADER_PREFIX, CloseConnection, InvalidRequest, Request
from .socket_server_metrics import SocketServerMetrics

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")
_MIN_FRAME = HEADER_PREFIX.size + 2   # + the client id's length

#: what serves a request: the framed response, or None for no response
RequestHandler = Callable[[Request], Awaitable["bytes | bytearray | None"]]


class SocketServer:
    #: connection ids, unique across the listeners (and brokers) of this process: share sessions, quotas and
    #: close listeners key on them
    _ids = itertools.count()

    def __init__(self, host: str, port: int, max_request_size: int, handler: RequestHandler,
                 listener_name: str = "PLAINTEXT", security_protocol: str = "PLAINTEXT",
                 ssl_context: ssl.SSLContext | None = None, principal_mapper: SslPrincipalMapper | None = None,
                 network_processor: int = 0):
        self.host = host
        #: the listener this server accepts for, and its security protocol (each connection's KafkaChannel)
        self.listener_name = listener_name
        self.security_protocol = security_protocol
        #: an SSL or SASL_SSL listener's TLS (``ssl.*`` configs, :mod:`kafkalab.broker.common.security.ssl_factory`)
        self.ssl_context = ssl_context
        if ssl_context is None and security_protocol in ("SSL", "SASL_SSL"):
            raise ValueError(f"listener {listener_name} ({security_protocol}) needs an SSL context")
        self.principal_mapper = principal_mapper or SslPrincipalMapper("DEFAULT")
        self.port = port
        self.max_request_size = max_request_size
        self.handler = handler
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()  # one task per connection
        #: the open connections (past the TLS handshake on an SSL listener), by connection id
        self.channels: dict[int, KafkaChannel] = {}
        self._close_listeners: list[Callable[[int], None]] = []
        #: Kafka's ``enableRequestProcessing``: until then connections are accepted but not read
        self._processing = asyncio.Event()
        #: the listener's ``socket-server-metrics`` counts (in a broker's registry once it registers them)
        self.metrics = SocketServerMetrics(listener_name, network_processor)

    def connection_count(self) -> int:
        """The connections open now, authenticated or not (Kafka's ``connection-count``)."""
        return len(self._connections)

    def add_connection_close_listener(self, listener: Callable[[int], None]) -> None:
        """Call ``listener(connection_id)`` whenever a connection closes (Kafka's ``ConnectionDisconnectListener``)."""
        self._close_listeners.append(listener)

    async def start(self, enable_request_processing: bool = True) -> None:
        """Bind and accept; serve requests at once, or (a KRaft broker) once ``enable_request_processing``."""
        if enable_request_processing:
            self._processing.set()
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=2**20)
        self.port = self._server.sockets[0].getsockname()[1]

    def enable_request_processing(self) -> None:
        self._processing.set()

    async def stop(self) -> None:
        """Stop accepting, then end every connection, also one waiting in a purgatory (a long-poll Fetch)."""
        if self._server is not None:
            self._server.close()
        while self._connections:  # (a connection accepted just before close() may start meanwhile)
            # cancelled again if it carries on: a handler that lost its cancellation must not hold the stop up
            await cancel_and_wait(list(self._connections))
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn_id = next(self._ids)
        peer = writer.get_extra_info("peername") or ("?", 0)
        channel = KafkaChannel(conn_id, peer[0], peer[1] if len(peer) > 1 else 0, self.listener_name,
                               self.security_protocol, authenticated=not self.security_protocol.startswith("SASL_"),
                               metrics=self.metrics)
        task = asyncio.current_task()
        self._connections.add(task)
        self.metrics.record("connection-creation-total")
        try:
            await self._processing.wait()
            if self.ssl_context is not None and not await self._ssl_handshake(writer, channel):
                return
            self.channels[conn_id] = channel
            while True:
                try:
                    head = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _SIZE.unpack(head)
                if size < _MIN_FRAME or size > self.max_request_size:
                    raise InvalidRequest(f"frame size {size} outside [{_MIN_FRAME}, socket.request.max.bytes="
                                         f"{self.max_request_size}]")
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    raise InvalidRequest(f"connection closed {size} bytes into a frame") from None
                request = Request.parse(frame, conn_id, peer[0], channel)
                response = await self.handler(request)
                on_sent = request.on_sent
                send_s = 0.0
                if response is not None:
                    started = time.perf_counter() if on_sent is not None else 0.0
                    writer.write(response)
                    await writer.drain()
                    if on_sent is not None:
                        send_s = time.perf_counter() - started
                if on_sent is not None:   # the request's metrics (KafkaApis), once its response is written
                    on_sent(request, send_s)
                if request.throttle_ms:  # throttled: read nothing more from this client until the time has passed
                    await asyncio.sleep(request.throttle_ms / 1000)
        except InvalidRequest as exc:
            log.warning("closing connection %d from %s: %s", conn_id, peer[0], exc)
        except CloseConnection as exc:
            log.info("closing connection %d from %s: %s", conn_id, peer[0], exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:  # a bug in a handler: log it, drop this connection, keep serving others
            log.exception("closing connection %d from %s after an unexpected error", conn_id, peer[0])
        finally:
            self._connections.discard(task)
            self.metrics.record("connection-close-total")
            self.channels.pop(conn_id, None)
            writer.close()
            for listener in self._close_listeners:
                listener(conn_id)


    async def _ssl_handshake(self, writer: asyncio.StreamWriter, channel: KafkaChannel) -> bool:
        """TLS on an SSL listener's connection, then who the client is (Kafka's ``SslTransportLayer`` and, for SSL,
        ``DefaultKafkaPrincipalBuilder``: the certificate's subject DN mapped by ``ssl.principal.mapping.rules``,
        ``User:ANONYMOUS`` without one). A failed handshake (plaintext bytes, a client that does not trust the
        certificate, a client certificate the trust store does not know) closes only this connection, logged as
        Kafka logs it."""
        try:
            await writer.start_tls(self.ssl_context)
        except (ssl.SSLError, ConnectionError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as exc:
            # Kafka's SslTransportLayer: an SSLException (an alert, bytes that are not TLS) fails the authentication,
            # logged and counted; a connection that just ends during the handshake is an I/O error (Selector's
            # "Connection with ... disconnected", at DEBUG), not counted
            if isinstance(exc, ssl.SSLError) and not isinstance(exc, ssl.SSLEOFError):
                log.info("[SocketServer listener=%s] Failed authentication with /%s (channelId=%d) (SSL handshake "
                         "failed): %s", self.listener_name, channel.client_host, channel.connection_id,
                         getattr(exc, "reason", None) or exc)
                self.metrics.authentication_failed()
            else:
                log.debug("[SocketServer listener=%s] Connection with /%s (channelId=%d) disconnected during the "
                          "SSL handshake: %r", self.listener_name, channel.client_host, channel.connection_id, exc)
            return False
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        channel.peer_certificate = ssl_object.getpeercert() if der else None
        if self.security_protocol == "SSL":
            try:
                channel.principal = ssl_principal(der, self.principal_mapper)
            except ValueError as exc:   # NoMatchingRule, or a certificate that cannot be read
                log.info("[SocketServer listener=%s] Failed authentication with /%s (channelId=%d) (%s)",
                         self.listener_name, channel.client_host, channel.connection_id, exc)
                self.metrics.authentication_failed()
                return False
            # the channel is ready: an SSL client cannot re-authenticate (KIP-368 is SASL's)
            self.metrics.authentication_succeeded()
        log.debug("[SocketServer listener=%s] connection %d from %s: TLS %s, principal %s", self.listener_name,
                  channel.connection_id, channel.client_host, ssl_object.version() if ssl_object else "?",
                  channel.principal)
        return True


__all__ = ["SocketServer", "Request", "InvalidRequest", "CloseConnection"]
