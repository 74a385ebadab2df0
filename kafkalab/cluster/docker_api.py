"""How a notebook breaks a broker that runs in a container: the Docker Engine API, or a printed command.

The Docker command-line client is itself only a client of the **Docker Engine
API**: HTTP on the Unix socket ``/var/run/docker.sock``. ``docker compose kill
kafka-2`` finds the container of service ``kafka-2`` in project ``kafkalab`` by
its labels (``com.docker.compose.project``, ``com.docker.compose.service``) and
sends ``POST /containers/<id>/kill?signal=SIGKILL``. :class:`DockerEngine` speaks
the few calls the broker controls need with the standard library only
(``http.client`` over an ``AF_UNIX`` socket); :class:`DockerControls` maps a broker
id to its container (the compose file's ``kafkalab.broker.id`` label, else the
service name ``kafka-<id>``). Without access to the socket,
:class:`PrintedControls` gives the ``docker compose`` command for a person to run.

Simplifications: no API version prefix (the engine then uses its current API),
no TLS (``tcp://`` only in plain HTTP), and only the calls used here.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import socket
import struct
import urllib.parse

DEFAULT_SOCKET = "/var/run/docker.sock"
BROKER_ID_LABEL = "kafkalab.broker.id"
PROJECT_LABEL = "com.docker.compose.project"
SERVICE_LABEL = "com.docker.compose.service"
PROJECT_ENV = "KAFKALAB_COMPOSE_PROJECT"
DEFAULT_PROJECT = "kafkalab"


# -- the Docker Engine API -----------------------------------------------------------------------------------

class DockerError(RuntimeError):
    """The Docker Engine cannot be reached, or refused a request (its message is in the text)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class _UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 on a Unix socket: how the docker command talks to the engine."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


