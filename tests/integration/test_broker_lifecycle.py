"""Starting and stopping a broker: ``kafkalab.mini()`` and ``python -m kafkalab.broker``.

A broker that stops (or fails to start) leaves nothing behind: no thread, no
open file in its log directory, no listening socket, and its log directory
marked as cleanly shut down whenever its logs were fully loaded.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import psutil
import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from conftest import ROOT
from kafkalab.broker.kafka_server import KafkaServer, StartupError
from kafkalab.broker.log.log_manager import CLEAN_SHUTDOWN_FILE

WAIT_S = 60


def broker_threads() -> list[str]:
    """The broker's own threads, and its event loop's worker threads."""
    return [t.name for t in threading.enumerate() if t.name.startswith(("kafkalab-broker", "asyncio_"))]


def files_open_under(directory: str) -> list[str]:
    root = os.path.realpath(directory)
    return [f.path for f in psutil.Process().open_files() if os.path.realpath(f.path).startswith(root + os.sep)]


def listening_on(port: int) -> bool:
    return any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
               for c in psutil.Process().net_connections("tcp"))


def make_topic(broker, name="t", partitions=2):
    broker.call(broker.server.admin_manager.create_topic, name, partitions, 1, {})


def long_poll(bootstrap, topic, result):
    """A Fetch that waits up to 120 s for data that never comes; stores the response or the error."""
    req = FetchRequest(replica_id=-1, max_wait_ms=120_000, min_bytes=1, max_bytes=2**20, isolation_level=0,
                       session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                           topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                               partition_max_bytes=2**20)])], forgotten_topics_data=[], rack_id="")
    try:
        result.append(wire.call(bootstrap, req, FetchResponse, 12))
    except Exception as exc:  # noqa: BLE001
        result.append(exc)


def wait_until(condition, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


# -- kafkalab.mini(): close() --------------------------------------------------------

def test_close_twice_and_from_several_threads(tmp_path):
    b = kafkalab.mini(log_dir=str(tmp_path / "b"))
    make_topic(b)
    port = b.port
    closers = [threading.Thread(target=b.close) for _ in range(4)]
    for t in closers:
        t.start()
    for t in closers:
        t.join(WAIT_S)
    assert not any(t.is_alive() for t in closers)
    b.close()  # and once more: a no-op
    assert b.closed and broker_threads() == []
    assert files_open_under(str(tmp_path / "b")) == [] and not listening_on(port)
    assert os.path.exists(tmp_path / "b" / CLEAN_SHUTDOWN_FILE)
    with pytest.raises(RuntimeError, match="closed"):
        b.call(lambda: None)


def test_close_during_a_long_poll_fetch(tmp_path):
    b = kafkalab.mini(log_dir=str(tmp_path / "b"))
    make_topic(b, "quiet", 1)
    result = []
    fetcher = threading.Thread(target=long_poll, args=(b.bootstrap_servers, "quiet", result), daemon=True)
    fetcher.start()
    waiters = b.server.replica_manager._fetch_waiters
    wait_until(lambda: b.call(lambda: bool(waiters.get(("quiet", 0)))), "the fetch never reached the purgatory")
    start = time.monotonic()
    b.close()
    assert time.monotonic() - start < WAIT_S  # not held up by the fetch's 120 s max_wait_ms
    fetcher.join(WAIT_S)
    assert not fetcher.is_alive() and isinstance(result[0], ConnectionError)  # the connection was closed
    assert broker_threads() == [] and files_open_under(str(tmp_path / "b")) == []
    assert os.path.exists(tmp_path / "b" / CLEAN_SHUTDOWN_FILE)


def test_close_on_the_broker_thread_is_refused(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b")) as b:
        with pytest.raises(RuntimeError, match="own thread"):
            b.call(b.close)
        assert not b.closed and b.call(lambda: 42) == 42
    assert b.closed


def test_closed_at_interpreter_exit(tmp_path):
    """A notebook kernel that exits without close(): the broker still shuts down cleanly."""
    log_dir = str(tmp_path / "b")
    script = textwrap.dedent(f"""
        import threading
        import kafkalab
        from test_broker_lifecycle import long_poll, make_topic, wait_until
        b = kafkalab.mini(log_dir={log_dir!r})
        make_topic(b, "quiet", 1)
        threading.Thread(target=long_poll, args=(b.bootstrap_servers, "quiet", []), daemon=True).start()
        waiters = b.server.replica_manager._fetch_waiters
        wait_until(lambda: b.call(lambda: bool(waiters.get(("quiet", 0)))), "the fetch never reached the purgatory")
        print("exiting without close()", flush=True)
    """)
    tests = os.path.join(ROOT, "tests")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, tests, os.path.join(tests, "integration")]))
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True,
                          timeout=WAIT_S * 2, env=env)
    assert proc.returncode == 0 and "exiting without close()" in proc.stdout, proc.stderr
    for bad in ("Traceback", "Task was destroyed", "never awaited", "ResourceWarning"):
        assert bad not in proc.stderr, proc.stderr
    assert os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


@pytest.mark.parametrize("topics", [0, 1])
def test_temporary_log_dir_removed_when_the_owner_is_killed(topics):
    """kill -9 runs no atexit handler (nbval kills a notebook's kernel so, a test may kill its child): the
    temporary log directory must still go, also the one of a broker that never got a topic (it holds only
    ``.lock``: one such directory was left in /tmp per CI run)."""
    script = textwrap.dedent(f"""
        import time
        import kafkalab
        b = kafkalab.mini()
        for n in range({topics}):
            b.call(b.server.admin_manager.create_topic, f"t{{n}}", 2, 1, {{}})
        print(b.log_dir, flush=True)
        time.sleep(600)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        log_dir = owner.stdout.readline().strip()
        assert os.path.basename(log_dir).startswith("kafkalab-") and os.path.exists(os.path.join(log_dir, ".lock"))
        owner.send_signal(signal.SIGKILL)
        owner.wait(WAIT_S)
        wait_until(lambda: not os.path.exists(log_dir), f"{log_dir} still there after its owner was killed")
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_close_removes_the_temporary_log_dir_at_once():
    def watchdogs():
        found = set()
        for p in psutil.Process().children():
            try:
                if any("watchdog" in a for a in p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE:
                    found.add(p.pid)
            except psutil.NoSuchProcess:   # a child that just ended
                pass
        return found
    before = watchdogs()
    b = kafkalab.mini()
    make_topic(b)
    log_dir = b.log_dir
    assert len(watchdogs() - before) == 1           # the guard of its temporary directory ...
    b.close()
    assert not os.path.exists(log_dir)
    assert watchdogs() <= before                    # ... stopped with the broker: no process left behind


# -- kafkalab.mini(): start failures -------------------------------------------------

@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_port_in_use_is_a_clear_error_and_leaves_nothing_behind(tmp_path, busy_port):
    log_dir = str(tmp_path / "b")
    with kafkalab.mini(log_dir=log_dir) as b:
        make_topic(b)
    with pytest.raises(StartupError, match=f"failed to bind to 127.0.0.1:{busy_port}: the port is in use"):
        kafkalab.mini(log_dir=log_dir, port=busy_port)
    assert broker_threads() == [] and files_open_under(log_dir) == []
    # the logs were loaded, then closed cleanly: the next start needs no recovery
    assert os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def test_failure_while_loading_logs_leaves_them_to_recovery(tmp_path, monkeypatch):
    log_dir = str(tmp_path / "b")
    with kafkalab.mini(log_dir=log_dir) as b:
        make_topic(b, partitions=3)
    real, loaded = KafkaServer.make_partition, []

    def fail_on_the_third(self, topic, index):
        if len(loaded) == 2:
            raise OSError(5, "Input/output error")
        loaded.append(index)
        return real(self, topic, index)

    monkeypatch.setattr(KafkaServer, "make_partition", fail_on_the_third)
    with pytest.raises(OSError, match="Input/output error"):
        kafkalab.mini(log_dir=log_dir)
    assert broker_threads() == [] and files_open_under(log_dir) == []  # the two loaded logs were closed
    # not every log was loaded: no clean-shutdown marker, so the next start recovers them all (as Kafka)
    assert not os.path.exists(os.path.join(log_dir, CLEAN_SHUTDOWN_FILE))


def test_unusable_log_dir_is_a_clear_error(tmp_path):
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    for log_dir in (not_a_dir, not_a_dir / "below-a-file"):
        with pytest.raises(StartupError, match=f"Failed to create or validate data directory log.dirs={log_dir}"):
            kafkalab.mini(log_dir=str(log_dir))
    assert broker_threads() == []


@pytest.mark.parametrize("failure", ["bad config", "port in use"])
def test_failed_start_removes_its_temporary_log_dir(monkeypatch, busy_port, failure):
    made = []
    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(real_mkdtemp(**kw)) or made[-1])
    with pytest.raises(ValueError if failure == "bad config" else StartupError):
        if failure == "bad config":
            kafkalab.mini(**{"num.partitions": "three"})
        else:
            kafkalab.mini(port=busy_port)
    assert len(made) == 1 and not os.path.exists(made[0])


def test_advertised_listeners_are_what_clients_are_told(tmp_path):
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"advertised.listeners": "PLAINTEXT://localhost:19092"}) as b:
        assert b.bootstrap_servers == "localhost:19092"
        resp = wire.call(f"127.0.0.1:{b.port}", MetadataRequest(topics=[]), MetadataResponse, 12)
        assert [(n.host, n.port) for n in resp.brokers] == [("localhost", 19092)]


