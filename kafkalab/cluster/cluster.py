"""``kafkalab.cluster(brokers=3)``: a real ZooKeeper and N brokers, each its own process, to break.

::

    import kafkalab
    with kafkalab.cluster(brokers=3) as c:
        c.bootstrap_servers          # '127.0.0.1:40001,127.0.0.1:40002,127.0.0.1:40003'
        c.brokers                    # a table: id, host, port, pid, alive, registered, is_controller, ...
        c.controller                 # 1: the broker whose id is in /controller
        c.kill(c.controller)         # SIGKILL: a crash. Watch another broker become controller
        c.restart(1)                 # same id, port and log directory; back once registered again
        c.describe("orders")         # leader, replicas, ISR, leader epoch, high watermark, each replica's LEO
        c.zk.get_children("/brokers/ids")   # a kazoo client: read the znodes yourself

This is Kafka's ZooKeeper mode, the way a cluster was run for ten years:
every broker registers itself as the ephemeral znode ``/brokers/ids/<id>``
(it lives as long as the broker's ZooKeeper session), one broker wins the
race to create ``/controller`` and manages partition leadership, and every
partition's leader, ISR and leader epoch live in
``/brokers/topics/<t>/partitions/<p>/state``. ``cluster()`` starts ZooKeeper,
then the brokers, and returns once every broker is registered and a
controller is elected.

**Broker ids are 1..N**, as in Kafka's multi-broker examples, so that "broker 1"
is the first broker and no broker has the id 0 that a forgotten ``broker.id``
would give.

**Breaking things.** ``kill(id)`` sends SIGKILL: no clean shutdown, and the
broker's registration stays in ZooKeeper until its session times out
(``zookeeper.session.timeout.ms``; the ``registered`` column shows it).
``stop(id)`` sends SIGTERM: a controlled shutdown, leadership moves away
first. ``pause(id)``/``resume(id)`` freeze and thaw the process (SIGSTOP/SIGCONT):
a broker that is alive but silent, the hardest failure to detect.
``restart(id)`` starts a stopped or killed broker again on the same port and
log directory.

**Configs** use Kafka's names (``**{"min.insync.replicas": 2}``; Python
identifiers work too: ``min_insync_replicas=2``) and apply to every broker.
The lab defaults (:data:`LAB_DEFAULTS`) make failures visible in seconds
instead of minutes; each can be overridden.

**The state directory** (``dir=``, by default a temporary one removed by
``close()``)::

    zookeeper/          zoo.cfg, data/, zookeeper.log
    broker-1/           broker 1's log.dirs
    broker-1.log        broker 1's output (every start appends)
    cluster.json        where everything is: ZooKeeper, each broker's port, pid and log dir, the configs

:meth:`Cluster.attach` reads ``cluster.json`` to control a running cluster
from another process.

**Nothing outlives its owner.** ``close()`` (or the ``with`` block, or the
interpreter's exit, or the Cluster object being garbage-collected) stops the
brokers (SIGTERM, then SIGKILL after a timeout), then ZooKeeper. If the
owning process dies without closing — a killed kernel — the children stop
too: see :mod:`kafkalab.cluster.processes`.
"""
from __future__ import annotations

import atexit
import json
import os
import tempfile
import time
import weakref

from ..broker.mini import config_name
from .configs import LAB_DEFAULTS, LabDefault, lab_configs  # noqa: F401 -- all three importable from here too
from .fault_controls import FaultControls
from .inspection import ClusterInspection, ZooKeeperUnavailable, timed_zk_read  # noqa: F401 -- as are these
from .kafka_backend import RESERVED, MiniBackend, config_value, make_backend
from .lifecycle import BrokerLifecycle
from .listeners import listener_spec, spec_from_state
from .ports import free_port
from .processes import Watchdog, pdeathsig_preexec
from .resources import _Broker, _outside_control_socket, _Resources
from .zookeeper import ZooKeeperServer


_OPEN: "weakref.WeakSet[Cluster]" = weakref.WeakSet()


