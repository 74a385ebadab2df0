"""Fault injection: a lab tool of kafkalab's own (Apache Kafka has nothing like it).

To *see* what acks, retries, idempotence and timeouts are for, a lesson needs a
broker that misbehaves on cue. ``FaultInjector`` makes the broker's request
handling (``KafkaApis``) and its replica fetchers misbehave in four ways:

``fail``               the next N requests of an API (optionally only those touching one topic, or
                       one partition) are answered with a Kafka error code, *without* running the
                       request: nothing is stored (a Produce failed with NOT_LEADER_OR_FOLLOWER
                       appends nothing, as a broker that is not the leader would not);
``delay``              responses of an API are held back ``delay_ms`` (the request is applied at
                       once, only its answer is late, like a slow network or a GC pause); as the
                       broker answers a connection's requests in order, later ones wait too;
``drop_response``      the request is applied (a Produce is written and replicated as usual) but
                       its answer is lost: by default the connection is closed instead of answering
                       (``close_connection=True``: the client sees a disconnect at once and
                       retries), or no answer is sent at all (``False``: the client waits its
                       timeout: ``request.timeout.ms`` in Java, ``socket.timeout.ms`` in librdkafka).
                       The classic cause of duplicates on retry;
``pause_replication``  this broker's replica fetchers stop fetching (all partitions, or one
                       topic or partition) for ``duration_s``: a follower that stops keeping up,
                       so it drops out of the ISR after ``replica.lag.time.max.ms``.

Each fault ends by itself: after ``count`` matching requests, or ``duration_s``
seconds, whichever comes first (at least one must be given; ``fail``,
``delay`` and ``drop_response`` default to ``count=1``). ``faults()`` lists the
active ones with what is left of them; ``clear()`` ends them. Faults change
only what clients see and when: a broker with faults never stores anything a
well-behaved broker would not have stored, given the same requests.

Where it is reached from:

* in process, ``kafkalab.mini()``: ``broker.inject_fault("fail", api="Produce", error="NOT_LEADER_OR_FOLLOWER")``,
  ``broker.faults()``, ``broker.clear_faults()`` (they run on the broker's loop through ``call``);
* a cluster's broker processes: ``Cluster.inject_fault(broker_id, ...)``, ``Cluster.faults()``,
  ``Cluster.clear_faults()``. They talk to the broker over a **local control socket** (a Unix
  socket, one JSON line in, one out), whose path the broker writes into ``kafkalab-faults.address``
  in its log directory (:class:`ControlSocket`). Why not a Kafka request: this is not Kafka, so it
  must not squat on a Kafka API key or show up in ApiVersions, and a dynamic broker config would
  pretend Kafka has such configs; a file the broker polls would answer late and could not report
  what is left of each fault. The socket answers at once, lives exactly as long as the broker
  process, and only local processes of the same user can reach it (the log directory's
  permissions).

The fault kinds by API: ``fail`` knows how to answer Produce, Fetch and
ListOffsets per partition, and any API whose response has a top-level
``error_code`` (JoinGroup, Heartbeat, SyncGroup, OffsetFetch v8-, InitProducerId, ...)
with it. A ``topic``/``partition`` filter applies to Produce, Fetch and ListOffsets; a request that
touches the filtered partition among others is failed (or delayed, or dropped) whole.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterable, Protocol

from ..common.errors import ErrorCode



class ApiSpecLike(Protocol):
    """What faults read of an API's registration (``kafkalab.broker.apis.ApiSpec``): its name and response."""

    name: str
    response: type

log = logging.getLogger(__name__)

KINDS = ("fail", "delay", "drop_response", "pause_replication")
REQUEST_KINDS = ("fail", "delay", "drop_response")
#: APIs whose requests name topics and partitions (what a topic/partition filter can match)
PARTITIONED_APIS = ("Produce", "Fetch", "ListOffsets")
ADDRESS_FILE = "kafkalab-faults.address"