# -- python -m kafkalab.broker --------------------------------------------------------

def run_broker_command(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "kafkalab.broker", *args], capture_output=True, text=True,
                          timeout=WAIT_S, env=env)


def test_command_with_the_port_in_use(tmp_path, busy_port):
    proc = run_broker_command("--port", str(busy_port), "--log-dir", str(tmp_path / "b"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"error: Socket server failed to bind to 127.0.0.1:{busy_port}: the port is in "
                                   "use (is another broker running?); choose another port, or 0 for a free one")


def test_command_with_an_unusable_log_dir(tmp_path):
    (tmp_path / "a-file").write_text("")
    proc = run_broker_command("--port", "0", "--log-dir", str(tmp_path / "a-file"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: Failed to create or validate data directory log.dirs={tmp_path / 'a-file'}")
    proc = run_broker_command("--port", "0", "--log-dir", str(tmp_path / "b"), "--log-level", "loud")
    assert proc.returncode == 2 and "invalid choice: 'LOUD'" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_command_stops_cleanly_on_sigterm_and_sigint(broker_process, sig):
    bp = broker_process().start()
    bp.proc.send_signal(sig)
    assert bp.proc.wait(WAIT_S) == 0
    assert os.path.exists(os.path.join(bp.log_dir, CLEAN_SHUTDOWN_FILE))
    assert "Traceback" not in bp.stderr_text()
    with pytest.raises(OSError):  # and the port is free again: nothing listens there any more
        socket.create_connection(("127.0.0.1", bp.port), timeout=5).close()
