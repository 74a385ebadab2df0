"""Apache Kafka Connect's own distributed workers against the mini broker, held against Apache Kafka 3.9.

Two workers (``kafkalab.connect_cluster``: Connect 3.9.2's ``ConnectDistributed`` in two JVMs) share one
embedded mini broker for the whole module. On it: the workers' group (protocol type ``connect``, Connect's
``sessioned`` protocol) and compacted internal topics; a FileStreamSource connector whose records go through
two single message transforms (``HoistField``, ``InsertField``) into a topic, and a FileStreamSink that takes
the line back out (``ExtractField``) into a file; the connectors' status from the REST API; the source offsets
in the offsets topic; then the worker running the source task SIGKILLed while lines are being written: its
task RUNNING on the other worker, no line lost, the lines sent twice counted (Connect's at-least-once). A
one-broker Kafka 3.9 and one worker must give the same internal topics, group and records.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka.protocol.admin.groups import DescribeGroupsRequest, DescribeGroupsResponse

from tests.helpers import kafka_wire
from tests.helpers.txn_helpers import read_committed
import kafkalab
from tests.helpers.cluster_helpers import wait_until
from kafkalab.checks import read_partition
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.kafka_connect import ConnectError, ConnectRestError, fetch_connect
from kafkalab.kafka_connect.offsets import read_to_end
from kafkalab.lab import LabKafka

pytestmark = pytest.mark.timeout(240)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
SMT = "org.apache.kafka.connect.transforms."
INTERNAL = {"connect-offsets": 5, "connect-configs": 1, "connect-status": 5}


def source_config(path, topic: str) -> dict:
    """A line becomes {"line": <the line>, "source": "kafkalab"}: HoistField wraps it, InsertField adds a field."""
    return {"connector.class": SOURCE, "file": str(path), "topic": topic, "tasks.max": 1,
            "transforms": "hoist,tag",
            "transforms.hoist.type": SMT + "HoistField$Value", "transforms.hoist.field": "line",
            "transforms.tag.type": SMT + "InsertField$Value", "transforms.tag.static.field": "source",
            "transforms.tag.static.value": "kafkalab"}


def sink_config(path, topic: str) -> dict:
    """ExtractField takes the line back out of the record, so the sink's file holds the lines themselves."""
    return {"connector.class": SINK, "file": str(path), "topics": topic, "tasks.max": 1,
            "transforms": "unwrap", "transforms.unwrap.type": SMT + "ExtractField$Value",
            "transforms.unwrap.field": "line"}


def lines_of(path) -> list[str]:
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class LineWriter:
    """A line every 20 ms appended to ``path`` and flushed one by one, as a log file grows, until ``stop()``."""

    def __init__(self, path, prefix: str):
        self.path, self.prefix, self.written = path, prefix, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with open(self.path, "a") as f:
            while not self._stop.is_set():
                line = f"{self.prefix} {len(self.written)}"
                f.write(line + "\n")
                f.flush()
                self.written.append(line)
                time.sleep(0.02)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        return self.written


def describe_group(bootstrap: str, group: str):
    """DescribeGroups v5 to the only broker (the coordinator of every group on a one-broker cluster)."""
    request = DescribeGroupsRequest(groups=[group], include_authorized_operations=False)
    return kafka_wire.call(bootstrap, request, DescribeGroupsResponse, 5).groups[0]


def topic_configs(bootstrap: str, topics) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}
    for topic in topics:
        resource = ConfigResource("topic", topic)
        entries = admin.describe_configs([resource])[resource].result(15)
        out[topic] = {name: e.value for name, e in entries.items() if not e.is_default}
    metadata = admin.list_topics(timeout=15).topics
    return {t: (len(metadata[t].partitions), out[t]) for t in topics}


