"""The cluster launcher: a real ZooKeeper and broker processes, the controls a student breaks them with,
and process hygiene (nothing outlives its owner, not even an owner killed with SIGKILL)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import psutil
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.cluster import Cluster, KafkaBackend
from kafkalab.lab import ENV_VAR

pytestmark = pytest.mark.cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000}


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its reaper counts as exited)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition, what: str, timeout_s: float = 15.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def cluster_pids(c: Cluster) -> list[int]:
    return [c.zookeeper.pid, c._res.watchdog.pid] + [int(p) for p in c.brokers["pid"]]


def rows(c: Cluster) -> dict[int, dict]:
    return {r["id"]: r for r in c.brokers.to_dict("records")}


@pytest.fixture
def own_cluster(tmp_path):
    """A 3-broker cluster of this test's own, to break freely."""
    started = []

    def make(**kwargs):
        c = kafkalab.cluster(**{"brokers": 3, "dir": str(tmp_path / "cluster"), **FAST, **kwargs})
        started.append(c)
        return c
    yield make
    for c in started:
        c.close()


# -- start, state, close --------------------------------------------------------------------------

def test_start_waits_for_registration_and_controller_and_close_leaves_nothing():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    c = kafkalab.cluster(brokers=3, **FAST)
    try:
        assert 0 < c.start_time_s < 30
        assert sorted(c.zk.get_children("/brokers/ids"), key=int) == ["1", "2", "3"]
        table = rows(c)
        assert sorted(table) == [1, 2, 3]
        assert all(r["alive"] == "running" and r["registered"] for r in table.values())
        assert c.controller in (1, 2, 3)
        assert [r["id"] for r in table.values() if r["is_controller"]] == [c.controller]
        assert c.bootstrap_servers == ",".join(f"127.0.0.1:{table[i]['port']}" for i in (1, 2, 3))
        pids = cluster_pids(c)
        assert all(not gone(p) for p in pids)
        state_dir = c.dir
        assert "3 mini brokers (3 running)" in repr(c)
    finally:
        c.close()
    assert all(gone(p) for p in pids)
    assert not os.path.exists(state_dir)                       # a temporary dir is removed
    assert {p.pid for p in psutil.Process().children(recursive=True)
            if p.status() != psutil.STATUS_ZOMBIE} <= before
    assert "closed" in repr(c)
    with pytest.raises(RuntimeError, match="closed"):
        c.kill(1)
    c.close()                                                   # twice is fine


def test_state_directory_and_cluster_json(own_cluster, tmp_path):
    c = own_cluster(brokers=2, **{"num.partitions": 2})
    d = tmp_path / "cluster"
    for name in ("zookeeper/zoo.cfg", "zookeeper/zookeeper.log", "zookeeper/data", "broker-1", "broker-2",
                 "broker-1.log", "broker-2.log", "cluster.json"):
        assert (d / name).exists(), name
    assert (d / "broker-1" / ".lock").exists()                 # the broker holds its log dir
    state = json.loads((d / "cluster.json").read_text())
    assert state["zookeeper"]["connect"] == c.zookeeper_connect and state["zookeeper"]["pid"] == c.zookeeper.pid
    assert state["bootstrap_servers"] == c.bootstrap_servers
    assert [(b["id"], b["port"], b["pid"], b["log_dir"]) for b in state["brokers"]] == \
        [(r["id"], r["port"], r["pid"], r["log_dir"]) for r in c.brokers.to_dict("records")]
    assert state["configs"]["num.partitions"] == "2"
    assert state["configs"]["offsets.topic.replication.factor"] == "2"   # min(3, N)
    assert state["configs"]["zookeeper.session.timeout.ms"] == "4000"    # ours over the lab default
    assert "kafkalab broker 1 ready on" in c.broker_log(1)
    c.close()
    assert (d / "cluster.json").exists()                       # a given dir is kept


