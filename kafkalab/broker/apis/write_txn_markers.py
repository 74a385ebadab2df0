"""WriteTxnMarkers (key 27), version 1: a transaction coordinator asks a partition leader to write markers.

v1   flexible (v0, not flexible, is not served: kafka-python's codec starts at v1)
Not implemented: v2 (transaction version, KIP-1228). Kafka sends this only
broker to broker (``TransactionMarkerChannelManager``): in cluster mode the
coordinator sends it to the leaders of the transaction's partitions; for a
partition it leads itself (and on a standalone broker) it calls the same
function directly (``coordinator/transaction/transaction_marker_channel_manager.write_txn_marker``),
which in cluster mode waits for the partition's ISR (acks=all) before answering.

For each marker (producer id, epoch, COMMIT if ``transaction_result`` else
ABORT, coordinator epoch) and each partition it names, the leader appends a
control batch (Kafka's ``AppendOrigin.COORDINATOR``); per partition
UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, or INVALID_PRODUCER_EPOCH
for a marker older than the producer's epoch in that partition.
"""
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest, WriteTxnMarkersResponse

from ..coordinator.transaction.transaction_marker_channel_manager import write_txn_marker
from ..security.auth_helper import AclOperation, authorize_cluster
from ..common.errors import ErrorCode
from . import api


@api(WriteTxnMarkersRequest, WriteTxnMarkersResponse, versions=(1, 1))
async def handle_write_txn_markers(ctx, request):
    markers = []
    # Kafka 3.9: ALTER on the cluster, else CLUSTER_ACTION
    if (not authorize_cluster(ctx, AclOperation.ALTER, log_if_denied=False)
            and not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)):
        return {"markers": [{"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": i, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
                                            for i in t.partition_indexes or []]} for t in m.topics or []]}
            for m in request.markers or []]}
    for m in request.markers or []:
        topics = []
        for t in m.topics or []:
            parts = [{"partition_index": i,
                      "error_code": await write_txn_marker(ctx.broker, t.name, i, m.producer_id, m.producer_epoch,
                                                           bool(m.transaction_result), m.coordinator_epoch)}
                     for i in t.partition_indexes or []]
            topics.append({"name": t.name, "partitions": parts})
        markers.append({"producer_id": m.producer_id, "topics": topics})
    return {"markers": markers}
