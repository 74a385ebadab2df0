"""Process hygiene: a cluster's children never outlive the process that started them.

``Cluster`` starts ZooKeeper and the brokers with :func:`spawn`, which

* puts each child in its own session (``start_new_session``): a Ctrl-C in
  the terminal reaches only the owner, whose ``atexit`` closes the cluster
  in order, instead of every broker at once;
* on Linux, when called from the main thread, has the kernel SIGKILL the
  child when the owner dies (``prctl(PR_SET_PDEATHSIG, SIGKILL)`` run in the
  child between fork and exec). It is tied to the *thread* that forked, so
  it is used only from the main thread, which lives as long as the process;
* tells the :class:`Watchdog` (``python -m kafkalab.cluster.watchdog``), which
  stops every watched child when the owner's pipe closes: on every platform,
  and also for a broker started from another thread.

Brokers also watch their parent themselves (``--parent-pid``). Set the
environment variable ``KAFKALAB_NO_PDEATHSIG=1`` to switch the Linux
mechanism off (the tests do, to check that the other two are enough).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

PR_SET_PDEATHSIG = 1


def _libc_prctl():
    if not sys.platform.startswith("linux") or os.environ.get("KAFKALAB_NO_PDEATHSIG"):
        return None
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def pdeathsig_preexec():
    """A ``preexec_fn`` that has the kernel SIGKILL the child when this process dies, or None.

    None off Linux, when ``KAFKALAB_NO_PDEATHSIG`` is set, and outside the
    main thread (PDEATHSIG fires when the forking *thread* ends).
    """
    prctl = _libc_prctl()
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def preexec() -> None:  # runs in the child between fork and exec: no imports, no locks
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the owner died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)
    return preexec


def spawn(cmd: list[str], log_path: str, env: dict | None = None, watchdog: "Watchdog | None" = None,
          cwd: str | None = None, tie_to_this_process: bool = True) -> subprocess.Popen:
    """Start ``cmd`` with stdout and stderr appended to ``log_path``; see the module docstring.

    ``tie_to_this_process=False`` (a broker restarted through ``Cluster.attach``, which belongs to the
    cluster's owner, not to us) leaves PDEATHSIG out."""
    preexec = pdeathsig_preexec() if tie_to_this_process else None
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=cwd, preexec_fn=preexec, start_new_session=True, close_fds=True)
    if watchdog is not None:
        watchdog.watch(proc.pid)
    return proc


class Watchdog:
    """The owner's side of ``python -m kafkalab.cluster.watchdog``: a pipe to write pids into."""

    def __init__(self, grace_s: float = 5.0):
        self._lock = threading.Lock()
        # run as a script, not with -m: importing the kafkalab package would cost 40 MB for a process that waits
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "watchdog.py")
        self.process = subprocess.Popen(
            [sys.executable, script, "--grace", str(grace_s)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=_child_env(), preexec_fn=pdeathsig_preexec_for_watchdog(), start_new_session=True,
            close_fds=True, text=True)

    @property
    def pid(self) -> int:
        return self.process.pid

    def _send(self, line: str) -> None:
        with self._lock:
            if self.process.stdin is None or self.process.stdin.closed:
                return
            try:
                self.process.stdin.write(line + "\n")
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass

    def watch(self, pid: int) -> None:
        self._send(f"+{pid}")

    def forget(self, pid: int) -> None:
        self._send(f"-{pid}")

    def remove_dir_at_exit(self, path: str) -> None:
        self._send(f"dir {path}")

    def keep_dir(self) -> None:
        self._send("forget-dir")

    def remove_file_at_exit(self, path: str) -> None:
        self._send(f"file {path}")

    def close(self, timeout_s: float = 10.0) -> None:
        """Close the pipe: the watchdog stops what it still watches (normally nothing) and exits."""
        with self._lock:
            if self.process.stdin is not None and not self.process.stdin.closed:
                try:
                    self.process.stdin.close()
                except OSError:
                    pass
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def remove_dir_when_this_process_dies(path: str) -> Watchdog:
    """A watchdog with nothing to stop, only ``path`` to remove should this process die before it closes the
    watchdog (an in-process broker's temporary log directory: ``kafkalab.broker.mini.temp_dir_guard``)."""
    watchdog = Watchdog()
    watchdog.remove_dir_at_exit(path)
    return watchdog


def pdeathsig_preexec_for_watchdog():
    """The watchdog must survive its owner long enough to clean up: no PDEATHSIG for it."""
    return None


def _child_env() -> dict:
    """This environment, with kafkalab importable in the child even when it runs from a checkout."""
    # the directory that holds the kafkalab package (this file is kafkalab/cluster/processes.py)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


child_env = _child_env
