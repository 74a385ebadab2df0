"""A fake Docker Engine, and a mini cluster run "as if it were the workshop's compose cluster".

There is no Docker engine where the tests run, so:

* :class:`FakeDocker` is an HTTP server on a Unix socket that answers the Docker
  Engine API paths kafkalab's broker controls use (``/_ping``, ``GET
  /containers/json`` with label filters, ``GET /containers/<id>/json``,
  ``/logs``, ``POST /containers/<id>/kill?signal=``, ``/stop?t=``, ``/start``,
  ``/pause``, ``/unpause``; with or without a ``/v1.xx`` prefix, as the real
  ``docker`` client sends them), records every call, and runs a hook for each
  container action;
* :class:`ComposeLikeCluster` is a real ``kafkalab.cluster(brokers=3)`` dressed
  as ``docker compose up``: its brokers get the broker environment of
  docker-compose.yml (the configs the mini broker knows), the fake Docker lists
  one container per broker with the compose labels (``com.docker.compose.project``,
  ``com.docker.compose.service``, ``kafkalab.broker.id``) and carries out every
  action on the broker processes for real (kill: SIGKILL, stop: a controlled
  shutdown, start: the broker process starts again, pause/unpause: SIGSTOP/SIGCONT),
  and :meth:`ComposeLikeCluster.jupyter_env` is the environment the compose file
  gives the JupyterLab container, pointed at this cluster.

A notebook run with that environment sees the cluster only as a notebook in the
compose JupyterLab container does: through Kafka's APIs, ZooKeeper, and the Docker
API (or, without the socket, printed ``docker compose`` commands that
:class:`Instructor` carries out).

Imported like ``kafka_wire``: ``from tests.helpers.fake_docker import ...`` (see tests/helpers/__init__.py).
"""
from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from kafkalab.cluster.docker_api import BROKER_ID_LABEL, PROJECT_LABEL, SERVICE_LABEL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPOSE_FILE = os.path.join(ROOT, "docker-compose.yml")
API_VERSION = "1.45"
#: what real Kafka prints, and then exits with 1, when it starts while its old registration is still there
NODE_EXISTS = "org.apache.zookeeper.KeeperException$NodeExistsException: KeeperErrorCode = NodeExists"


class FakeContainer:
    def __init__(self, cid: str, name: str, labels: dict[str, str]):
        self.id, self.name, self.labels = cid, name, labels
        self.status, self.exit_code = "running", 0
        self.log = f"[kafka] {name} started\n"


