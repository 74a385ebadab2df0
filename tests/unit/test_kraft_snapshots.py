"""KRaft snapshots: kafkalab.raft.snapshot's writer and reader, the metadata log's snapshot
half (create, clean, validate a fetch, install), the controller's snapshot of its replayed state, and FetchSnapshot
between three controllers in one event loop over real sockets.

Checked: a snapshot file is ``<20-digit end offset>-<10-digit epoch>.checkpoint``, SnapshotHeader first and
SnapshotFooter last, written as ``.part`` then renamed (a crash leaves no ``.checkpoint``, and the ``.part`` is
removed at the next open); a cut or altered file is refused with a clear error; a state written and loaded back is
the same state; cleaning moves the log start offset to a snapshot and deletes the segments below and the older
snapshots, never the latest; a fetch below the log start is answered with the snapshot id; a controller that was
stopped while the others snapshotted and cleaned their logs catches up through FetchSnapshot (several chunks) and
ends with the leader's state, and a restarted controller loads its snapshot before replaying the log.
"""
from __future__ import annotations

import asyncio
import os
import random
import socket
import time
import uuid

import pytest

from kafkalab.controller.controller_node import ControllerNode
from kafkalab.metadata.api_message_and_version import ApiMessageAndVersion
from kafkalab.controller.quorum_controller import replay_record
from kafkalab.controller.snapshot_generator import SnapshotGenerator, snapshot_records
from kafkalab.kraft.metadata_image import MetadataImage
from kafkalab.raft import fetch_snapshot as fetch_snapshot_module
from kafkalab.raft.kafka_metadata_log import KafkaMetadataLog
from kafkalab.raft.kafka_raft_client import RaftConfig
from kafkalab.raft.metadata_log_snapshots import DIVERGING, SNAPSHOT, VALID
from kafkalab.raft.snapshot import RecordsSnapshotReader, RecordsSnapshotWriter, SnapshotFormatError
from kafkalab.raft.snapshot.snapshots import OffsetAndEpochId, parse
from kafkalab.metadata.metadata_records import decode_metadata_record

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"


def records_for_state() -> list[ApiMessageAndVersion]:
    topic = uuid.UUID("11111111-2222-3333-4444-555555555555")
    return [ApiMessageAndVersion("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 33}),
            ApiMessageAndVersion("FeatureLevelRecord", 0, {"name": "group.version", "feature_level": 1}),
            *[ApiMessageAndVersion("RegisterBrokerRecord", 3, {
                "broker_id": b, "is_migrating_zk_broker": False, "incarnation_id": uuid.UUID(int=b),
                "broker_epoch": 10 + b, "end_points": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9090 + b,
                                                       "security_protocol": 0}],
                "features": [{"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 33}],
                "rack": None, "fenced": b == 3, "in_controlled_shutdown": False, "log_dirs": [uuid.UUID(int=100 + b)]})
              for b in (1, 2, 3)],
            ApiMessageAndVersion("TopicRecord", 0, {"name": "orders", "topic_id": topic}),
            ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": 2, "resource_name": "orders",
                                                     "name": "retention.ms", "value": "1000"}),
            *[ApiMessageAndVersion("PartitionRecord", 2, {
                "partition_id": p, "topic_id": topic, "replicas": [1, 2, 3], "isr": [1, 2, 3], "removing_replicas": [],
                "adding_replicas": [], "leader": 1 + p, "leader_recovery_state": 0, "leader_epoch": 0,
                "partition_epoch": 0, "directories": [uuid.UUID(int=0)] * 3}) for p in (0, 1)],
            ApiMessageAndVersion("PartitionChangeRecord", 2, {"partition_id": 1, "topic_id": topic, "isr": [1, 2],
                                                              "leader": 2}),
            ApiMessageAndVersion("ProducerIdsRecord", 0, {"broker_id": 1, "broker_epoch": 11,
                                                          "next_producer_id": 2000})]


