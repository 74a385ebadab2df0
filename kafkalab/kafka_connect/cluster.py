"""A Kafka Connect cluster: N distributed workers (Apache Kafka's own ``ConnectDistributed``) as JVM children.

:func:`connect_cluster` writes one ``worker-<i>.properties`` per worker (:mod:`.worker_config`: the same
``group.id`` and internal topics, a REST listener on a free port of 127.0.0.1 each), starts the JVMs
(:mod:`.jvm`) and waits until every worker's REST API answers. Workers find each other through the Kafka
cluster only: they join the group ``group.id`` (the classic group protocol with protocol type ``connect``,
Connect's ``sessioned`` / ``compatible`` sub-protocols), the leader assigns connectors and tasks
(``IncrementalCooperativeAssignor``, KIP-415), and the assignment and every connector's config, status and
source offsets live in the three internal topics.

Each worker's stdout and stderr go to ``worker-<i>.log`` in the cluster's directory. The JVMs never outlive
this process: started as the lab's brokers are (:func:`kafkalab.cluster.processes.spawn`: their own session,
the kernel's ``PDEATHSIG`` on Linux), watched by a :class:`~kafkalab.cluster.processes.Watchdog` that stops
them and removes the temporary directory if this process dies without closing the cluster, and closed at
interpreter exit (before an embedded broker, which must still answer their LeaveGroup).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from pathlib import Path

from ..cluster.ports import free_port
from ..cluster.processes import Watchdog, spawn
from . import offsets as offsets_topic
from . import rest
from .jvm import CONNECT_VERSION, LOG4J_PROPERTIES, fetch_connect, worker_command
from .worker_config import HOST, to_properties, worker_config

_OPEN: "weakref.WeakSet[ConnectCluster]" = weakref.WeakSet()
#: what a worker logs after each rebalance (``DistributedHerder``): the generation and its leader's REST URL
_JOINED = re.compile(r"Joined group at generation (\d+) .*?leaderUrl='([^']*?)/?'")
_FAILED_STATES = ("FAILED",)
#: what a worker logs when it gives up (``DistributedHerder.run``, ``ConnectDistributed``): it exits, but only
#: after its executors time out (tens of seconds), so the lab stops waiting at once
_FATAL = ("Uncaught exception in herder work thread, exiting", "Stopping due to error")
_EXCEPTION_LINE = re.compile(r"^(Caused by: )?[\w.$]+(Exception|Error)(: |$)")


class ConnectError(RuntimeError):
    """The Connect cluster failed, or did not get where it was asked to; the message ends with the log's last lines."""


def bootstrap_of(kafka) -> str:
    """``bootstrap.servers`` of what a lesson has: ``kafkalab.connect()``'s LabKafka, a Cluster, a MiniBroker,
    a string."""
    if isinstance(kafka, str):
        servers = kafka.strip()
    else:
        servers = getattr(kafka, "bootstrap_servers", None)
        if getattr(kafka, "closed", False) is True:
            raise ValueError(f"{kafka!r} is closed: Connect needs a running Kafka")
    if not isinstance(servers, str) or not servers.strip() or ":" not in servers:
        raise TypeError(f"connect_cluster() needs Kafka: kafkalab.connect()'s object, a cluster, a broker or a "
                        f"'host:port' string, not {kafka!r}")
    return servers.strip()


def count_brokers(bootstrap_servers: str, timeout: float = 15.0) -> int:
    """How many brokers the Kafka cluster has (its Metadata), which sets the internal topics' replication factor."""
    from confluent_kafka.admin import AdminClient
    from confluent_kafka import KafkaException
    try:
        metadata = AdminClient({"bootstrap.servers": bootstrap_servers, "log_level": 0}).list_topics(timeout=timeout)
    except KafkaException as e:
        raise ConnectError(f"no Kafka broker answers at {bootstrap_servers} ({e.args[0].str()}): start the "
                           f"broker first (kafkalab.connect())") from None
    return len(metadata.brokers)


