"""``TransactionMarkerChannelManager``: writes the COMMIT/ABORT markers that end a transaction.

In Kafka the coordinator sends WriteTxnMarkers (key 27) to the leader of every partition in the
transaction; each leader appends a control batch (``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR`` and acks=all): attributes transactional + control, the producer's id
and epoch, no sequence, and one control record, key (version 0, type COMMIT 1 / ABORT 0), value
(version 0, coordinator epoch). A marker in ``__consumer_offsets`` also tells the group
coordinator to apply (commit) or drop (abort) the transaction's pending offsets.

Here a marker for a partition this broker leads is appended to the local log directly, by
:func:`write_txn_marker`, the same function the WriteTxnMarkers handler (``apis/write_txn_markers.py``)
calls; in cluster mode it waits, as acks=all, for the partition's ISR. A partition led by another
broker gets WriteTxnMarkers v1 over the network (one request per leader); a marker that fails with
NOT_LEADER_OR_FOLLOWER (or an unreachable leader, or a partition with no leader) is sent again to
the partition's leader of the moment, every ``RETRY_BACKOFF_S``, until it is written, the topic is
deleted, or this broker is no longer the transaction's coordinator, as Kafka's channel does.
"""
from __future__ import annotations

import asyncio
import logging

from ...common.errors import ErrorCode, KafkaError
from ...common.records import ABORT, COMMIT, build_end_txn_marker
from .transaction_metadata import now_ms
from ...common.message.codec import build
from ...network.network_client import NetworkClient

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: wait before a marker is sent again (Kafka's channel retries on its next poll, ~``retry.backoff.ms``)
RETRY_BACKOFF_S = 0.2
#: how long a marker waits for the partition's ISR (Kafka: the WriteTxnMarkers request's timeout)
MARKER_TIMEOUT_MS = 15_000
#: errors after which the marker is sent again, to the partition's current leader
RETRIABLE = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
             ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT,
             ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.KAFKA_STORAGE_ERROR}


async def write_txn_marker(broker, topic: str, index: int, producer_id: int, producer_epoch: int,
                           committed: bool, coordinator_epoch: int) -> ErrorCode:
    """Append one marker to a partition this broker leads (Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``
    for one partition), waiting for its ISR in cluster mode; the error code for it."""
    rm = broker.replica_manager
    partition = rm.partitions.get((topic, index))
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.standalone and not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    batch = build_end_txn_marker(COMMIT if committed else ABORT, producer_id, producer_epoch, coordinator_epoch,
                                 now_ms())
    try:
        info = partition.log.append_as_leader(batch, partition.leader_epoch, from_coordinator=True)
    except KafkaError as exc:
        log.warning("marker for producer %d in %s-%d refused: %s", producer_id, topic, index, exc)
        return exc.code
    if partition.standalone:
        partition.log.high_watermark = partition.log.log_end_offset
    else:
        partition.maybe_increment_leader_hw()
    rm.notify_data_arrived(topic, index)
    if topic == OFFSETS_TOPIC and broker.group_coordinator is not None:
        broker.group_coordinator.complete_transactional_offsets(index, producer_id, committed)
    if not partition.standalone:
        required = info.last_offset + 1
        if partition.log.high_watermark < required:
            code = (await rm.wait_for_acks({(topic, index): required}, MARKER_TIMEOUT_MS))[(topic, index)]
            if code:
                return ErrorCode(code)
    return ErrorCode.NONE


