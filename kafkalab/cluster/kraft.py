"""``kafkalab.cluster(brokers=3, backend="kafka", mode="kraft")``: Apache Kafka 4.x without ZooKeeper.

::

    with kafkalab.cluster(brokers=3, backend="kafka", mode="kraft") as c:
        c.nodes               # every process: id, roles, ports, pid, alive, registered, fenced, quorum status
        c.quorum()            # kafka-metadata-quorum describe --status --replication, as a table
        c.controller          # 3002: the active controller, the Raft leader of __cluster_metadata
        c.kill(c.controller)  # SIGKILL it: the other controllers elect a leader with a higher epoch
        c.stop(2)             # a broker's controlled shutdown; fenced, out of every ISR
        c.restart(2)          # back: registered again, unfenced, caught up
        c.describe("orders")  # leader, replicas, ISR, leader epoch, high watermark, each replica's LEO

In KRaft mode the metadata lives in one replicated log, ``__cluster_metadata``: a Raft quorum of **controllers**
(``process.roles=controller``; node ids 3001, 3002, 3003) elects a leader, the *active controller*, which alone
appends to the log; the others replicate it and stand ready to take over. **Brokers** (``process.roles=broker``;
node ids 1..N) fetch the log as observers, register with the active controller and send it heartbeats; a broker
whose heartbeats stop for ``broker.session.timeout.ms`` is *fenced*: removed from every ISR, no longer listed to
clients. With ``combined=True`` each of the N nodes is broker and controller at once
(``process.roles=broker,controller``), as a small cluster or a laptop runs it.

There is no ZooKeeper to read: the cluster asks over the Kafka protocol — DescribeQuorum (API 55) to the controllers
for the quorum, DescribeCluster and Metadata to the brokers for registrations, leaders and ISRs (see
:mod:`kafkalab.cluster.quorum`). Every node's storage is formatted first with Kafka's own ``kafka-storage format``
(``kafka.tools.StorageTool``) and one cluster id, as Kafka requires. The configs each node gets are in
:mod:`kafkalab.cluster.kraft_config`, the lab defaults in ``docs/cluster.md``.

``kill``, ``stop``, ``restart``, ``pause`` and ``resume`` take a broker's or a controller's id. ``close()`` stops
the brokers first (their controlled shutdown needs a controller), then the controllers; should the owning process
die, the same watchdog and parent-death signal as for the ZooKeeper cluster stop them all
(:mod:`kafkalab.cluster.processes`).

The state directory: ``node-<id>/`` (log.dirs, with ``meta.properties`` and
``__cluster_metadata-0``), ``node-<id>.properties``, ``node-<id>.log`` (the
process's output) and ``cluster.json`` (read by :meth:`KRaftCluster.attach`).
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import tempfile
import time
import weakref

from .jmx_agent import javaagent_for
from .kafka_requests import metadata_answer, metadata_request
from .kraft_config import (CONTROLLER_ID_BASE, LISTENER_CONFIGS, KRaftBackend, effective_configs, new_cluster_id,
                           voters_string)
from .listeners import controller_client_security, listener_spec, spec_from_state
from .kraft_inspection import KRaftInspection
from .lifecycle import BrokerLifecycle
from .mini_kraft import MiniKRaftBackend
from .offsets import describe_rows
from .processes import Watchdog, spawn
from .fault_controls import FaultControls
from .quorum import (QuorumError, QuorumUnavailableError, describe_cluster, describe_quorum, quorum_answer,
                     quorum_table, why_not_leader)
from .resources import _Broker, _Resources, _stop_brokers
from .ports import free_port
from .zookeeper import tail

_OPEN: "weakref.WeakSet[KRaftCluster]" = weakref.WeakSet()
_RUNNING = ("running", "paused", "starting")


class _KRaftResources(_Resources):
    """A KRaft cluster's processes: brokers (``brokers``, also the combined nodes) and separate ``controllers``."""

    def __init__(self):
        super().__init__()
        self.controllers: dict[int, _Broker] = {}

    def shutdown(self) -> None:
        with self.lock:
            if self.closed:
                return
            if self.owns_processes:   # brokers first: a controlled shutdown asks the active controller
                _stop_brokers(list(self.brokers.values()), self.stop_timeout_s)
                _stop_brokers(list(self.controllers.values()), self.stop_timeout_s)
            super().shutdown()