def pipeline(connect, kafka_bootstrap: str, directory, name: str, lines: int) -> dict:
    """Source -> topic -> sink for ``lines`` lines; what each step holds once the sink has written them all."""
    src, out, topic = directory / f"{name}-in.txt", directory / f"{name}-out.txt", f"{name}-lines"
    src.write_text("".join(f"{name} line {i}\n" for i in range(lines)))
    connect.create_connector(f"{name}-source", source_config(src, topic))
    connect.create_connector(f"{name}-sink", sink_config(out, topic))
    wait_until(lambda: len(lines_of(out)) >= lines, f"{lines} lines in {out}", 60)
    size = src.stat().st_size
    wait_until(lambda: [r["offset"] for r in connect.source_offsets(f"{name}-source")] == [{"position": size}],
               "the source offset at the end of the file in the offsets topic", 30)
    return {"records": [json.loads(m.value()) for m in read_partition(kafka_bootstrap, topic, 0)],
            "keys": {m.key() for m in read_partition(kafka_bootstrap, topic, 0)},
            "out": lines_of(out), "in": lines_of(src), "size": size,
            "offsets": connect.source_offsets(f"{name}-source"), "rest_offsets": connect.offsets(f"{name}-source"),
            "status": connect.status_table([f"{name}-source", f"{name}-sink"])}


@pytest.fixture(scope="module")
def connect_home():
    return fetch_connect()


@pytest.fixture(scope="module")
def mini_connect(connect_home, tmp_path_factory):
    broker = kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("mini")), **{"group.initial.rebalance.delay.ms": 0})
    kafka = LabKafka(broker.bootstrap_servers, broker=broker)
    work = tmp_path_factory.mktemp("connect")
    started = time.monotonic()
    try:
        with kafkalab.connect_cluster(kafka, workers=2, work_dir=str(work)) as connect:
            print(f"two workers ready in {time.monotonic() - started:.1f} s")
            yield kafka, connect, work
    finally:
        kafka.close()


@pytest.fixture(scope="module")
def mini_pipeline(mini_connect):
    kafka, connect, work = mini_connect
    return pipeline(connect, kafka.bootstrap_servers, work, "first", 20)


def test_workers_form_one_group_with_compacted_internal_topics(mini_connect):
    kafka, connect, _ = mini_connect
    assert connect.info()["version"] == "3.9.2"
    assert {SOURCE, SINK, SMT + "InsertField$Value", SMT + "HoistField$Value"} <= set(connect.plugins())
    configs = topic_configs(kafka.bootstrap_servers, INTERNAL)
    assert configs == {t: (n, {"cleanup.policy": "compact"}) for t, n in INTERNAL.items()}
    # both workers are healthy, so both joined; a rebalance may still be finishing under load
    wait_until(lambda: describe_group(kafka.bootstrap_servers, "connect-cluster").group_state == "Stable",
               "the workers' group Stable", 30)
    group = describe_group(kafka.bootstrap_servers, "connect-cluster")
    assert (group.error_code, group.protocol_type, group.protocol_data, len(group.members)) == \
        (0, "connect", "sessioned", 2)
    # each member's metadata is Connect's (the worker's REST URL in it), passed through by the broker unread
    urls = [w.url.encode() for w in connect.workers]
    assert sorted(next(i for i, url in enumerate(urls) if url in m.member_metadata) for m in group.members) == [0, 1]


def test_file_source_through_transforms_to_file_sink(mini_pipeline):
    run = mini_pipeline
    assert run["records"] == [{"line": line, "source": "kafkalab"} for line in run["in"]]
    assert run["keys"] == {None}            # FileStreamSource sends no key
    assert run["out"] == run["in"]          # the sink wrote each line once, in order
    status = run["status"]
    assert list(status["state"]) == ["RUNNING"] * 4
    assert list(status["type"]) == ["source", "source", "sink", "sink"]
    assert set(status["worker"]) <= {0, 1} and status["worker"].notna().all()


def test_source_offsets_in_the_offsets_topic(mini_pipeline):
    run = mini_pipeline
    (row,) = run["offsets"]
    # FileStreamSource: the source partition is the file, the source offset the bytes read so far
    assert row["connector"] == "first-source" and row["partition"] == {"filename": run["offsets"][0]["partition"]["filename"]}
    assert row["partition"]["filename"].endswith("first-in.txt") and row["offset"] == {"position": run["size"]}
    # KIP-875's REST endpoint reads the same topic
    assert run["rest_offsets"] == [{"partition": row["partition"], "offset": row["offset"]}]