class TransactionMarkerChannelManager:
    def __init__(self, broker):
        self.broker = broker
        self._clients: dict[int, object] = {}   # broker id -> NetworkClient

    async def add_txn_markers_to_send(self, transactional_id: str, coordinator_epoch: int, producer_id: int,
                                      producer_epoch: int, committed: bool, partitions: set[tuple[str, int]],
                                      still_coordinator=lambda: True) -> bool:
        """Write the markers of one transaction to every partition in it, retrying where the leader
        moved; False if this broker stopped being the transaction's coordinator before they were all
        written, or a partition says a newer coordinator wrote markers there (TRANSACTION_COORDINATOR_FENCED):
        the new coordinator writes them again."""
        pending = set(partitions)
        kind = "COMMIT" if committed else "ABORT"
        while pending:
            if not still_coordinator():
                return False
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for topic, index in sorted(pending):
                if self.broker.metadata_cache.get(topic) is None and (topic, index) not in \
                        self.broker.replica_manager.partitions:
                    log.info("transaction %s: %s-%d is gone (topic deleted); its marker is dropped",
                             transactional_id, topic, index)
                    pending.discard((topic, index))
                    continue
                by_leader.setdefault(self._leader_of(topic, index), []).append((topic, index))
            # every leader at once, as Kafka's channel (one request per broker); no leader: after the back-off
            results = await asyncio.gather(*(
                self._to_leader(leader, tps, producer_id, producer_epoch, committed, coordinator_epoch)
                for leader, tps in by_leader.items() if leader != -1))
            for codes in results:
                for tp, code in codes.items():
                    if code != ErrorCode.NONE:
                        log.info("transaction %s: %s marker for %s-%d: %s", transactional_id, kind, *tp,
                                 ErrorCode(code).name)
                    if code == ErrorCode.NONE:
                        pending.discard(tp)
                    elif code == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                        # a newer coordinator already wrote this producer's markers there: this one is a
                        # zombie, it gives the transaction up (Kafka's ``abortSending``), the new one finishes it
                        log.info("transaction %s: coordinator epoch %d fenced at %s-%d; its markers are left to "
                                 "the new coordinator", transactional_id, coordinator_epoch, *tp)
                        return False
                    elif code not in RETRIABLE:
                        log.warning("transaction %s: %s marker for %s-%d not written: %s", transactional_id,
                                    kind, *tp, ErrorCode(code).name)
                        pending.discard(tp)
            if pending:
                log.info("transaction %s: %s markers for %s not written yet; retrying", transactional_id, kind,
                         ", ".join(f"{t}-{i}" for t, i in sorted(pending)))
                if not self.broker.in_cluster:
                    for tp in sorted(pending):
                        log.warning("transaction %s: %s marker for %s-%d not written", transactional_id, kind, *tp)
                    return True
                await asyncio.sleep(RETRY_BACKOFF_S)
        return True

    async def _to_leader(self, leader: int, tps: list[tuple[str, int]], producer_id: int, producer_epoch: int,
                         committed: bool, coordinator_epoch: int) -> dict[tuple[str, int], int]:
        if leader == self.broker.broker_id or not self.broker.in_cluster:
            return {tp: await write_txn_marker(self.broker, *tp, producer_id, producer_epoch, committed,
                                               coordinator_epoch) for tp in tps}
        return await self._send(leader, producer_id, producer_epoch, committed, coordinator_epoch, tps)

    def _leader_of(self, topic: str, index: int) -> int:
        if not self.broker.in_cluster:
            return self.broker.broker_id
        node = self.broker.metadata_cache.leader_endpoint(topic, index)
        return -1 if node is None else node.id

    async def _send(self, leader: int, producer_id: int, producer_epoch: int, committed: bool,
                    coordinator_epoch: int, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """One WriteTxnMarkers v1 to ``leader``; the error per partition (NOT_LEADER_OR_FOLLOWER for
        every partition if the broker cannot be reached)."""
        from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

        node = self.broker.metadata_cache.alive_brokers.get(leader)
        if node is None:
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        client = self._clients.get(leader)
        if client is None or (client.host, client.port) != (node.host, node.port):
            client = self._clients[leader] = NetworkClient(
                node.host, node.port, client_id=f"broker-{self.broker.broker_id}-txn-marker-sender",
                timeout_s=MARKER_TIMEOUT_MS / 1000 + 5,
                security=self.broker.config.listener_configs.inter_broker_client_security())
        topics: dict[str, list[int]] = {}
        for topic, index in tps:
            topics.setdefault(topic, []).append(index)
        request = build(WriteTxnMarkersRequest, 1, {"markers": [{
            "producer_id": producer_id, "producer_epoch": producer_epoch, "transaction_result": committed,
            "coordinator_epoch": coordinator_epoch,
            "topics": [{"name": t, "partition_indexes": ids} for t, ids in topics.items()]}]})
        try:
            response = await client.send(request)
        except (ConnectionError, OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as exc:
            # (IncompleteReadError: the leader closed the connection mid-answer, e.g. it was SIGKILLed)
            log.info("WriteTxnMarkers to broker %d failed (%r); retrying", leader, exc)
            await client.close()
            return {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        codes = {tp: ErrorCode.NOT_LEADER_OR_FOLLOWER for tp in tps}
        for marker in response.markers or []:
            for t in marker.topics or []:
                for p in t.partitions or []:
                    codes[(t.name, p.partition_index)] = p.error_code
        return codes

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
