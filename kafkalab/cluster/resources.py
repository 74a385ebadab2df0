"""What a :class:`~kafkalab.cluster.Cluster` owns, and how it is all stopped.

* :class:`_Broker`: one broker process — its id, address, log directory, state,
  and the process itself (a child of ours, or, for an attached cluster, a pid
  another process started) with ``poll``, ``send`` (a signal) and ``wait``;
* :class:`_Resources`: everything a cluster holds — ZooKeeper, the brokers, the
  watchdog, the kazoo client, the temporary directory — kept apart from the
  Cluster object, so that the finalizer (``weakref.finalize``, run by
  ``close()``, by garbage collection or at exit) can stop it all without the
  Cluster: :meth:`_Resources.shutdown` stops the brokers (SIGTERM to all at
  once, SIGKILL what is left), then ZooKeeper, and removes what they leave.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from .processes import Watchdog
from .zookeeper import ZooKeeperServer

#: what ``_Broker.state`` can be (the ``alive`` column of ``Cluster.brokers``)
_BROKER_STATES = ("starting", "running", "paused", "stopped", "killed", "exited")


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
    roles: str = "broker"                   # KRaft: process.roles ("broker", "controller", "broker,controller")
    controller_port: int | None = None      # KRaft: the CONTROLLER listener's port of a controller
    metrics_url: str | None = None          # http://host:port/metrics (a mini broker's ready line says; Kafka's:
                                            # the JMX exporter's agent on metrics_port)
    metrics_port: int | None = None         # real Kafka: the exporter agent's port, chosen before it starts
    #: the ports of the listeners a lesson added (``listeners``), by listener name; the lab's own is ``port``
    listener_ports: dict[str, int] = field(default_factory=dict)

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
        """Send ``sig``; SIGSTOP returns once the kernel shows the process stopped (a signal is delivered
        asynchronously: on a loaded machine a moment can pass), so a paused broker is frozen when ``pause()``
        returns."""
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            if sig == signal.SIGSTOP:
                import psutil
                deadline = time.monotonic() + 5.0
                try:
                    while psutil.Process(self.pid).status() not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE) \
                            and time.monotonic() < deadline:
                        time.sleep(0.005)
                except psutil.NoSuchProcess:
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
                except Exception:   # noqa: BLE001 - a broken ZooKeeper client must not stop the shutdown
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