class Cluster(ClusterInspection, BrokerLifecycle, FaultControls):
    """A running ZooKeeper-mode cluster; see the module docstring. Made by :func:`cluster`.

    This class starts, attaches and closes a cluster and keeps ``cluster.json``; the rest is mixed in:
    looking (``brokers``, ``controller``, ``describe``, ``zk``: :mod:`~kafkalab.cluster.inspection`),
    starting and breaking brokers (``kill``, ``stop``, ``restart``, ``pause``, ``resume``:
    :mod:`~kafkalab.cluster.lifecycle`) and lab faults (:mod:`~kafkalab.cluster.fault_controls`).
    What it owns, and how that is stopped, is in :mod:`~kafkalab.cluster.resources`."""

    #: the cluster's architecture, as :class:`~kafkalab.cluster.kraft.KRaftCluster` says ``"kraft"``
    mode = "zookeeper"

    def __init__(self, brokers: int = 3, dir: str | None = None, backend="mini", host: str = "127.0.0.1",  # noqa: A002 - the public keyword
                 base_port: int | None = None, timeout_s: float = 30.0, wait: bool = True, **broker_configs):
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        self._res = res = _Resources()
        self._finalizer = weakref.finalize(self, res.shutdown)
        self.backend = make_backend(backend)
        self.host = host
        self.timeout_s = timeout_s
        self.start_time_s: float | None = None
        self.configs = self._effective_configs(brokers, broker_configs)
        began = time.monotonic()
        if dir is None:
            res.temp_dir = dir = tempfile.mkdtemp(prefix="kafkalab-cluster-")  # noqa: A001 - the dir parameter
        self.dir = os.path.abspath(dir)
        os.makedirs(self.dir, exist_ok=True)
        _refuse_a_running_cluster(self.dir)
        self.owner_pid = os.getpid()
        try:
            res.watchdog = Watchdog()
            if res.temp_dir is not None:
                res.watchdog.remove_dir_at_exit(res.temp_dir)
            res.zookeeper = ZooKeeperServer(os.path.join(self.dir, "zookeeper"))
            res.zookeeper.start(timeout_s, preexec_fn=pdeathsig_preexec(), start_new_session=True)
            res.watchdog.watch(res.zookeeper.pid)
            self._connect_zk()
            for broker_id in range(1, brokers + 1):
                port = base_port + broker_id - 1 if base_port else 0
                res.brokers[broker_id] = b = _Broker(
                    broker_id, host, port, os.path.join(self.dir, f"broker-{broker_id}"),
                    os.path.join(self.dir, f"broker-{broker_id}.log"))
                if self.listener_spec is not None:   # every listener on a port of its own, kept over restarts
                    b.port = b.port or free_port(host)
                    b.listener_ports = {name: free_port(host) for name in self.listener_spec.extra}
            for b in res.brokers.values():   # should this process die, the watchdog removes them too
                socket_path = _outside_control_socket(b.log_dir)
                if socket_path is not None:
                    res.watchdog.remove_file_at_exit(socket_path)
            deadline = time.monotonic() + timeout_s
            offsets = {b.id: self._spawn(b) for b in res.brokers.values()}
            for b in res.brokers.values():
                self._wait_started(b, offsets[b.id], deadline)
            self._write_state()
            if wait:
                for b in res.brokers.values():
                    self._wait_registered(b, deadline)
                self._wait_controller(deadline)
                self._wait_serving(deadline)
            self.start_time_s = time.monotonic() - began
            self._write_state()
        except BaseException:
            self.close()
            raise
        _OPEN.add(self)

    # -- configuration --------------------------------------------------------------

    def _effective_configs(self, n: int, given: dict) -> dict[str, str]:
        configs = lab_configs(n, self.backend)
        for key, value in given.items():
            name = config_name(key)
            if name in RESERVED and name != "listeners":   # listeners: each with port 0 (kafkalab.cluster.listeners)
                raise ValueError(f"{name} is set by the cluster for each broker; it cannot be given")
            configs[name] = value
        configs = {k: config_value(v) for k, v in configs.items()}
        #: the listeners a lesson added besides the lab's PLAINTEXT one (None: that one alone)
        self.listener_spec = listener_spec(configs, self.host)
        configs.pop("listeners", None)   # each broker gets its own (lifecycle._listeners_of)
        if isinstance(self.backend, MiniBackend):  # a typo fails here, not in N broker processes
            from ..broker.server.config import BrokerConfig
            example = {} if self.listener_spec is None else {"listeners": self.listener_spec.listeners(
                self.host, 1, {name: 2 + i for i, name in enumerate(self.listener_spec.extra)})}
            BrokerConfig({**configs, **example, "log.dirs": "validate", "zookeeper.connect": "127.0.0.1:2181"})
        return configs

    # -- state file, attach ------------------------------------------------------------

    @property
    def state_path(self) -> str:
        return os.path.join(self.dir, "cluster.json")

    def state(self) -> dict:
        """What ``cluster.json`` holds."""
        res = self._res
        zk = res.zookeeper
        return {
            "version": 1,
            "backend": self.backend.name,
            "owner_pid": self.owner_pid,
            "dir": self.dir,
            "temporary": res.temp_dir is not None,
            "zookeeper": {"connect": self.zookeeper_connect,
                          "pid": zk.pid if zk is not None else res.zookeeper_pid,
                          "dir": os.path.join(self.dir, "zookeeper")},
            "bootstrap_servers": self.bootstrap_servers,
            "brokers": [{"id": b.id, "host": b.host, "port": b.port, "pid": b.pid, "create_time": b.create_time,
                         "state": b.state, "log_dir": b.log_dir, "log": b.log_path, "metrics_url": b.metrics_url,
                         "listener_ports": b.listener_ports}
                        for b in sorted(res.brokers.values(), key=lambda b: b.id)],
            "listeners": None if self.listener_spec is None else self.listener_spec.to_state(),
            "configs": dict(self.configs),
        }

    def _write_state(self) -> None:
        if self._res.closed or not os.path.isdir(self.dir):
            return
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state(), f, indent=2)
            f.write("\n")
        os.replace(tmp, self.state_path)

    @classmethod
    def attach(cls, dir: str, timeout_s: float = 30.0) -> "Cluster":  # noqa: A002 - the public keyword
        """Control a cluster another process started, from its ``cluster.json``.

        The processes stay the other process's: ``close()`` here only disconnects
        (use ``shutdown()`` to stop the whole cluster). A broker restarted from
        here watches the owner (``--parent-pid``) like the others."""
        import psutil
        path = os.path.join(dir, "cluster.json")
        with open(path) as f:
            state = json.load(f)
        if state.get("mode") == "kraft":   # a KRaft cluster (no ZooKeeper): see kafkalab.cluster.kraft
            from .kraft import KRaftCluster
            return KRaftCluster.attach(dir, timeout_s)
        self = cls.__new__(cls)
        self._res = res = _Resources()
        res.owns_processes = False
        self._finalizer = weakref.finalize(self, res.shutdown)
        self.backend = make_backend(state.get("backend", "mini"))
        self.dir = os.path.abspath(state.get("dir", dir))
        self.owner_pid = state.get("owner_pid")
        self.timeout_s = timeout_s
        self.start_time_s = None
        self.configs = dict(state.get("configs", {}))
        self.listener_spec = spec_from_state(state.get("listeners"))
        self._zookeeper_connect = state["zookeeper"]["connect"]
        res.zookeeper_pid = state["zookeeper"].get("pid")
        brokers = state.get("brokers", [])
        self.host = brokers[0]["host"] if brokers else "127.0.0.1"
        for entry in brokers:
            b = _Broker(entry["id"], entry["host"], entry["port"], entry["log_dir"], entry["log"],
                        state=entry.get("state", "running"), attached_pid=entry.get("pid"),
                        attached_create_time=entry.get("create_time"), create_time=entry.get("create_time"),
                        metrics_url=entry.get("metrics_url"), listener_ports=dict(entry.get("listener_ports") or {}))
            if b.attached_pid is not None and b.state in ("running", "paused", "starting"):
                try:
                    psutil.Process(b.attached_pid)
                except psutil.NoSuchProcess:
                    b.state = "exited"
            res.brokers[b.id] = b
        self._connect_zk()
        return self

    def shutdown(self) -> None:
        """Stop the whole cluster, also an attached one (``close()`` on an attached cluster only disconnects)."""
        with self._res.lock:
            self._res.owns_processes = True
        self.close()

    # -- open, closed -------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._res.closed

    def _check_open(self) -> None:
        if self._res.closed:
            raise RuntimeError("this cluster is closed; start a new one with kafkalab.cluster()")

    def close(self) -> None:
        """Stop the brokers (SIGTERM, SIGKILL after a timeout), then ZooKeeper; remove the temporary dir."""
        self._finalizer()
        _OPEN.discard(self)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        res = self._res
        if res.closed:
            return f"<kafkalab Cluster closed, dir={self.dir!r}>"
        states = [self._state(b) for b in res.brokers.values()]
        running = sum(s == "running" for s in states)
        return (f"<kafkalab Cluster: {len(states)} {self.backend.name} brokers ({running} running), "
                f"controller {self.controller}, bootstrap_servers={self.bootstrap_servers!r}, "
                f"zookeeper={self.zookeeper_connect!r}, dir={self.dir!r}>")