class ConnectWorker:
    """One worker: its index, REST port and URL, config and log files, and its JVM (while it runs)."""

    def __init__(self, index: int, port: int, directory: Path):
        self.index = index
        self.port = port
        self.url = f"http://{HOST}:{port}"
        #: how the worker names itself in statuses and assignments (``rest.advertised.host.name:port``)
        self.worker_id = f"{HOST}:{port}"
        self.config_path = directory / f"worker-{index}.properties"
        self.log_path = directory / f"worker-{index}.log"
        self.process: subprocess.Popen | None = None
        self.started_at: float | None = None
        self.log_offset = 0          # where this run of the JVM starts in the log (a restart appends)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self, last: int | None = None) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-last:]) if last else text

    def log_since_start(self) -> str:
        """What the JVM logged since its last start."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.log_offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Connect worker {self.index} {self.worker_id}: {state}, pid {self.pid}>"


class ConnectCluster:
    """A running Kafka Connect cluster; ``close()`` stops it (also as a context manager)."""

    def __init__(self, home: Path, bootstrap_servers: str, workers: int, brokers: int, directory: Path,
                 temp: bool, configs: dict | None = None, jvm_options: list[str] | None = None,
                 grace_s: float = 20.0):
        self.home = home
        self.bootstrap_servers = bootstrap_servers
        self.dir = directory
        self.grace_s = grace_s
        self._temp = temp
        self._closed = False
        self._jvm_options = jvm_options
        #: the workers' working directory: the caller's (a notebook's), so that a connector's relative ``file``
        #: means what it means in the notebook
        self.cwd = os.getcwd()
        self.workers = [ConnectWorker(i, free_port(HOST), directory) for i in range(workers)]
        self.worker_configs = [worker_config(bootstrap_servers, w.port, brokers, configs) for w in self.workers]
        self.config = self.worker_configs[0]
        self.log4j_path = directory / "connect-log4j.properties"
        self.log4j_path.write_text(LOG4J_PROPERTIES)
        for w, config in zip(self.workers, self.worker_configs):
            w.config_path.write_text(to_properties(config))
        self.watchdog = Watchdog(grace_s=grace_s)
        if temp:
            self.watchdog.remove_dir_at_exit(str(directory))
        _OPEN.add(self)

    # -- workers ------------------------------------------------------------------------------------------

    def worker(self, i: int) -> ConnectWorker:
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"a worker is named by its index (0..{len(self.workers) - 1}), not {i!r}")
        if not 0 <= i < len(self.workers):
            raise IndexError(f"no worker {i}: this Connect cluster has workers 0..{len(self.workers) - 1}")
        return self.workers[i]

    @property
    def url(self) -> str:
        """The REST API of worker 0."""
        return self.workers[0].url

    @property
    def running_workers(self) -> list[ConnectWorker]:
        return [w for w in self.workers if w.running]

    def start(self, i: int) -> ConnectWorker:
        """Start worker ``i``'s JVM (not waiting for it; :meth:`wait_until_ready` does)."""
        self._check_open()
        w = self.worker(i)
        if w.running:
            raise ConnectError(f"worker {i} is already running (pid {w.pid})")
        with open(w.log_path, "a") as log:
            log.write(f"--- kafkalab: worker {i} starting at {time.strftime('%H:%M:%S')} ---\n")
        w.log_offset = w.log_path.stat().st_size
        command = worker_command(self.home, w.config_path, self.log4j_path, self._jvm_options)
        w.process = spawn(command, str(w.log_path), watchdog=self.watchdog, cwd=self.cwd)
        w.started_at = time.monotonic()
        return w

    def wait_until_ready(self, i: int | None = None, timeout: float = 90.0) -> None:
        """Until worker ``i`` (every worker started, when None) says it is healthy (``GET /health``, KIP-1017:
        200 once the worker has started, joined the group and read the config topic; 503 while it is starting)."""
        deadline = time.monotonic() + timeout
        for w in ([self.worker(i)] if i is not None else [w for w in self.workers if w.process is not None]):
            while True:
                if not w.running:
                    raise self._fail(w, f"worker {w.index} exited (code {w.process.poll()}) before its REST API "
                                        f"answered")
                if any(marker in w.log_since_start() for marker in _FATAL):
                    self.kill(w.index)   # it is exiting anyway, slowly
                    raise self._fail(w, f"worker {w.index} failed to start and was stopped")
                try:
                    rest.call(w.url, path="/health", timeout=5)
                    break
                except rest.ConnectRestError:
                    pass
                if time.monotonic() > deadline:
                    raise self._fail(w, f"worker {w.index}'s REST API ({w.url}) does not answer after {timeout:.0f} s")
                time.sleep(0.2)

    def kill(self, i: int) -> None:
        """Crash worker ``i`` (SIGKILL: no LeaveGroup, no offset flush, its tasks stopped mid-way). The group
        notices after ``session.timeout.ms``; the leader waits ``scheduled.rebalance.max.delay.ms`` for it to
        come back before it gives its connectors and tasks to the other workers."""
        w = self.worker(i)
        if w.running:
            w.process.send_signal(signal.SIGKILL)
            w.process.wait()
        self._forget(w)

    def stop(self, i: int, timeout: float | None = None) -> int | None:
        """Stop worker ``i`` cleanly (SIGTERM: Connect's shutdown hook stops its tasks, flushes their offsets and
        leaves the group, so its work moves at once); SIGKILL after ``timeout`` (``grace_s``). The exit code."""
        w = self.worker(i)
        if w.running:
            w.process.send_signal(signal.SIGTERM)
            try:
                w.process.wait(self.grace_s if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                w.process.kill()
                w.process.wait()
        self._forget(w)
        return None if w.process is None else w.process.returncode

    def restart(self, i: int, wait: bool = True, timeout: float = 90.0) -> ConnectWorker:
        """Worker ``i`` again, with the same config, REST port and so the same worker id (stopped first if running)."""
        self.stop(i)
        w = self.start(i)
        if wait:
            self.wait_until_ready(i, timeout)
        return w

    def _forget(self, w: ConnectWorker) -> None:
        if w.process is not None:
            self.watchdog.forget(w.process.pid)

    def leader(self) -> int | None:
        """The index of the group's leader (the worker that assigns connectors and tasks), as the running
        workers last logged it after a rebalance (the newest generation wins); None before the first one."""
        newest: tuple[int, str] | None = None
        for w in self.running_workers:
            for generation, url in _JOINED.findall(w.log()):
                if newest is None or int(generation) >= newest[0]:
                    newest = (int(generation), url)
        if newest is None:
            return None
        return next((w.index for w in self.workers if w.url == newest[1]), None)

    # -- the REST API, through any running worker ---------------------------------------------------------

    def _url(self) -> str:
        for w in self.workers:
            if w.running:
                return w.url
        raise ConnectError("no Connect worker is running: restart(i) one first")

    def info(self) -> dict:
        """``GET /``: the workers' Connect version and the Kafka cluster id."""
        return rest.server_info(self._url())

    def connectors(self) -> list[str]:
        return rest.connectors(self._url())

    def plugins(self) -> list[str]:
        """The plugins the workers found (connectors, converters, transforms, predicates), by class name."""
        return sorted({p["class"] for p in rest.connector_plugins(self._url())})

    def create_connector(self, name: str, config: dict, wait: bool = True, timeout: float = 60.0) -> dict:
        """Create connector ``name`` (``POST /connectors``); with ``wait``, return once it and its tasks are RUNNING."""
        created = rest.create_connector(self._url(), name, config)
        if wait:
            self.wait_until_running(name, timeout=timeout)
        return created

    def update_connector(self, name: str, config: dict) -> dict:
        return rest.put_connector_config(self._url(), name, config)

    def delete_connector(self, name: str) -> None:
        rest.delete_connector(self._url(), name)

    def status(self, name: str) -> dict:
        """``GET /connectors/{name}/status``: the connector's and each task's state and worker."""
        return rest.connector_status(self._url(), name)

    def status_table(self, names: list[str] | None = None):
        """One row per connector and per task: ``connector``, ``task`` (None for the connector itself),
        ``state``, ``worker_id`` and ``worker`` (its index here; None for a worker not of this cluster)."""
        import pandas as pd
        by_id = {w.worker_id: w.index for w in self.workers}
        rows = []
        for name in (self.connectors() if names is None else names):
            s = self.status(name)
            rows.append({"connector": name, "type": s.get("type"), "task": None, "state": s["connector"]["state"],
                         "worker_id": s["connector"]["worker_id"], "worker": by_id.get(s["connector"]["worker_id"])})
            for t in sorted(s["tasks"], key=lambda t: t["id"]):
                rows.append({"connector": name, "type": s.get("type"), "task": t["id"], "state": t["state"],
                             "worker_id": t["worker_id"], "worker": by_id.get(t["worker_id"]),
                             **({"trace": t["trace"].splitlines()[0]} if t.get("trace") else {})})
        columns = ["connector", "type", "task", "state", "worker_id", "worker"]
        table = pd.DataFrame(rows, columns=columns + (["trace"] if any("trace" in r for r in rows) else []))
        return table.astype({"task": "Int64", "worker": "Int64"})

    def tasks_per_worker(self) -> dict[int, list[str]]:
        """Worker index -> the tasks (``connector-N``) its status says it runs, for every worker of the cluster."""
        import pandas as pd
        table = self.status_table()
        placed = {w.index: [] for w in self.workers}
        for row in table[table["task"].notna()].itertuples():
            if not pd.isna(row.worker) and row.state == "RUNNING":
                placed[int(row.worker)].append(f"{row.connector}-{int(row.task)}")
        return placed

    def wait_until_running(self, name: str, tasks: int | None = None, timeout: float = 60.0) -> dict:
        """Until connector ``name`` and its tasks (at least one, or exactly ``tasks``) are RUNNING on workers
        that are running: after a kill, the dead worker's tasks stay RUNNING in the status topic under its
        id until another worker starts them. The last status; ConnectError with the trace if one FAILED."""
        deadline = time.monotonic() + timeout
        status: dict = {}
        while True:
            live = {w.worker_id for w in self.running_workers}
            try:
                status = self.status(name)
            except rest.ConnectRestError as e:
                if e.status not in (0, 404, 409, 500):
                    raise
                status = {"error": str(e)}
            parts = [status.get("connector", {})] + status.get("tasks", [])
            failed = [p for p in parts if p.get("state") in _FAILED_STATES]
            if failed:
                trace = (failed[0].get("trace") or "").strip().splitlines()
                raise ConnectError(f"connector {name!r}: {failed[0].get('state')} on {failed[0].get('worker_id')}: "
                                   + (trace[0] if trace else "(no trace)"))
            ready = ("tasks" in status and status["tasks"] and (tasks is None or len(status["tasks"]) == tasks)
                     and all(p.get("state") == "RUNNING" and p.get("worker_id") in live for p in parts))
            if ready:
                return status
            if time.monotonic() > deadline:
                raise ConnectError(f"connector {name!r} is not RUNNING on a live worker after {timeout:.0f} s: "
                                   f"{status}")
            time.sleep(0.2)

    def offsets(self, name: str) -> list[dict]:
        """KIP-875's ``GET /connectors/{name}/offsets``: the connector's source (or sink) offsets, as Connect reads
        them."""
        return rest.connector_offsets(self._url(), name)

    def source_offsets(self, connector: str | None = None, latest: bool = True) -> list[dict]:
        """The source offsets as written to the offsets topic (read with a plain consumer, not through Connect):
        the last one per source partition (``latest``), or every record."""
        rows = offsets_topic.offset_records(self.bootstrap_servers, str(self.config["offset.storage.topic"]))
        if not latest:
            return [r for r in rows if connector is None or r["connector"] == connector]
        return offsets_topic.latest_offsets(rows, connector)

    # -- logs, failures, closing --------------------------------------------------------------------------

    def log(self, i: int = 0, last: int | None = None) -> str:
        """Worker ``i``'s log (its last ``last`` lines)."""
        return self.worker(i).log(last)

    def _fail(self, w: ConnectWorker, what: str) -> ConnectError:
        lines = w.log_since_start().splitlines()
        causes = ([line for line in lines if _EXCEPTION_LINE.match(line)]
                  or [line for line in lines if " ERROR " in line])
        cause = f"\n{causes[-1].strip()}" if causes else ""
        return ConnectError(f"{what}{cause}\nthe last lines of its log ({w.log_path}):\n" + "\n".join(lines[-25:]))

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectError("this Connect cluster is closed")

    def close(self) -> None:
        """Stop every worker (SIGTERM, SIGKILL after ``grace_s``) and remove the temporary directory; idempotent."""
        if self._closed:
            return
        self._closed = True
        _OPEN.discard(self)
        try:
            for w in self.workers:        # SIGTERM to all first: they shut down side by side
                if w.running:
                    w.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + self.grace_s
            for w in self.workers:
                if w.process is not None:
                    try:
                        w.process.wait(max(0.1, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        w.process.kill()
                        w.process.wait()
                    self._forget(w)
        finally:
            self.watchdog.close()
            if self._temp:
                shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "ConnectCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        states = ", ".join(f"{w.index}:{'up' if w.running else 'down'}" for w in self.workers)
        return f"<kafkalab Connect cluster {self.config['group.id']!r} on {self.bootstrap_servers}: workers {states}>"


def connect_cluster(kafka, workers: int = 2, work_dir: str | None = None, version: str = CONNECT_VERSION,
                    wait: bool = True, timeout: float = 120.0, jvm_options: list[str] | None = None,
                    **configs) -> ConnectCluster:
    """Start ``workers`` Kafka Connect distributed workers against ``kafka`` (what ``kafkalab.connect()`` returns,
    a cluster, a broker, or a ``bootstrap.servers`` string).

    ``configs`` are more worker configs under Kafka's names or Python ones (``offset_flush_interval_ms=5000``);
    see :mod:`kafkalab.kafka_connect.worker_config` for the lab's defaults. ``work_dir`` (a temporary directory,
    removed on ``close()``, when not given) holds each worker's properties and log. With ``wait`` the call returns
    once every worker's REST API answers. The first call fetches Kafka Connect from the Maven repository."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r}: a Connect cluster has at least one worker")
    bootstrap = bootstrap_of(kafka)
    home = fetch_connect(version)
    brokers = count_brokers(bootstrap)
    temp = work_dir is None
    directory = Path(tempfile.mkdtemp(prefix="kafkalab-connect-") if temp else work_dir)
    directory.mkdir(parents=True, exist_ok=True)
    cluster = None
    try:
        cluster = ConnectCluster(home, bootstrap, workers, brokers, directory, temp, configs, jvm_options)
        for i in range(workers):
            cluster.start(i)
        if wait:
            cluster.wait_until_ready(timeout=timeout)
        return cluster
    except BaseException:
        if cluster is not None:
            cluster.close()
        elif temp:
            shutil.rmtree(directory, ignore_errors=True)
        raise


@atexit.register
def _close_all() -> None:
    # registered after kafkalab.broker.mini's (imported first), so it runs before: the workers leave their group
    # while an embedded broker still answers
    for c in list(_OPEN):
        c.close()