def replayed(records) -> MetadataImage:
    state = MetadataImage()
    for offset, r in enumerate(records):
        replay_record(state, offset, decode_metadata_record(r.encode()))
    return state


def view(state) -> dict:
    return {"features": dict(state.features.finalized),
            "brokers": {b: (r.epoch, r.fenced, r.in_controlled_shutdown, r.listeners, r.features, r.log_dirs,
                            r.incarnation_id) for b, r in state.cluster.registrations.items()},
            "topics": {t.name: (t.id, dict(t.configs), {p: (x.replicas, x.isr, x.leader, x.leader_epoch,
                                                          x.partition_epoch) for p, x in t.partitions.items()})
                       for t in state.replication.topics.values()},
            "next_producer_id": state.producer_ids.next_producer_id}


def test_snapshot_writer_and_reader_round_trip_with_header_footer_and_atomic_rename(tmp_path):
    sid = OffsetAndEpochId(1234, 7)
    writer = RecordsSnapshotWriter(str(tmp_path), sid, last_contained_log_timestamp=1700000000123, max_batch_records=3)
    values = [r.encode() for r in records_for_state()]
    writer.append(values)
    # before freeze only the .part file exists: a reader never sees half a snapshot
    assert os.listdir(tmp_path) == ["00000000000000001234-0000000007.checkpoint.part"]
    size = writer.freeze()
    writer.close()
    assert os.listdir(tmp_path) == ["00000000000000001234-0000000007.checkpoint"]
    path = str(tmp_path / "00000000000000001234-0000000007.checkpoint")
    assert parse(path) == (sid, "frozen") and os.path.getsize(path) == size
    reader = RecordsSnapshotReader(path)
    assert reader.snapshot_id == sid and reader.last_contained_log_timestamp == 1700000000123
    assert [r.name for r in reader.records] == [r.name for r in records_for_state()]
    # header batch + ceil(11 / 3) data batches + footer batch
    assert reader.batches == 1 + 4 + 1
    # cut short, or a byte changed: refused, saying why
    data = open(path, "rb").read()
    with pytest.raises(SnapshotFormatError, match="batch|SnapshotFooter"):
        RecordsSnapshotReader(path, data[:-5])
    altered = bytearray(data)
    altered[len(altered) // 2] ^= 0xFF
    with pytest.raises(SnapshotFormatError, match="CRC"):
        RecordsSnapshotReader(path, bytes(altered))
    # an abandoned writer leaves nothing behind
    abandoned = RecordsSnapshotWriter(str(tmp_path), OffsetAndEpochId(2000, 7), 0)
    abandoned.close()
    assert sorted(os.listdir(tmp_path)) == ["00000000000000001234-0000000007.checkpoint"]


def test_the_replayed_state_written_as_a_snapshot_loads_back_the_same(tmp_path):
    state = replayed(records_for_state())
    generator = SnapshotGenerator()
    log = KafkaMetadataLog(str(tmp_path))
    log.append_as_leader([(None, r.encode()) for r in records_for_state()], epoch=3)
    sid = generator.emit(state, log, OffsetAndEpochId(log.end_offset, 3), 1700000000000, "test")
    assert sid == OffsetAndEpochId(len(records_for_state()), 3)
    names = [r.name for r in snapshot_records(state)]
    # Kafka's MetadataImage.write order: features (metadata.version first), brokers, topics, configs, producer ids
    assert names == ["FeatureLevelRecord"] * 2 + ["RegisterBrokerRecord"] * 3 + ["TopicRecord"] + \
        ["PartitionRecord"] * 2 + ["ConfigRecord", "ProducerIdsRecord"]
    fresh = MetadataImage()
    assert SnapshotGenerator().load_latest(fresh, log, replay_record) == sid.offset
    assert view(fresh) == view(state)
    assert view(fresh)["topics"]["orders"][2][1] == ([1, 2, 3], [1, 2], 2, 1, 1)
    log.close()


def test_a_part_file_left_by_a_crash_is_removed_when_the_log_opens(tmp_path):
    log = KafkaMetadataLog(str(tmp_path))
    log.append_as_leader([(None, r.encode()) for r in records_for_state()], epoch=1)
    writer = log.create_new_snapshot(OffsetAndEpochId(5, 1), 0)
    writer.append([records_for_state()[0].encode()])   # the process dies here: no freeze
    log.close()
    reopened = KafkaMetadataLog(str(tmp_path))
    assert not [n for n in os.listdir(reopened.dir) if ".checkpoint" in n]
    assert reopened.latest_snapshot_id() is None and reopened.end_offset == len(records_for_state())
    reopened.close()


def test_cleaning_moves_the_log_start_to_a_snapshot_and_fetches_below_it_get_the_snapshot(tmp_path):
    log = KafkaMetadataLog(str(tmp_path), segment_bytes=600)
    state = MetadataImage()
    generator = SnapshotGenerator()
    values = [r.encode() for r in records_for_state()]
    for i, v in enumerate(values * 4):            # one record per batch, epoch 1 then 2: several segments
        log.append_as_leader([(None, v)], epoch=1 if i < 20 else 2)
    assert len(log.log.segments) > 3
    now = int(time.time() * 1000)    # a snapshot's age is its last record's timestamp (retention.ms: 7 days here)
    ids = [generator.emit(state, log, OffsetAndEpochId(end, 1 if end <= 20 else 2), now) for end in (10, 30)]
    assert sorted(log.snapshots) == ids and log.start_offset == 0
    # retention 100 MiB: nothing to do; 0 bytes: the log starts at the latest snapshot, the older one goes
    assert not log.maybe_clean(100 * 1024 * 1024, -1)
    assert log.maybe_clean(0, -1)
    assert log.start_offset == 30 and sorted(log.snapshots) == [ids[1]]
    assert all(s.next_offset > 30 for s in log.log.segments) and log.segments_deleted > 0
    assert not any(n.startswith("00000000000000000010-") for n in os.listdir(log.dir))
    # the latest snapshot is never deleted, not even when it is older than the retention
    assert not log.maybe_clean(0, 0, now_ms=now + 10_000)
    assert sorted(log.snapshots) == [ids[1]]
    # the leader's check of a Fetch
    assert log.validate_offset_and_epoch(0, 0) == (SNAPSHOT, ids[1])
    assert log.validate_offset_and_epoch(12, 1) == (SNAPSHOT, ids[1])
    assert log.validate_offset_and_epoch(35, 2)[0] == VALID
    assert log.validate_offset_and_epoch(44, 2)[0] == VALID
    assert log.validate_offset_and_epoch(45, 2)[0] == DIVERGING
    log.close()
    # reopened, the log starts at its first segment, which is at or below the kept snapshot
    reopened = KafkaMetadataLog(str(tmp_path), segment_bytes=600)
    assert reopened.start_offset <= 30 and sorted(reopened.snapshots) == [ids[1]]
    reopened.close()


def test_a_follower_installs_a_snapshot_past_its_log(tmp_path):
    leader = KafkaMetadataLog(str(tmp_path / "leader"))
    values = [r.encode() for r in records_for_state()]
    leader.append_as_leader([(None, v) for v in values], epoch=4)
    sid = SnapshotGenerator().emit(replayed(records_for_state()), leader, OffsetAndEpochId(leader.end_offset, 4), 0)
    follower = KafkaMetadataLog(str(tmp_path / "follower"))
    follower.append_as_leader([(None, values[0])], epoch=1)
    raw = follower.create_new_snapshot_unchecked(sid)
    size = leader.snapshot_size(sid)
    for position in range(0, size, 100):       # chunk by chunk, as FetchSnapshot brings it
        raw.append(leader.read_snapshot_chunk(sid, position, 100))
    raw.freeze()
    follower.on_snapshot_frozen(sid)
    assert follower.truncate_to_latest_snapshot()
    assert (follower.start_offset, follower.end_offset, follower.last_fetched_epoch) == (sid.offset, sid.offset, 4)
    assert follower.end_offset_and_epoch().epoch == 4
    state = MetadataImage()
    SnapshotGenerator().load_latest(state, follower, replay_record)
    assert view(state) == view(replayed(records_for_state()))
    leader.close()
    follower.close()


# -- FetchSnapshot between controllers ---------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def controller_view(node) -> dict:
    c = node.controller
    return {"features": dict(c.features.finalized),
            "brokers": {b: (r.epoch, r.fenced) for b, r in c.cluster.registrations.items()},
            "topics": {t.name: {p: (x.replicas, x.isr, x.leader, x.leader_epoch) for p, x in t.partitions.items()}
                       for t in c.replication.topics.values()}}


def test_a_stopped_controller_catches_up_through_fetch_snapshot_and_loads_it_on_restart(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch_snapshot_module, "FETCH_SNAPSHOT_MAX_BYTES", 256)   # several chunks
    voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}

    def make(i: int) -> ControllerNode:
        return ControllerNode(RaftConfig(i, voters, election_timeout_ms=300, fetch_timeout_ms=600,
                                         election_backoff_max_ms=200, request_timeout_ms=1000, fetch_max_wait_ms=100,
                                         cluster_id=CLUSTER_ID),
                              str(tmp_path / f"node-{i}"), idle_interval_ms=50, rng=random.Random(i),
                              log_segment_bytes=1024, max_bytes_between_snapshots=2048, retention_bytes=0)

    async def until(predicate, what: str, timeout_s: float = 20.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate():
            assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.02)

    async def scenario():
        nodes = {i: make(i) for i in voters}
        for n in nodes.values():
            await n.start()
        try:
            await until(lambda: any(n.controller.is_active and n.controller.features.bootstrapped
                                    for n in nodes.values()), "an active controller")
            leader = next(n for n in nodes.values() if n.controller.is_active)
            lagging_id = next(i for i, n in nodes.items() if n is not leader)
            await nodes[lagging_id].stop(resign=False)
            stopped_at = nodes[lagging_id].client.log.end_offset
            # NoOps every 50 ms: the two others snapshot every 2 KiB and clean their logs past the stopped one
            await until(lambda: leader.client.log.start_offset > stopped_at and
                        len(leader.controller.snapshots.written) >= 2, "the leader's log cleaned past the stopped node")
            assert leader.client.log.segments_deleted > 0
            restarted = make(lagging_id)
            nodes[lagging_id] = restarted
            await restarted.start()
            await until(lambda: restarted.client.snapshot_fetches, "a snapshot fetched")
            fetched = restarted.client.snapshot_fetches[0]
            assert fetched["chunks"] > 1 and fetched["bytes"] > 256
            assert leader.client.snapshot_chunks_served >= fetched["chunks"]
            await until(lambda: fetched["snapshot_id"] in [x["snapshot_id"] for x in restarted.controller.snapshots.loaded],
                        "the controller loading the fetched snapshot")
            await until(lambda: controller_view(restarted) == controller_view(leader)
                        and restarted.controller.applied_offset > fetched["snapshot_id"].offset,
                        "the same state as the leader's")
            assert controller_view(restarted)["features"]["metadata.version"] == 33
            # restarted again: it loads its own latest snapshot before replaying the log after it
            await restarted.stop(resign=False)
            again = make(lagging_id)
            nodes[lagging_id] = again
            await again.start()
            assert again.controller.snapshots.loaded and again.controller.replayed[0][1] == "snapshot"
            await until(lambda: controller_view(again) == controller_view(leader), "the state after a restart")
        finally:
            for n in nodes.values():
                try:
                    await n.stop(resign=False)
                except Exception:  # noqa: BLE001
                    pass

    asyncio.run(scenario())