def test_bad_configs_fail_before_anything_starts():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(ValueError, match="Unknown broker configuration 'num.partitionz'"):
        kafkalab.cluster(brokers=2, **{"num.partitionz": 3})
    with pytest.raises(ValueError, match="broker.id is set by the cluster"):
        kafkalab.cluster(brokers=2, broker_id=5)
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


# -- breaking things ------------------------------------------------------------------------------

def test_kill_stop_restart_pause_resume_change_the_process_state(own_cluster):
    c = own_cluster()
    ports = {i: r["port"] for i, r in rows(c).items()}

    c.pause(2)
    assert psutil.Process(rows(c)[2]["pid"]).status() == psutil.STATUS_STOPPED
    assert rows(c)[2]["alive"] == "paused"
    c.resume(2)
    assert psutil.Process(rows(c)[2]["pid"]).status() != psutil.STATUS_STOPPED
    assert rows(c)[2]["alive"] == "running"

    killed_pid = rows(c)[3]["pid"]
    c.kill(3)
    assert gone(killed_pid) and rows(c)[3]["alive"] == "killed"
    assert rows(c)[3]["registered"]        # a crash is not noticed until the ZooKeeper session expires
    with pytest.raises(RuntimeError, match="not running"):
        c.kill(3)

    stopped_pid = rows(c)[1]["pid"]
    c.stop(1)
    assert gone(stopped_pid) and rows(c)[1]["alive"] == "stopped"
    assert c._res.brokers[1].process.returncode == 0            # SIGTERM: a clean shutdown, status 0

    for broker_id in (1, 3):
        c.restart(broker_id)
        row = rows(c)[broker_id]
        assert row["alive"] == "running" and row["registered"] and row["port"] == ports[broker_id]
        assert row["pid"] not in (killed_pid, stopped_pid)
    assert all(r["alive"] == "running" for r in rows(c).values())
    with pytest.raises(KeyError, match="no broker 7"):
        c.kill(7)


def test_restart_of_a_killed_broker_waits_for_a_new_registration(own_cluster):
    c = own_cluster(brokers=2)
    old = c.zk.exists("/brokers/ids/2")
    log_dir = rows(c)[2]["log_dir"]
    c.kill(2)
    c.restart(2)
    new = c.zk.exists("/brokers/ids/2")
    assert new is not None and new.czxid != old.czxid and new.ephemeralOwner != old.ephemeralOwner
    assert rows(c)[2]["log_dir"] == log_dir
    assert "kafkalab broker 2 ready on" in c.broker_log(2, lines=200)


def test_restart_of_a_running_broker_stops_it_first(own_cluster):
    c = own_cluster(brokers=1)
    pid = rows(c)[1]["pid"]
    c.restart(1)
    assert gone(pid) and rows(c)[1]["alive"] == "running" and rows(c)[1]["pid"] != pid
    assert c.controller == 1


def test_attach_controls_a_cluster_from_its_state_file(own_cluster, tmp_path):
    c = own_cluster(brokers=2)
    other = Cluster.attach(str(tmp_path / "cluster"))
    try:
        assert other.bootstrap_servers == c.bootstrap_servers and other.controller == c.controller
        assert [r["pid"] for r in other.brokers.to_dict("records")] == [r["pid"] for r in c.brokers.to_dict("records")]
        other.kill(2)
        # the owner sees its child died of SIGKILL (as soon as it has reaped it)
        wait_until(lambda: rows(c)[2]["alive"] == "killed", "the owner to see broker 2 killed", 5)
    finally:
        other.close()                                           # only disconnects
    assert rows(c)[1]["alive"] == "running" and not gone(rows(c)[1]["pid"])


def test_attached_shutdown_stops_the_whole_cluster(own_cluster, tmp_path):
    c = own_cluster(brokers=2)
    pids = [c.zookeeper.pid] + [int(p) for p in c.brokers["pid"]]
    Cluster.attach(str(tmp_path / "cluster")).shutdown()
    wait_until(lambda: all(gone(p) for p in pids), "the brokers and ZooKeeper to stop", 20)
    assert set(r["alive"] for r in rows(c).values()) == {"exited"}      # the owner sees them gone (status 0)


