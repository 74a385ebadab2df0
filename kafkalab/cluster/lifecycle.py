"""A broker's life: start it, wait until it is registered, kill / stop / restart / pause / resume it.

:class:`BrokerLifecycle` is mixed into :class:`~kafkalab.cluster.Cluster`. A
broker is started (``_spawn``), then waited for twice: until its process is up
(a mini broker prints a ``ready`` line with its port) and until it is
registered in ZooKeeper (``/brokers/ids/<id>``); ``cluster()`` also waits for a
controller. Then it can be broken:

* ``kill``: SIGKILL, a crash; its registration stays until its ZooKeeper session expires;
* ``stop``: SIGTERM, a controlled shutdown (SIGKILL after a timeout);
* ``pause`` / ``resume``: SIGSTOP / SIGCONT, a broker alive but silent;
* ``restart``: the same id, port and log directory again, once the old
  registration is gone (Kafka refuses a broker id that is still registered).
"""
from __future__ import annotations

import os
import signal
import time

from ..broker.zk import zk_data
from .inspection import ZooKeeperUnavailable
from .kafka_backend import KafkaBackend
from .processes import spawn
from .jmx_agent import javaagent_for
from .resources import _Broker
from .zookeeper import tail


class BrokerLifecycle:
    """Starting and breaking brokers, mixed into :class:`~kafkalab.cluster.Cluster`. It uses the cluster's
    ``_res`` (the brokers, the watchdog, the lock), ``backend``, ``configs``, ``dir``, ``owner_pid``,
    ``timeout_s``, ``_write_state`` and ``_check_open``, and ZooKeeper through ``_zk_read``,
    ``zookeeper_connect`` and ``controller`` (:class:`~kafkalab.cluster.inspection.ClusterInspection`)."""

    # -- starting brokers -----------------------------------------------------------

    def _spawn(self, b: _Broker, parent_pid: int | None = None) -> int:
        """Start broker ``b``'s process; returns where its log file stood (its ready line comes after)."""
        res = self._res
        if self.backend.needs_fixed_port and not b.port:
            from .ports import free_port
            b.port = free_port(b.host)
        offset = os.path.getsize(b.log_path) if os.path.exists(b.log_path) else 0
        with open(b.log_path, "ab") as log:
            log.write(f"--- kafkalab: starting broker {b.id} at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
        offset = os.path.getsize(b.log_path)
        own = res.owns_processes
        listeners = self._listeners_of(b)
        if isinstance(self.backend, KafkaBackend):
            props = self.backend.write_properties(self.dir, b.id, b.host, b.port, b.log_dir,
                                                  self.zookeeper_connect, self.configs, listeners=listeners)
            agent = javaagent_for(self.backend, b)
            cmd = self.backend.command(props, agent)
        else:
            agent = None
            per_broker = {} if listeners is None else {"listeners": listeners, "advertised.listeners": listeners}
            cmd = self.backend.command(b.id, b.host, b.port, b.log_dir,
                                       {**self.configs, "zookeeper.connect": self.zookeeper_connect, **per_broker},
                                       parent_pid or (os.getpid() if own else self.owner_pid), self.dir)
        env = self.backend.env(b.id, self.dir, agent) if agent else self.backend.env(b.id, self.dir)
        b.process = spawn(cmd, b.log_path, env=env, watchdog=res.watchdog if own else None, tie_to_this_process=own)
        b.attached_pid = None
        try:
            import psutil
            b.create_time = psutil.Process(b.process.pid).create_time()
        except Exception:   # noqa: BLE001 - psutil missing or the process gone: no create time
            b.create_time = None
        b.state = "starting"
        return offset

    def _listeners_of(self, b: _Broker) -> str | None:
        """Broker ``b``'s ``listeners`` (and ``advertised.listeners``) when a lesson added listeners; None: the
        lab's PLAINTEXT listener alone, on ``b.port``."""
        spec = getattr(self, "listener_spec", None)
        return None if spec is None else spec.listeners(b.host, b.port, b.listener_ports)

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
                    text = f.read().decode(errors="replace")
                port = self.backend.ready_port(text, b.id)
            except OSError:
                port = None
            if port:
                b.port = port
                b.metrics_url = self.backend.ready_metrics_url(text, b.id)
                b.state = "running"
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"broker {b.id} did not start within {self.timeout_s:.0f} s; "
                                   f"{self._log_excerpt(b)}")
            time.sleep(0.05)

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

    def _wait_serving(self, deadline: float) -> None:
        """Until each broker's Metadata names every broker and the controller. Registered in ZooKeeper is
        not yet known to the controller: until the controller's UpdateMetadata reached a broker, that broker's
        metadata cache is empty, so its Metadata answer names no brokers and no controller, and a CreateTopics
        finds "0 available brokers". Kafka's brokers and the mini brokers both answer so (ZkMetadataCache)."""
        from .kafka_requests import metadata_answer, metadata_request
        want = set(self._res.brokers)
        for b in self._res.brokers.values():
            while True:
                try:
                    answer = metadata_answer(metadata_request(b.host, b.port, topics=[]))
                    if set(answer["brokers"]) >= want and answer["controller"] is not None:
                        break
                except Exception:   # noqa: BLE001 -- not answering yet
                    pass
                self._check_alive(b, "before it knew the whole cluster")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"broker {b.id} did not know all brokers {sorted(want)} and the controller "
                                       f"within {self.timeout_s:.0f} s; {self._log_excerpt(b)}")
                time.sleep(0.1)

    # -- a broker's state ----------------------------------------------------------------

    def _broker(self, broker_id: int) -> _Broker:
        self._check_open()
        try:
            return self._res.brokers[int(broker_id)]
        except (KeyError, ValueError, TypeError):
            raise KeyError(f"no broker {broker_id!r}: the brokers are {self.broker_ids}") from None

    def _reaped(self, b: _Broker) -> None:
        if self._res.watchdog is not None and b.process is not None:
            self._res.watchdog.forget(b.process.pid)

    def _state(self, b: _Broker) -> str:
        if b.state in ("running", "paused", "starting"):
            status = b.poll()
            if status is not None:
                b.state = "killed" if status == -signal.SIGKILL else "exited"
        return b.state

    # -- breaking things ---------------------------------------------------------------

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