class DockerEngine:
    """A minimal client of the Docker Engine API (the part the broker controls need).

    ``host`` is Docker's own ``DOCKER_HOST`` syntax: ``unix:///var/run/docker.sock`` (the default, or
    ``$DOCKER_HOST``) or ``tcp://host:2375`` (plain HTTP; TLS is not supported)."""

    def __init__(self, host: str | None = None, timeout_s: float = 10.0):
        host = host or os.environ.get("DOCKER_HOST") or f"unix://{DEFAULT_SOCKET}"
        if host.startswith("unix://"):
            self.socket_path, self.address = host[len("unix://"):], None
        elif host.startswith("tcp://"):
            netloc = urllib.parse.urlsplit(host).netloc
            h, _, p = netloc.rpartition(":")
            self.socket_path, self.address = None, (h or netloc, int(p) if p.isdigit() else 2375)
        elif host.startswith("/"):
            self.socket_path, self.address = host, None
        else:
            raise DockerError(f"DOCKER_HOST={host!r}: only unix:// and tcp:// (without TLS) are supported")
        self.host = host
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, query: dict | None = None, timeout_s: float | None = None):
        """``(status, body bytes)``; raises DockerError when the engine cannot be reached or answers >= 400."""
        if query:
            path += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        timeout = timeout_s or self.timeout_s
        if self.socket_path is not None:
            conn = _UnixHTTPConnection(self.socket_path, timeout)
        else:
            conn = http.client.HTTPConnection(*self.address, timeout=timeout)
        try:
            conn.request(method, path, headers={"Host": "docker", "Content-Length": "0"} if method == "POST"
                         else {"Host": "docker"})
            response = conn.getresponse()
            body = response.read()
        except PermissionError as exc:
            raise DockerError(f"no permission to use the Docker socket {self.socket_path} ({exc}): the "
                              f"notebook's user is not in the socket's group") from None
        except (OSError, http.client.HTTPException) as exc:
            raise DockerError(f"the Docker Engine at {self.host} cannot be reached: {exc}") from None
        finally:
            conn.close()
        if response.status >= 400:
            try:
                message = json.loads(body).get("message", "")
            except ValueError:
                message = body.decode(errors="replace")
            raise DockerError(f"Docker: {method} {path} -> {response.status} {message}".rstrip(), response.status)
        return response.status, body

    def json(self, method: str, path: str, query: dict | None = None):
        return json.loads(self.request(method, path, query)[1] or b"null")

    def ping(self) -> bool:
        """True when the engine answers (``GET /_ping`` -> ``OK``)."""
        return self.request("GET", "/_ping", timeout_s=2.0)[1].strip() == b"OK"

    def containers(self, labels: dict[str, str] | None = None) -> list[dict]:
        """Containers, also stopped ones, with every given label (``GET /containers/json?all=1&filters=...``)."""
        filters = {"label": [f"{k}={v}" for k, v in (labels or {}).items()]}
        return self.json("GET", "/containers/json", {"all": "1", "filters": json.dumps(filters)})

    def inspect(self, container: str) -> dict:
        return self.json("GET", f"/containers/{container}/json")

    def kill(self, container: str, signal: str = "SIGKILL") -> None:
        self.request("POST", f"/containers/{container}/kill", {"signal": signal})

    def stop(self, container: str, timeout_s: int = 30) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; returns once the container has stopped (304: already was)."""
        self.request("POST", f"/containers/{container}/stop", {"t": str(timeout_s)}, timeout_s=timeout_s + 30)

    def start(self, container: str) -> None:
        self.request("POST", f"/containers/{container}/start")

    def pause(self, container: str) -> None:
        self.request("POST", f"/containers/{container}/pause")

    def unpause(self, container: str) -> None:
        self.request("POST", f"/containers/{container}/unpause")

    def logs(self, container: str, tail: int = 30) -> str:
        _, body = self.request("GET", f"/containers/{container}/logs",
                               {"stdout": "1", "stderr": "1", "tail": str(tail)})
        return demultiplex(body).decode(errors="replace")


def demultiplex(body: bytes) -> bytes:
    """A container's log as Docker sends it without a TTY: frames of ``[stream, 0, 0, 0, size (4 bytes)]`` +
    payload. Anything else (a TTY's raw stream) is returned as it is."""
    out, i = [], 0
    while i + 8 <= len(body) and body[i] in (0, 1, 2) and body[i + 1:i + 4] == b"\0\0\0":
        (size,) = struct.unpack(">I", body[i + 4:i + 8])
        out.append(body[i + 8:i + 8 + size])
        i += 8 + size
    if i == 0:
        return body
    return b"".join(out) + body[i:]


def container_state(info: dict) -> str:
    """A container's ``State`` (from inspect or the list's ``State``) as a broker's ``alive``: running, paused,
    killed (exit 137: SIGKILL), stopped (exit 0 or 143: SIGTERM), exited (anything else), starting."""
    state = info.get("State")
    if isinstance(state, dict):
        status, code = state.get("Status", ""), state.get("ExitCode")
    else:   # the container list has State as a string and the exit code only in Status ("Exited (137) 3s ago")
        status, code = state or "", None
        text = info.get("Status", "")
        if "(" in text and ")" in text:
            try:
                code = int(text[text.index("(") + 1:text.index(")")])
            except ValueError:
                code = None
    if status == "running":
        return "running"
    if status == "paused":
        return "paused"
    if status == "restarting":
        return "starting"
    if status == "created":
        return "stopped"
    if code == 137:
        return "killed"
    if code in (0, 143):
        return "stopped"
    return "exited"


# -- how a broker is controlled: the Docker API, or a person running a printed command ---------------------------

class DockerControls:
    """Broker controls through the Docker Engine API, for the containers of one compose project."""

    name = "docker"

    def __init__(self, engine: DockerEngine, project: str, service: str = "kafka-{id}"):
        self.engine = engine
        self.project = project
        self.service = service
        self._service_pattern = re.compile(re.escape(service).replace(re.escape("{id}"), r"(\d+)"))
        self._by_id: dict[int, dict] = {}

    def refresh(self) -> dict[int, dict]:
        """broker id -> container (from the list): label ``kafkalab.broker.id``, else the service name."""
        by_id = {}
        for c in self.engine.containers({PROJECT_LABEL: self.project}):
            labels = c.get("Labels") or {}
            broker_id = labels.get(BROKER_ID_LABEL)
            if broker_id is None:
                m = self._service_pattern.fullmatch(labels.get(SERVICE_LABEL, ""))
                broker_id = m.group(1) if m else None
            if broker_id is not None and str(broker_id).isdigit():
                by_id[int(broker_id)] = c
        self._by_id = by_id
        return by_id

    def container(self, broker_id: int) -> str:
        """The id of broker ``broker_id``'s container."""
        if broker_id not in self._by_id:
            self.refresh()
        try:
            return self._by_id[broker_id]["Id"]
        except KeyError:
            raise KeyError(f"no container of compose project {self.project!r} is broker {broker_id} (label "
                           f"{BROKER_ID_LABEL} or service {self.service.format(id=broker_id)!r})") from None

    def container_name(self, broker_id: int) -> str | None:
        c = self._by_id.get(broker_id)
        names = (c or {}).get("Names") or []
        return names[0].lstrip("/") if names else None

    def state(self, broker_id: int) -> str:
        return container_state(self.engine.inspect(self.container(broker_id)))

    def act(self, action: str, broker_id: int, stop_timeout_s: int = 30) -> None:
        cid = self.container(broker_id)
        if action == "kill":
            self.engine.kill(cid)
        elif action == "stop":
            self.engine.stop(cid, stop_timeout_s)
        elif action == "start":
            self.engine.start(cid)
        elif action == "pause":
            self.engine.pause(cid)
        elif action == "unpause":
            self.engine.unpause(cid)
        else:
            raise ValueError(action)

    def logs(self, broker_id: int, lines: int) -> str:
        return self.engine.logs(self.container(broker_id), lines)


class PrintedControls:
    """No access to Docker: print the ``docker compose`` command a person runs where the cluster runs."""

    name = "print"

    def __init__(self, service: str = "kafka-{id}", why: str = ""):
        self.service = service
        self.why = why

    def command(self, action: str, broker_id: int) -> str:
        return f"docker compose {action} {self.service.format(id=broker_id)}"


def docker_controls(project: str | None = None, docker_host: str | None = None,
                    service: str = "kafka-{id}") -> tuple[DockerControls | None, str]:
    """``(controls, "")`` when the Docker Engine answers and has this project's broker containers, else
    ``(None, why not)``."""
    engine = DockerEngine(docker_host)
    if engine.socket_path is not None and not os.path.exists(engine.socket_path):
        return None, (f"no Docker socket at {engine.socket_path} "
                      "(it is mounted only with docker-compose.docker-socket.yml)")
    try:
        engine.ping()
        project = project or _own_project(engine) or os.environ.get(PROJECT_ENV) or DEFAULT_PROJECT
        controls = DockerControls(engine, project, service)
        if not controls.refresh():
            return None, f"Docker has no broker containers of compose project {project!r}"
    except DockerError as exc:
        return None, str(exc)
    return controls, ""


def _own_project(engine: DockerEngine) -> str | None:
    """The compose project of the container this runs in (its hostname is its container id), if any."""
    try:
        info = engine.inspect(socket.gethostname())
    except DockerError:
        return None
    return ((info.get("Config") or {}).get("Labels") or {}).get(PROJECT_LABEL)
