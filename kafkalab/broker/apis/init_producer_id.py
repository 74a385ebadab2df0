"""InitProducerId (key 22), versions 0-5: give an idempotent producer its id and epoch (KIP-98).

v1   same as v0
v2   flexible
v3   + producer_id/epoch in the request: a producer may ask to bump its epoch (KIP-360)
v4   same as v3 (PRODUCER_FENCED may be returned)
v5   same as v4 (KIP-890)
Not implemented: v6 (two-phase commit, KIP-939). A transactional id is served
by its coordinator (in cluster mode the leader of its ``__transaction_state``
partition; NOT_COORDINATOR elsewhere).

With a ``transactional_id`` the transaction coordinator answers
(``kafkalab.broker.coordinator.transaction``): the same producer id for the same
transactional id, the epoch bumped on every call (the previous instance is
fenced, its open transaction aborted: CONCURRENT_TRANSACTIONS first, as Kafka,
until the ABORT markers are written, then the new epoch on the client's retry);
INVALID_TRANSACTION_TIMEOUT when ``transaction_timeout_ms`` is above
``transaction.max.timeout.ms``. The transactional id's state is written to
``__transaction_state`` first, so it outlives the broker.

An idempotent producer (``enable.idempotence=true``: the default of
kafka-python 3 and the Java client, opt-in for confluent-kafka/librdkafka)
calls this once, then stamps every batch with its producer id, epoch and
per-partition sequence numbers; the partition logs use them to drop retried
duplicates (see ``kafkalab.broker.log.producer_state``). As in Kafka, a
request without a transactional id always gets a *new* producer id with
epoch 0, also when it names its current id and epoch to ask for an epoch bump
(KIP-360; only transactional producers keep their id and get epoch + 1).
Giving an id without an epoch or the reverse is INVALID_REQUEST.
"""
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, ResourceType, authorize, authorize_by_resource_type, authorize_cluster
from . import api

NO_PRODUCER_ID, NO_PRODUCER_EPOCH = -1, -1


@api(InitProducerIdRequest, InitProducerIdResponse, versions=(0, 5))
async def handle_init_producer_id(ctx, request):
    # Kafka 3.9: WRITE on the transactional id; an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE
    # on some topic (KIP-679)
    if request.transactional_id is not None:
        if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "producer_id": -1, "producer_epoch": -1}
    elif (not authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE, log_if_denied=False)
          and not authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "producer_id": -1, "producer_epoch": -1}
    pid, epoch = NO_PRODUCER_ID, NO_PRODUCER_EPOCH
    if ctx.api_version >= 3:
        pid, epoch = request.producer_id, request.producer_epoch
        if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):  # one set without the other
            return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                    "producer_id": -1, "producer_epoch": -1}
    if request.transactional_id is not None:
        coordinator = ctx.broker.transaction_coordinator
        if coordinator is None:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    "producer_id": -1, "producer_epoch": -1}
        error, pid, epoch = await coordinator.handle_init_producer_id(request.transactional_id,
                                                                request.transaction_timeout_ms, pid, epoch)
        return {"throttle_time_ms": 0, "error_code": error, "producer_id": pid, "producer_epoch": epoch}
    # Kafka's TransactionCoordinator: without a transactional id, always a fresh producer id, epoch 0
    return {"throttle_time_ms": 0, "error_code": 0,
            "producer_id": ctx.broker.producer_id_manager.generate_producer_id(), "producer_epoch": 0}
