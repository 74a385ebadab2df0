"""``SocketServer``: Kafka's wire protocol framing, one request at a time per connection.

Every request and response is a *frame*: a 4-byte big-endian size, then that
many bytes. A request frame starts with the request header::

    api_key: int16, api_version: int16, correlation_id: int32,
    client_id: nullable string (int16 length), [tagged fields if flexible]

Like Kafka, the server handles a connection's requests strictly in order
(Kafka "mutes" a channel until its response is sent), so a client that
pipelines requests gets its responses in the order it sent them.

Bad input never takes the broker down. A frame size that is negative or over
``socket.request.max.bytes`` closes that connection before anything is
allocated; so does a frame that cannot be parsed or names an unknown API or
version, or holds null where the API's schema forbids it, e.g. a null topic
array (Kafka closes with InvalidRequestException). ApiVersions is the
exception: an unsupported version gets an UNSUPPORTED_VERSION answer in v0,
so the client can pick a version it shares with the broker. A handler that
asks for it (``CloseConnection``, e.g. a failed ``acks=0`` Produce) closes
the connection the way Kafka does; an unexpected error in a handler is
logged and closes only that connection.

``request_counts`` counts the requests served per (client id, API, version):
a quick way to see which protocol versions a client really uses.

Client quotas (``quotas``, :mod:`kafkalab.broker.server.client_quota_manager`): once a
request is handled, its bytes and time are recorded against the client's quotas;
a client over a quota gets ``throttle_time_ms`` in the response, and the
connection is then *muted* for that time, as Kafka does (KIP-219): no further
request of it is read until the throttle time has passed.

A lab hook (not in Kafka): ``faults`` (:mod:`kafkalab.broker.server.faults`) may fail
a request with an error code instead of running it, hold its response back, or
lose its response; in cluster mode their control socket is started and stopped
with the server.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import struct
import time

from ..apis import REGISTRY, RequestContext, load_all
from ..apis.api_versions import advertised
from ..apis.messages import null_violation
from ..utils.async_util import cancel_and_wait
from ..server.client_quota_manager import ClientQuotaManager
from ..common.errors import ErrorCode, KafkaError
from ..server.faults import ControlSocket, FaultInjector

log = logging.getLogger("kafkalab.broker.network.socket_server")
_SIZE = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")
API_VERSIONS_KEY = 18
MAX_COUNTED_KEYS = 10_000  # request_counts stays small whatever client ids a client makes up


class InvalidRequest(Exception):
    """The connection sent something that is not a Kafka request; Kafka closes it."""


class CloseConnection(Exception):
    """A handler's way to say "answer nothing and close this connection" (Kafka's closeConnection)."""


class SocketServer:
    def __init__(self, broker, host: str, port: int, max_request_size: int):
        self.broker = broker
        self.host = host
        self.port = port
        self.max_request_size = max_request_size
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()  # one task per connection
        self._ids = itertools.count()
        #: (client_id, api name, api version) -> requests served
        self.request_counts: collections.Counter = collections.Counter()
        #: lab fault injection (kafkalab.broker.server.faults); its control socket in cluster mode
        self.faults = FaultInjector(broker)
        self._fault_control: ControlSocket | None = None
        #: client quotas (KIP-13/219) and the connections muted while throttled: conn id -> seconds
        self.quotas = ClientQuotaManager(broker)
        self._mute: dict[int, float] = {}
        #: Kafka's ``enableRequestProcessing``: until then connections are accepted but not read
        self._processing = asyncio.Event()
        load_all()

    async def start(self, enable_request_processing: bool = True) -> None:
        """Bind and accept; serve requests at once, or (a KRaft broker) once ``enable_request_processing``."""
        if enable_request_processing:
            self._processing.set()
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=2**20)
        self.port = self._server.sockets[0].getsockname()[1]
        if getattr(self.broker, "zk_mode", False):
            if getattr(self.broker, "zk_client", None) is not None:   # a KRaft broker (kafkalab.kraft) has none
                await asyncio.to_thread(self.quotas.load_zk)
            self._fault_control = ControlSocket(self.faults, self.broker.log_dir)
            await self._fault_control.start()

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
        if self._fault_control is not None:
            await self._fault_control.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn_id = next(self._ids)
        peer = writer.get_extra_info("peername") or ("?", 0)
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            await self._processing.wait()
            while True:
                try:
                    head = await reader.readexactly(4)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                (size,) = _SIZE.unpack(head)
                if size < _HEADER_PREFIX.size + 2 or size > self.max_request_size:
                    raise InvalidRequest(f"frame size {size} outside [10, socket.request.max.bytes="
                                         f"{self.max_request_size}]")
                try:
                    frame = await reader.readexactly(size)
                except asyncio.IncompleteReadError:
                    raise InvalidRequest(f"connection closed {size} bytes into a frame") from None
                response = await self._handle(frame, peer[0], conn_id)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
                mute_s = self._mute.pop(conn_id, 0.0)
                if mute_s:  # throttled: read nothing more from this client until the time has passed
                    await asyncio.sleep(mute_s)
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
            self._mute.pop(conn_id, None)
            writer.close()
            shares = getattr(self.broker, "share_partition_manager", None)
            if shares is not None:   # KIP-932: a share session ends with its connection (records released)
                shares.connection_closed(conn_id)

    async def _handle(self, frame: bytes, client_host: str, conn_id: int) -> bytes | bytearray | None:
        api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(frame)
        spec = REGISTRY.get(api_key)
        if spec is None:
            raise InvalidRequest(f"unknown API key {api_key}")
        if not spec.min_version <= api_version <= spec.max_version:
            if api_key == API_VERSIONS_KEY:
                return self._unsupported_api_versions(correlation_id)
            raise InvalidRequest(f"{spec.name} v{api_version} is not supported "
                                 f"(v{spec.min_version}-v{spec.max_version})")
        try:
            request = spec.request.decode(frame, version=api_version, header=True)
        except Exception as exc:
            raise InvalidRequest(f"cannot parse {spec.name} v{api_version}: {exc!r}") from None
        field = null_violation(spec.request, api_version, request)
        if field is not None:  # Kafka's generated parser: "non-nullable field X was serialized as null"
            raise InvalidRequest(f"cannot parse {spec.name} v{api_version}: non-nullable field {field} "
                                 f"was serialized as null")
        forwarding = getattr(self.broker, "forwarding_manager", None)
        if forwarding is not None and api_key in forwarding.forwarded_apis:   # KRaft: the controller decides
            return await forwarding.forward(frame, request, client_host, api_version, correlation_id)
        ctx = RequestContext(self.broker, api_key, api_version, correlation_id, request.header.client_id,
                             client_host, conn_id)
        key = (ctx.client_id, spec.name, api_version)
        if key in self.request_counts or len(self.request_counts) < MAX_COUNTED_KEYS:
            self.request_counts[key] += 1
        metered = self.quotas.enabled
        started = time.perf_counter() if metered else 0.0
        fault = self.faults.on_request(spec.name, request) if self.faults.active else None
        if fault is not None and fault.fail is not None:   # answered with the error, the request not run
            result = self.faults.answer_failed(spec.name, request, fault.fail)
        else:
            result = await spec.handler(ctx, request)
        handler_s = time.perf_counter() - started if metered else 0.0
        if fault is not None:
            if fault.delay_s:
                await asyncio.sleep(fault.delay_s)
            if fault.drop:
                if fault.close_connection:
                    raise CloseConnection(f"fault: {spec.name} response dropped")
                return None
        if result is None:
            if metered:
                self._throttle(conn_id, spec.name, ctx.client_id, request, len(frame), 0, handler_s)
            return None
        response = ctx.response(spec, result)
        response.with_header(correlation_id=correlation_id)
        # encode() already returns a fresh bytearray; bytes() would copy every Fetch response again
        encoded = response.encode(header=True, framed=True)
        if metered:
            throttle_ms = self._throttle(conn_id, spec.name, ctx.client_id, request, len(frame), len(encoded),
                                         handler_s)
            if throttle_ms and "throttle_time_ms" in result:
                if spec.name == "Fetch":   # Kafka answers a throttled consumer Fetch empty (getThrottledResponse)
                    result = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": []}
                result["throttle_time_ms"] = throttle_ms
                response = ctx.response(spec, result)
                response.with_header(correlation_id=correlation_id)
                encoded = response.encode(header=True, framed=True)
        return encoded

    def _throttle(self, conn_id: int, api: str, client_id, request, request_bytes: int, response_bytes: int,
                  handler_s: float) -> int:
        """Record the request against the client's quotas; mute the connection if it went over one.
        (A Fetch's time is not counted: most of it is the long poll's waiting, not work.)"""
        replica_id = getattr(request, "replica_id", -1) if api == "Fetch" else -1
        if api == "Fetch" and getattr(request, "replica_state", None) is not None:
            replica_id = request.replica_state.replica_id
        throttle_ms = self.quotas.throttle_for_request(api, client_id, request_bytes + 4, response_bytes,
                                                       0.0 if api == "Fetch" else handler_s,
                                                       replica_id is not None and replica_id >= 0)
        if throttle_ms:
            self._mute[conn_id] = throttle_ms / 1000
        return throttle_ms

    def _unsupported_api_versions(self, correlation_id: int) -> bytearray:
        """ApiVersions in a version we do not know: answer in v0 with UNSUPPORTED_VERSION and ApiVersions' own
        range only, so the client can retry with a version we have (KIP-511; Kafka's
        ``ApiVersionsRequest.getErrorResponse``)."""
        ctx = RequestContext(self.broker, API_VERSIONS_KEY, 0, correlation_id, None, "", -1)
        own = [entry for entry in advertised() if entry["api_key"] == API_VERSIONS_KEY]
        response = ctx.response(REGISTRY[API_VERSIONS_KEY],
                                {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": own})
        response.with_header(correlation_id=correlation_id)
        return response.encode(header=True, framed=True)


__all__ = ["SocketServer", "InvalidRequest", "CloseConnection", "KafkaError"]
