"""``RaftServer``: the controller listener (Kafka's ``CONTROLLER`` listener of a KRaft controller).

The same framing as the broker's :class:`~kafkalab.broker.network.socket_server.SocketServer`
(4-byte size, request header, one request at a time per connection, responses in order), serving
the quorum's APIs only: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch (of ``__cluster_metadata``),
FetchSnapshot (v0) and DescribeQuorum, plus ApiVersions and DescribeCluster v1-v2 (KIP-919), so that Kafka's own
``kafka-metadata-quorum.sh --bootstrap-controller`` can ask the mini quorum. A KRaft controller adds its
own APIs (BrokerRegistration, BrokerHeartbeat, CreateTopics) with :meth:`RaftServer.register`. Bad input closes that one connection, never the controller:
a frame size out of range, an unknown API or version, a request that cannot be parsed.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import struct

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from ..broker.apis.messages import build, null_violation
from ..broker.utils.async_util import cancel_and_wait
from . import raft_apis
from .fetch_snapshot import (FETCH_SNAPSHOT_VERSION, FetchSnapshotRequest, FetchSnapshotResponse,
                             handle_fetch_snapshot)
from .raft_messages import (BEGIN_QUORUM_EPOCH_VERSION, DESCRIBE_QUORUM_VERSION, END_QUORUM_EPOCH_VERSION,
                            FETCH_VERSION, VOTE_VERSION, BeginQuorumEpochRequest, BeginQuorumEpochResponse,
                            DescribeQuorumRequest, DescribeQuorumResponse, EndQuorumEpochRequest,
                            EndQuorumEpochResponse, FetchRequest, FetchResponse, VoteRequest, VoteResponse)

log = logging.getLogger("kafkalab.raft.server")
_SIZE = struct.Struct(">i")
_PREFIX = struct.Struct(">hhi")
MAX_REQUEST_BYTES = 100 * 1024 * 1024
API_VERSIONS_KEY = 18
API_VERSIONS_MAX = 4
UNSUPPORTED_VERSION = 35

#: api key -> (request class, response class, lowest, highest version, handler)
APIS = {
    1: (FetchRequest, FetchResponse, 13, FETCH_VERSION, raft_apis.handle_fetch),
    52: (VoteRequest, VoteResponse, 0, VOTE_VERSION, raft_apis.handle_vote),
    53: (BeginQuorumEpochRequest, BeginQuorumEpochResponse, 0, BEGIN_QUORUM_EPOCH_VERSION,
         raft_apis.handle_begin_quorum_epoch),
    54: (EndQuorumEpochRequest, EndQuorumEpochResponse, 0, END_QUORUM_EPOCH_VERSION, raft_apis.handle_end_quorum_epoch),
    55: (DescribeQuorumRequest, DescribeQuorumResponse, 0, DESCRIBE_QUORUM_VERSION, raft_apis.handle_describe_quorum),
    59: (FetchSnapshotRequest, FetchSnapshotResponse, 0, FETCH_SNAPSHOT_VERSION, handle_fetch_snapshot),
    60: (DescribeClusterRequest, DescribeClusterResponse, 1, 2, raft_apis.handle_describe_cluster),
}


class InvalidRequest(Exception):
    pass


class RaftServer:
    def __init__(self, client, host: str, port: int):
        self.client = client
        self.host = host
        self.port = port
        self._server = None
        self._connections: set[asyncio.Task] = set()
        #: api key -> (request class, response class, lowest, highest version, handler(client, request))
        self.apis = dict(APIS)

    def register(self, api_key: int, request_cls, response_cls, lowest: int, highest: int, handler) -> None:
        """Serve one more API on this listener (a KRaft controller's QuorumController adds its own)."""
        self.apis[api_key] = (request_cls, response_cls, lowest, highest, handler)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=2**20)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        await cancel_and_wait(list(self._connections))
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        peer = (writer.get_extra_info("peername") or ("?",))[0]
        try:
            while True:
                try:
                    (size,) = _SIZE.unpack(await reader.readexactly(4))
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                if not _PREFIX.size + 2 <= size <= MAX_REQUEST_BYTES:
                    raise InvalidRequest(f"frame size {size}")
                frame = await reader.readexactly(size)
                writer.write(await self._handle(frame))
                await writer.drain()
        except InvalidRequest as exc:
            log.warning("closing a connection from %s: %s", peer, exc)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("closing a connection from %s after an unexpected error", peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, frame: bytes):
        api_key, version, correlation_id = _PREFIX.unpack_from(frame)
        if api_key == API_VERSIONS_KEY:
            own = {"api_key": API_VERSIONS_KEY, "min_version": 0, "max_version": API_VERSIONS_MAX}
            if not 0 <= version <= API_VERSIONS_MAX:
                # KIP-511: a version we do not know is answered in v0, UNSUPPORTED_VERSION, ApiVersions' range only
                response = build(ApiVersionsResponse, 0, {"error_code": UNSUPPORTED_VERSION, "api_keys": [own]})
                version = 0
            else:
                keys = [{"api_key": k, "min_version": lo, "max_version": hi}
                        for k, (_, _, lo, hi, _) in sorted(self.apis.items())]
                response = build(ApiVersionsResponse, version, {"error_code": 0, "api_keys": sorted(
                    [*keys, own], key=lambda k: k["api_key"]), "throttle_time_ms": 0})
        else:
            if api_key not in self.apis:
                raise InvalidRequest(f"API key {api_key} is not served by a controller")
            request_cls, response_cls, lo, hi, handler = self.apis[api_key]
            if not lo <= version <= hi:
                raise InvalidRequest(f"{request_cls.name} v{version} is not supported (v{lo}-v{hi})")
            try:
                request = request_cls.decode(frame, version=version, header=True)
            except Exception as exc:
                raise InvalidRequest(f"cannot parse {request_cls.name} v{version}: {exc!r}") from None
            if null_violation(request_cls, version, request) is not None:
                raise InvalidRequest(f"{request_cls.name} v{version} holds a null where none is allowed")
            result = handler(self.client, request)
            if inspect.isawaitable(result):
                result = await result
            response = build(response_cls, version, result)
        response.with_header(correlation_id=correlation_id)
        return response.encode(header=True, framed=True)