@dataclass
class Fault:
    id: int
    kind: str
    api: str | None = None
    topic: str | None = None
    partition: int | None = None
    error: int | None = None            # fail: the error code answered
    delay_ms: int = 0                   # delay
    close_connection: bool = True       # drop_response: close (True) or stay silent (False)
    remaining: int | None = None        # requests still to hit; None: until the time runs out
    until: float | None = None          # time.monotonic() at which it ends; None: until the count runs out
    hits: int = 0                       # requests (or fetches skipped) so far
    created: float = field(default_factory=time.monotonic)

    def expired(self, now: float) -> bool:
        return (self.remaining is not None and self.remaining <= 0) or (self.until is not None and now >= self.until)

    def covers(self, topic: str, partition: int) -> bool:
        return ((self.topic is None or self.topic == topic)
                and (self.partition is None or self.partition == partition))

    def describe(self, now: float | None = None) -> dict:
        now = time.monotonic() if now is None else now
        out = {"id": self.id, "kind": self.kind, "api": self.api, "topic": self.topic, "partition": self.partition,
               "remaining": self.remaining,
               "remaining_s": None if self.until is None else round(max(0.0, self.until - now), 3),
               "hits": self.hits}
        if self.kind == "fail":
            out["error"] = ErrorCode(self.error).name
        if self.kind == "delay":
            out["delay_ms"] = self.delay_ms
        if self.kind == "drop_response":
            out["close_connection"] = self.close_connection
        return out


@dataclass
class RequestAction:
    """What the faults matching one request do to it (``KafkaApis`` applies it)."""
    fail: int | None = None      # answer with this error code instead of running the request
    delay_s: float = 0.0         # hold the response back this long
    drop: bool = False           # run the request, lose its response
    close_connection: bool = True


def error_code_of(error) -> int:
    """An ErrorCode given by name (``"NOT_LEADER_OR_FOLLOWER"``), member or number."""
    if isinstance(error, str):
        try:
            return int(ErrorCode[error.upper()])
        except KeyError:
            raise ValueError(f"unknown Kafka error code name {error!r}") from None
    return int(ErrorCode(int(error)))


def request_partitions(api: str, request) -> list[tuple[str, int]]:
    """The (topic, partition) pairs a Produce, Fetch or ListOffsets request names."""
    if api == "Produce":
        return [(t.name, p.index) for t in request.topic_data or () for p in t.partition_data or ()]
    if api == "Fetch":
        return [(t.topic, p.partition) for t in request.topics or () for p in t.partitions or ()]
    if api == "ListOffsets":
        return [(t.name, p.partition_index) for t in request.topics or () for p in t.partitions or ()]
    return []


def error_response(api: str, request, code: int) -> dict:
    """The answer a broker gives when the request fails with ``code`` (Kafka's ``getErrorResponse``)."""
    if api == "Produce":
        return {"throttle_time_ms": 0, "responses": [
            {"name": t.name, "partition_responses": [
                {"index": p.index, "error_code": code, "base_offset": -1, "log_append_time_ms": -1,
                 "log_start_offset": -1, "error_message": f"{ErrorCode(code).name} (kafkalab fault)"}
                for p in t.partition_data or ()]} for t in request.topic_data or ()]}
    if api == "Fetch":
        return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
            {"topic": t.topic, "topic_id": getattr(t, "topic_id", None), "partitions": [
                {"partition_index": p.partition, "error_code": code, "high_watermark": -1, "last_stable_offset": -1,
                 "log_start_offset": -1, "preferred_read_replica": -1, "records": b""}
                for p in t.partitions or ()]} for t in request.topics or ()]}
    if api == "ListOffsets":
        return {"throttle_time_ms": 0, "topics": [
            {"name": t.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": code, "timestamp": -1, "offset": -1,
                 "leader_epoch": -1} for p in t.partitions or ()]} for t in request.topics or ()]}
    return {"throttle_time_ms": 0, "error_code": code}