class KRaftCluster(KRaftInspection, BrokerLifecycle, FaultControls):
    """A running KRaft cluster of Kafka 4.x processes; see the module docstring. Made by :func:`kraft_cluster`
    (``kafkalab.cluster(..., mode="kraft")``)."""

    mode = "kraft"

    def __init__(self, brokers: int = 3, dir: str | None = None, backend=None, combined: bool = False,  # noqa: A002 - the public keyword
                 controllers: int = 3, host: str = "127.0.0.1", base_port: int | None = None,
                 timeout_s: float = 90.0, wait: bool = True, **broker_configs):
        if brokers < 1:
            raise ValueError("a cluster needs at least one broker")
        if not combined and controllers < 1:
            raise ValueError("a KRaft cluster needs at least one controller")
        self.backend = backend if isinstance(backend, KRaftBackend) else KRaftBackend()
        self._res = res = _KRaftResources()
        self._finalizer = weakref.finalize(self, res.shutdown)
        self.host, self.timeout_s, self.combined = host, timeout_s, combined
        self.start_time_s: float | None = None
        self.format_time_s: float | None = None   # of start_time_s, the part kafka-storage format took
        self.configs = effective_configs(brokers, broker_configs)
        #: the listeners a lesson added besides the lab's PLAINTEXT one (None: that one alone); each node's
        #: properties file gets its own (``_write_properties``)
        self.listener_spec = listener_spec(self.configs, host)
        if self.listener_spec is not None and "CONTROLLER" in self.listener_spec.names:
            raise ValueError("listeners: CONTROLLER is the controllers' listener (controller.listener.names) in a "
                             "lab KRaft cluster, placed by the lab; name the brokers' listeners otherwise (secure "
                             "CONTROLLER with CONTROLLER:SASL_SSL in listener.security.protocol.map, "
                             "sasl.mechanism.controller.protocol and listener.name.controller.* configs)")
        #: the lab's way to the CONTROLLER listener when a lesson secured it (None: PLAINTEXT)
        self._controller_security = controller_client_security(self.configs, self.listener_spec)
        for name in LISTENER_CONFIGS:
            self.configs.pop(name, None)
        self._leader_hint: int | None = None
        began = time.monotonic()
        if dir is None:
            res.temp_dir = dir = tempfile.mkdtemp(prefix="kafkalab-kraft-")  # noqa: A001 - the dir parameter
        self.dir = os.path.abspath(dir)
        os.makedirs(self.dir, exist_ok=True)
        _refuse_a_running_cluster(self.dir)
        # a directory a cluster ran in before (kafkalab down, then up) keeps its formatted storage and its id
        self.cluster_id = _previous_cluster_id(self.dir) or new_cluster_id()
        self.owner_pid = os.getpid()
        try:
            res.watchdog = Watchdog()
            if res.temp_dir is not None:
                res.watchdog.remove_dir_at_exit(res.temp_dir)
            port = (lambda i: base_port + i) if base_port else (lambda i: free_port(host))
            for i in range(1, brokers + 1):
                res.brokers[i] = b = self._node(i, "broker,controller" if combined else "broker", port(i - 1),
                                                port(100 + i - 1) if combined else None)
                if self.listener_spec is not None:   # each added listener on a port of its own, kept over restarts
                    b.listener_ports = {name: free_port(host) for name in self.listener_spec.extra}
            if not combined:
                for i in range(1, controllers + 1):
                    res.controllers[CONTROLLER_ID_BASE + i] = self._node(
                        CONTROLLER_ID_BASE + i, "controller", None, port(200 + i - 1))
            self.format_storage()
            deadline = time.monotonic() + timeout_s
            offsets = {b.id: self._spawn(b) for b in self._all_nodes()}   # controllers first, then brokers
            for b in self._all_nodes():
                self._wait_started(b, 0, deadline)
            self._write_state()
            if wait:
                self._wait_leader(deadline)
                for b in self._all_nodes():
                    self._wait_ready(b, deadline, offsets[b.id])
            self.start_time_s = time.monotonic() - began
            self._write_state()
        except BaseException:
            self.close()
            raise
        _OPEN.add(self)

    def _node(self, node_id: int, roles: str, port: int | None, controller_port: int | None) -> _Broker:
        return _Broker(node_id, self.host, port or 0, os.path.join(self.dir, f"node-{node_id}"),
                       os.path.join(self.dir, f"node-{node_id}.log"), roles=roles, controller_port=controller_port)

    def _all_nodes(self) -> list[_Broker]:
        return [*sorted(self._res.controllers.values(), key=lambda b: b.id),
                *sorted(self._res.brokers.values(), key=lambda b: b.id)]

    @property
    def voters(self) -> dict[int, tuple[str, int]]:
        """The quorum's voters (``controller.quorum.voters``): node id -> (host, CONTROLLER port)."""
        return {b.id: (b.host, b.controller_port) for b in self._all_nodes() if "controller" in b.roles}

    # -- storage, processes ----------------------------------------------------------------

    def _write_properties(self, b: _Broker) -> str:
        path = self.backend.properties_path(self.dir, b.id)
        with open(path, "w") as f:
            f.write(self.backend.server_properties(b.id, b.roles, b.host, b.port, b.controller_port, b.log_dir,
                                                   voters_string(self.voters), self.configs,
                                                   getattr(self, "listener_spec", None), b.listener_ports))
        return path

    def format_storage(self) -> None:
        """``kafka-storage format --cluster-id ID --config node-<id>.properties`` for every node whose log dir
        has no ``meta.properties`` yet, all at once (Kafka's StorageTool, one JVM each)."""
        began, pending = time.monotonic(), []
        for b in self._all_nodes():
            path = self._write_properties(b)
            if not os.path.exists(os.path.join(b.log_dir, "meta.properties")):
                pending.append((b, spawn(self.backend.format_command(path, self.cluster_id), b.log_path,
                                         watchdog=self._res.watchdog)))
        for b, proc in pending:
            status = proc.wait(self.timeout_s)
            self._res.watchdog.forget(proc.pid)
            if status != 0:
                raise RuntimeError(f"kafka-storage format failed for node {b.id} (status {status}); "
                                   f"its log {b.log_path} ends with:\n{tail(b.log_path)}")
        self.format_time_s = time.monotonic() - began

    def _spawn(self, b: _Broker, parent_pid: int | None = None) -> int:
        res = self._res
        if not b.port and "broker" in b.roles:
            b.port = free_port(b.host)
        with open(b.log_path, "ab") as log:
            log.write(f"--- kafkalab: starting node {b.id} ({b.roles}) at "
                      f"{time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
        offset, own = os.path.getsize(b.log_path), res.owns_processes
        agent = javaagent_for(self.backend, b)   # real Kafka's metrics (the JMX exporter's agent); mini: None
        cmd = self.backend.command(self._write_properties(b), b.roles, *([agent] if agent else []))
        b.process = spawn(cmd, b.log_path, env=self.backend.env(b.id, self.dir),
                          watchdog=res.watchdog if own else None, tie_to_this_process=own)
        b.attached_pid = None
        try:
            import psutil
            b.create_time = psutil.Process(b.process.pid).create_time()
        except Exception:   # noqa: BLE001 - psutil missing or the process gone: no create time
            b.create_time = None
        b.state = "starting"
        return offset

    def _wait_started(self, b: _Broker, log_offset: int, deadline: float) -> None:
        self._check_alive(b, "while starting")
        b.state = "running"

    def _check_alive(self, b: _Broker, doing: str) -> None:
        status = b.poll()
        if status is not None:
            b.state = "exited"
            raise RuntimeError(f"node {b.id} ({b.roles}) exited with status {status} {doing}; "
                               f"{self._log_excerpt(b)}")

    def _wait_leader(self, deadline: float, not_epoch: int | None = None) -> dict:
        """Until the quorum has a leader (in an epoch after ``not_epoch``); returns the DescribeQuorum answer."""
        while True:
            answer = self._quorum_answer()
            if answer is not None and answer["leader_id"] is not None and \
                    (not_epoch is None or answer["leader_epoch"] > not_epoch):
                return answer
            for b in self._all_nodes():
                if b.state in _RUNNING and "controller" in b.roles:
                    self._check_alive(b, "before the quorum elected a leader")
            if time.monotonic() > deadline:
                logs = ", ".join(b.log_path for b in self._all_nodes() if "controller" in b.roles)
                raise TimeoutError(f"the controllers elected no leader within {self.timeout_s:.0f} s; "
                                   f"their logs: {logs}")
            time.sleep(0.1)

    def _wait_ready(self, b: _Broker, deadline: float, log_offset: int = 0) -> None:
        """A controller: its CONTROLLER listener accepts connections. A broker: it answers Metadata listing itself
        (registered, unfenced) and its backend agrees (``broker_ready``: a mini broker's log since ``log_offset``)."""
        while True:
            self._check_alive(b, "before it was ready")
            if "broker" in b.roles:
                try:
                    if b.id in metadata_answer(metadata_request(b.host, b.port, [], 1.0))["brokers"] and \
                            self.backend.broker_ready(b.id, b.log_path, log_offset):
                        self._ready_line(b, log_offset)
                        return
                except (OSError, ValueError, EOFError):
                    pass
            else:
                try:
                    socket.create_connection((b.host, b.controller_port), timeout=1.0).close()
                    if self._ready_line(b, log_offset):
                        return
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {b.id} ({b.roles}) was not ready within {self.timeout_s:.0f} s; "
                                   f"{self._log_excerpt(b)}")
            time.sleep(0.1)

    def _ready_line(self, b: _Broker, log_offset: int) -> bool:
        """Has a mini node written its ready line since ``log_offset``? Its metrics URL is read from it. Kafka's nodes
        have none (ready when they answer; their ``metrics_url`` is the JMX exporter agent's, set at spawn)."""
        node_ready = getattr(self.backend, "node_ready", None)   # MiniKRaftBackend's
        if node_ready is None:
            return True
        ready, b.metrics_url = node_ready(b.id, b.log_path, log_offset)
        return ready

    # -- controls (kill, stop, pause, resume come from BrokerLifecycle) ----------------------------

    def _broker(self, node_id: int) -> _Broker:
        self._check_open()
        try:
            node_id = int(node_id)
        except (ValueError, TypeError):
            node_id = None
        b = self._res.brokers.get(node_id) or self._res.controllers.get(node_id)
        if b is None:
            raise KeyError(f"no node {node_id!r}: the brokers are {self.broker_ids}, the controllers "
                           f"{self.controller_ids}")
        return b

    def kill(self, node_id: int) -> None:
        """SIGKILL a broker or a controller (a crash). A broker's heartbeats stop: the active controller fences
        it after ``broker.session.timeout.ms`` and moves its leaderships. The active controller: the other
        voters notice after ``controller.quorum.fetch.timeout.ms`` and elect a leader in a higher epoch."""
        BrokerLifecycle.kill(self, node_id)

    def stop(self, node_id: int, timeout_s: float = 30.0) -> None:
        """SIGTERM: a broker's controlled shutdown (it asks in its heartbeats; the controller moves its
        leaderships away, then fences it); a controller resigns its leadership (EndQuorumEpoch) if it has it.
        SIGKILL after ``timeout_s``."""
        BrokerLifecycle.stop(self, node_id, timeout_s)

    def pause(self, node_id: int) -> None:
        """SIGSTOP: alive but silent. A paused broker is fenced once its heartbeats miss
        ``broker.session.timeout.ms`` and leaves the ISRs after ``replica.lag.time.max.ms``; a paused active
        controller loses its leadership to an election among the others."""
        BrokerLifecycle.pause(self, node_id)

    def resume(self, node_id: int) -> None:
        """SIGCONT: a paused node runs again, catches up on ``__cluster_metadata`` (a broker is unfenced again)."""
        BrokerLifecycle.resume(self, node_id)

    def restart(self, node_id: int, timeout_s: float | None = None, progress: bool = False) -> None:
        """Start a broker or controller again: same id, ports and log directory (a running one is stopped
        first). Returns once a broker is registered and unfenced again, a controller listens again.
        (No old registration to wait for, unlike ZooKeeper mode: a restarted broker registers anew with a
        new incarnation id.)"""
        timeout_s = timeout_s or self.timeout_s
        with self._res.lock:
            b = self._broker(node_id)
            if self._state(b) in _RUNNING:
                self.stop(b.id)
            deadline = time.monotonic() + timeout_s
            offset = self._spawn(b)
            self._write_state()
            self._wait_started(b, 0, deadline)
            self._wait_ready(b, deadline, offset)
            self._write_state()

    # -- looking ----------------------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._res.brokers)

    @property
    def controller_ids(self) -> list[int]:
        """The voters' ids (the controllers; in combined mode, the brokers)."""
        return sorted(self.voters)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{b.host}:{b.port}" for b in sorted(self._res.brokers.values(), key=lambda b: b.id))

    @property
    def bootstrap_controllers(self) -> str:
        """The controllers' CONTROLLER listeners (``kafka-metadata-quorum --bootstrap-controller``)."""
        return ",".join(f"{h}:{p}" for _, (h, p) in sorted(self.voters.items()))

    zookeeper = None
    zookeeper_connect = None

    @property
    def zk(self):
        raise AttributeError("a KRaft cluster has no ZooKeeper: its metadata is the __cluster_metadata log "
                             "(see quorum(), nodes, describe())")

    def _quorum_answer(self, timeout_s: float = 1.0, failures: dict | None = None) -> dict | None:
        """DescribeQuorum, asked of the last known leader first, then every running controller, then the brokers
        (which forward it to the active controller); None if nobody answers (``failures``: id -> what it said)."""
        voters = self.voters
        order = sorted(voters, key=lambda i: i != self._leader_hint)
        nodes = {b.id: b for b in self._all_nodes()}
        addresses = [voters[i] for i in order if self._state(nodes[i]) == "running"]
        if self.backend.name != "mini":   # Kafka's brokers forward DescribeQuorum; the mini brokers do not serve it
            addresses += [(b.host, b.port) for b in self._res.brokers.values() if self._state(b) == "running"]
        node_of = {address: i for i, address in voters.items()}
        for host, port in addresses:
            security = getattr(self, "_controller_security", None) if (host, port) in node_of else None
            try:
                answer = quorum_answer(describe_quorum(host, port, timeout_s, security=security))
            except (QuorumError, OSError, ValueError, EOFError) as exc:
                if failures is not None and (host, port) in node_of:
                    failures[node_of[(host, port)]] = why_not_leader(exc)
                continue
            self._leader_hint = answer["leader_id"]
            return answer
        return None

    def quorum(self, timeout_s: float = 1.0):
        """The quorum as ``kafka-metadata-quorum.sh describe --status --replication`` shows it: one row per
        voter and observer (node_id, status Leader/Follower/Observer, log_end_offset, lag, last fetch and
        caught-up times); the leader id, epoch and high watermark in ``df.attrs`` (a pandas DataFrame).
        QuorumUnavailableError (a RuntimeError) when no controller answers as leader: it says which controllers
        are down or paused and what the running ones answered (e.g. a majority is down: no leader)."""
        self._check_open()
        answer = self._quorum_answer(timeout_s, failures := {})
        if answer is None:
            raise QuorumUnavailableError(self.controller_ids, {b.id: self._state(b) for b in self._all_nodes()
                                                               if b.id in self.voters}, failures)
        return quorum_table(answer)

    @property
    def controller(self) -> int | None:
        """The active controller: the quorum's leader (DescribeQuorum), or None while there is none."""
        answer = self._quorum_answer()
        return None if answer is None else answer["leader_id"]

    def _registrations(self) -> dict | None:
        for b in sorted(self._res.brokers.values(), key=lambda b: b.id):
            if self._state(b) == "running":
                try:
                    return describe_cluster(b.host, b.port, 1.0)["brokers"]
                except (OSError, ValueError, EOFError, RuntimeError):
                    continue
        return None

    def broker_log(self, node_id: int, lines: int = 30) -> str:
        """The last ``lines`` lines of a node's output (``node-<id>.log``)."""
        return tail(self._broker(node_id).log_path, lines)

    def metadata_log_dir(self, node_id: int) -> str:
        """The directory of a node's copy of ``__cluster_metadata-0`` (segments ``.log``, snapshots ``.checkpoint``),
        for ``kafkalab dump-log --cluster-metadata-decoder`` or :func:`kafkalab.tools.metadata_log_df`."""
        return os.path.join(self._broker(node_id).log_dir, "__cluster_metadata-0")

    def metadata(self, topics: list[str] | None = None) -> dict:
        """A Metadata answer (:func:`~kafkalab.cluster.kafka_requests.metadata_answer`) from the first running
        broker that gives one. ConnectionError when none does."""
        for b in sorted(self._res.brokers.values(), key=lambda b: b.id):
            if self._state(b) == "running":
                try:
                    return metadata_answer(metadata_request(b.host, b.port, topics, 1.0))
                except (OSError, ValueError, EOFError):
                    continue
        raise ConnectionError("no broker answered a Metadata request")

    def describe(self, topic: str | None = None, timeout_s: float = 1.0):
        """``describe()``: :attr:`nodes` (every process and its roles). ``describe(topic)``: one row per
        partition — partition, leader, replicas, isr, leader_epoch (Metadata, from a broker's metadata
        cache, i.e. the __cluster_metadata log as it has applied it), high_watermark and ``leo_<id>``
        (ListOffsets, as for the ZooKeeper cluster)."""
        self._check_open()
        if topic is None:
            return self.nodes
        t = self.metadata([topic])["topics"].get(topic)
        if t is None or t["error"] != 0:
            raise KeyError(f"no topic {topic!r} in the cluster's metadata (error {None if t is None else t['error']})")
        rows = [{k: p[k] for k in ("partition", "leader", "replicas", "isr", "leader_epoch")} for p in t["partitions"]]

        def address_of(broker_id):
            b = self._res.brokers.get(broker_id)
            return (b.host, b.port) if b is not None and self._state(b) in ("running", "paused") else None

        return describe_rows(rows, address_of, topic, timeout_s)

    # -- state file, attach, close ----------------------------------------------------------------

    @property
    def state_path(self) -> str:
        return os.path.join(self.dir, "cluster.json")

    def state(self) -> dict:
        """What ``cluster.json`` holds."""
        return {"version": 1, "mode": "kraft", "backend": self.backend.name,
                "kafka_home": self.backend.kafka_home, "cluster_id": self.cluster_id, "combined": self.combined,
                "owner_pid": self.owner_pid, "dir": self.dir, "temporary": self._res.temp_dir is not None,
                "bootstrap_servers": self.bootstrap_servers, "voters": voters_string(self.voters),
                "nodes": [{"id": b.id, "roles": b.roles, "host": b.host, "port": b.port,
                           "controller_port": b.controller_port, "pid": b.pid, "create_time": b.create_time,
                           "state": b.state, "log_dir": b.log_dir, "log": b.log_path, "metrics_url": b.metrics_url,
                           "listener_ports": b.listener_ports}
                          for b in self._all_nodes()],
                "listeners": None if self.listener_spec is None else self.listener_spec.to_state(),
                "configs": dict(self.configs)}

    def _write_state(self) -> None:
        if self._res.closed or not os.path.isdir(self.dir):
            return
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state(), f, indent=2)
            f.write("\n")
        os.replace(tmp, self.state_path)

    @classmethod
    def attach(cls, dir: str, timeout_s: float = 90.0) -> "KRaftCluster":  # noqa: A002 - the public keyword
        """Control a KRaft cluster another process started, from its ``cluster.json``; ``close()`` here only
        disconnects (``shutdown()`` stops it)."""
        with open(os.path.join(dir, "cluster.json")) as f:
            state = json.load(f)
        self = cls.__new__(cls)
        self._res = res = _KRaftResources()
        res.owns_processes = False
        self._finalizer = weakref.finalize(self, res.shutdown)
        mini = state.get("backend") == "mini"   # the mini KRaft cluster: no Kafka distribution
        self.backend = MiniKRaftBackend() if mini else KRaftBackend(state.get("kafka_home"))
        self.dir, self.owner_pid = os.path.abspath(state.get("dir", dir)), state.get("owner_pid")
        self.timeout_s, self.start_time_s, self.combined = timeout_s, None, bool(state.get("combined"))
        self.configs, self.cluster_id, self._leader_hint = dict(state.get("configs", {})), state["cluster_id"], None
        self.listener_spec = spec_from_state(state.get("listeners"))
        self._controller_security = controller_client_security(self.configs, self.listener_spec)
        nodes = state.get("nodes", [])
        self.host = nodes[0]["host"] if nodes else "127.0.0.1"
        for e in nodes:
            b = _Broker(e["id"], e["host"], e["port"], e["log_dir"], e["log"], state=e.get("state", "running"),
                        attached_pid=e.get("pid"), attached_create_time=e.get("create_time"),
                        create_time=e.get("create_time"), roles=e["roles"], controller_port=e.get("controller_port"),
                        metrics_url=e.get("metrics_url"), listener_ports=dict(e.get("listener_ports") or {}))
            if b.state in _RUNNING and b.poll() is not None:
                b.state = "exited"
            (res.brokers if "broker" in b.roles else res.controllers)[b.id] = b
        return self

    def shutdown(self) -> None:
        """Stop the whole cluster, also an attached one."""
        with self._res.lock:
            self._res.owns_processes = True
        self.close()

    @property
    def closed(self) -> bool:
        return self._res.closed

    def _check_open(self) -> None:
        if self._res.closed:
            raise RuntimeError("this cluster is closed; start a new one with kafkalab.cluster()")

    def close(self) -> None:
        """Stop the brokers (SIGTERM, SIGKILL after a timeout), then the controllers; remove the temporary dir."""
        self._finalizer()
        _OPEN.discard(self)

    def __enter__(self) -> "KRaftCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._res.closed:
            return f"<kafkalab KRaftCluster closed, dir={self.dir!r}>"
        kind = "combined" if self.combined else f"{len(self._res.controllers)} controllers +"
        return (f"<kafkalab KRaftCluster (Kafka {'.'.join(map(str, self.backend.version))}): {kind} "
                f"{len(self._res.brokers)} brokers, bootstrap_servers={self.bootstrap_servers!r}, dir={self.dir!r}>")


