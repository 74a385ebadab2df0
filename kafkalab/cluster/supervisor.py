"""``kafkalab up``: a cluster that outlives the command that started it, controlled from any terminal.

A :class:`~kafkalab.cluster.Cluster` stops when the Python process that
started it ends (see :mod:`kafkalab.cluster.processes`). ``kafkalab up``
therefore does not own the cluster itself: it starts a small, detached
**supervisor** process (``python -m kafkalab.cluster.supervisor``, in its own
session, with no terminal) that creates the ``Cluster`` and lives as long as
the cluster does. The cluster's watchdog and parent-death mechanisms watch the
supervisor: kill it with SIGKILL and the whole cluster goes with it, as it
should.

Every other command talks to the supervisor through a Unix socket in the
state directory, one JSON line each way::

    -> {"op": "kill", "id": 2}
    <- {"ok": true, "state": {... what cluster.json holds ...}}

so the supervisor's ``Cluster`` is the only one that starts and stops
processes (a restarted broker is its child too, tied to it like the others).
Reading needs no supervisor: ``kafkalab status`` and a notebook's dashboard
read ZooKeeper and ask the brokers, through :meth:`Cluster.attach`.

The state directory (default ``~/.kafkalab/cluster``, or ``$KAFKALAB_CLUSTER_DIR``)::

    cluster.json        the Cluster's own state file (ZooKeeper, brokers, ports, pids)
    kafkalab-up.json    the supervisor: pid, socket, how it was started, "running" or "stopped"
    kafkalab-up.log     the supervisor's output
    control.sock        the supervisor's socket (only while it runs)
    zookeeper/, broker-N/, broker-N.log    as for any cluster

``kafkalab down`` asks the supervisor to stop the cluster (brokers, then
ZooKeeper) and exit; the data stays, and ``kafkalab up`` on the same directory
starts the same cluster again, topics and records included.
``kafkalab down --delete`` also removes the directory.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time

from .cluster import Cluster
from .kraft import KRaftCluster, kraft_cluster

UP_STATE = "kafkalab-up.json"
UP_LOG = "kafkalab-up.log"
SOCKET_NAME = "control.sock"
DIR_ENV_VAR = "KAFKALAB_CLUSTER_DIR"
OPS = ("ping", "kill", "stop", "restart", "pause", "resume", "shutdown")


class UpError(RuntimeError):
    """A ``kafkalab up`` / ``down`` / control command cannot do what was asked; the message says why."""


def default_dir() -> str:
    """``$KAFKALAB_CLUSTER_DIR``, else ``~/.kafkalab/cluster``."""
    return os.path.abspath(os.path.expanduser(os.environ.get(DIR_ENV_VAR) or "~/.kafkalab/cluster"))


def _read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            value = json.load(f)
        return value if isinstance(value, dict) else None
    except (OSError, ValueError):
        return None


def _write_json(path: str, value: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def supervisor_state(directory: str) -> dict | None:
    return _read_json(os.path.join(directory, UP_STATE))


def _process_alive(pid, create_time=None, must_contain: str | None = None) -> bool:
    import psutil
    if not pid:
        return False
    try:
        p = psutil.Process(int(pid))
        if p.status() == psutil.STATUS_ZOMBIE:
            return False
        if create_time is not None and abs(p.create_time() - float(create_time)) > 1:
            return False   # the pid was reused by another program
        if must_contain and must_contain not in " ".join(p.cmdline()):
            return False
        return True
    except (psutil.Error, ValueError, TypeError):
        return False


def supervisor_alive(state: dict | None) -> bool:
    return bool(state) and _process_alive(state.get("pid"), state.get("create_time"), "kafkalab.cluster.supervisor")


def classify(directory: str) -> str:
    """What a state directory holds:

    ``new`` (missing or empty), ``running`` (a live supervisor), ``stopped`` (``kafkalab down`` stopped it:
    its data can start again), ``stale`` (its supervisor died without stopping: leftovers may run),
    ``python`` (a cluster a Python program started there, still running), ``foreign`` (other files)."""
    if not os.path.isdir(directory):
        return "missing" if not os.path.exists(directory) else "foreign"
    entries = set(os.listdir(directory))
    if not entries:
        return "new"
    up = supervisor_state(directory)
    if up is not None:
        if supervisor_alive(up):
            return "running"
        return "stopped" if up.get("status") == "stopped" else "stale"
    cluster = _read_json(os.path.join(directory, "cluster.json"))
    if cluster is not None:
        if cluster.get("mode") == "kraft":   # no ZooKeeper: is any of its Kafka processes alive?
            return "python" if leftover_pids(directory) else "stale"
        zk_pid = (cluster.get("zookeeper") or {}).get("pid")
        return "python" if _process_alive(zk_pid, must_contain="zookeeper") else "stale"
    return "foreign"


def leftover_pids(directory: str) -> list[int]:
    """Processes of a dead supervisor's cluster that still run (ZooKeeper, brokers), from cluster.json."""
    cluster = _read_json(os.path.join(directory, "cluster.json")) or {}
    pids = []
    zk = cluster.get("zookeeper") or {}
    if _process_alive(zk.get("pid"), must_contain="zookeeper"):
        pids.append(int(zk["pid"]))
    for b in (cluster.get("brokers") or []) + (cluster.get("nodes") or []):   # nodes: a KRaft cluster's
        if _process_alive(b.get("pid"), b.get("create_time")):
            pids.append(int(b["pid"]))
    return pids


