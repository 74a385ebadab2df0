"""kafkalab.cluster.ports: a port handed out to one living kafkalab process is not handed out again.

Parallel test workers each start clusters whose ports are picked before the brokers bind them; a port
picked twice made a broker fail with "the port is in use" (seen in CI)."""
from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from kafkalab.cluster import ports


@pytest.fixture(autouse=True)
def own_reservations(tmp_path, monkeypatch):
    monkeypatch.setattr(ports, "RESERVATIONS", str(tmp_path / "ports"))


def test_a_port_is_handed_out_once_per_living_process():
    port = ports.free_port()
    assert ports.LOWEST <= port < ports.ephemeral_range()[0]   # below the kernel's ephemeral range
    assert ports.reserved_by(port) == os.getpid()
    assert not ports.reserve(port)                             # this process has it already
    assert len({ports.free_port() for _ in range(200)}) == 200


def test_another_living_process_keeps_its_port():
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            port = random.randrange(ports.LOWEST, ports.ephemeral_range()[0])
            assert ports.reserve(port, pid=other.pid)
            assert not ports.reserve(port)
            assert ports.reserved_by(port) == other.pid
        finally:
            other.kill()
    assert ports.reserve(port)                                 # its owner is gone: the port is free to hand out
    assert ports.reserved_by(port) == os.getpid()


def test_two_processes_picking_at_once_never_share_a_port():
    # each picker lives until all have picked (its stdin closed): a reservation lasts as long as its owner lives
    code = ("import sys; from kafkalab.cluster import ports; ports.RESERVATIONS = sys.argv[1]; "
            "print(*(ports.free_port() for _ in range(300)), flush=True); sys.stdin.read()")
    workers = [subprocess.Popen([sys.executable, "-c", code, ports.RESERVATIONS], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=os.getcwd()))
               for _ in range(3)]
    try:
        picked = [w.stdout.readline().split() for w in workers]
    finally:
        for w in workers:
            w.communicate(timeout=60)
    assert all(len(p) == 300 for p in picked)
    assert len(set().union(*picked)) == 900


def test_a_port_in_use_is_not_handed_out():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert not ports.port_is_free("127.0.0.1", s.getsockname()[1])
