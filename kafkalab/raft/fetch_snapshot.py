"""FetchSnapshot (API 59, KIP-630): how a replica that is too far behind catches up.

When a follower's or observer's Fetch asks for an offset below the leader's log start offset (the
log was cleaned past it after a snapshot), the leader answers that Fetch with no records and the
**snapshot id** (its latest snapshot's end offset and epoch) in Fetch's ``SnapshotId`` field. The
fetcher then:

1. opens ``<id>.checkpoint.part`` and asks FetchSnapshot for the bytes from its ``Position`` (what it
   has so far), up to ``MaxBytes``; each answer carries a chunk, the snapshot's total ``Size`` and the
   chunk's position (chunks need not end on a batch boundary);
2. when it has ``Size`` bytes it freezes the snapshot (rename to ``.checkpoint``) and installs it
   (``truncate_to_latest_snapshot``: the log is replaced, starting empty at the snapshot's end offset);
3. fetches the log again from the snapshot's end offset; the QuorumController (or a broker's metadata
   image) sees that its log now starts past what it has applied and loads the snapshot first.

The leader answers (Kafka's ``handleFetchSnapshotRequest``): an epoch check as for Fetch
(FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER), SNAPSHOT_NOT_FOUND (98) for an id it
does not have (e.g. cleaned meanwhile: the fetcher starts over with a Fetch), POSITION_OUT_OF_RANGE (99).

Simplified: the fetcher asks for ``FETCH_SNAPSHOT_MAX_BYTES`` (64 KiB) per request, so that a lab
snapshot arrives in several chunks; Kafka's asks for up to ``KafkaRaftClient.MAX_FETCH_SIZE_BYTES`` (8 MiB).
"""
from __future__ import annotations

import logging
import time

from kafka.protocol.api_message import ApiMessage

from ..broker.common.message.codec import build
from .snapshot.snapshots import OffsetAndEpochId
from . import schemas
from .raft_messages import METADATA_PARTITION, METADATA_TOPIC, RAFT_APIS

log = logging.getLogger(__name__)
FETCH_SNAPSHOT_VERSION = 0
FETCH_SNAPSHOT_MAX_BYTES = 64 * 1024
#: the most a leader sends in one answer (Kafka's ``KafkaRaftClient.MAX_FETCH_SIZE_BYTES``)
MAX_FETCH_SIZE_BYTES = 8 * 1024 * 1024
NONE, NOT_LEADER_OR_FOLLOWER, INVALID_REQUEST = 0, 6, 42
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE = 74, 75, 98, 99
UNKNOWN_TOPIC_OR_PARTITION = 3


class FetchSnapshotRequest(ApiMessage, load_json=schemas): pass
class FetchSnapshotResponse(ApiMessage, load_json=schemas): pass


# -- the leader --------------------------------------------------------------------------------------

@RAFT_APIS.api(FetchSnapshotRequest, FetchSnapshotResponse, versions=(0, FETCH_SNAPSHOT_VERSION))
def handle_fetch_snapshot(client, request) -> dict:
    topics = request.topics or []
    if len(topics) != 1 or len(topics[0].partitions or []) != 1:
        return {"throttle_time_ms": 0, "error_code": INVALID_REQUEST, "topics": []}
    p = topics[0].partitions[0]
    sid = OffsetAndEpochId(p.snapshot_id.end_offset, p.snapshot_id.epoch)

    def answer(error: int, size: int = -1, position: int = -1, chunk: bytes = b"") -> dict:
        return {"throttle_time_ms": 0, "error_code": NONE, "topics": [{"name": METADATA_TOPIC, "partitions": [{
            "index": METADATA_PARTITION, "error_code": error,
            "snapshot_id": {"end_offset": sid.offset, "epoch": sid.epoch},
            "current_leader": {"leader_id": client.quorum.leader_id, "leader_epoch": client.quorum.epoch},
            "size": size, "position": position, "unaligned_records": chunk}]}]}

    if topics[0].name != METADATA_TOPIC or p.partition != METADATA_PARTITION:
        return answer(UNKNOWN_TOPIC_OR_PARTITION)
    if p.current_leader_epoch < client.quorum.epoch:
        return answer(FENCED_LEADER_EPOCH)
    if p.current_leader_epoch > client.quorum.epoch:
        return answer(UNKNOWN_LEADER_EPOCH)
    if not client.quorum.is_leader:
        return answer(NOT_LEADER_OR_FOLLOWER)
    if sid not in client.log.snapshots:
        return answer(SNAPSHOT_NOT_FOUND)
    size = client.log.snapshot_size(sid)
    if not 0 <= p.position < size:
        return answer(POSITION_OUT_OF_RANGE, size)
    max_bytes = max(1, min(request.max_bytes, MAX_FETCH_SIZE_BYTES))
    chunk = client.log.read_snapshot_chunk(sid, p.position, max_bytes)
    client.snapshot_chunks_served += 1
    return answer(NONE, size, p.position, chunk)


# -- the follower / observer ----------------------------------------------------------------------------

async def fetch_snapshot(client, target: int, state, snapshot_id: OffsetAndEpochId) -> bool:
    """Fetch ``snapshot_id`` from ``target`` chunk by chunk and install it; True once installed. Gives up (the
    ``.part`` file removed) on an error answer or when the replica's state changes; the next Fetch starts over."""
    writer = client.log.create_new_snapshot_unchecked(snapshot_id)
    if writer is None:   # already have it: install it
        installed = client.log.truncate_to_latest_snapshot()
        client.notify()
        return installed
    started, chunks = time.monotonic(), 0
    try:
        while True:
            request = build(FetchSnapshotRequest, FETCH_SNAPSHOT_VERSION, {
                "cluster_id": client.config.cluster_id, "replica_id": client.node_id,
                "max_bytes": FETCH_SNAPSHOT_MAX_BYTES, "topics": [{"name": METADATA_TOPIC, "partitions": [{
                    "partition": METADATA_PARTITION, "current_leader_epoch": state.epoch,
                    "snapshot_id": {"end_offset": snapshot_id.offset, "epoch": snapshot_id.epoch},
                    "position": writer.size}]}]})
            response = await client._client(target, "fetch").send(request, client.config.request_timeout_ms / 1000)
            if client.quorum.state is not state:
                return False
            topics = response.topics or []
            p = topics[0].partitions[0] if topics and topics[0].partitions else None
            if response.error_code or p is None or p.error_code:
                code = response.error_code or (p.error_code if p is not None else -1)
                log.info("node %d: FetchSnapshot %s from %d failed: error %d", client.node_id, snapshot_id, target,
                         code)
                leader = p.current_leader if p is not None else None
                if leader is not None and leader.leader_epoch is not None and leader.leader_epoch > state.epoch:
                    client.maybe_transition(leader.leader_epoch, leader.leader_id)
                return False
            if p.position != writer.size:
                log.info("node %d: FetchSnapshot answered position %d, expected %d", client.node_id, p.position,
                         writer.size)
                return False
            writer.append(bytes(p.unaligned_records or b""))
            chunks += 1
            if writer.size >= p.size:
                break
        writer.freeze()
        client.log.on_snapshot_frozen(snapshot_id)
        client.log.truncate_to_latest_snapshot()
        client.snapshot_fetches.append({"snapshot_id": snapshot_id, "bytes": writer.size, "chunks": chunks,
                                        "seconds": round(time.monotonic() - started, 3), "from": target})
        log.info("node %d: fetched snapshot %s from %d (%d bytes in %d chunks) and installed it", client.node_id,
                 snapshot_id, target, writer.size, chunks)
        client.notify()
        return True
    finally:
        writer.close()
