"""``kafkalab up / status / kill / stop / restart / pause / resume / down`` against a real mini cluster.

Every command runs as a real subprocess (``python -m kafkalab.cli``), the way a
student types it; the cluster is a real ZooKeeper and real broker processes
owned by ``kafkalab up``'s detached supervisor. Teardown runs ``kafkalab down``
and, should that fail, SIGKILLs the supervisor (its children follow it).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
ENV.pop("KAFKALAB_CLUSTER_DIR", None)
ENV.pop("KAFKALAB_BOOTSTRAP_SERVERS", None)
FAST = ["--config", "zookeeper.session.timeout.ms=4000", "--config", "replica.lag.time.max.ms=3000"]
# test_up_status_break_and_down restarts a broker "at once" after killing it and asserts that the restart waits out
# the old ZooKeeper registration: two `kafkalab` processes (kill, then restart) must start within the session
# timeout, which 4 s did not always leave on a loaded CI machine (the registration had expired first: no wait)
EXPIRY_OUTLASTS_TWO_CLI_CALLS = ["--config", "zookeeper.session.timeout.ms=12000", "--config",
                                 "replica.lag.time.max.ms=3000"]


def kafkalab(*args, env=None, timeout=90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or ENV)


def alive(pid) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids, timeout_s=15.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return [p for p in pids if alive(p)]


def cluster_pids(directory) -> dict:
    with open(os.path.join(directory, "cluster.json")) as f:
        state = json.load(f)
    with open(os.path.join(directory, "kafkalab-up.json")) as f:
        up = json.load(f)
    return {"supervisor": up["pid"], "zookeeper": state["zookeeper"]["pid"],
            **{b["id"]: b["pid"] for b in state["brokers"]}}


@pytest.fixture
def up_dir(tmp_path):
    """A state directory for ``kafkalab up``; whatever runs there is stopped at teardown."""
    directory = str(tmp_path / "cluster")
    yield directory
    if os.path.exists(os.path.join(directory, "kafkalab-up.json")):
        kafkalab("down", "--dir", directory, timeout=60)
        try:
            pids = cluster_pids(directory)
        except (OSError, ValueError, KeyError):
            return
        for pid in pids.values():
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_up_status_break_and_down(up_dir):
    up = kafkalab("up", "--brokers", "2", "--dir", up_dir, *EXPIRY_OUTLASTS_TWO_CLI_CALLS)
    assert up.returncode == 0, up.stderr + up.stdout
    pids = cluster_pids(up_dir)
    bootstrap = [line.split("=", 1)[1] for line in up.stdout.splitlines()
                 if line.startswith("export KAFKALAB_BOOTSTRAP_SERVERS=")][0]
    assert f"export KAFKALAB_CLUSTER_DIR={up_dir}" in up.stdout
    assert len(bootstrap.split(",")) == 2
    assert psutil.Process(pids["supervisor"]).ppid() != os.getpid()   # detached: outlives `kafkalab up`
    assert all(alive(pids[i]) for i in (1, 2, "zookeeper"))

    # a topic and a consumer group with lag, then status
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("orders", 2, 2)])["orders"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce("orders", value=b"x", partition=i % 2)
    producer.flush(15)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.assign([__import__("confluent_kafka").TopicPartition("orders", 0, 0)])
    got, deadline = 0, time.monotonic() + 20
    while got < 4 and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
            if got == 4:
                consumer.commit(m, asynchronous=False)   # committed offset 4 of 10: lag 6
    consumer.close()
    del admin, producer

    status = kafkalab("status", "--dir", up_dir)
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert any(line.split()[:4] == ["1", bootstrap.split(",")[0], str(pids[1]), "running"] for line in lines)
    orders = [line.split() for line in lines if line.startswith("orders ")]
    assert [row[1] for row in orders] == ["0", "1"] and all(row[5] == "10" for row in orders), status.stdout
    billing = [line.split() for line in lines if line.startswith("billing ")]
    assert billing and billing[0][3:8] == ["orders", "0", "4", "10", "6"], status.stdout
    # Kafka's own metrics, summed over the brokers: healthy, one active controller
    assert ("metrics: UnderReplicatedPartitions 0, UnderMinIsrPartitionCount 0, OfflinePartitionsCount 0, "
            "ActiveControllerCount 1") in lines, status.stdout

    # break it from the terminal
    kill = kafkalab("kill", "2", "--dir", up_dir)
    assert kill.returncode == 0 and "broker 2 killed" in kill.stdout, kill.stderr
    assert wait_gone([pids[2]], 5) == []
    again = kafkalab("kill", "2", "--dir", up_dir)
    assert again.returncode == 1 and "not running (killed)" in again.stderr
    assert "killed" in [line.split()[3] for line in kafkalab("status", "--dir", up_dir).stdout.splitlines()
                        if line.startswith("2 ")]
    unknown = kafkalab("kill", "9", "--dir", up_dir)
    assert unknown.returncode == 1 and "no broker 9" in unknown.stderr and "1, 2" in unknown.stderr
    bad = kafkalab("kill", "two", "--dir", up_dir)
    assert bad.returncode == 2 and "a broker id is a number" in bad.stderr
    assert kafkalab("kill", "--dir", up_dir).returncode == 2          # no id

    restart = kafkalab("restart", "2", "--dir", up_dir)
    assert restart.returncode == 0 and "now running" in restart.stdout, restart.stderr
    new_pid = cluster_pids(up_dir)[2]
    assert new_pid != pids[2] and alive(new_pid)
    assert psutil.Process(new_pid).ppid() == pids["supervisor"]     # the supervisor's child, like the others

    pause = kafkalab("pause", "1", "--dir", up_dir)
    assert pause.returncode == 0 and psutil.Process(pids[1]).status() == psutil.STATUS_STOPPED
    assert kafkalab("pause", "1", "--dir", up_dir).returncode == 1
    resume = kafkalab("resume", "1", "--dir", up_dir)
    assert resume.returncode == 0 and psutil.Process(pids[1]).status() != psutil.STATUS_STOPPED
    assert kafkalab("resume", "1", "--dir", up_dir).returncode == 1    # not paused

    # restarted at once after a kill, the broker must wait out its old registration: a bar shows it
    assert kafkalab("kill", "1", "--dir", up_dir).returncode == 0
    quick = kafkalab("restart", "1", "--dir", up_dir)
    assert quick.returncode == 0 and "now running" in quick.stdout, quick.stderr
    assert "waiting for the old registration of broker 1 (/brokers/ids/1) to expire" in quick.stderr
    assert "100%" in quick.stderr.replace("\r", "\n").splitlines()[-1]

    stop = kafkalab("stop", "2", "--dir", up_dir)
    assert stop.returncode == 0 and "now stopped" in stop.stdout
    assert not alive(new_pid)

    twice = kafkalab("up", "--dir", up_dir)
    assert twice.returncode == 1 and "already running" in twice.stderr

    down = kafkalab("down", "--dir", up_dir)
    assert down.returncode == 0, down.stderr
    assert wait_gone(list(cluster_pids(up_dir).values())) == []
    assert os.path.isdir(os.path.join(up_dir, "broker-1", "orders-0"))    # nothing removed unasked
    after = kafkalab("status", "--dir", up_dir)
    assert after.returncode == 1 and "not running" in after.stderr

    # up again on the same directory: the same cluster, its data kept; then down --delete removes it
    again = kafkalab("up", "--brokers", "2", "--dir", up_dir, *FAST)
    assert again.returncode == 0, again.stderr
    assert any(line.startswith("orders ") for line in kafkalab("status", "--dir", up_dir).stdout.splitlines())
    gone = kafkalab("down", "--dir", up_dir, "--delete")
    assert gone.returncode == 0 and not os.path.exists(up_dir)


def test_connect_sees_the_cluster_kafkalab_up_started(up_dir, monkeypatch):
    import kafkalab as kl
    from kafkalab.cluster.supervisor import SupervisedCluster
    up = kafkalab_cli_up(up_dir, "1")
    assert up.returncode == 0, up.stderr
    pids = cluster_pids(up_dir)
    monkeypatch.setenv("KAFKALAB_CLUSTER_DIR", up_dir)
    monkeypatch.delenv("KAFKALAB_BOOTSTRAP_SERVERS", raising=False)
    kafka = kl.connect()
    try:
        assert isinstance(kafka.cluster, SupervisedCluster) and kafka.cluster.broker_ids == [1]
        assert kafka.bootstrap_servers == json.load(open(os.path.join(up_dir, "cluster.json")))["bootstrap_servers"]
        assert kafka.create_topic("seen") == "seen"
        kafka.cluster.kill(1)                                 # from the notebook's side, through the supervisor
        assert wait_gone([pids[1]], 5) == []
        status = kafkalab("status", "--dir", up_dir).stdout   # and the terminal sees it
        assert [line.split()[3] for line in status.splitlines() if line.startswith("1 ")] == ["killed"]
    finally:
        kafka.close()                                         # only disconnects
    assert alive(pids["supervisor"]) and alive(pids["zookeeper"])


def kafkalab_cli_up(directory, brokers):
    return kafkalab("up", "--brokers", brokers, "--dir", directory, *FAST)


def test_a_killed_supervisor_takes_its_cluster_along_and_leaves_a_stale_dir(up_dir):
    assert kafkalab_cli_up(up_dir, "1").returncode == 0
    pids = cluster_pids(up_dir)
    os.kill(pids["supervisor"], signal.SIGKILL)
    assert wait_gone([pids[1], pids["zookeeper"]]) == []
    stale = kafkalab("up", "--dir", up_dir)
    assert stale.returncode == 1 and "supervisor is gone" in stale.stderr and "kafkalab down" in stale.stderr
    status = kafkalab("status", "--dir", up_dir)
    assert status.returncode == 1 and "stale" in status.stderr
    down = kafkalab("down", "--dir", up_dir)
    assert down.returncode == 0 and "supervisor had died" in down.stdout
    assert os.path.isdir(os.path.join(up_dir, "broker-1"))


def test_up_errors(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "todo.txt").write_text("mine")
    result = kafkalab("up", "--dir", str(foreign))
    assert result.returncode == 1 and "not a kafkalab state directory" in result.stderr
    assert (foreign / "todo.txt").read_text() == "mine" and os.listdir(foreign) == ["todo.txt"]
    assert kafkalab("down", "--dir", str(foreign)).returncode == 1 and os.listdir(foreign) == ["todo.txt"]

    no_java = dict(ENV, PATH=str(tmp_path / "empty-bin"))
    no_java.pop("JAVA_HOME", None)
    result = kafkalab("up", "--dir", str(tmp_path / "a"), env=no_java)
    assert result.returncode == 1 and "Java" in result.stderr and "Traceback" not in result.stderr

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = kafkalab("up", "--dir", str(tmp_path / "b"), "--brokers", "1", "--base-port", str(port))
    assert result.returncode == 1 and f"port {port} on 127.0.0.1 is in use" in result.stderr

    stale = tmp_path / "stale"
    stale.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (stale / "kafkalab-up.json").write_text(json.dumps({"pid": dead.pid, "status": "running"}))
    result = kafkalab("up", "--dir", str(stale))
    assert result.returncode == 1 and "supervisor is gone" in result.stderr

    assert kafkalab("up", "--brokers", "0", "--dir", str(tmp_path / "c")).returncode == 1
    assert kafkalab("up", "--backend", "zookeeper", "--dir", str(tmp_path / "d")).returncode == 2
    assert kafkalab("up", "--config", "oops", "--dir", str(tmp_path / "e")).returncode == 2
    for command in (["status"], ["kill", "1"], ["restart", "1"], ["down"]):
        result = kafkalab(*command, "--dir", str(tmp_path / "nothing-here"))
        assert result.returncode == 1 and "no cluster in" in result.stderr, (command, result.stderr)
    assert not os.path.exists(tmp_path / "nothing-here")


# -- what a new user tripped over ------------------------------------------------------------------------------

def test_lab_passes_jupyter_options_on_and_turns_announcements_off():
    result = kafkalab("lab", "--dry-run", "--no-browser", "--IdentityProvider.token=abc", "--ServerApp.port_retries=0")
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    assert "--IdentityProvider.token=abc" in words and "--ServerApp.port_retries=0" in words
    assert ("--allow-root" in words) == (os.geteuid() == 0)
    assert "--LabApp.news_url=None" in words
    from kafkalab.cli import JUPYTER_CONFIG, lab_env
    with open(os.path.join(JUPYTER_CONFIG, "labconfig", "page_config.json")) as f:
        assert json.load(f)["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] is True
    assert lab_env()["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == JUPYTER_CONFIG


def test_dump_log_says_what_to_give_instead(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = kafkalab("dump-log", str(empty))
    assert result.returncode == 1 and "is empty" in result.stderr and "partition directory" in result.stderr
    log_dirs = tmp_path / "data"
    (log_dirs / "orders-0").mkdir(parents=True)
    (log_dirs / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    result = kafkalab("dump-log", str(log_dirs))
    assert result.returncode == 1 and "log directory (log.dirs)" in result.stderr
    assert str(log_dirs / "orders-0") in result.stderr
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    result = kafkalab("broker", "--log-dir", str(a_file), "--port", "0")
    assert result.returncode == 2 and "is a file; give a directory" in result.stderr and "Errno" not in result.stderr