def _refuse_a_running_cluster(directory: str) -> None:
    """Two ZooKeepers on one data directory would corrupt it: refuse a dir whose cluster still runs."""
    import psutil
    try:
        with open(os.path.join(directory, "cluster.json")) as f:
            state = json.load(f)
        zk_pid = state["zookeeper"]["pid"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    try:
        alive = zk_pid and psutil.Process(zk_pid).status() != psutil.STATUS_ZOMBIE and \
            "zookeeper" in " ".join(psutil.Process(zk_pid).cmdline()).lower()
    except psutil.Error:
        alive = False
    if alive:
        raise RuntimeError(f"a cluster is already running in {directory} (ZooKeeper pid {zk_pid}, started by "
                           f"pid {state.get('owner_pid')}): use Cluster.attach({directory!r}), or close it first")


def cluster(brokers: int = 3, dir: str | None = None, backend: str = "mini", mode: str | None = None,  # noqa: A002 - the public keyword
            metrics: bool | None = None, **broker_configs) -> Cluster:
    """Start a ZooKeeper and ``brokers`` broker processes; see :class:`Cluster` and the module docstring.

    Also accepted: ``host`` (default 127.0.0.1), ``base_port`` (broker i listens on base_port + i - 1;
    default: free ports), ``timeout_s`` (for the start, default 30), ``wait=False`` (return once the
    processes listen, without waiting for their registration and a controller).

    ``mode="kraft"`` runs a KRaft cluster instead, without ZooKeeper: three controllers and the brokers; with
    the default ``backend="mini"`` Python controllers and mini brokers (:mod:`kafkalab.cluster.mini_kraft`),
    with ``backend="kafka"`` Apache Kafka 4.x, also ``combined=True`` nodes that are both; see
    :mod:`kafkalab.cluster.kraft`. Without ``mode``, ``$KAFKALAB_MODE`` chooses (as it does for
    ``kafkalab.connect(brokers=N)``), and ``"zookeeper"`` is the default.

    With ``backend="kafka"``, Apache Kafka's nodes serve their metrics too, under the mini broker's names, through the
    Prometheus JMX exporter's agent once it is fetched (``kafkalab fetch-jmx-exporter``); ``metrics=True`` also warns
    when it is not, ``metrics=False`` runs no agent. Mini brokers and controllers always serve theirs."""
    if mode is None:
        from .configs import mode_from_env
        mode = mode_from_env()
    if metrics is not None and backend == "kafka":
        if mode == "kraft":
            from .kraft_config import KRaftBackend
            backend = KRaftBackend(metrics=metrics)
        else:
            from .kafka_backend import KafkaBackend
            backend = KafkaBackend(metrics=metrics)
    if mode == "kraft":
        from .kraft import kraft_cluster
        return kraft_cluster(brokers=brokers, dir=dir, backend=backend, **broker_configs)
    if mode != "zookeeper":
        raise ValueError(f"mode must be 'zookeeper' or 'kraft', not {mode!r}")
    return Cluster(brokers=brokers, dir=dir, backend=backend, **broker_configs)


@atexit.register
def _close_all() -> None:
    for c in list(_OPEN):
        try:
            c.close()
        except Exception:   # noqa: BLE001 - at exit: close the others whatever one raises
            pass
