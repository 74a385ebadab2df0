"""``kafkalab.cluster(backend="kafka")``: real Apache Kafka 3.9 brokers on the lab's real ZooKeeper,
broken with the same controls as mini brokers (kill, stop, restart, pause, resume, describe, attach),
and nothing left behind when their owner dies. The distribution is ``kafkalab fetch-kafka 3.9``'s.

One cluster serves the whole module; each test leaves every broker running and registered again.
"""
from __future__ import annotations

import functools
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
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from tests.helpers.cluster_helpers import broker_states, leader_of, partition_row, restore_brokers
from kafkalab.cluster import Cluster, KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka

pytestmark = pytest.mark.cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000}
wait_until = functools.partial(cluster_helpers.wait_until, timeout=60, interval=0.2)


@pytest.fixture(scope="module")
def kafka_home():
    return str(fetch_kafka("3.9"))


@pytest.fixture(scope="module")
def kc(kafka_home, tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("kafka") / "cluster"),
                          backend=KafkaBackend(kafka_home), **FAST) as c:
        yield c


@pytest.fixture
def restore(kc):
    yield
    restore_brokers(kc, timeout=60)


def rows(c) -> dict[int, dict]:
    return {b["id"]: b for b in broker_states(c)}


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def whole_log(c, broker_id: int) -> str:
    """A broker's whole log (``broker_log`` shows only its last 16 kB, and Kafka logs a lot)."""
    with open(rows(c)[broker_id]["log"], errors="replace") as f:
        return f.read()


def new_topic(c, partitions=1, rf=3, **configs) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, rf, config={k: str(v) for k, v in configs.items()})],
                        operation_timeout=30)[topic].result(40)
    wait_until(lambda: leader_of(c, topic, partitions - 1) >= 0, f"{topic} to have leaders")
    return topic


def produce(c, topic, values, **conf) -> None:
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True, **conf})
    failed = []
    for v in values:
        p.produce(topic, value=v.encode(), on_delivery=lambda err, msg: err and failed.append(err))
    assert p.flush(60) == 0 and not failed, failed


def consume_all(c, topic, expect: int) -> list[str]:
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < expect and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value().decode())
    finally:
        consumer.close()
    return got


def test_real_kafka_brokers_register_and_serve(kc, kafka_home):
    assert kc.backend.name == "kafka" and kc.backend.kafka_home == kafka_home
    states = rows(kc)
    assert sorted(states) == [1, 2, 3]
    assert all(b["alive"] == "running" and b["registered"] for b in states.values())
    assert kc.controller in (1, 2, 3)
    # it is Kafka itself: the JVM runs kafka.Kafka from the fetched jars, and says so in its log
    cmdline = psutil.Process(states[1]["pid"]).cmdline()
    assert "kafka.Kafka" in cmdline and cmdline[cmdline.index("-cp") + 1].startswith(kafka_home)
    # (it registers in ZooKeeper, which is what the cluster waits for, a moment before it logs "started")
    wait_until(lambda: "started (kafka.server.KafkaServer)" in whole_log(kc, 1), "Kafka's 'started'")
    topic = new_topic(kc, partitions=3, **{"min.insync.replicas": 2})
    produce(kc, topic, [f"v{i}" for i in range(300)])
    assert sorted(consume_all(kc, topic, 300)) == sorted(f"v{i}" for i in range(300))
    df = kc.describe(topic)
    assert sorted(df["partition"]) == [0, 1, 2] and df["high_watermark"].sum() == 300
    assert all(sorted(isr) == [1, 2, 3] for isr in df["isr"])


def test_kill_the_leader_another_takes_over_and_restart_rejoins_the_isr(kc, restore):
    topic = new_topic(kc, **{"min.insync.replicas": 2})
    produce(kc, topic, [f"before-{i}" for i in range(50)])
    leader = leader_of(kc, topic, 0)
    pid = rows(kc)[leader]["pid"]
    kc.kill(leader)
    assert gone(pid) and rows(kc)[leader]["alive"] == "killed"
    # the controller notices when the dead broker's ZooKeeper session expires, and elects a new leader
    new = wait_until(lambda: (lambda ld: ld if ld not in (-1, leader) else None)(leader_of(kc, topic, 0)),
                     "a new leader")
    wait_until(lambda: leader not in partition_row(kc, topic, 0)["isr"], "the killed broker to leave the ISR")
    produce(kc, topic, [f"after-{i}" for i in range(50)])        # acks=all with ISR 2 >= min.insync.replicas
    kc.restart(leader)
    assert rows(kc)[leader]["alive"] == "running" and rows(kc)[leader]["registered"]
    wait_until(lambda: sorted(partition_row(kc, topic, 0)["isr"]) == [1, 2, 3], "the restarted broker back in the ISR")
    assert new != leader
    assert sorted(consume_all(kc, topic, 100)) == sorted([f"before-{i}" for i in range(50)] +
                                                           [f"after-{i}" for i in range(50)])


