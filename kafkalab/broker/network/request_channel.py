"""What passes between the socket layer and the request handlers, as Kafka's ``RequestChannel``.

:class:`~kafkalab.broker.network.socket_server.SocketServer` reads a frame off a connection, parses
the fixed start of its request header and hands a :class:`Request` to the server's handler (a
broker's :class:`~kafkalab.broker.kafka_apis.KafkaApis`, a controller's
:class:`~kafkalab.raft.raft_server.RaftServer`). The handler answers with the framed response bytes
(or ``None``: no response, Produce with ``acks=0``), and may set ``throttle_ms`` on the request: the
socket server then mutes that connection for so long once the response is written (KIP-219).

Two exceptions travel the other way and close the connection:

* :class:`InvalidRequest`: the bytes are not a request this server serves (an unknown API key or
  version, a body that cannot be parsed, a null where the schema forbids one); logged as a warning;
* :class:`CloseConnection`: a handler's way to answer nothing and close (Kafka's
  ``closeConnection``, e.g. a failed ``acks=0`` Produce); logged as information.
"""
from __future__ import annotations

import contextvars
import struct
from dataclasses import dataclass
from typing import Callable

from .kafka_channel import KafkaChannel

#: the request header's fixed start: api_key int16, api_version int16, correlation_id int32
HEADER_PREFIX = struct.Struct(">hhi")


class RemoteTime:
    """The seconds a request spent parked in purgatories (Kafka's remote time), summed by the purgatories."""
    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


#: the remote time of the request the current asyncio task is handling (set by the handler, e.g.
#: ``KafkaApis.handle``), which a purgatory adds its waiting to. A small object, not the request: a timer or task
#: created while handling copies the context, and must not keep the request's frame alive
current_remote_time: "contextvars.ContextVar[RemoteTime | None]" = contextvars.ContextVar("current_remote_time",
                                                                                         default=None)


class InvalidRequest(Exception):
    """The connection sent something that is not a Kafka request; Kafka closes it."""


class CloseConnection(Exception):
    """A handler's way to say "answer nothing and close this connection" (Kafka's closeConnection)."""


@dataclass(slots=True)
class Request:
    """One request frame as read off a connection (Kafka's ``RequestChannel.Request``).

    ``frame`` is the whole request (header and body, without the 4-byte size); the client id and the
    body are decoded by the handler, which knows the API's schema."""

    api_key: int
    api_version: int
    correlation_id: int
    frame: bytes
    connection_id: int
    client_host: str
    #: set by the handler when the client went over a quota: the connection is muted for so long
    throttle_ms: int = 0
    #: when the handler took it (``time.perf_counter()``; set by the handler only when it keeps request metrics)
    start_s: float = 0.0
    #: the request's name in Kafka's RequestMetrics (``Produce``, ``FetchConsumer``, ...), set with ``on_sent``
    metric_name: str = ""
    #: the time it spent parked in purgatories (set by the handler only when it keeps request metrics)
    remote_time: RemoteTime | None = None
    #: set by the handler: ``on_sent(request, send_s)`` once the response is written (``send_s``: how long the
    #: write took; 0.0 without a response), where the request's metrics are recorded
    on_sent: "Callable[[Request, float], None] | None" = None
    #: the connection it came on: its listener, security protocol and principal (None: a bare test request)
    channel: KafkaChannel | None = None

    @classmethod
    def parse(cls, frame: bytes, connection_id: int, client_host: str,
              channel: KafkaChannel | None = None) -> "Request":
        """``frame`` must hold at least the header's fixed start (the socket server checks its size)."""
        api_key, api_version, correlation_id = HEADER_PREFIX.unpack_from(frame)
        return cls(api_key, api_version, correlation_id, frame, connection_id, client_host, channel=channel)