class FakeDocker:
    """Answers the Docker Engine API paths the broker controls use (with or without a /v1.xx prefix), records
    each call as ``(method, path without version, query)``, and runs ``hooks[action](container)`` for the
    container actions: the test decides what a kill or a start does. A hook may return the container's
    ``(status, exit code)`` afterwards (default: what Docker reports after that action). ``logs(container)``,
    when given, is the container's log text."""

    def __init__(self, containers: list[FakeContainer], hooks: dict | None = None, logs=None):
        self.containers = {c.id: c for c in containers}
        self.hooks = hooks or {}
        self.logs = logs
        self.calls: list[tuple[str, str, dict]] = []
        self.dir = tempfile.mkdtemp(prefix="kl-docker-")   # short: a Unix socket path has at most 107 bytes
        self.socket_path = os.path.join(self.dir, "docker.sock")
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):   # quiet (and a Unix socket has no client address to print)
                pass

            def do_HEAD(self):
                fake.handle(self, "HEAD")

            def do_GET(self):
                fake.handle(self, "GET")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                fake.handle(self, "POST")

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        self.server = Server(self.socket_path, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def host(self) -> str:
        return f"unix://{self.socket_path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def find(self, ref: str) -> FakeContainer | None:
        for c in self.containers.values():
            if ref in (c.id, c.name) or (len(ref) >= 12 and c.id.startswith(ref)):
                return c
        return None

    def actions(self) -> list[tuple[str, str, dict]]:
        """The recorded container actions (POSTs), as (action, container id, query)."""
        out = []
        for method, path, query in list(self.calls):
            m = re.fullmatch(r"/containers/([^/]+)/(kill|stop|start|pause|unpause|restart)", path)
            if method == "POST" and m:
                c = self.find(m.group(1))
                out.append((m.group(2), c.id if c else m.group(1), query))
        return out

    def handle(self, h: http.server.BaseHTTPRequestHandler, method: str) -> None:
        url = urllib.parse.urlsplit(h.path)
        path = re.sub(r"^/v\d+\.\d+", "", url.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        self.calls.append((method, path, query))
        status, body, content_type = self.route(method, path, query)
        payload = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else b"")
        h.send_response(status)
        h.send_header("Api-Version", API_VERSION)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        if method != "HEAD" and payload:   # a 204's client may already be gone: nothing more to write
            h.wfile.write(payload)

    def route(self, method: str, path: str, query: dict):
        if path == "/_ping":
            return 200, b"OK", "text/plain"
        if path == "/containers/json" and method == "GET":
            wanted = json.loads(query.get("filters", "{}")).get("label", [])
            listed = []
            for c in self.containers.values():
                if all(c.labels.get(k) == v for k, _, v in (w.partition("=") for w in wanted)):
                    listed.append({"Id": c.id, "Names": ["/" + c.name], "Labels": c.labels, "State": c.status,
                                   "Status": f"Exited ({c.exit_code}) 1 second ago" if c.status == "exited"
                                   else "Up 1 minute"})
            return 200, listed, "application/json"
        m = re.fullmatch(r"/containers/([^/]+)/(json|logs|kill|stop|start|pause|unpause)", path)
        if not m:
            return 404, {"message": f"page not found: {path}"}, "application/json"
        c = self.find(m.group(1))
        if c is None:
            return 404, {"message": f"No such container: {m.group(1)}"}, "application/json"
        what = m.group(2)
        if what == "json" and method == "GET":
            return 200, {"Id": c.id, "Name": "/" + c.name, "Config": {"Labels": c.labels, "Tty": False},
                         "State": {"Status": c.status, "Running": c.status in ("running", "paused"),
                                   "Paused": c.status == "paused", "ExitCode": c.exit_code}}, "application/json"
        if what == "logs" and method == "GET":
            text = self.logs(c) if self.logs is not None else c.log
            frames = b""
            for line in text.splitlines(keepends=True)[-int(query.get("tail", "100")):]:
                data = line.encode()
                frames += bytes([1, 0, 0, 0]) + len(data).to_bytes(4, "big") + data
            return 200, frames, "application/vnd.docker.multiplexed-stream"
        if method != "POST":
            return 405, {"message": "method not allowed"}, "application/json"
        if what == "start" and c.status == "running":
            return 304, None, "application/json"
        if what == "stop" and c.status == "exited":
            return 304, None, "application/json"
        if what in ("kill", "pause") and c.status != "running":
            return 409, {"message": f"Container {c.id} is not running"}, "application/json"
        if what == "unpause" and c.status != "paused":
            return 409, {"message": f"Container {c.id} is not paused"}, "application/json"
        after = {"kill": ("exited", 137), "stop": ("exited", 143), "start": ("running", 0),
                 "pause": ("paused", c.exit_code), "unpause": ("running", c.exit_code)}[what]
        hook = self.hooks.get(what)
        if hook is not None:
            after = hook(c) or after
        c.status, c.exit_code = after
        return 204, None, "application/json"


def broker_containers(project: str = "kafkalab", ids=(1, 2, 3), label_ids: bool = True) -> list[FakeContainer]:
    """The containers ``docker compose up`` makes: one per broker (``<project>-kafka-<id>-1``), ZooKeeper's,
    and a broker of another project that must never be touched."""
    out = []
    for i in ids:
        labels = {PROJECT_LABEL: project, SERVICE_LABEL: f"kafka-{i}"}
        if label_ids:
            labels[BROKER_ID_LABEL] = str(i)
        out.append(FakeContainer(f"{i:02d}" + "c0ffee" * 10 + f"{i:02d}", f"{project}-kafka-{i}-1", labels))
    out.append(FakeContainer("ff" + "deadbeef" * 7 + "ff", f"{project}-zookeeper-1",
                             {PROJECT_LABEL: project, SERVICE_LABEL: "zookeeper", "kafkalab.role": "zookeeper"}))
    out.append(FakeContainer("ee" + "badcafe0" * 7 + "ee", "other-kafka-1-1",
                             {PROJECT_LABEL: "other", SERVICE_LABEL: "kafka-1", BROKER_ID_LABEL: "1"}))
    return out


# -- the compose file, read as the brokers and the JupyterLab container get it -------------------------------------

#: compose broker variables that say where a broker is (the mini cluster chooses that itself) or size its JVM
_PLACEMENT = {"KAFKA_BROKER_ID", "KAFKA_ZOOKEEPER_CONNECT", "KAFKA_LISTENERS", "KAFKA_ADVERTISED_LISTENERS",
              "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "KAFKA_INTER_BROKER_LISTENER_NAME", "KAFKA_HEAP_OPTS"}


def _compose() -> dict:
    import yaml
    with open(COMPOSE_FILE) as f:
        return yaml.safe_load(f)


def compose_broker_configs(service: str = "kafka-1") -> tuple[dict[str, str], dict[str, str]]:
    """The broker configs docker-compose.yml sets (Confluent's images turn ``KAFKA_<NAME>`` into ``<name>``,
    ``_`` -> ``.``), as ``(known, skipped)``: ``known`` are those the mini broker has, ``skipped`` the rest
    (placement, listeners, JVM, and configs of features the mini broker lacks)."""
    from kafkalab.broker.server.config import BrokerConfig
    env = _compose()["services"][service]["environment"]
    known, skipped = {}, {}
    for var, value in env.items():
        if not var.startswith("KAFKA_"):
            continue
        name = var[len("KAFKA_"):].lower().replace("_", ".")
        if var in _PLACEMENT:
            skipped[name] = str(value)
            continue
        try:
            BrokerConfig({name: str(value), "log.dirs": "validate", "zookeeper.connect": "127.0.0.1:2181"})
        except Exception:   # noqa: BLE001 -- unknown to the mini broker
            skipped[name] = str(value)
            continue
        known[name] = str(value)
    return known, skipped


def compose_jupyter_env() -> dict[str, str]:
    """The JupyterLab service's ``KAFKALAB_*`` environment in docker-compose.yml, as written there."""
    env = _compose()["services"]["jupyter"]["environment"]
    return {k: str(v) for k, v in env.items() if k.startswith("KAFKALAB_")}


# -- a mini cluster as if it were the compose cluster ----------------------------------------------------------------

class ComposeLikeCluster:
    """A 3-broker ``kafkalab.cluster`` configured as docker-compose.yml configures its brokers, plus a
    :class:`FakeDocker` (``docker=True``) whose containers are those brokers. ``close()`` stops everything,
    including the restarts still running in the background."""

    def __init__(self, dir: str, docker: bool = True, project: str = "kafkalab", backend=None, **overrides):  # noqa: A002
        """``backend``: mini brokers (the default), or a :class:`~kafkalab.cluster.KafkaBackend` for Apache
        Kafka's own, which then get every config the compose file gives its brokers (transactions too) and
        its heap: the workshop's cluster, but for the containers."""
        import kafkalab
        from kafkalab.cluster import KafkaBackend
        self.project = project
        self.configs, self.skipped = compose_broker_configs()
        if isinstance(backend, KafkaBackend):
            env = _compose()["services"]["kafka-1"]["environment"]
            self.configs.update({k: v for k, v in self.skipped.items()
                                 if "KAFKA_" + k.upper().replace(".", "_") not in _PLACEMENT})
            self.skipped = {k: v for k, v in self.skipped.items() if k not in self.configs}
            backend.heap_opts = env["KAFKA_HEAP_OPTS"]
        self.configs.update({k: str(v) for k, v in overrides.items()})
        self.background: list[threading.Thread] = []
        self.errors: list[str] = []
        self.docker: FakeDocker | None = None
        self.cluster = kafkalab.cluster(brokers=3, dir=dir, **({"backend": backend} if backend else {}),
                                        **self.configs)
        try:
            containers = broker_containers(project)
            self.broker_of = {c.id: int(c.labels[BROKER_ID_LABEL]) for c in containers
                              if c.labels.get(PROJECT_LABEL) == project and BROKER_ID_LABEL in c.labels}
            self.container_of = {b: cid for cid, b in self.broker_of.items()}
            if docker:
                self.docker = FakeDocker(containers, self._hooks(), logs=self._logs)
        except BaseException:
            self.cluster.close()
            raise

    # the container actions, carried out on the broker processes
    def _hooks(self) -> dict:
        c = self.cluster

        def start(container):
            broker_id = self.broker_of[container.id]
            if c.zk.exists(f"/brokers/ids/{broker_id}") is not None:
                # Apache Kafka cannot register while its previous session's znode is still there: it exits
                container.log += f"[kafka] ERROR {NODE_EXISTS}\n"
                return "exited", 1
            container.log += f"[kafka] {container.name} started\n"
            self.in_background(f"start broker {broker_id}", lambda: c.restart(broker_id))
            return "running", 0   # a container is "running" as soon as its process is; Kafka comes up later

        return {"kill": lambda ct: c.kill(self.broker_of[ct.id]),
                "stop": lambda ct: c.stop(self.broker_of[ct.id]),
                "start": start,
                "pause": lambda ct: c.pause(self.broker_of[ct.id]),
                "unpause": lambda ct: c.resume(self.broker_of[ct.id])}

    def _logs(self, container) -> str:
        broker_id = self.broker_of.get(container.id)
        if broker_id is None:
            return container.log
        broker_log = self.cluster.broker_log(broker_id, 100)
        return broker_log + ("" if broker_log.endswith("\n") or not broker_log else "\n") + container.log

    def in_background(self, what: str, fn) -> threading.Thread:
        def run():
            try:
                fn()
            except Exception as exc:   # noqa: BLE001 -- reported by close() / the test
                self.errors.append(f"{what}: {type(exc).__name__}: {exc}")
        t = threading.Thread(target=run, daemon=True, name=what)
        self.background.append(t)
        t.start()
        return t

    def actions(self) -> list[tuple[str, int, dict]]:
        """The container actions the fake Docker received, as ``(action, broker id, query)``."""
        return [(a, self.broker_of.get(cid, -1), q) for a, cid, q in (self.docker.actions() if self.docker else [])]

    def jupyter_env(self, base: dict | None = None) -> dict[str, str]:
        """The environment of the compose file's JupyterLab container, pointed at this cluster: every
        ``KAFKALAB_*`` variable the compose file sets (each must have a value here), and ``DOCKER_HOST`` at the
        fake Docker — or, with ``docker=False``, at a socket that does not exist, as without
        docker-compose.docker-socket.yml."""
        values = {"KAFKALAB_BOOTSTRAP_SERVERS": self.cluster.bootstrap_servers,
                  "KAFKALAB_ZOOKEEPER_CONNECT": self.cluster.zookeeper_connect,
                  "KAFKALAB_COMPOSE_PROJECT": self.project}
        wanted = compose_jupyter_env()
        missing = sorted(set(wanted) - set(values))
        if missing:
            raise AssertionError(f"docker-compose.yml gives the JupyterLab container {missing}: the harness must too")
        env = dict(os.environ if base is None else base)
        for var in ("KAFKALAB_CLUSTER_DIR", "KAFKALAB_DOCKER_CONTROL", "DOCKER_HOST", "DOCKER_CONTEXT"):
            env.pop(var, None)
        env.update({k: values[k] for k in wanted})
        env["DOCKER_HOST"] = self.docker.host if self.docker is not None else \
            f"unix://{self.cluster.dir}/no-docker.sock"
        return env

    def wait_background(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        for t in self.background:
            t.join(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        try:
            self.wait_background()
        finally:
            try:
                if self.docker is not None:
                    self.docker.close()
            finally:
                self.cluster.close()

    def __enter__(self) -> "ComposeLikeCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Instructor:
    """Reads what a notebook prints and, when it asks for a ``docker compose`` command, runs it on the cluster
    (after ``delay_s``), as the instructor at the terminal would. ``obey=False``: never does. ``run`` is how a
    thread is started (default: a daemon thread kept in ``threads``)."""

    PATTERN = re.compile(r"docker compose (kill|stop|start|pause|unpause) kafka-(\d+)")

    def __init__(self, cluster, delay_s: float = 0.3, obey: bool = True, run=None):
        self.cluster, self.delay_s, self.obey = cluster, delay_s, obey
        self.text = ""
        self.commands: list[str] = []
        self.threads: list[threading.Thread] = []
        self._run = run

    def write(self, text: str) -> None:
        self.text += text
        for m in self.PATTERN.finditer(text):
            self.commands.append(m.group(0))
            if self.obey:
                action = {"kill": self.cluster.kill, "stop": self.cluster.stop, "start": self.cluster.restart,
                          "pause": self.cluster.pause, "unpause": self.cluster.resume}[m.group(1)]
                broker_id = int(m.group(2))

                def run(action=action, broker_id=broker_id):
                    time.sleep(self.delay_s)
                    action(broker_id)
                if self._run is not None:
                    self._run(m.group(0), run)
                else:
                    t = threading.Thread(target=run, daemon=True)
                    self.threads.append(t)
                    t.start()


# -- running a notebook against such a cluster -------------------------------------------------------------------------

def run_nbval(notebook: str, env: dict, timeout_s: float = 300) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
                          "--nbval-cell-timeout", "240", "-p", "no:cacheprovider", "-q", "-x", notebook],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    return run, time.monotonic() - began


def run_copy(nb, name: str, tmp_path, suffix: str, where: str, **env_vars) -> None:
    """Write ``nb`` (a changed copy of the notebook ``name``) into ``tmp_path`` as ``<name>_<suffix>.ipynb`` and run
    it with nbval, in an environment without the caller's ``KAFKALAB_*`` variables but with ``env_vars``; a lab's
    check.py is imported from beside the notebook. Fails naming ``where`` it ran and nbval's output."""
    import nbformat
    copy = tmp_path / name.replace("/", "_").replace(".ipynb", f"_{suffix}.ipynb")
    nbformat.write(nb, str(copy))
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALAB_")}
    env.update(env_vars, PYTHONPATH=os.pathsep.join([ROOT, os.path.dirname(os.path.join(ROOT, name))]))
    run, took = run_nbval(str(copy), env, timeout_s=600)
    assert run.returncode == 0, (f"{name} {where}: nbval --nbval-lax failed after {took:.0f} s:\n"
                                 f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}")


def assert_whole(lab: "ComposeLikeCluster") -> None:
    """Every broker running and registered, nothing left failing in the background."""
    lab.wait_background()
    assert not lab.errors, lab.errors
    rows = lab.cluster.brokers.set_index("id")
    assert list(rows["alive"]) == ["running"] * 3 and rows["registered"].all(), rows[["alive", "registered"]]


#: lesson 03's cells that read the brokers' own files (their log directories), which the workshop's brokers keep
#: inside their containers (2), section 7's write that waits while the ISR shrinks (4: on Kafka's brokers
#: ListOffsets may answer OFFSET_NOT_AVAILABLE then), and the steps that read Kafka's own metrics through the kill, the
#: lagging follower and the controller's failover (17: Kafka's brokers serve them only with the JMX exporter's agent,
#: which the real-Kafka runs leave off; they kill or pause nothing of their own): left out where the lesson runs on an
#: external (compose) cluster
LESSON_03_KAFKALAB_ONLY = 23


def lesson_03_for_external(directory: str) -> str:
    """A copy of lesson 03 in ``directory`` without its cells tagged ``kafkalab-only`` (there must be
    LESSON_03_KAFKALAB_ONLY of them), as it runs on an external cluster; returns its path."""
    import nbformat
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "03_replication_and_failure.ipynb"), as_version=4)
    only = ["kafkalab-only" in c.get("metadata", {}).get("tags", []) for c in nb.cells]
    assert sum(only) == LESSON_03_KAFKALAB_ONLY, f"lesson 03: {sum(only)} cells tagged kafkalab-only"
    nb.cells = [c for c, o in zip(nb.cells, only) if not o]
    path = os.path.join(directory, "03_replication_and_failure_external.ipynb")
    nbformat.write(nb, path)
    return path


#: the broker controls lesson 03 uses, in order, as Docker container actions (SIGKILL = docker compose kill)
LESSON_03_ACTIONS = [
    ("kill", 1), ("start", 1),                                       # 4, 5: kill the leader, bring it back
    ("pause", "follower"), ("unpause", "follower"),                  # 5: a frozen follower (2 or 3) leaves the ISR
    ("stop", 3), ("stop", 2), ("start", 2), ("start", 3),            # 7: min.insync.replicas
    ("kill", 2), ("kill", 3), ("kill", 1), ("start", 2), ("start", 1), ("start", 3),   # 8: unclean election
    ("stop", 3), ("start", 3), ("kill", 3), ("start", 3),            # 9: controlled shutdown against a crash
    ("kill", "controller"), ("start", "controller"),                 # 9: the controller, whichever broker it is
]


def lesson_03_done_as_expected(done: list[tuple[str, int]]) -> bool:
    """``done`` (the container actions seen) is LESSON_03_ACTIONS, where a name stands for one broker throughout:
    "follower" for the follower lesson 03 freezes in section 5 (3, or 2 when 3 is the controller), "controller" for the
    controller it kills (whichever broker won the race for /controller)."""
    if [a for a, _ in done] != [a for a, _ in LESSON_03_ACTIONS]:
        return False
    named: dict[str, int] = {}
    for (_, broker), (_, expected) in zip(done, LESSON_03_ACTIONS):
        if isinstance(expected, str):
            if named.setdefault(expected, broker) != broker:
                return False
        elif broker != expected:
            return False
    return named.get("follower") in (2, 3) and named.get("controller") in (1, 2, 3)
