"""``kafkalab.cluster(backend="kafka", mode="kraft")``: Apache Kafka 4.x in KRaft mode, no ZooKeeper — three
controllers (a Raft quorum) and three brokers, broken with the same controls as the ZooKeeper cluster, and
the quorum read with DescribeQuorum. The distribution is ``kafkalab fetch-kafka 4``'s.

One 3 + 3 cluster serves the module; each test leaves every node running again. A combined-mode cluster
(``process.roles=broker,controller``) is started by an owner process that the last-but-one test kills.
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

import pandas as pd
import psutil
import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
from tests.helpers.kafka_wire import api_versions_features
from kafkalab.broker.server.broker_features import SUPPORTED_FEATURES
from kafkalab.controller.feature_control_manager import BOOTSTRAP_FEATURE_LEVELS, KAFKA_BOOTSTRAP_FEATURE_LEVELS
import kafkalab
from kafkalab.cluster import Cluster
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft import KRaftCluster
from kafkalab.cluster.kraft_config import KRaftBackend

pytestmark = pytest.mark.cluster

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = {"replica.lag.time.max.ms": 3000}
CONTROLLERS = [3001, 3002, 3003]
wait_until = functools.partial(cluster_helpers.wait_until, timeout=60, interval=0.2)


@pytest.fixture(scope="module")
def kafka_home():
    return str(fetch_kafka("4"))


@pytest.fixture(scope="module")
def kr(kafka_home, tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("kraft") / "cluster"), backend=KRaftBackend(kafka_home),
                          mode="kraft", **FAST) as c:
        yield c


def nodes(c) -> dict[int, dict]:
    return {r["id"]: r for r in c.nodes.to_dict("records")}


@pytest.fixture
def restore(kr):
    yield
    for node_id, row in nodes(kr).items():
        if row["alive"] == "paused":
            kr.resume(node_id)
        elif row["alive"] != "running":
            kr.restart(node_id)
    wait_until(lambda: all(r["fenced"] is False for r in kr.brokers.to_dict("records")), "every broker unfenced")
    wait_until(lambda: len(kr.quorum().query("status == 'Follower' and lag < 100")) == 2, "two followers caught up")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def partition(c, topic: str, p: int = 0) -> dict:
    df = c.describe(topic)
    return df[df["partition"] == p].iloc[0].to_dict()


def leader_of(c, topic: str, p: int = 0) -> int:
    leader = partition(c, topic, p)["leader"]
    return -1 if leader is None or pd.isna(leader) else int(leader)


def new_topic(c, partitions=1, rf=3, **configs) -> str:
    topic = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, rf, config={k: str(v) for k, v in configs.items()})],
                        operation_timeout=30)[topic].result(40)
    wait_until(lambda: leader_of(c, topic, partitions - 1) >= 0, f"{topic} to have leaders")
    return topic


def produce(c, topic, values) -> None:
    p = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "enable.idempotence": True})
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


def test_kraft_nodes_have_their_roles_and_a_quorum_without_zookeeper(kr, kafka_home):
    assert kr.backend.version[0] == 4 and kr.zookeeper is None
    table = nodes(kr)
    assert sorted(table) == [1, 2, 3, *CONTROLLERS]
    assert {i: table[i]["roles"] for i in table} == {1: "broker", 2: "broker", 3: "broker",
                                                     3001: "controller", 3002: "controller", 3003: "controller"}
    assert all(r["alive"] == "running" for r in table.values())
    assert all(table[i]["registered"] and table[i]["fenced"] is False for i in (1, 2, 3))
    assert kr.describe()["roles"].tolist() == ["controller"] * 3 + ["broker"] * 3
    # every process is Kafka 4 itself, run with its node's properties
    for i, row in table.items():
        cmdline = psutil.Process(row["pid"]).cmdline()
        assert "kafka.Kafka" in cmdline and cmdline[cmdline.index("-cp") + 1].startswith(kafka_home)
        with open(cmdline[-1]) as f:
            props = f.read()
        assert f"process.roles={row['roles']}\n" in props and f"node.id={i}\n" in props
        assert "zookeeper.connect" not in props
    q = kr.quorum()                                            # DescribeQuorum, as kafka-metadata-quorum shows it
    assert q.attrs["leader_id"] in CONTROLLERS and q.attrs["leader_epoch"] >= 1 and kr.controller == q.attrs["leader_id"]
    by_id = q.set_index("node_id")["status"].to_dict()
    assert by_id == {**{c: "Follower" for c in CONTROLLERS}, q.attrs["leader_id"]: "Leader", 1: "Observer",
                     2: "Observer", 3: "Observer"}
    assert q.attrs["high_watermark"] > 0 and (q["log_end_offset"] > 0).all()
    with pytest.raises(AttributeError, match="no ZooKeeper"):
        kr.zk


def test_kafka_4_finalizes_what_the_mini_cluster_leaves_out(kr):
    """Kafka 4.4's answer to the ApiVersions feature questions that test_kraft_features.py asks a mini KRaft node:
    the mini cluster finalizes Kafka's default levels less the protocols it does not serve."""
    broker = kr.bootstrap_servers.split(",")[0]
    controller = kr.bootstrap_controllers.split(",")[0]
    for node in (broker, controller):
        v3, v4 = (api_versions_features(node, v) for v in (3, 4))
        assert v4["finalized"] == dict(KAFKA_BOOTSTRAP_FEATURE_LEVELS)   # kraft.version 0 (static quorum) not listed
        assert v3["finalized"] == v4["finalized"] and v4["epoch"] > 0
        assert set(v3["supported"]) == {"metadata.version"}                # v3: no feature whose minimum is 0
        # the mini broker knows every feature Kafka 4.4 knows, and implements no level above Kafka's
        assert set(v4["supported"]) == set(SUPPORTED_FEATURES)
        assert all(SUPPORTED_FEATURES[name][1] <= high for name, (_, high) in v4["supported"].items())
    mini = dict(BOOTSTRAP_FEATURE_LEVELS)
    assert {n: v for n, v in KAFKA_BOOTSTRAP_FEATURE_LEVELS if mini.get(n) != v} == {
        "share.version": 2, "streams.version": 1, "transaction.version": 2}


