"""``kafkalab dump-log --cluster-metadata-decoder`` against Kafka 4.4's own ``kafka-dump-log.sh`` on the same files.

A combined-mode KRaft cluster (Kafka 4.4, three nodes that are broker and controller) creates a topic, loses
its active controller (SIGKILL) and gets it back, and writes snapshots (``metadata.log.max.snapshot.interval.ms``
set low, so ``.checkpoint`` files hold the whole state); then it stops, and every ``.log`` segment and
``.checkpoint`` snapshot of every node's ``__cluster_metadata-0`` is dumped by Kafka's tool
(``org.apache.kafka.tools.DumpLogSegments``) and by kafkalab's: the outputs must be the same, line for line.
"""
from __future__ import annotations

import os
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.failover_probe import kill_and_watch
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.tools import dump_log, metadata_log_df

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def stopped_cluster(tmp_path_factory):
    backend = KRaftBackend(str(fetch_kafka("4")))
    c = kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("kraft-meta") / "cluster"), backend=backend,
                         mode="kraft", combined=True, metadata_log_max_snapshot_interval_ms=2000)
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        for future in admin.create_topics([NewTopic("orders", 3, 3)]).values():
            future.result(30)
        cluster_helpers.wait_until(lambda: len(d := c.describe("orders")) == 3 and (d["leader"] >= 0).all(),
                                   "orders has leaders", timeout=60)
        failover = kill_and_watch(c, c.controller, "orders")   # SIGKILL the active controller, watch the log
        first_leader = failover["victim"]
        c.restart(first_leader)
        time.sleep(3)   # a snapshot interval passes: every node writes a .checkpoint with the topic in it
        dirs = {n: c.metadata_log_dir(n) for n in c.broker_ids}
        c.close()       # the tests read the files once nothing writes to them any more
        yield backend, dirs, first_leader, failover
    finally:
        c.close()


def files_of(dirs) -> list[str]:
    return sorted(os.path.join(d, f) for d in dirs.values() for f in os.listdir(d)
                  if f.endswith(".log") or f.endswith(".checkpoint"))


@pytest.fixture(scope="module")
def files(stopped_cluster):
    _, dirs, _, _ = stopped_cluster
    found = files_of(dirs)
    assert any(f.endswith(".checkpoint") and not f.endswith("00000000000000000000-0000000000.checkpoint")
               for f in found), f"no snapshot beyond the bootstrap one: {found}"
    return found


def test_every_file_dumps_as_kafka_dumps_it(stopped_cluster, files):
    import io
    backend, _, _, _ = stopped_cluster
    for path in files:
        kafka = subprocess.run(backend.dump_log_command([path], "--cluster-metadata-decoder"), capture_output=True,
                               text=True, timeout=120)
        assert kafka.returncode == 0, kafka.stderr
        out, err = io.StringIO(), io.StringIO()
        dump_log(path, cluster_metadata_decoder=True, file=out, err=err)
        ours, theirs = out.getvalue().splitlines(), kafka.stdout.splitlines()
        assert len(ours) == len(theirs), path
        for a, b in zip(ours, theirs):
            assert a == b, path


def test_the_topic_is_one_topic_record_and_a_partition_record_per_partition(stopped_cluster, files):
    _, dirs, first_leader, _ = stopped_cluster
    for d in dirs.values():
        df = metadata_log_df(d)
        topics = df[df["type"] == "TOPIC_RECORD"]
        orders = topics[topics["data"].map(lambda x: x["name"]) == "orders"]
        assert len(orders) == 1
        topic_id = orders.iloc[0]["data"]["topicId"]
        parts = df[(df["type"] == "PARTITION_RECORD") & (df["data"].map(lambda x: x.get("topicId")) == topic_id)]
        assert sorted(parts["data"].map(lambda x: x["partitionId"])) == [0, 1, 2]
        assert all(sorted(p["replicas"]) == [1, 2, 3] for p in parts["data"])
        # the killed controller's successor: a LeaderChange in a higher epoch, naming another leader
        changes = df[df["type"] == "LeaderChange"]
        assert changes["epoch"].is_monotonic_increasing and changes["epoch"].nunique() >= 2
        assert first_leader in set(changes["data"].map(lambda x: x["leaderId"]))
        after_kill = changes[changes["epoch"] > changes[changes["data"].map(lambda x: x["leaderId"]) == first_leader]
                             ["epoch"].min()]
        assert (after_kill["data"].map(lambda x: x["leaderId"]) != first_leader).any()
        assert not (df["type"] == "ERROR").any()


def test_a_snapshot_holds_the_topic_between_header_and_footer(files):
    snapshot = [f for f in files if f.endswith(".checkpoint")][-1]
    df = metadata_log_df(snapshot)
    assert df.iloc[0]["type"] == "SnapshotHeader" and df.iloc[-1]["type"] == "SnapshotFooter"
    assert "orders" in set(df[df["type"] == "TOPIC_RECORD"]["data"].map(lambda x: x["name"]))


