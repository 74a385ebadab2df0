"""``RaftQuorum``: N mini KRaft controllers (``python -m kafkalab.raft``) as processes, to break and watch.

The quorum alone, without brokers (a whole mini KRaft cluster is ``kafkalab.cluster(mode="kraft")``,
:mod:`kafkalab.cluster.mini_kraft`), to break it and watch Raft. Each controller is a
process with its own ``__cluster_metadata-0`` under ``<base_dir>/node-<id>``; the lab starts them on
free ports with the KRaft lab defaults (``controller.quorum.fetch.timeout.ms=1000``,
``controller.quorum.election.timeout.ms=500``, ``controller.quorum.election.backoff.max.ms=500``)::

    with RaftQuorum(3) as q:
        leader = q.wait_for_leader()
        q.kill(leader)                      # SIGKILL
        q.wait_for_leader(exclude={leader})
        q.describe()                        # DescribeQuorum, as kafkalab.cluster.quorum reads Kafka's

``RaftQuorum(3, module="kafkalab.controller")`` runs KRaft controllers instead (the Raft replica plus
the QuorumController of :mod:`kafkalab.controller`, which also serves BrokerRegistration, BrokerHeartbeat
and CreateTopics; its configs such as ``broker.session.timeout.ms`` go in ``configs``).

The same :func:`~kafkalab.cluster.quorum.quorum_answer` and ``quorum_table`` read the mini quorum's
DescribeQuorum and Kafka's. Children never outlive the owner: PDEATHSIG, ``--parent-pid``, the
watchdog and ``atexit``, as for the mini brokers.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from .kraft_config import new_cluster_id
from .ports import free_port
from .processes import Watchdog, spawn
from .quorum import QuorumError, describe_quorum, quorum_answer

LAB_RAFT_CONFIGS = {"controller.quorum.fetch.timeout.ms": 1000, "controller.quorum.election.timeout.ms": 500,
                    "controller.quorum.election.backoff.max.ms": 500, "metadata.max.idle.interval.ms": 500}


def _free_port() -> int:
    return free_port("127.0.0.1")


class RaftQuorum:
    def __init__(self, n: int = 3, base_dir: str | None = None, configs: dict | None = None, first_id: int = 1,
                 module: str = "kafkalab.raft"):
        #: ``kafkalab.raft`` (the Raft quorum alone) or ``kafkalab.controller`` (KRaft controllers: Raft and the
        #: QuorumController, which serves BrokerRegistration, BrokerHeartbeat and CreateTopics)
        self.module = module
        self.ids = list(range(first_id, first_id + n))
        self._own_dir = base_dir is None
        self.base_dir = base_dir or tempfile.mkdtemp(prefix="kafkalab-raft-")
        self.configs = {**LAB_RAFT_CONFIGS, **(configs or {})}
        self.voters = {i: ("127.0.0.1", _free_port()) for i in self.ids}
        #: a cluster id as ``kafka-storage.sh random-uuid`` prints one (base64url of 16 random bytes, never starting
        #: with '-', which the controllers' command line would take for an option)
        self.cluster_id = new_cluster_id()
        self.procs: dict[int, subprocess.Popen] = {}
        self.paused: set[int] = set()
        self._watchdog: Watchdog | None = None
        self._closed = False

    # -- life cycle --------------------------------------------------------------------------------

    def node_dir(self, node_id: int) -> str:
        return os.path.join(self.base_dir, f"node-{node_id}")

    def start(self) -> "RaftQuorum":
        self._watchdog = Watchdog()
        atexit.register(self.close)
        for i in self.ids:
            self.start_node(i)
        return self

    def start_node(self, node_id: int) -> None:
        voters = ",".join(f"{i}@{h}:{p}" for i, (h, p) in self.voters.items())
        cmd = [sys.executable, "-m", self.module, "--node-id", str(node_id), "--voters", voters,
               "--metadata-log-dir", self.node_dir(node_id), "--cluster-id", self.cluster_id,
               "--parent-pid", str(os.getpid()), "--seed", str(node_id * 7919 + int(time.time() * 1000) % 1000)]
        for name, value in self.configs.items():
            cmd += ["--config", f"{name}={value}"]
        os.makedirs(self.node_dir(node_id), exist_ok=True)
        self.procs[node_id] = spawn(cmd, os.path.join(self.base_dir, f"node-{node_id}.log"), watchdog=self._watchdog)

    def alive(self, node_id: int) -> bool:
        proc = self.procs.get(node_id)
        return proc is not None and proc.poll() is None

    def kill(self, node_id: int) -> None:
        """SIGKILL: no resignation, no flush beyond what was written."""
        self._signal(node_id, signal.SIGKILL)
        self.procs[node_id].wait(10)
        self.paused.discard(node_id)

    def stop(self, node_id: int, timeout_s: float = 10.0) -> None:
        """SIGTERM: a leader resigns (EndQuorumEpoch) before it exits."""
        self._signal(node_id, signal.SIGTERM)
        try:
            self.procs[node_id].wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill(node_id)

    def pause(self, node_id: int) -> None:
        self._signal(node_id, signal.SIGSTOP)
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        self._signal(node_id, signal.SIGCONT)
        self.paused.discard(node_id)

    def restart(self, node_id: int) -> None:
        if self.alive(node_id):
            self.kill(node_id)
        self.start_node(node_id)

    def _signal(self, node_id: int, sig: int) -> None:
        proc = self.procs[node_id]
        if proc.poll() is None:
            os.kill(proc.pid, sig)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for i, proc in self.procs.items():
            if proc.poll() is None:
                if i in self.paused:
                    os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait(10)
        if self._watchdog is not None:
            self._watchdog.close()
        if self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "RaftQuorum":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- looking ------------------------------------------------------------------------------------

    def quorum_state(self, node_id: int) -> dict | None:
        """The node's ``quorum-state`` file (Kafka's JSON), None before it wrote one."""
        path = os.path.join(self.node_dir(node_id), "__cluster_metadata-0", "quorum-state")
        try:
            with open(path) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

    def describe(self, timeout_s: float = 0.5) -> dict | None:
        """DescribeQuorum answered by the leader (:func:`~kafkalab.cluster.quorum.quorum_answer`), asking each
        live, unpaused node in turn; None when none leads."""
        for i in self.ids:
            if not self.alive(i) or i in self.paused:
                continue
            host, port = self.voters[i]
            try:
                return quorum_answer(describe_quorum(host, port, timeout_s))
            except (OSError, QuorumError):
                continue
        return None

    def wait_for_leader(self, timeout_s: float = 15.0, exclude: set | None = None,
                        min_epoch: int = 0) -> dict:
        """Wait until a node (not in ``exclude``) answers DescribeQuorum as leader of an epoch >= ``min_epoch``
        with a high watermark; returns that answer."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            answer = self.describe()
            if (answer is not None and answer["leader_id"] not in (exclude or set())
                    and answer["leader_epoch"] >= min_epoch and answer["high_watermark"] >= 0):
                return answer
            time.sleep(0.02)
        raise TimeoutError(f"no leader elected in {timeout_s} s (excluding {sorted(exclude or ())})")