class FaultInjector:
    """The active faults of one broker. Runs on the broker's loop (every method is quick and sync)."""

    def __init__(self, broker=None, apis: Iterable[ApiSpecLike] = ()):
        """``apis``: the APIs the broker serves (its ``kafkalab.broker.apis`` registry, handed in by the server):
        a fault names one of them, and a ``fail`` fault needs a response with an error code to set."""
        self.broker = broker
        self._responses = {spec.name: spec.response for spec in apis}
        self._faults: dict[int, Fault] = {}
        self._ids = itertools.count(1)
        #: a quick check for the request path: are there any faults at all?
        self.active = False

    def _has_top_level_error(self, api: str) -> bool:
        response = self._responses.get(api)
        if response is None:
            raise ValueError(f"unknown API {api!r}; the broker serves {sorted(self._responses)}")
        return any(f["name"] == "ErrorCode" for f in response._json.get("fields", []))

    # -- the notebook's side -----------------------------------------------------------

    def inject(self, kind: str, api: str | None = None, *, count: int | None = None,
               duration_s: float | None = None, error="NOT_LEADER_OR_FOLLOWER", delay_ms: int = 0,
               topic: str | None = None, partition: int | None = None, close_connection: bool = True) -> dict:
        """Add a fault; returns it as ``faults()`` lists it. See the module docstring for the kinds."""
        if kind not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {KINDS}")
        if partition is not None and topic is None:
            raise ValueError("a partition filter needs its topic")
        if kind in REQUEST_KINDS:
            if not api:
                raise ValueError(f"a {kind!r} fault needs the API it applies to, e.g. api='Produce'")
            if (topic is not None) and api not in PARTITIONED_APIS:
                raise ValueError(f"a topic filter applies to {PARTITIONED_APIS} only, not {api}")
            if kind == "fail" and api not in PARTITIONED_APIS and not self._has_top_level_error(api):
                raise ValueError(f"cannot fail {api} requests: its response has no error code to set")
            self._has_top_level_error(api)   # the API must exist
            if count is None and duration_s is None:
                count = 1
        elif duration_s is None:
            raise ValueError("pause_replication needs duration_s (and may take a count of fetches to skip)")
        if count is not None and count < 1:
            raise ValueError("count must be at least 1")
        if duration_s is not None and duration_s <= 0:
            raise ValueError("duration_s must be positive")
        if kind == "delay" and delay_ms <= 0:
            raise ValueError("a delay fault needs delay_ms > 0")
        fault = Fault(next(self._ids), kind, api if kind in REQUEST_KINDS else None, topic, partition,
                      error_code_of(error) if kind == "fail" else None, int(delay_ms), bool(close_connection),
                      count, None if duration_s is None else time.monotonic() + duration_s)
        self._faults[fault.id] = fault
        self.active = True
        log.warning("fault injected: %s", fault.describe())
        return fault.describe()

    def faults(self) -> list[dict]:
        """The active faults, oldest first, with what is left of each (``remaining``, ``remaining_s``)."""
        self._prune()
        now = time.monotonic()
        return [f.describe(now) for f in self._faults.values()]

    def clear(self, fault_id: int | None = None) -> int:
        """End one fault (by id) or all of them; returns how many ended."""
        if fault_id is None:
            n = len(self._faults)
            self._faults.clear()
        else:
            n = 1 if self._faults.pop(fault_id, None) is not None else 0
        self.active = bool(self._faults)
        if n:
            log.warning("faults cleared: %d", n)
        return n

    def _prune(self) -> None:
        now = time.monotonic()
        for fid in [fid for fid, f in self._faults.items() if f.expired(now)]:
            del self._faults[fid]
        self.active = bool(self._faults)

    # -- the broker's side -------------------------------------------------------------

    def on_request(self, api: str, request) -> RequestAction | None:
        """The faults this request meets (each one's count goes down by one), or None."""
        self._prune()
        action = None
        touched = None
        for f in self._faults.values():
            if f.kind not in REQUEST_KINDS or f.api != api:
                continue
            if f.topic is not None:
                if touched is None:
                    touched = request_partitions(api, request)
                if not any(f.covers(t, p) for t, p in touched):
                    continue
            if action is None:
                action = RequestAction()
            if f.kind == "fail":
                if action.fail is not None:
                    continue        # one error per request; the next fail fault waits for the next request
                action.fail = f.error
            elif f.kind == "delay":
                action.delay_s = max(action.delay_s, f.delay_ms / 1000)
            else:
                if action.drop:
                    continue
                action.drop, action.close_connection = True, f.close_connection
            f.hits += 1
            if f.remaining is not None:
                f.remaining -= 1
        if action is not None:
            self._prune()
        return action

    def answer_failed(self, api: str, request, code: int) -> dict:
        """The error answer; an acks=0 Produce gets none, its connection is closed (as Kafka does)."""
        if api == "Produce" and request.acks == 0:
            raise ConnectionAbortedError(f"fault: acks=0 Produce failed with {ErrorCode(code).name}")
        return error_response(api, request, code)

    def replication_paused_until(self, topic: str, partition: int) -> float | None:
        """If a ``pause_replication`` fault holds this partition: the monotonic time it ends
        (the fetcher sleeps until then), counting the skipped fetch; else None."""
        if not self.active:
            return None
        self._prune()
        until = None
        for f in self._faults.values():
            if f.kind == "pause_replication" and f.covers(topic, partition):
                f.hits += 1
                if f.remaining is not None:
                    f.remaining -= 1
                until = max(until or 0.0, f.until)
        return until