def test_kafka_snapshots_load_in_kafkalab_snapshot_reader(stopped_cluster, files):
    """Kafka 4.4's own snapshots load in kafkalab's RecordsSnapshotReader and into a broker's MetadataImage:
    the combined nodes as registered brokers, metadata.version, and, in every snapshot taken after the topic was
    created (every node has one), the topic and its three partitions. A node writes a snapshot every 2 s from its
    start, so on a loaded machine one can come before the topic exists; that one is read for the rest."""
    from kafkalab.controller.quorum_controller import replay_record
    from kafkalab.controller.snapshot_generator import load_snapshot
    from kafkalab.kraft.metadata_image import MetadataImage
    from kafkalab.raft.snapshot import RecordsSnapshotReader
    _, dirs, _, _ = stopped_cluster
    for d in dirs.values():
        df = metadata_log_df(d)
        orders = df[(df["type"] == "TOPIC_RECORD") & (df["data"].map(lambda x: x.get("name")) == "orders")]
        created_at = int(orders["offset"].min())   # the offset of the topic's TopicRecord in this node's log
        snapshots = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".checkpoint")
                           and f != "00000000000000000000-0000000000.checkpoint")
        readers = {path: RecordsSnapshotReader(path) for path in snapshots}
        after = [path for path, reader in readers.items() if reader.snapshot_id.offset > created_at]
        assert after, f"{d}: no snapshot past the topic's record (offset {created_at}): {snapshots}"
        for path, reader in readers.items():
            assert reader.last_contained_log_timestamp > 0 and reader.records, path
            image = MetadataImage()
            assert load_snapshot(image, reader, replay_record) == reader.snapshot_id.offset
            assert image.features.metadata_version > 0 and sorted(image.cluster.registrations) == [1, 2, 3], path
            if path in after:
                topics = {t.name: t for t in image.replication.topics.values()}
                assert "orders" in topics and sorted(topics["orders"].partitions) == [0, 1, 2], path


def test_kill_and_watch_times_the_election_then_the_fencing(stopped_cluster):
    """In combined mode the dead controller is a broker too: a new Raft leader first, then (a broker session
    after it took over) the dead node fenced and its partition given a new leader, in that order."""
    *_, failover = stopped_cluster
    assert failover["mode"] == "kraft" and failover["was_controller"]
    assert failover["new_controller"] != failover["victim"] and failover["new_leader"] != failover["victim"]
    assert 0 < failover["new_controller_s"] < failover["detected_s"] <= failover["new_leader_s"]
    assert failover["detected_s"] - failover["new_controller_s"] >= 0.5 * 3.0   # broker.session.timeout.ms (lab)


def test_kraft_version_and_voters_records_of_a_dynamic_quorum(tmp_path):
    """``kafka-storage format --standalone`` (KIP-853's dynamic quorum) writes a bootstrap snapshot holding the
    KRaftVersion and KRaftVoters control records, which a static quorum never writes: Kafka's tool and kafkalab's
    print it the same. Only the storage is formatted; no node starts."""
    import io
    from kafkalab.cluster.kraft_config import new_cluster_id
    from kafkalab.cluster.ports import free_port
    backend = KRaftBackend(str(fetch_kafka("4")))
    port, data = free_port("127.0.0.1"), tmp_path / "data"
    props = tmp_path / "controller.properties"
    props.write_text("process.roles=controller\nnode.id=1\n"
                     f"controller.quorum.bootstrap.servers=127.0.0.1:{port}\nlisteners=CONTROLLER://127.0.0.1:{port}\n"
                     "controller.listener.names=CONTROLLER\nlistener.security.protocol.map=CONTROLLER:PLAINTEXT\n"
                     f"log.dirs={data}\n")
    formatted = subprocess.run([*backend.format_command(str(props), new_cluster_id()), "--standalone"],
                               capture_output=True, text=True, timeout=120)
    assert formatted.returncode == 0, formatted.stderr
    [snapshot] = [str(p) for p in (data / "__cluster_metadata-0").glob("*.checkpoint")]
    kafka = subprocess.run(backend.dump_log_command([snapshot], "--cluster-metadata-decoder"), capture_output=True,
                           text=True, timeout=120)
    out = io.StringIO()
    dump_log(snapshot, cluster_metadata_decoder=True, file=out)
    assert out.getvalue().splitlines() == kafka.stdout.splitlines()
    assert ' KRaftVersion {"version":0,"kRaftVersion":1}' in out.getvalue()
    assert ' KRaftVoters {"version":0,"voters":[{"voterId":1,' in out.getvalue()
    assert f'"endpoints":[{{"name":"CONTROLLER","host":"127.0.0.1","port":{port}}}]' in out.getvalue()