def test_rest_errors_and_bad_worker_indexes(mini_connect):
    _, connect, work = mini_connect
    with pytest.raises(ConnectRestError) as e:
        connect.create_connector("broken", {"connector.class": "org.example.NoSuchConnector"}, wait=False)
    # Connect 3.9 answers an unknown connector class with 500 and "Failed to find any class that implements Connector"
    assert e.value.status == 500 and "Failed to find any class that implements Connector" in str(e.value)
    with pytest.raises(ConnectRestError) as e:
        connect.status("nobody")
    assert e.value.status == 404 and "nobody" in str(e.value)
    with pytest.raises(IndexError, match="no worker 2: this Connect cluster has workers 0..1"):
        connect.kill(2)
    with pytest.raises(TypeError):
        connect.stop("1")
    # a connector whose task fails: wait_until_running says so, with the task's trace
    connect.create_connector("missing-file", {"connector.class": SINK, "topics": "nowhere",
                                              "file": str(work / "no-such-dir" / "out.txt")}, wait=False)
    with pytest.raises(ConnectError, match="FAILED"):
        connect.wait_until_running("missing-file", timeout=30)
    connect.delete_connector("missing-file")
    wait_until(lambda: "missing-file" not in connect.connectors(), "the connector deleted", 15)


def test_a_killed_workers_task_moves_and_no_line_is_lost(mini_connect, mini_pipeline, record_property):
    kafka, connect, work = mini_connect
    src, out = work / "crash-in.txt", work / "crash-out.txt"
    src.write_text("")
    connect.create_connector("crash-source", source_config(src, "crash-lines"))
    connect.create_connector("crash-sink", sink_config(out, "crash-lines"))
    placed = connect.tasks_per_worker()
    victim = next(i for i, tasks in placed.items() if "crash-source-0" in tasks)
    survivor = 1 - victim
    victim_led = connect.leader() == victim
    assert connect.leader() in (0, 1)
    writer = LineWriter(src, "crash line")
    try:
        wait_until(lambda: len(lines_of(out)) >= 50, "the sink writing", 30)
        killed_at = time.monotonic()
        connect.kill(victim)
        assert not connect.workers[victim].running
        status = connect.wait_until_running("crash-source", timeout=60)
        moved_s = time.monotonic() - killed_at
        time.sleep(1.0)
    finally:
        written = writer.stop()
    assert status["tasks"][0]["worker_id"] == connect.workers[survivor].worker_id
    for name in ("crash-sink", "first-source", "first-sink"):   # moved in the same rebalance, if they were there
        connect.wait_until_running(name, timeout=30)
    assert connect.tasks_per_worker()[victim] == []
    assert sorted(connect.tasks_per_worker()[survivor]) == ["crash-sink-0", "crash-source-0", "first-sink-0",
                                                            "first-source-0"]
    wait_until(lambda: set(written) <= set(lines_of(out)), "every written line in the sink's file", 60)
    topic = [json.loads(m.value())["line"] for m in read_partition(kafka.bootstrap_servers, "crash-lines", 0)]
    in_topic, in_file = collections.Counter(topic), collections.Counter(lines_of(out))
    assert set(in_topic) == set(written) and set(in_file) == set(written)   # at-least-once: nothing lost
    twice_in_topic = sum(n - 1 for n in in_topic.values())
    twice_in_file = sum(n - 1 for n in in_file.values())
    # the source task resumed from the last offset flushed (offset.flush.interval.ms=1000): what it had read
    # after that flush was read and sent again; a sink redelivers what its consumer group had not committed
    report = (f"task moved {moved_s:.1f} s after the kill of the {'leader' if victim_led else 'other worker'}; "
              f"{len(written)} lines written, "
              f"{twice_in_topic} sent twice to the topic, {twice_in_file} written twice to the file")
    print(report)
    record_property("connect_failover", report)
    # the killed worker comes back under the same id and rejoins the group
    restarted_at = time.monotonic()
    connect.restart(victim)
    print(f"worker restarted in {time.monotonic() - restarted_at:.1f} s")
    wait_until(lambda: len(describe_group(kafka.bootstrap_servers, "connect-cluster").members) == 2,
               "two members again", 30)
    if victim_led:   # the survivor took over as the group's leader
        wait_until(lambda: connect.leader() == survivor, "the survivor leading", 30)
    for name in ("crash-source", "crash-sink", "first-source", "first-sink"):
        connect.wait_until_running(name, timeout=60)