def test_a_dir_in_use_is_refused_and_a_closed_one_starts_again_with_its_topics(own_cluster, tmp_path):
    c = own_cluster(brokers=1)
    _create(c.bootstrap_servers, "kept", 1, 1)
    with pytest.raises(RuntimeError, match="already running in .*Cluster.attach"):
        kafkalab.cluster(brokers=1, dir=str(tmp_path / "cluster"))
    c.close()
    again = own_cluster(brokers=1)
    assert "kept" in again.zk.get_children("/brokers/topics")
    assert again.describe("kept")["leader"].tolist() == [1]


# -- describe -------------------------------------------------------------------------------------

def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, rf)], operation_timeout=20)[topic].result(30)


def test_describe_shows_leaders_isr_epochs_and_offsets(shared_cluster):
    c = shared_cluster
    topic = f"describe-{uuid.uuid4().hex[:6]}"
    _create(c.bootstrap_servers, topic, 3, 3)
    wait_until(lambda: c.describe(topic)["leader"].notna().all(), "a leader for every partition")
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
    for i in range(12):
        p.produce(topic, b"v%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    df = c.describe(topic)
    assert list(df.columns[:6]) == ["partition", "leader", "replicas", "isr", "leader_epoch", "high_watermark"]
    assert [f"leo_{i}" for i in (1, 2, 3)] == list(df.columns[6:])
    assert list(df["partition"]) == [0, 1, 2]
    for row in df.to_dict("records"):
        assert sorted(row["replicas"]) == [1, 2, 3]
        assert row["leader"] in row["replicas"] and row["leader"] in row["isr"]
        assert row["leader_epoch"] >= 0
        assert row["high_watermark"] == 4
        assert row[f"leo_{row['leader']}"] == 4                 # the leader answers DEBUGGING_REPLICA_ID

    # a paused replica cannot answer: its column shows missing values, and describe() does not hang
    victim = int(df["replicas"][0][1])
    c.pause(victim)
    try:
        began = time.monotonic()
        frozen = c.describe(topic, timeout_s=0.5)
        assert time.monotonic() - began < 5
        assert frozen[f"leo_{victim}"].isna().all()
    finally:
        c.resume(victim)


def test_describe_unknown_topic(shared_cluster):
    with pytest.raises(KeyError, match="no topic 'no-such-topic'"):
        shared_cluster.describe("no-such-topic")


# -- nothing outlives its owner -------------------------------------------------------------------

OWNER = textwrap.dedent("""
    import json, sys, time
    import kafkalab
    c = kafkalab.cluster(brokers=2, dir=sys.argv[2] if len(sys.argv) > 2 else None,
                         **{"zookeeper.session.timeout.ms": 4000})
    pids = [c.zookeeper.pid, c._res.watchdog.pid] + [int(p) for p in c.brokers["pid"]]
    print(json.dumps({"pids": pids, "dir": c.dir}), flush=True)
    if sys.argv[1] == "exit":
        sys.exit(0)          # no close(): atexit must do it
    time.sleep(600)
""")


def _run_owner(tmp_path, mode: str, pdeathsig: bool, directory: str | None = None):
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("KAFKALAB_NO_PDEATHSIG", None)
    if not pdeathsig:
        env["KAFKALAB_NO_PDEATHSIG"] = "1"
    owner = subprocess.Popen([sys.executable, str(script), mode] + ([directory] if directory else []),
                             stdout=subprocess.PIPE, text=True, env=env)
    line = owner.stdout.readline()
    try:
        info = json.loads(line)
    except ValueError:
        owner.kill()
        owner.wait()
        raise AssertionError(f"the owner did not start its cluster: {line!r}")
    return owner, info


def _reap_leftovers(pids):
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["with-pdeathsig", "watchdog-and-parent-pid-only"])
def test_owner_killed_with_sigkill_leaves_no_process(tmp_path, pdeathsig):
    owner, info = _run_owner(tmp_path, "sleep", pdeathsig)
    pids = info["pids"]
    try:
        assert all(not gone(p) for p in pids)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        began = time.monotonic()
        wait_until(lambda: all(gone(p) for p in pids), "ZooKeeper, the brokers and the watchdog to exit", 15)
        took = time.monotonic() - began
        assert took < (1 if pdeathsig else 10), took
        wait_until(lambda: not os.path.exists(info["dir"]), "the watchdog to remove the temporary dir", 5)
    finally:
        _reap_leftovers(pids)
        owner.stdout.close()


