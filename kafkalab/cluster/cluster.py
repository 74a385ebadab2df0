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
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..broker.mini import config_name
from ..broker.zk import zk_data
from .kafka_backend import RESERVED, KafkaBackend, MiniBackend, config_value, make_backend
from .offsets import describe_rows, zookeeper_partition_rows
from .processes import Watchdog, pdeathsig_preexec, spawn
from .zookeeper import ZooKeeperServer, tail


class ZooKeeperUnavailable(RuntimeError):
    """The cluster's ZooKeeper cannot be reached (it was stopped, or does not answer)."""


class LabDefault(NamedTuple):
    """A lab default: its value (or a function of the number of brokers), Kafka's default, and why."""
    value: object | Callable[[int], object]
    kafka_default: object
    why: str

    def for_brokers(self, n: int):
        return self.value(n) if callable(self.value) else self.value


#: The configs a lab cluster sets unless you give them (Kafka's default next to each). Documented in
#: docs/cluster.md; ``min.insync.replicas`` stays Kafka's 1.
LAB_DEFAULTS: dict[str, LabDefault] = {
    "zookeeper.session.timeout.ms": LabDefault(
        6000, 18000, "a killed broker leaves /brokers/ids after 6 s instead of 18 s"),
    "replica.lag.time.max.ms": LabDefault(
        5000, 30000, "a stuck follower leaves the ISR after 5 s instead of 30 s"),
    "leader.imbalance.check.interval.seconds": LabDefault(
        10, 300, "leadership moves back to the preferred replica within 10 s instead of 5 min"),
    "controlled.shutdown.retry.backoff.ms": LabDefault(
        500, 5000, "a controlled shutdown that has to retry finishes in seconds"),
    "group.initial.rebalance.delay.ms": LabDefault(
        0, 3000, "a consumer group's first rebalance starts at once"),
    "offsets.topic.replication.factor": LabDefault(
        lambda n: min(3, n), 3, "__consumer_offsets is replicated to min(3, N) brokers (3 would fail with N < 3)"),
    "default.replication.factor": LabDefault(
        lambda n: min(3, n), 1, "new topics are replicated (to min(3, N) brokers) unless asked otherwise"),
    "offsets.topic.num.partitions": LabDefault(
        5, 50, "__consumer_offsets has 5 partitions: quicker to create, and describe() fits on a screen"),
}

_BROKER_STATES = ("starting", "running", "paused", "stopped", "killed", "exited")


def lab_configs(n: int, backend: MiniBackend | KafkaBackend | None = None) -> dict[str, object]:
    """The lab defaults for a cluster of ``n`` brokers (as Kafka config name -> value)."""
    configs = {name: d.for_brokers(n) for name, d in LAB_DEFAULTS.items()}
    if isinstance(backend, KafkaBackend):
        from .kafka_backend import KAFKA_ONLY_DEFAULTS
        configs.update({name: fn(n) for name, fn in KAFKA_ONLY_DEFAULTS.items()})
    return configs


@dataclass
class _Broker:
    id: int
    host: str
    port: int                      # 0 until a mini broker started on a free port says which
    log_dir: str
    log_path: str
    state: str = "starting"
    process: subprocess.Popen | None = None
    attached_pid: int | None = None         # a broker started by another process (Cluster.attach)
    attached_create_time: float | None = None
    create_time: float | None = None
    registration_czxid: int | None = None   # of the /brokers/ids/<id> znode we saw last

    @property
    def pid(self) -> int | None:
        if self.process is not None:
            return self.process.pid
        return self.attached_pid

    def poll(self) -> int | None:
        """The exit status if the process has exited (negative: killed by that signal), else None."""
        if self.process is not None:
            return self.process.poll()
        if self.attached_pid is None:
            return 0
        import psutil
        try:
            p = psutil.Process(self.attached_pid)
            if self.attached_create_time is not None and abs(p.create_time() - self.attached_create_time) > 1:
                return 0   # the pid was reused: our broker is gone
            return 0 if p.status() == psutil.STATUS_ZOMBIE else None
        except psutil.NoSuchProcess:
            return 0

    def send(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout_s: float) -> bool:
        """Wait for the process to exit (and reap it); False on timeout."""
        if self.process is not None:
            try:
                self.process.wait(timeout_s)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout_s
        while self.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True