# -- the control socket, for a cluster's broker processes ------------------------------------------


def control_socket_path(log_dir: str) -> str:
    """Where a broker with this log directory listens: in the directory if the path is short enough
    for a Unix socket (108 bytes), else in the temporary directory."""
    path = os.path.join(os.path.abspath(log_dir), "kafkalab-faults.sock")
    if len(path.encode()) < 100:
        return path
    import hashlib
    digest = hashlib.sha1(os.path.abspath(log_dir).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"kafkalab-faults-{digest}.sock")


class ControlSocket:
    """The broker's end: a Unix socket taking one JSON request per line::

        {"op": "inject", "args": {"kind": "fail", "api": "Produce", "count": 3}}  -> {"ok": true, "result": {...}}
        {"op": "faults"}                                                          -> {"ok": true, "result": [...]}
        {"op": "clear", "args": {"fault_id": 2}}                                  -> {"ok": true, "result": 1}

    A bad request is answered ``{"ok": false, "error": "..."}``."""

    def __init__(self, injector: FaultInjector, log_dir: str):
        self.injector = injector
        self.log_dir = log_dir
        self.path = control_socket_path(log_dir)
        self._server = None

    async def start(self) -> None:
        try:
            os.unlink(self.path)    # left by a killed broker
        except FileNotFoundError:
            pass
        self._server = await asyncio.start_unix_server(self._serve, self.path)
        os.chmod(self.path, 0o600)
        with open(os.path.join(self.log_dir, ADDRESS_FILE), "w") as f:
            f.write(self.path + "\n")

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for path in (self.path, os.path.join(self.log_dir, ADDRESS_FILE)):
            try:
                os.unlink(path)
            except OSError:
                pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(self.handle(line)).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def handle(self, line: bytes) -> dict:
        try:
            msg = json.loads(line)
            op, args = msg.get("op"), msg.get("args") or {}
            if op == "inject":
                kind = args.pop("kind")
                return {"ok": True, "result": self.injector.inject(kind, **args)}
            if op == "faults":
                return {"ok": True, "result": self.injector.faults()}
            if op == "clear":
                return {"ok": True, "result": self.injector.clear(args.get("fault_id"))}
            return {"ok": False, "error": f"unknown op {op!r}"}
        except (ValueError, TypeError, KeyError) as exc:
            return {"ok": False, "error": str(exc)}


def control_request(log_dir: str, op: str, args: dict | None = None, timeout_s: float = 5.0):
    """The other end (``Cluster``): send one request to the broker whose log directory is ``log_dir``."""
    import socket
    try:
        with open(os.path.join(log_dir, ADDRESS_FILE)) as f:
            path = f.read().strip()
    except FileNotFoundError:
        raise ConnectionError(f"no broker with a fault control socket runs on {log_dir}") from None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout_s)
        try:
            s.connect(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise ConnectionError(f"the broker on {log_dir} does not answer on {path}: {exc}") from None
        s.sendall(json.dumps({"op": op, "args": args or {}}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"the broker on {log_dir} closed the control socket")
            data += chunk
    reply = json.loads(data)
    if not reply.get("ok"):
        raise ValueError(reply.get("error"))
    return reply["result"]