def _previous_cluster_id(directory: str) -> str | None:
    try:
        with open(os.path.join(directory, "cluster.json")) as f:
            return json.load(f).get("cluster_id")
    except (OSError, ValueError, AttributeError):
        return None


def _refuse_a_running_cluster(directory: str) -> None:
    """Two processes on one node's log dir would corrupt it: refuse a dir whose cluster still runs."""
    import psutil
    try:
        with open(os.path.join(directory, "cluster.json")) as f:
            state = json.load(f)
        pids = [(n["pid"], n.get("create_time")) for n in state["nodes"] if n.get("pid")]
    except (OSError, ValueError, KeyError, TypeError):
        return
    for pid, created in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE and (created is None or abs(p.create_time() - created) < 1):
                raise RuntimeError(f"a KRaft cluster is already running in {directory} (pid {pid}, started by pid "
                                   f"{state.get('owner_pid')}): attach to it, or close it first")
        except psutil.Error:
            continue


def kraft_cluster(brokers: int = 3, dir: str | None = None, backend="kafka", **kwargs) -> KRaftCluster:  # noqa: A002 - the public keyword
    """``kafkalab.cluster(brokers, mode="kraft", backend="kafka")``: see :class:`KRaftCluster`."""
    if backend == "mini":   # Python controllers and brokers (kafkalab.controller, kafkalab.kraft), or combined nodes
        return KRaftCluster(brokers=brokers, dir=dir, backend=MiniKRaftBackend(), **kwargs)
    from .kafka_backend import KafkaBackend, KafkaDistributionError
    if isinstance(backend, KafkaBackend):
        raise KafkaDistributionError(f"{backend.kafka_home} holds Kafka {'.'.join(map(str, backend.version))}; "
                                     "mode='kraft' needs Kafka 4.x (run 'kafkalab fetch-kafka 4')")
    if not isinstance(backend, KRaftBackend) and backend != "kafka":
        raise ValueError(f"mode='kraft' runs backend='kafka' (Apache Kafka 4.x), not {backend!r}")
    return KRaftCluster(brokers=brokers, dir=dir, backend=backend if isinstance(backend, KRaftBackend) else None,
                        **kwargs)


@atexit.register
def _close_all() -> None:
    for c in list(_OPEN):
        try:
            c.close()
        except Exception:   # noqa: BLE001 - at exit: close the others whatever one raises
            pass