def test_acks_all_through_a_partition_leader_kill(kr, restore):
    topic = new_topic(kr, **{"min.insync.replicas": 2})
    produce(kr, topic, [f"before-{i}" for i in range(50)])
    leader = leader_of(kr, topic)
    pid = nodes(kr)[leader]["pid"]
    kr.kill(leader)
    assert gone(pid) and nodes(kr)[leader]["alive"] == "killed"
    # no session to expire in ZooKeeper: the controller fences the broker when its heartbeats stop
    wait_until(lambda: nodes(kr)[leader]["fenced"] is True, "the killed broker to be fenced")
    wait_until(lambda: leader_of(kr, topic) not in (-1, leader), "a new partition leader")
    assert leader not in partition(kr, topic)["isr"]
    produce(kr, topic, [f"after-{i}" for i in range(50)])       # acks=all with an ISR of 2 >= min.insync.replicas
    kr.restart(leader)
    wait_until(lambda: sorted(partition(kr, topic)["isr"]) == [1, 2, 3], "the restarted broker back in the ISR")
    assert sorted(consume_all(kr, topic, 100)) == sorted([f"before-{i}" for i in range(50)] +
                                                           [f"after-{i}" for i in range(50)])


def test_the_active_controller_killed_a_new_leader_with_a_higher_epoch(kr, restore):
    before = kr.quorum().attrs
    old = before["leader_id"]
    kr.kill(old)
    after = wait_until(lambda: (lambda a: a if a["leader_id"] not in (None, old) else None)(kr.quorum().attrs),
                       "a new active controller")
    assert after["leader_epoch"] > before["leader_epoch"] and after["leader_id"] in CONTROLLERS
    assert nodes(kr)[old]["alive"] == "killed"
    topic = new_topic(kr)                                       # the new active controller creates topics
    produce(kr, topic, ["x"])
    kr.restart(old)                                             # back as a follower of the new leader
    wait_until(lambda: (lambda q: q.get(old) == "Follower")(kr.quorum().set_index("node_id")["status"].to_dict()),
               "the restarted controller to follow")


def test_a_stopped_broker_is_fenced_and_leaves_the_isr_restarted_it_is_back(kr, restore):
    topic = new_topic(kr)
    broker = next(r for r in partition(kr, topic)["replicas"] if r != leader_of(kr, topic))
    kr.stop(broker)                                             # controlled shutdown: heartbeats ask to shut down
    assert nodes(kr)[broker]["alive"] == "stopped"
    wait_until(lambda: nodes(kr)[broker]["fenced"] is True, "the stopped broker to be fenced")
    wait_until(lambda: broker not in partition(kr, topic)["isr"], "the stopped broker out of the ISR")
    kr.restart(broker)
    assert nodes(kr)[broker]["fenced"] is False
    wait_until(lambda: broker in partition(kr, topic)["isr"], "the restarted broker back in the ISR")


def test_pause_a_follower_broker_and_resume_it(kr, restore):
    topic = new_topic(kr)
    follower = next(r for r in partition(kr, topic)["replicas"] if r != leader_of(kr, topic))
    kr.pause(follower)
    assert psutil.Process(nodes(kr)[follower]["pid"]).status() == psutil.STATUS_STOPPED
    # frozen: no heartbeats (fenced after broker.session.timeout.ms) and no fetches (out of the ISR)
    wait_until(lambda: nodes(kr)[follower]["fenced"] is True, "the frozen broker to be fenced")
    wait_until(lambda: follower not in partition(kr, topic)["isr"], "the frozen follower out of the ISR")
    kr.resume(follower)
    wait_until(lambda: follower in partition(kr, topic)["isr"], "the resumed follower back in the ISR")
    # the unfencing is a record of its own: the view nodes() reads may show it a moment after the ISR join
    wait_until(lambda: nodes(kr)[follower]["fenced"] is False, "the resumed broker unfenced")


