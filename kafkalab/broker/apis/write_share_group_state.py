"""WriteShareGroupState (key 85), version 0: inter-broker, a partition leader writes a share-partition's state
(KIP-932).

v0   flexible (Kafka 4.1)
v1   + DeliveryCompleteCount (Kafka 4.4 serves v0-1; not served here)
Sent by :class:`kafkalab.broker.server.share.persister.SharePersister` to the share coordinator, which appends it
to ``__share_group_state`` as a ShareSnapshot record and answers once the partition's in-sync replicas have it.
NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / COORDINATOR_NOT_AVAILABLE: the caller retries.
Not implemented: FENCED_STATE_EPOCH checks (a write with an older state epoch is taken).
"""
from ..common.errors import ErrorCode, KafkaError
from ..common.message.share_group_state import WriteShareGroupStateRequest, WriteShareGroupStateResponse
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api




@api(WriteShareGroupStateRequest, WriteShareGroupStateResponse, versions=(0, 0))
async def handle_write_share_group_state(ctx, request):
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):   # Kafka 4: authorizeClusterOperation
        return {"results": [{"topic_id": t.topic_id, "partitions": [
            {"partition": p.partition, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
             "error_message": "Cluster authorization failed."} for p in t.partitions or []]}
            for t in request.topics or []]}
    coordinator = ctx.broker.share_coordinator
    results = []
    for t in request.topics or []:
        parts = []
        for p in t.partitions or []:
            entry = {"partition": p.partition, "error_code": 0, "error_message": None}
            try:
                if coordinator is None:
                    raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no share coordinator on this broker")
                batches = [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                            "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                           for b in p.state_batches or []]
                await coordinator.write(request.group_id, t.topic_id, p.partition, p.state_epoch, p.leader_epoch,
                                        p.start_offset, batches)
            except KafkaError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
            parts.append(entry)
        results.append({"topic_id": t.topic_id, "partitions": parts})
    return {"results": results}
