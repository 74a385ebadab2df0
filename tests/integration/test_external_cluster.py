"""``ExternalCluster``: the Cluster controls for a cluster kafkalab did not start (the workshop's compose cluster).

There is no Docker engine here, so:

* the Docker API controls talk to a **fake Docker Engine** — an HTTP server on a
  Unix socket that answers the Engine API's paths and records every call — whose
  "containers" are the brokers of a real ``kafkalab.cluster(brokers=3)``: a
  ``POST /containers/<id>/kill`` SIGKILLs the broker process, ``/start`` restarts
  it, ``/pause`` SIGSTOPs it. Where a ``docker`` command-line client is installed,
  it is pointed at the same fake and must make the same calls as kafkalab;
* the printed-command path (no Docker access) runs against the same kind of
  cluster used as if external, with the test playing the instructor who runs
  the printed ``docker compose ...`` command, or does not (a timeout).

Either way ExternalCluster sees the cluster only through Kafka's APIs (and
ZooKeeper where it is given), exactly as it sees the compose cluster.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer

import kafkalab
from kafkalab.cluster.docker_api import (BROKER_ID_LABEL, PROJECT_LABEL, DockerEngine, DockerError, container_state,
                                         demultiplex, docker_controls)
from kafkalab.cluster.external import ExternalCluster
from kafkalab.lab import ENV_VAR

from tests.helpers.fake_docker import FakeDocker, Instructor, broker_containers  # noqa: E402  (tests/helpers/fake_docker.py)

pytestmark = pytest.mark.cluster

FAST = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000}


@pytest.fixture
def fake_docker():
    made = []

    def make(*args, **kwargs):
        d = FakeDocker(*args, **kwargs)
        made.append(d)
        return d
    yield make
    for d in made:
        d.close()


# -- the Docker API client, against the fake ---------------------------------------------------------------------

def test_docker_engine_speaks_the_engine_api(fake_docker):
    docker = fake_docker(broker_containers())
    engine = DockerEngine(docker.host)
    assert engine.ping()
    listed = engine.containers({PROJECT_LABEL: "kafkalab"})
    assert sorted(c["Names"][0] for c in listed) == ["/kafkalab-kafka-1-1", "/kafkalab-kafka-2-1",
                                                     "/kafkalab-kafka-3-1", "/kafkalab-zookeeper-1"]
    cid = next(c["Id"] for c in listed if c["Labels"].get(BROKER_ID_LABEL) == "2")
    engine.kill(cid)
    assert container_state(engine.inspect(cid)) == "killed"
    engine.start(cid)
    engine.pause(cid)
    assert container_state(engine.inspect(cid)) == "paused"
    engine.unpause(cid)
    engine.stop(cid, 7)
    assert container_state(engine.inspect(cid)) == "stopped"
    assert docker.actions() == [("kill", cid, {"signal": "SIGKILL"}), ("start", cid, {}), ("pause", cid, {}),
                                ("unpause", cid, {}), ("stop", cid, {"t": "7"})]
    assert json.loads(docker.calls[1][2]["filters"]) == {"label": ["com.docker.compose.project=kafkalab"]}
    assert "started" in engine.logs(cid, 5)
    with pytest.raises(DockerError, match="No such container: nope") as e:
        engine.inspect("nope")
    assert e.value.status == 404
    with pytest.raises(DockerError, match="is not running"):
        engine.kill(cid)   # it is stopped


def test_the_docker_command_line_makes_the_same_calls(fake_docker):
    """The real docker client, pointed at the fake, asks for what kafkalab asks for: the same paths and
    parameters (so the fake, and kafkalab's client, follow the real API)."""
    docker_cli = shutil.which("docker")
    if docker_cli is None:
        pytest.skip("no docker command-line client installed")
    docker = fake_docker(broker_containers())
    name = "kafkalab-kafka-2-1"
    cid = docker.find(name).id
    for args in (["kill", "--signal", "SIGKILL", name], ["start", name], ["pause", name], ["unpause", name],
                 ["stop", "-t", "7", name]):
        run = subprocess.run([docker_cli, "-H", docker.host, *args], capture_output=True, text=True, timeout=20,
                             env={**os.environ, "DOCKER_CONFIG": docker.dir})
        assert run.returncode == 0, f"docker {' '.join(args)}: {run.stderr}"
    by_cli = [(a, c, {k: v for k, v in q.items() if k in ("signal", "t")}) for a, c, q in docker.actions()]
    docker.calls.clear()
    docker.find(name).status = "running"
    engine = DockerEngine(docker.host)
    engine.kill(cid)
    engine.start(cid)
    engine.pause(cid)
    engine.unpause(cid)
    engine.stop(cid, 7)
    assert docker.actions() == by_cli


def test_demultiplex_and_container_states():
    frames = bytes([1, 0, 0, 0, 0, 0, 0, 3]) + b"ab\n" + bytes([2, 0, 0, 0, 0, 0, 0, 2]) + b"c\n"
    assert demultiplex(frames) == b"ab\nc\n"
    assert demultiplex(b"plain tty output\n") == b"plain tty output\n"
    assert container_state({"State": {"Status": "exited", "ExitCode": 137}}) == "killed"
    assert container_state({"State": {"Status": "exited", "ExitCode": 143}}) == "stopped"
    assert container_state({"State": {"Status": "exited", "ExitCode": 1}}) == "exited"
    assert container_state({"State": "exited", "Status": "Exited (137) 2 seconds ago"}) == "killed"
    assert container_state({"State": {"Status": "paused"}}) == "paused"


def test_brokers_are_found_by_label_else_by_service_name_within_the_project(fake_docker):
    docker = fake_docker(broker_containers(label_ids=False))
    controls, why = docker_controls("kafkalab", docker.host)
    assert controls is not None, why
    found = controls.refresh()
    assert sorted(found) == [1, 2, 3]
    assert all(c["Labels"][PROJECT_LABEL] == "kafkalab" for c in found.values())
    assert controls.container_name(1) == "kafkalab-kafka-1-1"
    none, why = docker_controls("elsewhere", docker.host)
    assert none is None and "no broker containers of compose project 'elsewhere'" in why


def test_without_a_docker_socket_the_controls_are_printed_commands(tmp_path, monkeypatch):
    monkeypatch.delenv("KAFKALAB_DOCKER_CONTROL", raising=False)
    missing = f"unix://{tmp_path}/docker.sock"
    ext = ExternalCluster("kafka-1:19092,kafka-2:19092", docker_host=missing)   # nothing is contacted yet
    assert ext.controls == "print" and "no Docker socket" in ext.printed.why
    assert ext.printed.command("kill", 2) == "docker compose kill kafka-2"
    with pytest.raises(DockerError, match="no Docker socket"):
        ExternalCluster("kafka-1:19092", docker_host=missing, controls="docker")
    not_docker = tmp_path / "not-docker.sock"
    import socket
    with socket.socket(socket.AF_UNIX) as s:   # a socket nobody listens on: refused
        s.bind(str(not_docker))
        ext = ExternalCluster("kafka-1:19092", docker_host=f"unix://{not_docker}")
    assert ext.controls == "print" and "cannot be reached" in ext.printed.why


def test_connect_gives_an_external_cluster_only_where_the_environment_says_how_it_runs(monkeypatch):
    for var in ("KAFKALAB_ZOOKEEPER_CONNECT", "KAFKALAB_COMPOSE_PROJECT", "KAFKALAB_CLUSTER_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KAFKALAB_DOCKER_CONTROL", "print")
    with kafkalab.mini() as external:
        monkeypatch.setenv(ENV_VAR, external.bootstrap_servers)
        kafka = kafkalab.connect()
        assert kafka.cluster is None, "any Kafka: no controls"
        kafka.close()
        monkeypatch.setenv("KAFKALAB_COMPOSE_PROJECT", "kafkalab")
        kafka = kafkalab.connect()
        try:
            assert isinstance(kafka.cluster, ExternalCluster) and kafka.cluster.controls == "print"
            assert ENV_VAR in repr(kafka) and "local cluster" not in repr(kafka)
            topic = kafka.create_topic("described", partitions=2)
            df = kafka.cluster.describe(topic)
            assert list(df["partition"]) == [0, 1] and list(df["leader"]) == [0, 0]
        finally:
            kafka.close()
        assert kafka.cluster.closed and not external.closed, "close() disconnects; the cluster runs on"


# -- against a real 3-broker cluster used as if external ------------------------------------------------------------

@pytest.fixture
def real_cluster(tmp_path):
    c = kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **FAST)
    threads: list[threading.Thread] = []
    c.background = threads   # restarts run in threads, as a container starts in the background
    try:
        yield c
    finally:
        for t in threads:
            t.join(30)
        c.close()