def test_pause_a_follower_controller_and_resume_it(kr, restore):
    leader = kr.controller
    follower = next(c for c in CONTROLLERS if c != leader)
    kr.pause(follower)
    topic = new_topic(kr)                                       # a majority (2 of 3) still commits
    produce(kr, topic, ["x"])
    q = kr.quorum()                                             # ... without the frozen one, which falls behind
    assert q.attrs["leader_id"] != follower and q.set_index("node_id").loc[follower, "lag"] > 0
    kr.resume(follower)
    wait_until(lambda: kr.quorum().set_index("node_id").loc[follower, "lag"] == 0, "the resumed controller caught up")


def test_attach_reads_and_controls_the_kraft_cluster(kr):
    other = Cluster.attach(kr.dir)
    try:
        assert isinstance(other, KRaftCluster) and other.bootstrap_servers == kr.bootstrap_servers
        assert other.controller == kr.controller and other.cluster_id == kr.cluster_id
        assert nodes(other)[1]["pid"] == nodes(kr)[1]["pid"]
    finally:
        other.close()                                           # only disconnects
    assert nodes(kr)[1]["alive"] == "running"


OWNER = textwrap.dedent("""
    import json, sys, time
    import kafkalab
    from kafkalab.cluster.kraft_config import KRaftBackend
    c = kafkalab.cluster(brokers=3, backend=KRaftBackend(sys.argv[1]), mode="kraft", combined=True)
    pids = [c._res.watchdog.pid] + [int(p) for p in c.nodes["pid"]]
    print(json.dumps({"pids": pids, "dir": c.dir}), flush=True)
    time.sleep(600)
""")


def test_combined_mode_and_an_owner_killed_with_sigkill_takes_every_node_along(kafka_home, tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    owner = subprocess.Popen([sys.executable, str(script), kafka_home], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    info = None
    try:
        info = json.loads(owner.stdout.readline())
        assert len(info["pids"]) == 4 and all(not gone(p) for p in info["pids"])
        combined = KRaftCluster.attach(info["dir"])
        try:
            table = nodes(combined)
            assert sorted(table) == [1, 2, 3] and {r["roles"] for r in table.values()} == {"broker,controller"}
            q = combined.quorum()
            assert sorted(q["node_id"]) == [1, 2, 3] and set(q["status"]) == {"Leader", "Follower"}
            topic = new_topic(combined)
            produce(combined, topic, [f"v{i}" for i in range(20)])
            assert combined.describe(topic)["high_watermark"].sum() == 20
        finally:
            combined.close()
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(lambda: all(gone(p) for p in info["pids"]), "the Kafka JVMs and the watchdog to exit", timeout=20)
        wait_until(lambda: not os.path.exists(info["dir"]), "the watchdog to remove the temporary dir", timeout=10)
    finally:
        if owner.poll() is None:
            owner.kill()
        owner.wait()
        owner.stdout.close()
        for pid in (info or {}).get("pids", []):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_close_stops_brokers_then_controllers_and_leaves_nothing_running(kr):
    pids = [int(p) for p in kr.nodes["pid"]] + [kr._res.watchdog.pid]
    kr.close()
    assert kr.closed and all(gone(p) for p in pids)


def test_kafkalab_up_with_mode_kraft(kafka_home, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT, KAFKA_HOME=kafka_home)
    env.pop("KAFKALAB_CLUSTER_DIR", None)

    def cli(*args, timeout=150):
        return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                              env=env, timeout=timeout)
    directory = str(tmp_path / "up")
    up = cli("up", "--backend", "kafka", "--mode", "kraft", "--combined", "--brokers", "1", "--dir", directory)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "KRaft" in up.stdout
        status = cli("status", "--dir", directory)
        assert status.returncode == 0 and ("1 kafka broker(s) and 1 controller(s) (combined nodes: broker,controller) "
                                           "in KRaft mode, active controller 1") \
            in status.stdout and "broker,controller" in status.stdout, status.stdout + status.stderr
        with open(os.path.join(directory, "cluster.json")) as f:
            state = json.load(f)
        assert state["mode"] == "kraft" and [n["roles"] for n in state["nodes"]] == ["broker,controller"]
        pid = state["nodes"][0]["pid"]
        assert cli("kill", "1", "--dir", directory).returncode == 0 and gone(pid)
        restarted = cli("restart", "1", "--dir", directory)
        assert restarted.returncode == 0 and "now running" in restarted.stdout, restarted.stdout + restarted.stderr
    finally:
        down = cli("down", "--dir", directory, timeout=90)
    assert down.returncode == 0, down.stdout + down.stderr
    with open(os.path.join(directory, "cluster.json")) as f:
        assert all(gone(n["pid"]) for n in json.load(f)["nodes"])
    # the mini backend's combined nodes (kafkalab up --mode kraft --combined): tests/integration/test_mini_kraft_combined.py
