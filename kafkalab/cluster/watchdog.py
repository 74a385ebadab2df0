"""``python -m kafkalab.cluster.watchdog [--grace S]``: stop a cluster's processes when its owner dies.

A cluster's ZooKeeper and brokers are children of the Python process that
started them (a notebook's kernel, a test run). If that process ends without
closing the cluster — the kernel is killed, ``kill -9``, a crash — the
children must not live on, holding ports and memory. Three mechanisms, each
enough on its own, make sure of it:

* on Linux, each child is started with ``prctl(PR_SET_PDEATHSIG, SIGKILL)``:
  the kernel kills it the moment its parent dies (see ``processes.py``);
* each broker watches its parent itself (``python -m kafkalab.broker --parent-pid P``);
* this watchdog, on every platform and for every child, also for ZooKeeper
  (a JVM that knows nothing of us).

The watchdog is a tiny process whose standard input is a pipe from the
cluster's owner. The owner writes one line per change::

    +PID        watch this process
    -PID        forget it (it exited and was reaped)
    dir PATH    remove this directory once everything is stopped (a temporary state dir)
    file PATH   remove this file then too (a broker's control socket outside the state dir)

When the owner dies, the kernel closes its end of the pipe and the watchdog
reads end-of-file: it wakes a paused process (SIGCONT), sends SIGTERM to
every watched process, waits up to ``--grace`` seconds, SIGKILLs what is left,
removes the directory and exits. A normal ``Cluster.close()`` stops the
processes itself and then closes the pipe: the watchdog finds nothing left
to do and exits. It ignores SIGINT, so a Ctrl-C meant for the owner does
not stop it half-way.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import time


def _alive(pid: int) -> bool:
    """Running (a zombie — dead, waiting for init to reap it, which can take a while — is not)."""
    try:
        import psutil
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    except ImportError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(pids: list[int], grace_s: float) -> None:
    """SIGCONT + SIGTERM each process, wait up to ``grace_s``, then SIGKILL the rest."""
    for pid in pids:
        if hasattr(signal, "SIGCONT"):
            _signal(pid, signal.SIGCONT)
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            _signal(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kafkalab.cluster.watchdog", description=__doc__.split("\n\n")[0])
    p.add_argument("--grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL")
    args = p.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watched: list[int] = []
    remove_dir: str | None = None
    remove_files: list[str] = []
    for line in sys.stdin:  # blocks until the owner writes, closes the pipe, or dies
        line = line.strip()
        try:
            if line.startswith("+"):
                watched.append(int(line[1:]))
            elif line.startswith("-"):
                pid = int(line[1:])
                watched = [w for w in watched if w != pid]
            elif line.startswith("dir "):
                remove_dir = line[4:]
            elif line == "forget-dir":
                remove_dir = None
            elif line.startswith("file "):
                remove_files.append(line[5:])
        except ValueError:
            print(f"watchdog: ignoring {line!r}", file=sys.stderr)
    stop_all([pid for pid in watched if _alive(pid)], args.grace)
    if remove_dir:
        shutil.rmtree(remove_dir, ignore_errors=True)
    for path in remove_files:
        try:
            os.unlink(path)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