def test_owner_killed_with_sigkill_leaves_no_control_socket_behind(tmp_path):
    # A state dir with a long path puts the brokers' fault-control sockets in the temporary directory; the
    # brokers die with their owner (SIGKILL: no cleanup of their own), and the watchdog removes the sockets.
    from kafkalab.broker.server.faults import control_socket_path
    deep = tmp_path / ("a-directory-name-long-enough-to-push-the-socket-path-out-" + "x" * 40)
    owner, info = _run_owner(tmp_path, "sleep", True, str(deep))
    sockets = [control_socket_path(os.path.join(info["dir"], f"broker-{i}")) for i in (1, 2)]
    try:
        assert all(not s.startswith(str(deep)) for s in sockets)
        wait_until(lambda: all(os.path.exists(s) for s in sockets), "the brokers' control sockets", 10)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(lambda: all(gone(p) for p in info["pids"]), "ZooKeeper, the brokers and the watchdog to exit", 15)
        wait_until(lambda: not any(os.path.exists(s) for s in sockets), "the watchdog to remove the sockets", 5)
    finally:
        _reap_leftovers(info["pids"])
        owner.stdout.close()


def test_owner_exiting_without_close_stops_its_cluster_at_exit(tmp_path):
    owner, info = _run_owner(tmp_path, "exit", pdeathsig=False)
    try:
        assert owner.wait(60) == 0
        assert all(gone(p) for p in info["pids"])              # atexit closed it before the interpreter ended
        assert not os.path.exists(info["dir"])
    finally:
        _reap_leftovers(info["pids"])
        owner.stdout.close()


def test_broker_with_parent_pid_exits_when_that_process_is_gone(tmp_path):
    """``python -m kafkalab.broker --parent-pid P`` on its own (no PDEATHSIG, no watchdog)."""
    middle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    env = dict(os.environ, PYTHONPATH=ROOT)
    log = open(tmp_path / "broker.log", "w")
    broker = subprocess.Popen([sys.executable, "-m", "kafkalab.broker", "--port", "0", "--log-dir",
                               str(tmp_path / "logs"), "--parent-pid", str(middle.pid)],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_until(lambda: "ready on" in (tmp_path / "broker.log").read_text(), "the broker to start", 30)
        middle.kill()
        middle.wait()
        assert broker.wait(10) == 0                             # a clean shutdown
        assert "parent process" in (tmp_path / "broker.log").read_text()
        assert os.path.exists(tmp_path / "logs" / ".kafka_cleanshutdown")
    finally:
        for p in (middle, broker):
            if p.poll() is None:
                p.kill()
                p.wait()
        log.close()


# -- errors that say what is wrong ----------------------------------------------------------------

def _fake_kafka_home(root, start_script: str):
    home = root / "kafka_2.13-3.9.0"
    (home / "libs").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "libs" / "kafka_2.13-3.9.0.jar").write_bytes(b"")
    script = home / "bin" / "kafka-server-start.sh"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(start_script))
    script.chmod(0o755)
    return home


