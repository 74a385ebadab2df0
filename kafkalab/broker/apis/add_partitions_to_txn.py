"""AddPartitionsToTxn (key 24), versions 0-3: partitions join a producer's transaction (KIP-98).

v1   same as v0 (the broker may return CONCURRENT_TRANSACTIONS for quick retries)
v2   same as v1
v3   flexible
Not implemented: v4-v5, the batched broker-to-broker form with ``verify_only``
(KIP-890; a leader's Produce asks its own coordinator directly, and in cluster
mode a leader that is not the coordinator does not verify). Sent to the
transactional id's coordinator (NOT_COORDINATOR elsewhere in cluster mode).

A transactional producer sends this before its first record to a partition in
each transaction. As Kafka's ``KafkaApis.handleAddPartitionsToTxnRequest``: a
topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION and the
others OPERATION_NOT_ATTEMPTED; else the coordinator's answer goes to every
partition: INVALID_PRODUCER_ID_MAPPING (unknown producer id), PRODUCER_FENCED
(an older epoch: a newer instance called InitProducerId), CONCURRENT_TRANSACTIONS
(the previous transaction is still completing), or NONE (the transaction is Ongoing).
"""
from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from . import api


def _results(partitions: dict[str, list[int]], code_for) -> list[dict]:
    return [{"name": name, "results_by_partition": [{"partition_index": i, "partition_error_code": code_for(name, i)}
                                                    for i in indexes]}
            for name, indexes in partitions.items()]


@api(AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, versions=(0, 3))
async def handle_add_partitions_to_txn(ctx, request):
    broker = ctx.broker
    partitions: dict[str, list[int]] = {}
    for t in request.v3_and_below_topics or []:
        partitions.setdefault(t.name, []).extend(t.partitions or [])
    coordinator = broker.transaction_coordinator
    if coordinator is None:
        return {"throttle_time_ms": 0,
                "results_by_topic_v3_and_below": _results(partitions, lambda *_: ErrorCode.COORDINATOR_NOT_AVAILABLE)}
    # Kafka 3.9: WRITE on the transactional id (else every partition fails with it), then on each topic
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.v3_and_below_transactional_id):
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _results(
            partitions, lambda *_: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    allowed = filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, [t.name for t in
                                                                                 request.v3_and_below_topics or []])
    unknown = {}
    for name, indexes in partitions.items():
        topic = broker.metadata_cache.get(name)
        for i in indexes:
            if name not in allowed:
                unknown[(name, i)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None or not 0 <= i < topic.num_partitions:
                unknown[(name, i)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if unknown:
        return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _results(
            partitions, lambda n, i: unknown.get((n, i), ErrorCode.OPERATION_NOT_ATTEMPTED))}
    code = await coordinator.handle_add_partitions_to_transaction(
        request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
        request.v3_and_below_producer_epoch, {(n, i) for n, indexes in partitions.items() for i in indexes})
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _results(partitions, lambda *_: code)}