class _Resources:
    """What a Cluster owns, apart from the Cluster object (so that a finalizer can stop it all)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.zookeeper: ZooKeeperServer | None = None
        self.zookeeper_pid: int | None = None      # attached: a ZooKeeper started by another process
        self.brokers: dict[int, _Broker] = {}
        self.watchdog: Watchdog | None = None
        self.zk_client = None
        self.temp_dir: str | None = None
        self.owns_processes = True
        self.closed = False
        self.stop_timeout_s = 15.0

    def shutdown(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if self.zk_client is not None:   # our observer first: it would only log reconnect attempts
                try:
                    self.zk_client.stop()
                    self.zk_client.close()
                except Exception:
                    pass
            if self.owns_processes:
                _stop_brokers(list(self.brokers.values()), self.stop_timeout_s)
                for b in self.brokers.values():
                    _remove_control_socket(b.log_dir)
                if self.zookeeper is not None:
                    self.zookeeper.stop()
                elif self.zookeeper_pid:   # an attached cluster being shut down
                    _terminate_pid(self.zookeeper_pid)
            if self.watchdog is not None:
                if self.temp_dir is None:
                    self.watchdog.keep_dir()
                self.watchdog.close()
            if self.temp_dir is not None:
                shutil.rmtree(self.temp_dir, ignore_errors=True)


def _stop_brokers(brokers: list[_Broker], timeout_s: float) -> None:
    """SIGTERM every running broker at once (controlled shutdowns in parallel), SIGKILL what is left."""
    running = [b for b in brokers if b.poll() is None]
    for b in running:
        b.send(signal.SIGCONT)
        b.send(signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for b in running:
        if not b.wait(max(0.0, deadline - time.monotonic())):
            b.send(signal.SIGKILL)
            b.wait(10)
        if b.state in ("running", "paused", "starting"):
            b.state = "stopped"


def timed_zk_read(client, connect_string: str, method: str, path: str, timeout_s: float):
    """``client.<method>(path)`` (a kazoo client: "get", "get_children", "exists"), but never waiting longer
    than ``timeout_s``: kazoo would wait forever for a ZooKeeper that is down. Raises ZooKeeperUnavailable
    (not connected, or no answer in time), or kazoo's NoNodeError."""
    if client is None or not client.connected:
        raise ZooKeeperUnavailable(f"not connected to ZooKeeper at {connect_string}")
    try:
        return getattr(client, method + "_async")(path).get(timeout=timeout_s)
    except client.handler.timeout_exception:
        raise ZooKeeperUnavailable(f"ZooKeeper at {connect_string} did not answer within {timeout_s:.0f} s") from None


def _outside_control_socket(log_dir: str) -> str | None:
    """The broker's fault-control socket if it lives in the temporary directory (its log dir's path was
    too long for a Unix socket): a killed broker leaves it behind, and it would outlive the cluster."""
    from ..broker.server.faults import control_socket_path
    path = control_socket_path(log_dir)
    return None if path.startswith(os.path.abspath(log_dir) + os.sep) else path


def _remove_control_socket(log_dir: str) -> None:
    path = _outside_control_socket(log_dir)
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


_OPEN: "weakref.WeakSet[Cluster]" = weakref.WeakSet()