def produce(bootstrap: str, topic: str, n: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 2})
    for i in range(n):
        p.produce(topic, key=str(i).encode(), value=b"v")
    assert p.flush(15) == 0


def make_topic(c, name: str, partitions: int = 3) -> str:
    kafka = kafkalab.lab.LabKafka(c.bootstrap_servers)
    return kafka.create_topic(name, partitions=partitions, replication_factor=3)


def test_looking_matches_what_the_cluster_itself_says(real_cluster):
    c = real_cluster
    topic = make_topic(c, "orders")
    produce(c.bootstrap_servers, topic, 40)
    with ExternalCluster(c.bootstrap_servers, controls="print") as plain, \
            ExternalCluster(c.bootstrap_servers, zookeeper_connect=c.zookeeper_connect, controls="print") as zk:
        for ext in (plain, zk):
            assert ext.broker_ids == [1, 2, 3]
            assert ext.controller == c.controller
            table = ext.brokers.set_index("id")
            assert list(table["alive"]) == ["running"] * 3 and table["registered"].all()
            assert table["is_controller"].sum() == 1 and table.loc[c.controller, "is_controller"]
            assert list(table["container"]) == ["kafka-1", "kafka-2", "kafka-3"]
            ours, theirs = ext.describe(topic), c.describe(topic)
            assert ours.to_dict("records") == theirs.to_dict("records")
            assert ours["high_watermark"].sum() == 40
        assert sorted(zk.zk.get_children("/brokers/ids"), key=int) == ["1", "2", "3"]
        defaults = zk.lab_defaults().set_index("config")
        assert not defaults.loc["zookeeper.session.timeout.ms", "matches"]       # FAST: 4000, not the lab's 6000
        assert defaults.loc["zookeeper.session.timeout.ms", "broker"] == "4000"
        assert defaults.loc["offsets.topic.num.partitions", "matches"]
        assert zk.configs["zookeeper.session.timeout.ms"] == "4000"          # what lessons read, as on a Cluster
        assert zk.configs["num.partitions"] == "1" and len(zk.configs) > len(defaults)
        with pytest.raises(KeyError, match="no topic"):
            plain.describe("no-such-topic")
        with pytest.raises(KeyError, match="no topic"):
            zk.describe("no-such-topic")
        # the dashboard's snapshot works on it as on a local cluster
        from kafkalab.viz.cluster_state import collect
        snap = collect(kafkalab.lab.LabKafka(c.bootstrap_servers, cluster=plain), groups=False)
        assert not snap.errors, snap.errors
        assert [p.partition for p in snap.partitions if p.topic == topic] == [0, 1, 2]
        assert sum(p.high_watermark for p in snap.partitions if p.topic == topic) == 40