def test_stop_is_a_controlled_shutdown_that_moves_leadership_first(kc, restore):
    topic = new_topic(kc)
    leader = leader_of(kc, topic, 0)
    pid = rows(kc)[leader]["pid"]
    kc.stop(leader)
    assert gone(pid) and rows(kc)[leader]["alive"] == "stopped"
    log = whole_log(kc, leader)
    assert "Starting controlled shutdown" in log and "Controlled shutdown request returned successfully" in log
    # leadership moved before the broker went: no wait for a session to expire
    assert leader_of(kc, topic, 0) not in (-1, leader)
    kc.restart(leader)
    wait_until(lambda: leader in partition_row(kc, topic, 0)["isr"], "the restarted broker back in the ISR")


def test_pause_freezes_a_broker_and_resume_brings_it_back(kc, restore):
    topic = new_topic(kc)
    # a follower that is not the controller: freezing the controller is another lesson (a new one is elected)
    follower = next(r for r in partition_row(kc, topic, 0)["replicas"]
                    if r not in (leader_of(kc, topic, 0), kc.controller))
    kc.pause(follower)
    assert psutil.Process(rows(kc)[follower]["pid"]).status() == psutil.STATUS_STOPPED
    assert rows(kc)[follower]["alive"] == "paused"
    wait_until(lambda: follower not in partition_row(kc, topic, 0)["isr"], "the frozen follower to leave the ISR")
    kc.resume(follower)
    assert rows(kc)[follower]["alive"] == "running"
    wait_until(lambda: follower in partition_row(kc, topic, 0)["isr"], "the resumed follower back in the ISR")


def test_attach_controls_the_real_cluster_from_its_state_file(kc, restore):
    other = Cluster.attach(kc.dir)
    try:
        assert other.bootstrap_servers == kc.bootstrap_servers and other.backend.name == "kafka"
        assert other.controller == kc.controller
        pid = rows(kc)[2]["pid"]
        other.kill(2)
        wait_until(lambda: rows(kc)[2]["alive"] == "killed", "the owner to see broker 2 killed")
        assert gone(pid)
    finally:
        other.close()                                           # only disconnects
    assert rows(kc)[1]["alive"] == "running"


OWNER = textwrap.dedent("""
    import json, sys, time
    import kafkalab
    from kafkalab.cluster import KafkaBackend
    c = kafkalab.cluster(brokers=2, backend=KafkaBackend(sys.argv[1]), **{"zookeeper.session.timeout.ms": 4000})
    pids = [c.zookeeper.pid, c._res.watchdog.pid] + [int(p) for p in c.brokers["pid"]]
    print(json.dumps({"pids": pids, "dir": c.dir}), flush=True)
    time.sleep(600)
""")


def test_an_owner_killed_with_sigkill_takes_its_kafka_brokers_along(kafka_home, tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    owner = subprocess.Popen([sys.executable, str(script), kafka_home], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    info = None
    try:
        info = json.loads(owner.stdout.readline())
        assert all(not gone(p) for p in info["pids"])
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(lambda: all(gone(p) for p in info["pids"]), "ZooKeeper, the Kafka JVMs and the watchdog to exit",
                   timeout=20)
        wait_until(lambda: not os.path.exists(info["dir"]), "the watchdog to remove the temporary dir", timeout=10)
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait()
        owner.stdout.close()
        for pid in (info or {}).get("pids", []):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_kafkalab_up_with_the_kafka_backend(kafka_home, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, KAFKA_HOME=kafka_home)
    env.pop("KAFKALAB_CLUSTER_DIR", None)

    def cli(*args, timeout=120):
        return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                              env=env, timeout=timeout)
    directory = str(tmp_path / "up")
    up = cli("up", "--backend", "kafka", "--brokers", "2", "--dir", directory,
             "--config", "zookeeper.session.timeout.ms=4000")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = cli("status", "--dir", directory)
        assert status.returncode == 0 and "kafka" in status.stdout, status.stdout + status.stderr
        with open(os.path.join(directory, "cluster.json")) as f:
            state = json.load(f)
        assert state["backend"] == "kafka"
        pid = next(b["pid"] for b in state["brokers"] if b["id"] == 2)
        assert "kafka.Kafka" in psutil.Process(pid).cmdline()
        assert cli("kill", "2", "--dir", directory).returncode == 0 and gone(pid)
        restarted = cli("restart", "2", "--dir", directory)
        assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    finally:
        down = cli("down", "--dir", directory, timeout=90)
    assert down.returncode == 0, down.stdout + down.stderr
    with open(os.path.join(directory, "cluster.json")) as f:
        assert all(gone(b["pid"]) for b in json.load(f)["brokers"])