def test_fetch_snapshot_answers_kafkas_error_codes(tmp_path):
    from types import SimpleNamespace

    from kafkalab.broker.common.message.codec import build
    from kafkalab.raft.fetch_snapshot import FetchSnapshotRequest, handle_fetch_snapshot
    log = KafkaMetadataLog(str(tmp_path))
    log.append_as_leader([(None, r.encode()) for r in records_for_state()], epoch=2)
    sid = SnapshotGenerator().emit(replayed(records_for_state()), log, OffsetAndEpochId(log.end_offset, 2), 0)
    client = SimpleNamespace(log=log, snapshot_chunks_served=0,
                             quorum=SimpleNamespace(leader_id=1, epoch=2, is_leader=True))

    def ask(epoch=2, offset=sid.offset, snapshot_epoch=sid.epoch, position=0, max_bytes=100, topic="__cluster_metadata"):
        request = build(FetchSnapshotRequest, 0, {"cluster_id": None, "replica_id": 2, "max_bytes": max_bytes,
                        "topics": [{"name": topic, "partitions": [{"partition": 0, "current_leader_epoch": epoch,
                                    "snapshot_id": {"end_offset": offset, "epoch": snapshot_epoch},
                                    "position": position}]}]})
        return handle_fetch_snapshot(client, request)["topics"][0]["partitions"][0]

    size = log.snapshot_size(sid)
    first = ask()
    assert (first["error_code"], first["size"], first["position"], len(first["unaligned_records"])) == (0, size, 0, 100)
    last = ask(position=size - 10)
    assert last["error_code"] == 0 and len(last["unaligned_records"]) == 10
    assert ask(epoch=1)["error_code"] == 74            # FENCED_LEADER_EPOCH
    assert ask(epoch=3)["error_code"] == 75            # UNKNOWN_LEADER_EPOCH
    assert ask(offset=sid.offset - 1)["error_code"] == 98     # SNAPSHOT_NOT_FOUND
    assert ask(position=size)["error_code"] == 99      # POSITION_OUT_OF_RANGE
    assert ask(position=-1)["error_code"] == 99
    assert ask(topic="other")["error_code"] == 3       # UNKNOWN_TOPIC_OR_PARTITION
    client.quorum.is_leader = False
    assert ask()["error_code"] == 6                    # NOT_LEADER_OR_FOLLOWER
    assert client.snapshot_chunks_served == 2
    log.close()