def test_docker_api_controls_break_and_mend_the_cluster(real_cluster, fake_docker):
    """kill / restart / pause / resume / stop through the Docker API; the fake's containers are the real brokers."""
    c = real_cluster
    containers = broker_containers()
    by_container = {ct.id: int(ct.labels[BROKER_ID_LABEL]) for ct in containers[:3]}

    def start(ct):
        t = threading.Thread(target=c.restart, args=(by_container[ct.id],), daemon=True)
        c.background.append(t)
        t.start()
    hooks = {"kill": lambda ct: c.kill(by_container[ct.id]), "stop": lambda ct: c.stop(by_container[ct.id]),
             "start": start, "pause": lambda ct: c.pause(by_container[ct.id]),
             "unpause": lambda ct: c.resume(by_container[ct.id])}
    docker = fake_docker(containers, hooks)
    said = []

    class Out:
        def write(self, text):
            said.append(text)
    ext = ExternalCluster(c.bootstrap_servers, zookeeper_connect=c.zookeeper_connect, docker_host=docker.host,
                          compose_project="kafkalab", timeout_s=20, out=Out())
    try:
        assert ext.controls == "docker"
        cid = {i: ct.id for ct in containers[:3] for i in [by_container[ct.id]]}
        topic = make_topic(c, "replicated", partitions=2)
        produce(c.bootstrap_servers, topic, 10)

        ext.kill(2)
        rows = ext.brokers.set_index("id")
        assert rows.loc[2, "alive"] == "killed" and rows.loc[2, "container"] == "kafkalab-kafka-2-1"
        assert c.brokers.set_index("id").loc[2, "alive"] == "killed", "the real broker process was SIGKILLed"
        assert rows.loc[2, "registered"], "its registration outlives it until the session times out"
        with pytest.raises(RuntimeError, match="not running"):
            ext.kill(2)

        ext.restart(2)                     # waits out the old registration, starts the container, waits
        assert any("old registration" in s for s in said)
        rows = ext.brokers.set_index("id")
        assert rows.loc[2, "alive"] == "running" and rows.loc[2, "registered"]

        ext.pause(3)
        assert ext.brokers.set_index("id").loc[3, "alive"] == "paused"
        assert ext.probe(3) == "silent", "a frozen broker accepts connections and answers nothing"
        ext.resume(3)
        assert ext.probe(3) == "running"

        ext.stop(1)
        rows = ext.brokers.set_index("id")
        assert rows.loc[1, "alive"] == "stopped" and not rows.loc[1, "registered"], "a controlled shutdown deregisters"
        ext.restart(1)
        assert ext.probe(1) == "running"

        assert [(a, q) for a, _, q in docker.actions()] == [
            ("kill", {"signal": "SIGKILL"}), ("start", {}), ("pause", {}), ("unpause", {}), ("stop", {"t": "30"}),
            ("start", {})]
        assert [cid_ for _, cid_, _ in docker.actions()] == [cid[2], cid[2], cid[3], cid[3], cid[1], cid[1]]
        assert "started" in ext.broker_log(1)
        df = ext.describe(topic)
        assert df["high_watermark"].sum() == 10
    finally:
        ext.close()