def test_a_broker_that_never_registers_times_out_naming_it_and_its_log(tmp_path):
    home = _fake_kafka_home(tmp_path, """
        import sys, time
        print("pretending to be Kafka with", sys.argv[1], flush=True)
        time.sleep(600)
    """)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(TimeoutError) as e:
        kafkalab.cluster(brokers=2, dir=str(tmp_path / "c"), backend=KafkaBackend(str(home)), timeout_s=3)
    msg = str(e.value)
    assert "broker 1 did not register in ZooKeeper (/brokers/ids/1) within 3 s" in msg
    assert str(tmp_path / "c" / "broker-1.log") in msg and "pretending to be Kafka" in msg
    wait_until(lambda: {p.pid for p in psutil.Process().children(recursive=True)
                        if p.status() != psutil.STATUS_ZOMBIE} <= before, "the failed cluster's processes to go", 10)


def test_kafka_backend_runs_its_start_script_with_the_generated_properties(tmp_path):
    """The whole backend="kafka" path — server.properties, the start script, registration, kill and
    restart — with a stand-in for kafka-server-start.sh that runs a mini broker from those properties."""
    home = _fake_kafka_home(tmp_path, """
        import os, sys
        props = dict(line.split("=", 1) for line in open(sys.argv[1]).read().splitlines()
                     if line and not line.startswith("#"))
        host, port = props.pop("listeners").rpartition("//")[2].rsplit(":", 1)
        cmd = [sys.executable, "-m", "kafkalab.broker", "--host", host, "--port", port,
               "--broker-id", props.pop("broker.id"), "--log-dir", props.pop("log.dirs")]
        props.pop("advertised.listeners")
        for key, value in props.items():
            if not key.startswith("transaction."):       # the mini broker has no transactions
                cmd += ["--config", f"{key}={value}"]
        os.execv(sys.executable, cmd)
    """)
    with kafkalab.cluster(brokers=2, dir=str(tmp_path / "c"), backend=KafkaBackend(str(home)), **FAST) as c:
        props = (tmp_path / "c" / "broker-2.properties").read_text()
        assert "broker.id=2" in props and f"zookeeper.connect={c.zookeeper_connect}" in props
        assert f"listeners=PLAINTEXT://127.0.0.1:{rows(c)[2]['port']}" in props
        assert sorted(c.zk.get_children("/brokers/ids")) == ["1", "2"] and c.controller in (1, 2)
        c.kill(2)
        c.restart(2)
        assert rows(c)[2]["alive"] == "running" and rows(c)[2]["registered"]


# -- kafkalab.connect(brokers=N) ------------------------------------------------------------------

def test_connect_with_brokers_starts_a_cluster_and_close_stops_it(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    kafka = kafkalab.connect(brokers=3, **FAST)
    try:
        assert isinstance(kafka.cluster, Cluster) and not kafka.embedded
        assert kafka.bootstrap_servers == kafka.cluster.bootstrap_servers
        assert "local cluster of 3 brokers" in repr(kafka)
        topic = kafka.create_topic("replicated", partitions=2)
        df = kafka.cluster.describe(topic)                      # the znodes exist once CreateTopics returned
        assert len(df) == 2
        assert all(sorted(r) == [1, 2, 3] for r in df["replicas"])   # default.replication.factor = min(3, N)
        assert topic in kafka.topics()
        pids = cluster_pids(kafka.cluster)
    finally:
        kafka.close()
    assert kafka.closed and kafka.cluster.closed
    assert all(gone(p) for p in pids)


def test_connect_with_brokers_and_an_external_cluster_starts_nothing(monkeypatch):
    with kafkalab.mini() as external:
        monkeypatch.setenv(ENV_VAR, external.bootstrap_servers)
        with pytest.warns(UserWarning, match="brokers"):
            kafka = kafkalab.connect(brokers=3)
        assert kafka.cluster is None and kafka.bootstrap_servers == external.bootstrap_servers
        kafka.close()