def test_the_generator_snapshots_by_bytes_and_by_time_after_records_arrive(tmp_path):
    log = KafkaMetadataLog(str(tmp_path))
    state = MetadataImage()
    values = [r.encode() for r in records_for_state()]
    generator = SnapshotGenerator(max_bytes_between_snapshots=10_000, max_snapshot_interval_ms=0)
    end = 0
    for i in range(40):   # one batch of the 11 records each time, replayed as the controller does
        log.append_as_leader([(None, v) for v in values], epoch=1)
        for offset, v in enumerate(values, start=end):
            replay_record(state, offset, decode_metadata_record(v))
        generator.after_replay(state, log, end, log.end_offset)
        end = log.end_offset
    written = [w["snapshot_id"].offset for w in generator.written]
    assert written and all("bytes since the last snapshot" in w["why"] for w in generator.written)
    batch = log.log.size // 40
    assert all(b - a == written[0] for a, b in zip(written, written[1:]))   # every ceil(10000 / batch) batches
    assert written[0] == -(-10_000 // batch) * len(values)
    log.close()
    # by time: only once something arrived after the interval
    other = KafkaMetadataLog(str(tmp_path / "timed"))
    other.append_as_leader([(None, v) for v in values], epoch=1)
    timed = SnapshotGenerator(max_bytes_between_snapshots=1 << 40, max_snapshot_interval_ms=1)
    time.sleep(0.01)
    assert timed.after_replay(state, other, other.end_offset, other.end_offset) is None   # nothing arrived
    assert timed.after_replay(state, other, 0, other.end_offset) == OffsetAndEpochId(other.end_offset, 1)
    assert "s since the last snapshot" in timed.written[0]["why"]
    other.close()
