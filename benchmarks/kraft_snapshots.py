"""KRaft snapshots: what a controller's start-up costs with and without a snapshot, in-process.

A ``__cluster_metadata`` log with the bootstrap feature levels, 3 registered brokers and N topics (each a
TopicRecord, a ConfigRecord and P PartitionRecords, RF 3, one topic per batch as the controller writes them) is
(a) replayed whole into a metadata image, (b) written as a snapshot (``SnapshotGenerator.emit``: size, time),
(c) loaded from that snapshot (``RecordsSnapshotReader`` + replay). Median of ``--repeat`` runs.

    python -m benchmarks.kraft_snapshots --topics 1000 5000 --partitions 3 [--churn 4] --repeat 3 [--json out.json]

``--churn K``: after its creation each topic's partitions change leader K times (PartitionChangeRecords), each
change followed by a NoOpRecord, as a long-running cluster's log fills with changes the snapshot folds away.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid

from kafkalab.metadata.api_message_and_version import ApiMessageAndVersion  # noqa: E402
from kafkalab.controller.quorum_controller import replay_record  # noqa: E402
from kafkalab.controller.snapshot_generator import SnapshotGenerator  # noqa: E402
from kafkalab.kraft.metadata_image import MetadataImage  # noqa: E402
from kafkalab.raft.kafka_metadata_log import KafkaMetadataLog  # noqa: E402
from kafkalab.raft.snapshot.snapshots import OffsetAndEpochId  # noqa: E402


def fill(log: KafkaMetadataLog, topics: int, partitions: int, churn: int = 0) -> None:
    first = [ApiMessageAndVersion("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 33})]
    first += [ApiMessageAndVersion("RegisterBrokerRecord", 3, {
        "broker_id": b, "is_migrating_zk_broker": False, "incarnation_id": uuid.uuid4(), "broker_epoch": b,
        "end_points": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9090 + b, "security_protocol": 0}],
        "features": [], "rack": None, "fenced": False, "in_controlled_shutdown": False, "log_dirs": [uuid.uuid4()]})
        for b in (1, 2, 3)]
    log.append_as_leader([(None, r.encode()) for r in first], epoch=1)
    for i in range(topics):
        tid = uuid.uuid4()
        records = [ApiMessageAndVersion("TopicRecord", 0, {"name": f"topic-{i:05d}", "topic_id": tid}),
                   ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": 2, "resource_name": f"topic-{i:05d}",
                                                            "name": "retention.ms", "value": "600000"})]
        records += [ApiMessageAndVersion("PartitionRecord", 2, {
            "partition_id": p, "topic_id": tid, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removing_replicas": [],
            "adding_replicas": [], "leader": 1 + p % 3, "leader_recovery_state": 0, "leader_epoch": 0,
            "partition_epoch": 0, "directories": [uuid.UUID(int=0)] * 3}) for p in range(partitions)]
        log.append_as_leader([(None, r.encode()) for r in records], epoch=1)
        for c in range(churn):     # leadership moving around, and the idle NoOpRecords between
            changes = [ApiMessageAndVersion("PartitionChangeRecord", 2, {"partition_id": p, "topic_id": tid,
                                                                         "leader": 1 + (p + c + 1) % 3})
                       for p in range(partitions)]
            log.append_as_leader([(None, r.encode()) for r in changes], epoch=1)
            log.append_as_leader([(None, ApiMessageAndVersion("NoOpRecord").encode())], epoch=1)


def run(topics: int, partitions: int, churn: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        log = KafkaMetadataLog(d)
        fill(log, topics, partitions, churn)
        log_bytes = log.log.size
        t = time.perf_counter()
        image = MetadataImage()
        image.snapshots.max_bytes = 1 << 62        # no snapshot while replaying
        image.apply_committed(log, log.end_offset)
        replay_s = time.perf_counter() - t
        t = time.perf_counter()
        generator = SnapshotGenerator()
        sid = generator.emit(image, log, OffsetAndEpochId(log.end_offset, 1), int(time.time() * 1000))
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        loaded = MetadataImage()
        SnapshotGenerator().load_latest(loaded, log, replay_record)
        load_s = time.perf_counter() - t
        assert len(loaded.replication.topics) == topics
        out = {"topics": topics, "partitions": partitions, "churn": churn, "log_records": log.end_offset, "log_bytes": log_bytes,
               "snapshot_bytes": generator.written[0]["bytes"], "snapshot_records": generator.written[0]["records"],
               "replay_log_s": replay_s, "write_snapshot_s": write_s, "load_snapshot_s": load_s, "snapshot_id": str(sid)}
        log.close()
        return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--topics", type=int, nargs="+", default=[1000, 5000])
    p.add_argument("--partitions", type=int, default=3)
    p.add_argument("--churn", type=int, default=0, help="leader changes per partition (and NoOps) after creation")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    results = []
    for n in args.topics:
        runs = [run(n, args.partitions, args.churn) for _ in range(args.repeat)]
        row = dict(runs[0])
        for k in ("replay_log_s", "write_snapshot_s", "load_snapshot_s"):
            row[k] = round(statistics.median(r[k] for r in runs), 3)
        results.append(row)
        print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
