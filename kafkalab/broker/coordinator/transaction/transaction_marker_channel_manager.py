"""``TransactionMarkerChannelManager``: writes the COMMIT/ABORT markers that end a transaction.

In Kafka the coordinator sends WriteTxnMarkers (key 27) to the leader of every partition in the
transaction; each leader appends a control batch (``ReplicaManager.appendRecords`` with
``AppendOrigin.COORDINATOR``): attributes transactional + control, the producer's id and epoch,
no sequence, and one control record, key (version 0, type COMMIT 1 / ABORT 0), value
(version 0, coordinator epoch). A marker in ``__consumer_offsets`` also tells the group
coordinator to apply (commit) or drop (abort) the transaction's pending offsets.

On the standalone mini broker every leader is this broker: the markers are appended to the
local logs directly, by :func:`write_txn_marker`, the same function the WriteTxnMarkers handler
(``apis/write_txn_markers.py``) calls. Cluster mode (markers to other brokers) is not done.
"""
from __future__ import annotations

import logging

from ...common.errors import ErrorCode, KafkaError
from ...common.records import ABORT, COMMIT, build_end_txn_marker
from .transaction_metadata import now_ms

log = logging.getLogger("kafkalab.broker.coordinator")

OFFSETS_TOPIC = "__consumer_offsets"


def write_txn_marker(broker, topic: str, index: int, producer_id: int, producer_epoch: int,
                     committed: bool, coordinator_epoch: int) -> ErrorCode:
    """Append one marker to a partition this broker leads (Kafka's ``KafkaApis.handleWriteTxnMarkersRequest``
    for one partition); the error code for it."""
    rm = broker.replica_manager
    partition = rm.partitions.get((topic, index))
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not partition.standalone and not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    batch = build_end_txn_marker(COMMIT if committed else ABORT, producer_id, producer_epoch, coordinator_epoch,
                                 now_ms())
    try:
        partition.log.append_as_leader(batch, partition.leader_epoch, from_coordinator=True)
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
    return ErrorCode.NONE


class TransactionMarkerChannelManager:
    def __init__(self, broker):
        self.broker = broker

    def add_txn_markers_to_send(self, transactional_id: str, coordinator_epoch: int, producer_id: int,
                                producer_epoch: int, committed: bool,
                                partitions: set[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """Write the markers of one transaction to every partition in it; the error per partition.

        Kafka retries a marker until it is written or the partition is gone (a deleted topic's
        markers are dropped); here a marker that fails is logged and dropped."""
        errors = {}
        for topic, index in sorted(partitions):
            errors[(topic, index)] = code = write_txn_marker(self.broker, topic, index, producer_id, producer_epoch,
                                                             committed, coordinator_epoch)
            if code:
                log.warning("transaction %s: %s marker for %s-%d not written: %s", transactional_id,
                            "COMMIT" if committed else "ABORT", topic, index, ErrorCode(code).name)
        return errors