def test_a_worker_refuses_an_offsets_topic_that_is_not_compacted(mini_connect, tmp_path):
    """Connect reads each internal topic's cleanup.policy with DescribeConfigs and will not start on one that
    would delete its records: the worker exits, and connect_cluster() says why, from the worker's log."""
    kafka, _, _ = mini_connect
    kafka.create_topic("deleting-offsets", partitions=1, **{"cleanup.policy": "delete"})
    with pytest.raises(ConnectError) as e:
        kafkalab.connect_cluster(kafka, workers=1, work_dir=str(tmp_path), group_id="refused",
                                 offset_storage_topic="deleting-offsets", config_storage_topic="refused-configs",
                                 status_storage_topic="refused-status", timeout=60)
    message = str(e.value)
    assert message.startswith("worker 0 failed to start and was stopped\norg.apache.kafka.common.config.ConfigException")
    assert "'deleting-offsets'" in message and "cleanup.policy=delete" in message
    assert not [p for p in psutil.Process().children(recursive=True)
                if p.is_running() and "refused" in " ".join(p.cmdline())]


def test_fetch_connect_command(connect_home):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "kafkalab.cli", "fetch-connect"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == str(connect_home)
    jars = sorted(p.name for p in (connect_home / "libs").glob("*.jar"))
    for artifact in ("connect-runtime", "connect-file", "connect-json", "connect-transforms", "connect-api",
                     "kafka-clients", "slf4j-reload4j"):
        assert any(j.startswith(artifact + "-") for j in jars), artifact
    assert "connect-runtime-3.9.2.jar" in jars and "kafka-clients-3.9.2.jar" in jars
    # a failed fetch (one line, nothing left in the cache): tests/unit/kafka_connect/test_kafka_connect_config.py


OWNER = textwrap.dedent("""
    import time
    import kafkalab
    broker = kafkalab.mini()
    connect = kafkalab.connect_cluster(broker, workers=1, wait=False)
    print(connect.workers[0].pid, connect.dir, broker.log_dir, flush=True)
    time.sleep(600)
""")


def test_no_jvm_left_when_its_owner_is_killed(connect_home):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               KAFKALAB_NO_PDEATHSIG="1")   # the watchdog alone must be enough
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid, work, broker_dir = owner.stdout.readline().split()
        jvm = psutil.Process(int(pid))
        wait_until(lambda: "ConnectDistributed" in " ".join(jvm.cmdline()), "the JVM started", 15)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(lambda: not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE,
                   "the worker's JVM gone after its owner died", 30)
        wait_until(lambda: not os.path.exists(work), "its temporary directory removed", 30)
        wait_until(lambda: not os.path.exists(broker_dir), "the in-process broker's temporary directory removed", 30)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


@pytest.mark.cluster
def test_kafka_39_gives_the_same_topics_group_and_records(mini_connect, mini_pipeline, tmp_path):
    """One Kafka 3.9 broker (ZooKeeper mode) and one worker: the same pipeline, the same internal topics."""
    mini_configs = topic_configs(mini_connect[0].bootstrap_servers, INTERNAL)
    backend = KafkaBackend(str(fetch_kafka("3.9")))
    with kafkalab.cluster(brokers=1, backend=backend, dir=str(tmp_path / "kafka")) as cl:
        with kafkalab.connect_cluster(cl, workers=1, work_dir=str(tmp_path / "connect")) as connect:
            run = pipeline(connect, cl.bootstrap_servers, tmp_path, "first", 20)
            group = describe_group(cl.bootstrap_servers, "connect-cluster")
            configs = topic_configs(cl.bootstrap_servers, INTERNAL)
    assert (group.group_state, group.protocol_type, group.protocol_data, len(group.members)) == \
        ("Stable", "connect", "sessioned", 1)
    assert configs == mini_configs
    for key in ("records", "keys", "out", "in", "size"):
        assert run[key] == mini_pipeline[key], key
    # the same source offset; the source partition names this run's file
    assert [r["offset"] for r in run["offsets"]] == [r["offset"] for r in mini_pipeline["offsets"]]
    assert [r["offset"] for r in run["rest_offsets"]] == [r["offset"] for r in mini_pipeline["rest_offsets"]]
    assert list(run["status"]["state"]) == list(mini_pipeline["status"]["state"])