class Cluster:
    """A running ZooKeeper-mode cluster; see the module docstring. Made by :func:`cluster`."""

    def __init__(self, brokers: int = 3, dir: str | None = None, backend="mini", host: str = "127.0.0.1",
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
            res.temp_dir = dir = tempfile.mkdtemp(prefix="kafkalab-cluster-")
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
                res.brokers[broker_id] = _Broker(
                    broker_id, host, port, os.path.join(self.dir, f"broker-{broker_id}"),
                    os.path.join(self.dir, f"broker-{broker_id}.log"))
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
            if name in RESERVED:
                raise ValueError(f"{name} is set by the cluster for each broker; it cannot be given")
            configs[name] = value
        configs = {k: config_value(v) for k, v in configs.items()}
        if isinstance(self.backend, MiniBackend):  # a typo fails here, not in N broker processes
            from ..broker.server.config import BrokerConfig
            BrokerConfig({**configs, "log.dirs": "validate", "zookeeper.connect": "127.0.0.1:2181"})
        return configs

    # -- starting brokers -----------------------------------------------------------

    def _spawn(self, b: _Broker, parent_pid: int | None = None) -> int:
        """Start broker ``b``'s process; returns where its log file stood (its ready line comes after)."""
        res = self._res
        if self.backend.needs_fixed_port and not b.port:
            from .zookeeper import free_port
            b.port = free_port(b.host)
        offset = os.path.getsize(b.log_path) if os.path.exists(b.log_path) else 0
        with open(b.log_path, "ab") as log:
            log.write(f"--- kafkalab: starting broker {b.id} at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
        offset = os.path.getsize(b.log_path)
        own = res.owns_processes
        if isinstance(self.backend, KafkaBackend):
            props = self.backend.write_properties(self.dir, b.id, b.host, b.port, b.log_dir,
                                                  self.zookeeper_connect, self.configs)
            cmd = self.backend.command(props)
        else:
            cmd = self.backend.command(b.id, b.host, b.port, b.log_dir,
                                       {**self.configs, "zookeeper.connect": self.zookeeper_connect},
                                       parent_pid or (os.getpid() if own else self.owner_pid), self.dir)
        env = self.backend.env(b.id, self.dir)
        b.process = spawn(cmd, b.log_path, env=env, watchdog=res.watchdog if own else None, tie_to_this_process=own)
        b.attached_pid = None
        try:
            import psutil
            b.create_time = psutil.Process(b.process.pid).create_time()
        except Exception:
            b.create_time = None
        b.state = "starting"
        return offset

    def _log_excerpt(self, b: _Broker) -> str:
        text = tail(b.log_path)
        return f"its log {b.log_path} ends with:\n{text}" if text else f"its log {b.log_path} is empty"

    def _check_alive(self, b: _Broker, doing: str) -> None:
        status = b.poll()
        if status is not None:
            b.state = "exited"
            raise RuntimeError(f"broker {b.id} exited with status {status} {doing}; {self._log_excerpt(b)}")

    def _wait_started(self, b: _Broker, log_offset: int, deadline: float) -> None:
        """Mini brokers: until the ``ready`` line (and learn the port). Kafka: the process is up."""
        if isinstance(self.backend, KafkaBackend):
            self._check_alive(b, "while starting")
            b.state = "running"
            return
        while True:
            self._check_alive(b, "while starting")
            try:
                with open(b.log_path, "rb") as f:
                    f.seek(log_offset)
                    port = self.backend.ready_port(f.read().decode(errors="replace"), b.id)
            except OSError:
                port = None
            if port:
                b.port = port
                b.state = "running"
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {b.id} did not start within {self.timeout_s:.0f} s; "
                                   f"{self._log_excerpt(b)}")
            time.sleep(0.05)

    def _zk_read(self, method: str, path: str, timeout_s: float = 3.0):
        """``zk.<method>(path)``, but never waiting longer than ``timeout_s`` (kazoo would wait forever for
        a ZooKeeper that is down). Raises ZooKeeperUnavailable, or kazoo's NoNodeError."""
        return timed_zk_read(self._res.zk_client, self.zookeeper_connect, method, path, timeout_s)

    def _registration(self, broker_id: int):
        """The ZooKeeper Stat of /brokers/ids/<id>, or None (also while ZooKeeper cannot be reached)."""
        try:
            return self._zk_read("exists", zk_data.broker_path(broker_id))
        except ZooKeeperUnavailable:
            return None

    def _wait_registered(self, b: _Broker, deadline: float, not_czxid: int | None = None) -> None:
        while True:
            stat = self._registration(b.id)
            if stat is not None and stat.czxid != not_czxid:
                b.registration_czxid = stat.czxid
                return
            self._check_alive(b, "before it registered in ZooKeeper")
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {b.id} did not register in ZooKeeper ({zk_data.broker_path(b.id)}) "
                                   f"within {self.timeout_s:.0f} s; {self._log_excerpt(b)}")
            time.sleep(0.05)

    def _wait_controller(self, deadline: float) -> None:
        while self.controller is None:
            if time.monotonic() > deadline:
                logs = ", ".join(b.log_path for b in self._res.brokers.values())
                raise TimeoutError(f"no controller was elected (no {zk_data.CONTROLLER} znode) within "
                                   f"{self.timeout_s:.0f} s; the brokers' logs: {logs}")
            time.sleep(0.05)

    def _connect_zk(self) -> None:
        from kazoo.client import KazooClient
        client = KazooClient(hosts=self.zookeeper_connect, timeout=10.0)
        client.start(timeout=self.timeout_s)
        self._res.zk_client = client

    # -- what a student looks at ------------------------------------------------------

    @property
    def zk(self):
        """A started kazoo client on the cluster's ZooKeeper (``c.zk.get("/controller")``)."""
        return self._res.zk_client

    @property
    def zookeeper_connect(self) -> str:
        """The ``zookeeper.connect`` string of every broker."""
        zk = self._res.zookeeper
        return zk.connect_string if zk is not None else self._zookeeper_connect

    @property
    def zookeeper(self) -> ZooKeeperServer | None:
        return self._res.zookeeper

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's host:port, comma-separated (clients find the live ones)."""
        return ",".join(f"{b.host}:{b.port}" for b in self._res.brokers.values())

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._res.brokers)

    @property
    def controller(self) -> int | None:
        """The id in ``/controller`` (the broker that won the election), or None while there is none."""
        try:
            data, _ = self._zk_read("get", zk_data.CONTROLLER)
        except Exception:   # NoNodeError (no controller right now), or ZooKeeper is unreachable
            return None
        try:
            return zk_data.decode_controller(data)
        except (ValueError, KeyError):
            return None

    def _state(self, b: _Broker) -> str:
        if b.state in ("running", "paused", "starting"):
            status = b.poll()
            if status is not None:
                b.state = "killed" if status == -signal.SIGKILL else "exited"
        return b.state

    @property
    def brokers(self):
        """One row per broker: id, host, port, pid, alive (running / paused / stopped / killed / exited /
        starting), registered (its /brokers/ids znode exists; None while ZooKeeper cannot be reached),
        is_controller, log_dir, log.
        A pandas DataFrame (a list of dicts without pandas)."""
        with self._res.lock:
            try:
                registered = {int(i) for i in self._zk_read("get_children", zk_data.BROKER_IDS)}
            except Exception:   # ZooKeeper unreachable: unknown
                registered = None
            controller = self.controller
            rows = [{"id": b.id, "host": b.host, "port": b.port, "pid": b.pid, "alive": self._state(b),
                     "registered": None if registered is None else b.id in registered,
                     "is_controller": b.id == controller,
                     "log_dir": b.log_dir, "log": b.log_path}
                    for b in sorted(self._res.brokers.values(), key=lambda b: b.id)]
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows)

    def broker_log(self, broker_id: int, lines: int = 30) -> str:
        """The last ``lines`` lines of a broker's output (``broker-<id>.log``)."""
        return tail(self._broker(broker_id).log_path, lines)

    def describe(self, topic: str, timeout_s: float = 1.0):
        """One row per partition of ``topic``: partition, leader, replicas, isr, leader_epoch (from the
        znodes ``/brokers/topics/<t>`` and ``.../partitions/<p>/state``), high_watermark (ListOffsets to
        the leader, as a consumer asks), and ``leo_<id>``: each replica's log end offset (ListOffsets
        with Kafka's DEBUGGING_REPLICA_ID -2, answered by any replica). A replica that cannot answer
        (down, paused) shows a missing value."""
        rows = zookeeper_partition_rows(self._zk_read, topic)

        def address_of(broker_id):
            b = self._res.brokers.get(broker_id)
            return (b.host, b.port) if b is not None and self._state(b) in ("running", "paused") else None

        return describe_rows(rows, address_of, topic, timeout_s)

    # -- breaking things ---------------------------------------------------------------

    def _broker(self, broker_id: int) -> _Broker:
        self._check_open()
        try:
            return self._res.brokers[int(broker_id)]
        except (KeyError, ValueError, TypeError):
            raise KeyError(f"no broker {broker_id!r}: the brokers are {self.broker_ids}") from None

    def _reaped(self, b: _Broker) -> None:
        if self._res.watchdog is not None and b.process is not None:
            self._res.watchdog.forget(b.process.pid)

    def kill(self, broker_id: int) -> None:
        """SIGKILL the broker (a crash: no flush, no controlled shutdown) and wait for it to exit.

        Its registration in ZooKeeper stays until its session times out
        (``zookeeper.session.timeout.ms``); only then does the controller act."""
        with self._res.lock:
            b = self._broker(broker_id)
            if self._state(b) not in ("running", "paused", "starting"):
                raise RuntimeError(f"broker {b.id} is not running ({b.state})")
            b.send(signal.SIGKILL)
            if not b.wait(10):
                raise RuntimeError(f"broker {b.id} (pid {b.pid}) did not exit within 10 s of SIGKILL")
            b.state = "killed"
            self._reaped(b)
            self._write_state()

    def stop(self, broker_id: int, timeout_s: float = 30.0) -> None:
        """SIGTERM the broker: a controlled shutdown (leadership moves away first, logs are flushed and
        closed cleanly). Waits for it to exit; after ``timeout_s`` it is killed instead."""
        with self._res.lock:
            b = self._broker(broker_id)
            if self._state(b) not in ("running", "paused", "starting"):
                raise RuntimeError(f"broker {b.id} is not running ({b.state})")
            b.send(signal.SIGCONT)
            b.send(signal.SIGTERM)
            if not b.wait(timeout_s):
                import warnings
                warnings.warn(f"broker {b.id} did not stop within {timeout_s:.0f} s; killing it", stacklevel=2)
                b.send(signal.SIGKILL)
                b.wait(10)
                b.state = "killed"
            else:
                b.state = "stopped"
            self._reaped(b)
            self._write_state()

    def restart(self, broker_id: int, timeout_s: float | None = None, progress: bool = False) -> None:
        """Start the broker again: same id, port and log directory. A running (or paused) broker is
        stopped first. Returns once it is registered in ZooKeeper again.

        A killed broker's old registration lingers until its ZooKeeper session expires, and Kafka
        refuses to register a broker id that is still registered; so this first waits for the old
        registration to go (up to ``zookeeper.session.timeout.ms``), with a progress bar if
        ``progress`` (``kafkalab restart`` shows one in the terminal)."""
        timeout_s = timeout_s or self.timeout_s
        with self._res.lock:
            b = self._broker(broker_id)
            if self._state(b) in ("running", "paused", "starting"):
                self.stop(broker_id)
            old = self.wait_old_registration(b.id, timeout_s, progress)
            deadline = time.monotonic() + timeout_s
            offset = self._spawn(b)
            self._write_state()
            self._wait_started(b, offset, deadline)
            self._wait_registered(b, deadline, not_czxid=old.czxid if old is not None else None)
            self._write_state()

    def wait_old_registration(self, broker_id: int, timeout_s: float | None = None, progress: bool = False):
        """Wait until a stopped or killed broker's registration (``/brokers/ids/<id>``) is gone: its
        ZooKeeper session has to expire first. Returns the old registration's ZooKeeper stat (None if
        there was none); TimeoutError after the session timeout plus ``timeout_s``."""
        old = self._registration(broker_id)
        if old is None:
            return None
        session_s = int(self.configs.get("zookeeper.session.timeout.ms", 18000)) / 1000
        limit_s = session_s + (timeout_s or self.timeout_s)
        gone = lambda: self._registration(broker_id) is None  # noqa: E731
        what = f"the old registration of broker {broker_id} ({zk_data.broker_path(broker_id)}) to expire"
        if progress:
            from ..progress import wait_with_progress
            wait_with_progress(gone, limit_s, f"waiting for {what}")
            return old
        deadline = time.monotonic() + limit_s
        while not gone():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the old registration of broker {broker_id} ({zk_data.broker_path(broker_id)}) "
                                   f"did not expire within {limit_s:.0f} s")
            time.sleep(0.1)
        return old

    def pause(self, broker_id: int) -> None:
        """SIGSTOP: the broker is frozen — its sockets stay open, it answers nothing, and its ZooKeeper
        session expires after ``zookeeper.session.timeout.ms``."""
        with self._res.lock:
            b = self._broker(broker_id)
            if self._state(b) != "running":
                raise RuntimeError(f"broker {b.id} is not running ({b.state})")
            b.send(signal.SIGSTOP)
            b.state = "paused"
            self._write_state()

    def resume(self, broker_id: int) -> None:
        """SIGCONT: a paused broker runs again (and finds out what it missed)."""
        with self._res.lock:
            b = self._broker(broker_id)
            if self._state(b) != "paused":
                raise RuntimeError(f"broker {b.id} is not paused ({b.state})")
            b.send(signal.SIGCONT)
            b.state = "running"
            self._write_state()

    # -- lab faults (kafkalab.broker.server.faults: each broker process's control socket) --------

    def inject_fault(self, broker_id: int, kind: str, api: str | None = None, **options) -> dict:
        """Make one broker misbehave on cue (mini brokers only; see :mod:`kafkalab.broker.server.faults`), e.g.
        ``inject_fault(1, "drop_response", api="Produce", count=2)``, ``inject_fault(2, "pause_replication",
        duration_s=8)``. Returns the fault as :meth:`faults` lists it."""
        from ..broker.server.faults import control_request
        b = self._broker(broker_id)
        if getattr(self.backend, "name", "mini") != "mini":
            raise NotImplementedError("faults are a kafkalab lab tool: Apache Kafka's brokers have none")
        return control_request(b.log_dir, "inject", {"kind": kind, "api": api, **options})

    def faults(self) -> list[dict]:
        """The active faults of every running broker, each with its ``broker`` id."""
        from ..broker.server.faults import control_request
        out = []
        for b in self._res.brokers.values():
            if self._state(b) == "running":
                out += [{"broker": b.id, **f} for f in control_request(b.log_dir, "faults")]
        return out

    def clear_faults(self, broker_id: int | None = None, fault_id: int | None = None) -> int:
        """End the faults of one broker (one fault by id), or of every running broker."""
        from ..broker.server.faults import control_request
        brokers = [self._broker(broker_id)] if broker_id is not None else list(self._res.brokers.values())
        return sum(control_request(b.log_dir, "clear", {"fault_id": fault_id}) for b in brokers
                   if self._state(b) == "running")

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
                         "state": b.state, "log_dir": b.log_dir, "log": b.log_path}
                        for b in sorted(res.brokers.values(), key=lambda b: b.id)],
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
    def attach(cls, dir: str, timeout_s: float = 30.0) -> "Cluster":
        """Control a cluster another process started, from its ``cluster.json``.

        The processes stay the other process's: ``close()`` here only disconnects
        (use ``shutdown()`` to stop the whole cluster). A broker restarted from
        here watches the owner (``--parent-pid``) like the others."""
        import psutil
        path = os.path.join(dir, "cluster.json")
        with open(path) as f:
            state = json.load(f)
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
        self._zookeeper_connect = state["zookeeper"]["connect"]
        res.zookeeper_pid = state["zookeeper"].get("pid")
        brokers = state.get("brokers", [])
        self.host = brokers[0]["host"] if brokers else "127.0.0.1"
        for entry in brokers:
            b = _Broker(entry["id"], entry["host"], entry["port"], entry["log_dir"], entry["log"],
                        state=entry.get("state", "running"), attached_pid=entry.get("pid"),
                        attached_create_time=entry.get("create_time"), create_time=entry.get("create_time"))
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

    # -- lifecycle ---------------------------------------------------------------------

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


def _terminate_pid(pid: int, timeout_s: float = 10.0) -> None:
    import psutil
    try:
        p = psutil.Process(pid)
        p.terminate()
        p.wait(timeout_s)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        p.kill()


def cluster(brokers: int = 3, dir: str | None = None, backend: str = "mini", **broker_configs) -> Cluster:
    """Start a ZooKeeper and ``brokers`` broker processes; see :class:`Cluster` and the module docstring.

    Also accepted: ``host`` (default 127.0.0.1), ``base_port`` (broker i listens on base_port + i - 1;
    default: free ports), ``timeout_s`` (for the start, default 30), ``wait=False`` (return once the
    processes listen, without waiting for their registration and a controller)."""
    return Cluster(brokers=brokers, dir=dir, backend=backend, **broker_configs)


@atexit.register
def _close_all() -> None:
    for c in list(_OPEN):
        try:
            c.close()
        except Exception:
            pass
