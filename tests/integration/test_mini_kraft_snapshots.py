"""KRaft snapshots on the mini KRaft cluster: a controller and a broker that were down
while the others snapshotted and cleaned their logs catch up through FetchSnapshot.

Lab configs here (``metadata.log.segment.bytes`` 4 KiB, a snapshot every 4 KiB of committed batches,
``metadata.max.retention.bytes`` 0) make the controllers snapshot and clean their logs within seconds. One standby
controller and one broker are stopped; 40 topics are created; the active controller has written snapshots, its log
starts past where the stopped controller's log ends, and the segments below are gone. Kafka 4.4's
``kafka-dump-log.sh --cluster-metadata-decoder`` prints the active controller's latest snapshot exactly as
``kafkalab dump-log`` does. The two restart: each fetches a snapshot (its log says so, its log directory holds the
snapshot and its log starts past where it ended), DescribeQuorum shows the controller caught up, the broker's
Metadata answer lists every topic, and after the
cluster stops every controller's state rebuilt from its own directory (latest snapshot + the log after it) holds the
same topics and partitions: nothing committed is lost. Deadlines are generous bounds, not measurements.
"""
from __future__ import annotations

import functools
import glob
import io
import os
import re
import subprocess
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kafka_requests import metadata_answer, metadata_request
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.kraft.metadata_image import MetadataImage
from kafkalab.raft.kafka_metadata_log import KafkaMetadataLog
from kafkalab.raft.snapshot import RecordsSnapshotReader
from kafkalab.raft.snapshot.snapshots import parse
from kafkalab.tools import dump_log

pytestmark = pytest.mark.cluster
TOPICS = [f"t{i:02d}" for i in range(40)]


# a wait that fails at the first exception (the predicates here must not raise)
wait_until = functools.partial(cluster_helpers.wait_until, timeout=60.0, retry_on=())


def snapshots(metadata_dir: str) -> list:
    return sorted(p[0] for p in (parse(n) for n in os.listdir(metadata_dir)) if p and p[1] == "frozen")


def first_segment_base(metadata_dir: str) -> int:
    return min(int(os.path.basename(p)[:20]) for p in glob.glob(f"{metadata_dir}/*.log"))


def end_offset(metadata_dir: str) -> int:
    """The end offset of a stopped node's metadata log."""
    log = KafkaMetadataLog(os.path.dirname(metadata_dir))
    try:
        return log.end_offset
    finally:
        log.close()


def rebuilt_state(metadata_dir: str) -> dict:
    """A stopped node's metadata state from its own directory: its latest snapshot (if its log starts past 0) and
    every record after it."""
    log = KafkaMetadataLog(os.path.dirname(metadata_dir))
    try:
        image = MetadataImage()
        image.apply_committed(log, log.end_offset)
        return {"features": dict(image.features.finalized), "brokers": sorted(image.cluster.registrations),
                "topics": {t.name: {p: x.replicas for p, x in t.partitions.items()}
                           for t in image.replication.topics.values()}}
    finally:
        log.close()


def test_a_controller_and_a_broker_catch_up_through_fetch_snapshot(tmp_path):
    configs = dict(metadata_log_segment_bytes=4096, metadata_log_max_record_bytes_between_snapshots=4096,
                   metadata_max_retention_bytes=0)
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "kraft"), **configs) as c:
        active = wait_until(lambda: c.controller, "an active controller")
        standby = next(i for i in c.controller_ids if i != active)
        broker = c.broker_ids[-1]
        c.stop(standby)
        c.stop(broker)
        standby_dir, broker_dir, active_dir = (c.metadata_log_dir(n) for n in (standby, broker, active))
        standby_end, broker_end = end_offset(standby_dir), end_offset(broker_dir)

        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        for name, future in admin.create_topics([NewTopic(t, 1, 2) for t in TOPICS]).items():
            future.result(60)
        wait_until(lambda: len(snapshots(active_dir)) >= 1 and first_segment_base(active_dir) > max(standby_end,
                   broker_end), "the active controller's log cleaned past the stopped nodes")
        latest = snapshots(active_dir)[-1]
        path = os.path.join(active_dir, f"{latest.offset:020d}-{latest.epoch:010d}.checkpoint")
        started = time.monotonic()
        reader = RecordsSnapshotReader(path)
        read_s = time.monotonic() - started
        names = {r.data["name"] for r in reader.records if r.name == "TopicRecord"}
        print(f"\nsnapshot {latest}: {reader.size} bytes, {len(reader.records)} records, {reader.batches} batches, "
              f"read in {read_s * 1000:.1f} ms")

        # -- Kafka 4.4's own kafka-dump-log.sh prints our snapshot exactly as kafkalab dump-log does
        out, err = io.StringIO(), io.StringIO()
        dump_log(path, cluster_metadata_decoder=True, file=out, err=err)
        text = out.getvalue()
        assert text.splitlines()[1] == f"Snapshot end offset: {latest.offset}, epoch: {latest.epoch}", text[:300]
        assert " SnapshotHeader {" in text and " SnapshotFooter {" in text and "Error at" not in text
        kafka = subprocess.run(KRaftBackend(str(fetch_kafka("4"))).dump_log_command([path], "--cluster-metadata-decoder"),
                               capture_output=True, text=True, timeout=120)
        assert kafka.returncode == 0, kafka.stderr
        assert text.splitlines() == kafka.stdout.splitlines()

        # -- the two come back: each fetches a snapshot, and the broker knows every topic
        restarted_at = time.monotonic()
        c.restart(standby)
        c.restart(broker)
        wait_until(lambda: "fetched snapshot" in open(os.path.join(c.dir, f"node-{standby}.log")).read(),
                   "the controller to fetch a snapshot")
        caught_up_s = time.monotonic() - restarted_at
        wait_until(lambda: "fetched snapshot" in open(os.path.join(c.dir, f"node-{broker}.log")).read(),
                   "the broker to fetch a snapshot")
        line = re.search(r"fetched snapshot .*", open(os.path.join(c.dir, f"node-{standby}.log")).read()).group(0)
        print(f"controller {standby}: {line}; {caught_up_s:.1f} s after the restart began")
        row = c.nodes.set_index("id").loc[broker]
        host, port = row["host"], row["port"]
        wait_until(lambda: set(TOPICS) <= set(metadata_answer(metadata_request(host, int(port), None, 2.0))["topics"]),
                   "the restarted broker's metadata to list every topic")
        assert snapshots(standby_dir) and first_segment_base(standby_dir) > standby_end
        # DescribeQuorum: the restarted controller is a Follower again, past the snapshot, with a lag of a few NoOps
        def caught_up():
            q = c.quorum().set_index("node_id")
            row = q.loc[standby]
            return row["status"] == "Follower" and row["log_end_offset"] > latest.offset and row["lag"] <= 5
        wait_until(caught_up, "the restarted controller to catch up in DescribeQuorum")
    assert names and names <= set(TOPICS)    # the topics created before the snapshot's end offset

    # -- after the stop: every controller's state, rebuilt from its own directory, has every topic the same way
    states = {n: rebuilt_state(os.path.join(c.dir, f"node-{n}", "__cluster_metadata-0")) for n in c.controller_ids}
    assert set(TOPICS) <= set(states[active]["topics"])
    for n, state in states.items():
        assert state["topics"] == states[active]["topics"], f"controller {n} differs from {active}"
        assert state["features"] == states[active]["features"] and state["brokers"] == states[active]["brokers"]
