"""Shared fixtures: in-process brokers and broker processes, always cleaned up."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

import kafkalab

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Tests write records with fixed timestamps from 2023-2025. As in Kafka, a broker's first retention check comes
#: log.initial.task.delay.ms (30 s) after it starts, and would delete them (time retention goes by record
#: timestamps) from a broker a module shares for longer; the tests of retention itself start brokers of their own.
NO_RETENTION_CHECK = {"log.initial.task.delay.ms": 86_400_000}


@pytest.fixture
def broker(tmp_path):
    """A fresh in-process mini broker (3 partitions per auto-created topic)."""
    with kafkalab.mini(log_dir=str(tmp_path / "broker"), **{"num.partitions": 3, **NO_RETENTION_CHECK}) as b:
        yield b


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory):
    """One broker for a whole test module (tests must use their own topic names)."""
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("shared")), **{"num.partitions": 3, **NO_RETENTION_CHECK}) as b:
        yield b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """``python -m kafkalab.broker`` as a child process, for tests that SIGKILL a broker."""

    def __init__(self, log_dir: str, port: int | None = None, broker_id: int = 0, configs: dict | None = None):
        self.log_dir = log_dir
        self.port = port or free_port()
        self.broker_id = broker_id
        self.configs = dict(configs or {})
        self.proc: subprocess.Popen | None = None
        self.stderr_path: str | None = None
        self._starts = 0

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "BrokerProcess":
        cmd = [sys.executable, "-m", "kafkalab.broker", "--port", str(self.port), "--log-dir", self.log_dir,
               "--broker-id", str(self.broker_id)]
        for k, v in self.configs.items():
            cmd += ["--config", f"{k}={v}"]
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        # stderr goes to a file, never to a pipe nobody drains: a chatty broker would block on it
        self.stderr_path = f"{self.log_dir.rstrip(os.sep)}.{self._starts}.stderr"
        self._starts += 1
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        line = self.proc.stdout.readline()   # the broker prints one line when ready, then nothing
        if "ready" not in line:
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"broker did not start: {line!r} {self.stderr_text()}")
        return self

    def stderr_text(self) -> str:
        """Everything the broker process logged so far (its log goes to stderr)."""
        with open(self.stderr_path) as f:
            return f.read()

    def kill(self) -> None:
        """SIGKILL: no flush, no checkpoint — a crash."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM: clean shutdown."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def broker_process(tmp_path):
    """Factory for broker processes; every one started is killed at teardown."""
    started: list[BrokerProcess] = []

    def make(log_dir: str | None = None, **kwargs) -> BrokerProcess:
        bp = BrokerProcess(log_dir or str(tmp_path / f"proc{len(started)}"), **kwargs)
        started.append(bp)
        return bp

    yield make
    for bp in started:
        bp.stop()


# -- clusters: a real ZooKeeper and broker processes -------------------------------------------------

#: short timeouts so that failures show within a test's time (see kafkalab.cluster.LAB_DEFAULTS)
SHARED_CLUSTER_CONFIGS = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000}


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory):
    """One 3-broker cluster (a ZooKeeper and three mini broker processes) for the whole test session.

    Tests use their own topic names, and a test that kills, stops or pauses a broker brings it back
    (``restart``/``resume``) before it ends. Skipped where there is no Java or ZooKeeper."""
    from kafkalab.cluster import Cluster, ZooKeeperNotFound
    try:
        c = Cluster(brokers=3, dir=str(tmp_path_factory.mktemp("shared-cluster")), **SHARED_CLUSTER_CONFIGS)
    except ZooKeeperNotFound as exc:
        pytest.skip(str(exc))
    try:
        yield c
    finally:
        c.close()