def background(c):
    """How an Instructor runs a command: in a thread the real_cluster fixture joins."""
    def run(what, fn):
        t = threading.Thread(target=fn, daemon=True, name=what)
        c.background.append(t)
        t.start()
    return run


def test_without_kill_rights_the_commands_are_printed_and_the_change_awaited(real_cluster):
    c = real_cluster
    instructor = Instructor(c, run=background(c))
    ext = ExternalCluster(c.bootstrap_servers, controls="print", timeout_s=20, out=instructor)  # no ZooKeeper either
    try:
        ext.kill(2)
        assert instructor.commands == ["docker compose kill kafka-2"]
        assert c.brokers.set_index("id").loc[2, "alive"] == "killed"
        assert ext.probe(2) == "down"
        assert "waiting up to 20 s" in instructor.text and "seen after" in instructor.text

        ext.restart(2)                     # without ZooKeeper: waits until the metadata drops broker 2, then asks
        assert instructor.commands[-1] == "docker compose start kafka-2"
        assert "old registration" in instructor.text
        assert c.brokers.set_index("id").loc[2, "registered"] and ext.probe(2) == "running"

        ext.pause(3)
        assert instructor.commands[-1] == "docker compose pause kafka-3"
        assert ext.brokers.set_index("id").loc[3, "alive"] == "silent"
        ext.resume(3)
        assert instructor.commands[-1] == "docker compose unpause kafka-3"
        assert ext.probe(3) == "running"
    finally:
        ext.close()


def test_a_printed_command_nobody_runs_times_out_and_changes_nothing(real_cluster):
    c = real_cluster
    instructor = Instructor(c, obey=False, run=background(c))
    ext = ExternalCluster(c.bootstrap_servers, controls="print", timeout_s=1.5, out=instructor)
    try:
        began = time.monotonic()
        with pytest.raises(TimeoutError, match=r"broker 1 is down .*docker compose kill kafka-1"):
            ext.kill(1)
        assert time.monotonic() - began < 5
        assert instructor.commands == ["docker compose kill kafka-1"]
        assert c.brokers.set_index("id").loc[1, "alive"] == "running"
        with pytest.raises(KeyError, match="no broker 7"):
            ext.kill(7)
        with pytest.raises(RuntimeError, match="not paused"):
            ext.resume(1)
    finally:
        ext.close()
