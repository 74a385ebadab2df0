"""ReadShareGroupState (key 84), version 0: inter-broker, a partition leader reads a share-partition's state (KIP-932).

v0   flexible (Kafka 4.1+; Kafka 4.4 serves v0)
Sent by :class:`kafkalab.broker.server.share.persister.SharePersister` to the share coordinator, the leader of the
share-partition's ``__share_group_state`` partition. Answers per partition the state epoch, the share-partition
start offset and the state batches (first, last offset, delivery state, delivery count); UNKNOWN_TOPIC_OR_PARTITION
when the share-partition has no state yet; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS when this broker does
not (yet) lead that partition: the caller retries.
"""
from ..common.errors import ErrorCode, KafkaError
from ..common.message.share_group_state import ReadShareGroupStateRequest, ReadShareGroupStateResponse
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api




@api(ReadShareGroupStateRequest, ReadShareGroupStateResponse, versions=(0, 0))
async def handle_read_share_group_state(ctx, request):
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
            entry = {"partition": p.partition, "error_code": 0, "error_message": None, "state_epoch": 0,
                     "start_offset": -1, "state_batches": []}
            try:
                if coordinator is None:
                    raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no share coordinator on this broker")
                state = coordinator.read(request.group_id, t.topic_id, p.partition)
                if state is None:
                    entry.update(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                 error_message="no state for this share-partition")
                else:
                    entry.update(state_epoch=state["state_epoch"], start_offset=state["start_offset"],
                                 state_batches=state["state_batches"])
            except KafkaError as exc:
                entry.update(error_code=exc.code, error_message=exc.message)
            parts.append(entry)
        results.append({"topic_id": t.topic_id, "partitions": parts})
    return {"results": results}