@pytest.mark.cluster
def test_on_three_mini_brokers_the_pipeline_survives_a_killed_leader(shared_cluster, connect_home, tmp_path):
    """On the lab's 3-broker cluster (ZooKeeper and three mini broker processes): the internal topics are
    replicated 3 times, the pipeline runs, and with the leader of its topic SIGKILLed the lines written
    meanwhile still reach the sink (the workers' producers and consumers follow the new leader)."""
    from tests.helpers.cluster_helpers import leader_of, restore_brokers
    c = shared_cluster
    try:
        with kafkalab.connect_cluster(c, workers=1, work_dir=str(tmp_path / "connect"),
                                      **{"group.id": "connect-three-brokers", "config.storage.topic": "c3-configs",
                                         "offset.storage.topic": "c3-offsets",
                                         "status.storage.topic": "c3-status"}) as connect:
            run = pipeline(connect, c.bootstrap_servers, tmp_path, "three", 20)
            assert run["out"] == run["in"] == [f"three line {i}" for i in range(20)]
            admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
            meta = admin.list_topics(timeout=15).topics
            assert {len(p.replicas) for t in ("c3-configs", "c3-offsets", "c3-status")
                    for p in meta[t].partitions.values()} == {3}
            leader = leader_of(c, "three-lines", 0)
            c.kill(leader)
            with open(tmp_path / "three-in.txt", "a") as f:
                f.write("".join(f"three line {i}\n" for i in range(20, 30)))
            wait_until(lambda: len(set(lines_of(tmp_path / "three-out.txt"))) == 30,
                       "the 10 lines written after the leader was killed in the sink's file", 90)
            assert set(lines_of(tmp_path / "three-out.txt")) == {f"three line {i}" for i in range(30)}
            assert leader_of(c, "three-lines", 0) not in (-1, leader)
    finally:
        restore_brokers(c, timeout=60)


def test_close_leaves_no_jvm(mini_connect):
    _, connect, _ = mini_connect
    pids = [w.pid for w in connect.workers]
    connect.close()
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not [p for p in psutil.Process().children(recursive=True)
                if p.is_running() and "ConnectDistributed" in " ".join(p.cmdline())]


def test_exactly_once_source_a_killed_worker_leaves_no_duplicate(mini_connect, record_property):
    """KIP-618 (exactly.once.source.support=enabled): each poll's records and source offset are written in one
    transaction (transactional.id <group>-<connector>-<task>); the task started on the other worker fences the
    dead one's producer (InitProducerId), its open transaction is aborted, and it resumes from the last
    committed offset. A read_committed reader sees every line exactly once."""
    kafka, first, work = mini_connect
    first.close()   # (done already by test_close_leaves_no_jvm) two clusters at once: 4 JVMs on a laptop's cores
    src = work / "eos-in.txt"
    src.write_text("")
    names = {"group_id": "connect-eos", "offset_storage_topic": "connect-eos-offsets",
             "config_storage_topic": "connect-eos-configs", "status_storage_topic": "connect-eos-status"}
    with kafkalab.connect_cluster(kafka, workers=2, work_dir=str(work / "eos"), exactly_once_source_support="enabled",
                                  **names) as connect:
        connect.create_connector("eos-source", {**source_config(src, "eos-lines"), "exactly.once.support": "required",
                                                "transaction.boundary": "poll"})
        victim = next(i for i, tasks in connect.tasks_per_worker().items() if "eos-source-0" in tasks)
        writer = LineWriter(src, "eos line")
        try:
            wait_until(lambda: len(read_committed(kafka.bootstrap_servers, "eos-lines", 50, 5, 0)) >= 50,
                       "the source writing", 30)
            killed_at = time.monotonic()
            connect.kill(victim)
            status = connect.wait_until_running("eos-source", timeout=60)
            moved_s = time.monotonic() - killed_at
            time.sleep(1.0)
        finally:
            written = writer.stop()
        assert status["tasks"][0]["worker_id"] == connect.workers[1 - victim].worker_id
        committed = [json.loads(v)["line"] for v in read_committed(kafka.bootstrap_servers, "eos-lines", len(written))]
        uncommitted = read_to_end(kafka.bootstrap_servers, "eos-lines", "read_uncommitted")
        offsets = connect.source_offsets("eos-source")
    assert sorted(committed, key=lambda line: int(line.split()[-1])) == written   # each line once, none lost
    assert committed == written                                                  # and in order
    assert offsets[0]["offset"] == {"position": src.stat().st_size}
    report = (f"exactly-once source: task moved {moved_s:.1f} s after the kill; {len(written)} lines, none twice "
              f"read_committed; {len(uncommitted) - len(written)} records of aborted transactions in the log")
    print(report)
    record_property("connect_eos_failover", report)
