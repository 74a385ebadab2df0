"""Ports for the lab's processes: free now, and handed out to one kafkalab process only.

A cluster picks its ports before it starts its processes (each broker is told its ``listeners``), so a
port that was free when picked can be taken before the broker binds it. Two things take it:

- the kernel, as the source port of any outgoing connection (a client's): so ports are picked below the
  ephemeral range (``/proc/sys/net/ipv4/ip_local_port_range``), which binding port 0 would give;
- another kafkalab process picking the same port at the same time (parallel test workers, two notebooks):
  so every port handed out is recorded in ``$TMPDIR/kafkalab-ports-<uid>/<port>`` with the pid of the
  process that picked it, under a lock, and not handed out again while that process lives. The record
  outlives the broker on purpose: a broker restarted by the same process gets its port back.
"""
from __future__ import annotations

import os
import random
import socket
import tempfile

try:
    import fcntl
except ImportError:   # Windows: no lock, ports are only checked free
    fcntl = None  # type: ignore[assignment]

import psutil

RESERVATIONS = os.path.join(tempfile.gettempdir(), f"kafkalab-ports-{os.getuid() if hasattr(os, 'getuid') else 0}")
LOWEST = 10000


def ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999   # Linux's default


def free_port(host: str = "127.0.0.1") -> int:
    """A port to listen on later (a process started after this returns binds it): free now, below the
    kernel's ephemeral range when there is room, and handed out to no other living kafkalab process."""
    low, _ = ephemeral_range()
    if low > LOWEST + 2000:
        rng = random.Random()
        for _ in range(200):
            port = rng.randrange(LOWEST, low)
            if port_is_free(host, port) and reserve(port):
                return port
    with socket.socket() as s:   # no room below the range: the kernel's choice (it does not repeat soon)
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def reserve(port: int, pid: int | None = None) -> bool:
    """Record ``port`` as handed out to ``pid`` (this process): False if a living process, this one
    included, already has it."""
    pid = pid or os.getpid()
    try:
        os.makedirs(RESERVATIONS, exist_ok=True)
        with open(os.path.join(RESERVATIONS, ".lock"), "a") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)   # released when the file closes
            path = os.path.join(RESERVATIONS, str(port))
            owner = reserved_by(port)
            if owner is not None and psutil.pid_exists(owner):
                return False
            with open(path, "w") as f:
                f.write(str(pid))
            return True
    except OSError:   # an unwritable temporary directory: the port is only checked free, as before
        return True


def reserved_by(port: int) -> int | None:
    """The pid the port was handed out to, if any (alive or not)."""
    try:
        with open(os.path.join(RESERVATIONS, str(port))) as f:
            return int(f.read().strip() or 0) or None
    except (OSError, ValueError):
        return None