def socket_path(directory: str) -> str:
    return os.path.join(directory, SOCKET_NAME)


def recv_line(sock: socket.socket) -> bytes:
    """Read until a newline (a request or an answer is one line of JSON) or until the other side hangs up."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


# -- the client side: what kafkalab up / down / kill ... run -------------------------------------------------

def request(directory: str, op: str, timeout_s: float = 120.0, **args) -> dict:
    """Send one request to the supervisor of ``directory``; its answer, or UpError with its error."""
    path = socket_path(directory)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout_s)
            s.connect(path)
            s.sendall((json.dumps({"op": op, **args}) + "\n").encode())
            data = recv_line(s)
    except socket.timeout:
        raise UpError(f"the cluster's supervisor (socket {path}) did not answer within {timeout_s:.0f} s") from None
    except OSError as exc:
        raise UpError(f"cannot reach the cluster's supervisor at {path} ({exc.strerror or exc}); "
                      f"is a cluster running in {directory}? (kafkalab status --dir {directory})") from None
    try:
        answer = json.loads(data)
    except ValueError:
        raise UpError(f"the cluster's supervisor gave no answer to {op!r} (see {os.path.join(directory, UP_LOG)})") \
            from None
    if not answer.get("ok"):
        raise UpError(answer.get("error") or f"{op} failed")
    return answer


def check_can_start(directory: str, brokers: int, backend: str, host: str, base_port: int | None,
                    mode: str = "zookeeper") -> None:
    """Everything ``up`` can check before starting anything, each with a clear UpError."""
    from .kafka_backend import KafkaDistributionError, make_backend
    from .kraft_config import KRaftBackend
    from .ports import port_is_free
    from .zookeeper import ZooKeeperNotFound, find_classpath, find_java

    if brokers < 1:
        raise UpError(f"--brokers must be at least 1 (got {brokers})")
    kind = classify(directory)
    if kind == "running":
        up = supervisor_state(directory) or {}
        raise UpError(f"a cluster is already running in {directory} (supervisor pid {up.get('pid')}, bootstrap "
                      f"servers {up.get('bootstrap_servers')}): see it with 'kafkalab status', stop it with "
                      f"'kafkalab down', or start another one with --dir")
    if kind == "python":
        raise UpError(f"{directory} belongs to a cluster a Python program started (kafkalab.cluster(dir=...)) that "
                      f"is still running: stop it there (close()), or choose another --dir")
    if kind == "stale":
        leftovers = leftover_pids(directory)
        still = f"; its processes {leftovers} still run" if leftovers else ""
        raise UpError(f"{directory} holds the state of a cluster whose supervisor is gone (it did not stop with "
                      f"'kafkalab down'{still}): run 'kafkalab down --dir {directory}' to stop what is left and "
                      f"mark it stopped (its data is kept), or choose another --dir")
    if kind == "foreign":
        raise UpError(f"{directory} is not a kafkalab state directory (it holds other files and no "
                      f"{UP_STATE}); give a new or empty directory with --dir")
    if len(socket_path(directory).encode()) > 100:
        raise UpError(f"the state directory's path is too long for a Unix socket ({socket_path(directory)}); "
                      f"choose a shorter --dir")
    mini_kraft = mode == "kraft" and backend == "mini"   # Python controllers and brokers: no Java, no ZooKeeper
    if not mini_kraft:
        try:
            find_java()
            find_classpath()
        except ZooKeeperNotFound as exc:
            raise UpError(str(exc)) from None
    if mode == "kraft" and backend not in ("kafka", "mini"):
        raise UpError(f"--mode kraft runs --backend mini or kafka, not {backend!r}")
    try:
        if not mini_kraft:
            KRaftBackend() if mode == "kraft" else make_backend(backend)
    except (KafkaDistributionError, ValueError) as exc:
        raise UpError(str(exc)) from None
    if base_port:
        for i in range(brokers):
            if not port_is_free(host, base_port + i):
                raise UpError(f"port {base_port + i} on {host} is in use (broker {i + 1} would listen there with "
                              f"--base-port {base_port}): stop what uses it, or choose another --base-port")


def start(directory: str, brokers: int = 3, backend: str = "mini", host: str = "127.0.0.1",
          base_port: int | None = None, configs: dict | None = None, timeout_s: float = 90.0,
          mode: str = "zookeeper", combined: bool = False) -> dict:
    """Start a supervisor (and so a cluster) in ``directory``; returns what it reported when ready."""
    import select

    from .processes import child_env
    directory = os.path.abspath(directory)
    check_can_start(directory, brokers, backend, host, base_port, mode)
    os.makedirs(directory, exist_ok=True)
    cmd = [sys.executable, "-m", "kafkalab.cluster.supervisor", "--dir", directory, "--brokers", str(brokers),
           "--backend", backend, "--host", host, "--mode", mode] + (["--combined"] if combined else [])
    if base_port:
        cmd += ["--base-port", str(base_port)]
    for key, value in (configs or {}).items():
        cmd += ["--config", f"{key}={value}"]
    # detached: its own session, no terminal, not tied to this process (which is about to exit)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=child_env(), start_new_session=True, close_fds=True, cwd=directory)
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            proc.kill()
            raise UpError(f"the cluster did not start within {timeout_s:.0f} s; see {os.path.join(directory, UP_LOG)}")
        ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            line += chunk
    proc.stdout.close()
    try:
        report = json.loads(line.decode(errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        status = proc.wait(10)
        raise UpError(f"the cluster's supervisor exited with status {status} before it was ready: "
                      f"{line.decode(errors='replace').strip() or 'no output'}") from None
    if not report.get("ok"):
        proc.wait(30)
        raise UpError(report.get("error") or "the cluster did not start")
    return report


def stop(directory: str, delete: bool = False, timeout_s: float = 60.0) -> str:
    """Stop the cluster of ``directory`` (``kafkalab down``); returns what was done, for the user."""
    import shutil

    import psutil
    directory = os.path.abspath(directory)
    kind = classify(directory)
    if kind in ("missing", "new"):
        raise UpError(f"no cluster in {directory} (nothing to stop); 'kafkalab up --dir {directory}' starts one")
    if kind == "foreign":
        raise UpError(f"{directory} is not a kafkalab state directory; nothing stopped, nothing removed")
    if kind == "python":
        raise UpError(f"the cluster in {directory} belongs to a running Python program (kafkalab.cluster(dir=...)); "
                      f"close it there")
    done = []
    if kind == "running":
        up = supervisor_state(directory) or {}
        try:
            request(directory, "shutdown", timeout_s=timeout_s)
        except UpError:
            os.kill(int(up["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while supervisor_alive(up) and time.monotonic() < deadline:
            time.sleep(0.1)
        if supervisor_alive(up):
            raise UpError(f"the supervisor (pid {up.get('pid')}) did not stop within {timeout_s:.0f} s")
        kraft = (_read_json(os.path.join(directory, "cluster.json")) or {}).get("mode") == "kraft"
        done.append(f"stopped the cluster (brokers, then {'the controllers' if kraft else 'ZooKeeper'})")
    elif kind == "stale":
        pids = leftover_pids(directory)
        procs = []
        for pid in pids:
            try:
                p = psutil.Process(pid)
                p.resume()
                p.terminate()
                procs.append(p)
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(procs, timeout=15)
        for p in alive:
            p.kill()
        up = supervisor_state(directory)
        if up is not None:
            up["status"] = "stopped"
            _write_json(os.path.join(directory, UP_STATE), up)
        done.append(f"stopped what was left of a cluster whose supervisor had died ({len(pids)} process(es))")
    else:
        done.append("the cluster was already stopped")
    if delete:
        shutil.rmtree(directory)
        done.append(f"removed {directory}")
    else:
        done.append(f"its data stays in {directory} ('kafkalab up' starts it again; 'kafkalab down --delete' "
                    f"removes it)")
    return "; ".join(done)


def open_cluster(directory: str, timeout_s: float = 10.0) -> Cluster:
    """The cluster of ``directory``, to look at and control from this process.

    A ``kafkalab up`` cluster gives a :class:`SupervisedCluster` (its controls go through the supervisor);
    a cluster a Python program started there, a plain ``Cluster.attach``."""
    directory = os.path.abspath(directory)
    kind = classify(directory)
    if kind == "running":
        kraft = (_read_json(os.path.join(directory, "cluster.json")) or {}).get("mode") == "kraft"
        return (SupervisedKRaftCluster if kraft else SupervisedCluster).attach(directory, timeout_s=timeout_s)
    if kind == "python":
        return Cluster.attach(directory, timeout_s=timeout_s)
    if kind in ("missing", "new"):
        raise UpError(f"no cluster in {directory}; start one with 'kafkalab up' (or give --dir)")
    if kind in ("stopped", "stale"):
        raise UpError(f"the cluster in {directory} is not running ({kind}); 'kafkalab up"
                      f"{'' if directory == default_dir() else ' --dir ' + directory}' starts it"
                      + (" (run 'kafkalab down' first to clear what is left)" if kind == "stale" else ""))
    raise UpError(f"{directory} is not a kafkalab state directory")


class _SupervisedControls:
    """``attach`` for a ``kafkalab up`` cluster: reads as usual (ZooKeeper or the Kafka protocol), controls through
    the supervisor, and re-reads ``cluster.json`` so a broker restarted from elsewhere shows its new pid."""

    def _reload(self) -> None:
        state = _read_json(self.state_path)
        if not state:
            return
        with self._res.lock:
            for entry in state.get("brokers", []) + state.get("nodes", []):
                b = self._res.brokers.get(entry["id"]) or getattr(self._res, "controllers", {}).get(entry["id"])
                if b is None:
                    continue
                if entry.get("pid") != b.attached_pid or entry.get("state") != b.state:
                    b.attached_pid = entry.get("pid")
                    b.attached_create_time = b.create_time = entry.get("create_time")
                    b.state = entry.get("state", b.state)
                    b.port = entry.get("port", b.port)

    def _ask(self, op: str, broker_id, timeout_s: float = 120.0) -> None:
        self._check_open()
        self._broker(broker_id)   # KeyError: no such broker (or controller)
        try:
            request(self.dir, op, timeout_s=timeout_s, id=int(broker_id))
        except UpError as exc:
            raise RuntimeError(str(exc)) from None
        self._reload()

    @property
    def brokers(self):
        self._reload()
        return super().brokers

    def describe(self, topic: str, timeout_s: float = 1.0):
        self._reload()
        return super().describe(topic, timeout_s)

    @property
    def nodes(self):
        self._reload()
        return super().nodes

    def kill(self, broker_id: int) -> None:
        self._ask("kill", broker_id)

    def stop(self, broker_id: int, timeout_s: float = 30.0) -> None:
        self._ask("stop", broker_id)

    def restart(self, broker_id: int, timeout_s: float | None = None, progress: bool = False) -> None:
        b = self._broker(broker_id)
        if progress and self._state(b) not in ("running", "paused", "starting") and self.zookeeper_connect:
            # a killed broker's registration lingers: the supervisor would wait for it silently,
            # so wait here, with the bar in this terminal (a running one is stopped there first)
            self.wait_old_registration(b.id, timeout_s, progress=True)
        self._ask("restart", broker_id)

    def pause(self, broker_id: int) -> None:
        self._ask("pause", broker_id)

    def resume(self, broker_id: int) -> None:
        self._ask("resume", broker_id)

    def shutdown(self) -> None:
        stop(self.dir)
        self.close()

    def __repr__(self) -> str:
        return super().__repr__().replace("Cluster", "Cluster (kafkalab up)", 1)


class SupervisedCluster(_SupervisedControls, Cluster):
    """A ZooKeeper-mode ``kafkalab up`` cluster, attached (see :class:`_SupervisedControls`)."""


class SupervisedKRaftCluster(_SupervisedControls, KRaftCluster):
    """A KRaft-mode ``kafkalab up --mode kraft`` cluster, attached (see :class:`_SupervisedControls`)."""


# -- the supervisor process ----------------------------------------------------------------------------------

def _serve(cluster: Cluster | KRaftCluster, server: socket.socket, stopping: list) -> None:
    """Answer requests one at a time, in the main thread (a restarted broker is then tied to this process)."""
    server.settimeout(0.5)
    while not stopping:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        with conn:
            conn.settimeout(10)
            try:
                req = json.loads(recv_line(conn))
                op = req.get("op")
                if op not in OPS:
                    raise ValueError(f"unknown request {op!r}")
                if op == "shutdown":
                    stopping.append("shutdown")
                elif op != "ping":
                    getattr(cluster, op)(int(req["id"]))
                answer = {"ok": True, "state": cluster.state()}
            except KeyError as exc:
                answer = {"ok": False, "error": exc.args[0] if exc.args else str(exc)}
            except Exception as exc:   # noqa: BLE001 -- any failure goes back to the command that asked
                answer = {"ok": False, "error": str(exc)}
            try:
                conn.sendall((json.dumps(answer) + "\n").encode())
            except OSError:
                pass


def main(argv=None) -> int:
    import psutil
    p = argparse.ArgumentParser(prog="python -m kafkalab.cluster.supervisor",
                                description="The long-lived owner of a 'kafkalab up' cluster (started by it).")
    p.add_argument("--dir", required=True)
    p.add_argument("--brokers", type=int, default=3)
    p.add_argument("--backend", default="mini")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--base-port", type=int, default=None)
    p.add_argument("--mode", choices=["zookeeper", "kraft"], default="zookeeper")
    p.add_argument("--combined", action="store_true")
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE")
    args = p.parse_args(argv)
    directory = os.path.abspath(args.dir)
    report_fd = os.dup(1)

    def report(value: dict) -> None:
        os.write(report_fd, (json.dumps(value) + "\n").encode())
        os.close(report_fd)

    log = os.open(os.path.join(directory, UP_LOG), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    print(f"--- kafkalab up: supervisor pid {os.getpid()} starting {args.brokers} {args.backend} broker(s) "
          f"at {time.strftime('%Y-%m-%d %H:%M:%S')} ---", flush=True)
    stopping: list = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stopping.append("SIGINT"))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    configs = {}
    for item in args.config:
        key, _, value = item.partition("=")
        configs[key] = value
    up_path = os.path.join(directory, UP_STATE)
    sock = socket_path(directory)
    cluster = None
    try:
        if args.mode == "kraft":
            cluster = kraft_cluster(brokers=args.brokers, dir=directory, backend=args.backend, host=args.host,
                                    base_port=args.base_port, combined=args.combined, **configs)
        else:
            cluster = Cluster(brokers=args.brokers, dir=directory, backend=args.backend, host=args.host,
                              base_port=args.base_port, **configs)
        if os.path.exists(sock):
            os.unlink(sock)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sock)
        os.chmod(sock, 0o600)
        server.listen(8)
        me = psutil.Process()
        state = {"version": 1, "status": "running", "pid": os.getpid(), "create_time": me.create_time(),
                 "socket": sock, "dir": directory, "brokers": args.brokers, "backend": args.backend,
                 "mode": args.mode, "combined": args.combined,
                 "base_port": args.base_port, "configs": configs, "bootstrap_servers": cluster.bootstrap_servers,
                 "zookeeper_connect": cluster.zookeeper_connect, "log": os.path.join(directory, UP_LOG),
                 "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        _write_json(up_path, state)
    except Exception as exc:   # noqa: BLE001 -- reported to `kafkalab up`, which prints it
        print(f"kafkalab up: {type(exc).__name__}: {exc}", flush=True)
        if cluster is not None:
            cluster.close()
        report({"ok": False, "error": str(exc)})
        return 1
    report({"ok": True, "bootstrap_servers": cluster.bootstrap_servers, "dir": directory, "pid": os.getpid(),
            "zookeeper_connect": cluster.zookeeper_connect, "brokers": cluster.broker_ids,
            "controller": cluster.controller, "start_time_s": cluster.start_time_s, "listeners": cluster.listeners})
    print(f"kafkalab up: ready, bootstrap servers {cluster.bootstrap_servers}", flush=True)
    try:
        _serve(cluster, server, stopping)
    finally:
        print(f"kafkalab up: stopping ({stopping[0] if stopping else 'error'})", flush=True)
        server.close()
        try:
            os.unlink(sock)
        except OSError:
            pass
        cluster.close()
        state["status"] = "stopped"
        state["stopped"] = time.strftime("%Y-%m-%d %H:%M:%S")
        _write_json(up_path, state)
        print("kafkalab up: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
