"""The requests a KRaft controller answers besides the quorum's own (Kafka's ``ControllerApis``).

On the controller listener, next to Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and DescribeQuorum:

===================  ====  ======  ==========================================================
request              key   served  answer
===================  ====  ======  ==========================================================
CreateTopics          19   v2-v7   TopicRecord, ConfigRecords, PartitionRecords, committed
DeleteTopics          20   v1-v6   RemoveTopicRecord per topic
AlterConfigs          33   v0-v2   ConfigRecords replacing each resource's configs
CreatePartitions      37   v0-v3   a PartitionRecord per new partition (StripedReplicaPlacer)
ElectLeaders          43   v0-v2   PREFERRED / UNCLEAN elections: a PartitionChangeRecord each
IncrementalAlterCon.  44   v0-v1   ConfigRecords: SET / DELETE / APPEND / SUBTRACT
AlterUserScramCred.   51   v0      a (Remove)UserScramCredentialRecord per user (scram_control_manager.py)
AlterPartition        56   v1      a leader's ISR change: PartitionChangeRecord; the new state
Envelope              58   v0      a request a broker forwarded (KIP-590): unwrapped, handled, the answer
                                   wrapped (:mod:`kafkalab.controller.envelope_utils`)
BrokerRegistration    62   v0-v4   RegisterBrokerRecord; the broker epoch
BrokerHeartbeat       63   v0-v1   maybe Unfence/Fence/ControlledShutdown records; the state
AllocateProducerIds   67   v0      ProducerIdsRecord; a block of 1000 producer ids
===================  ====  ======  ==========================================================

Each goes to :class:`~kafkalab.controller.quorum_controller.QuorumController`; a KafkaError becomes the
answer's error code (NOT_CONTROLLER from a controller that is not active: the sender looks for the
active one and asks again). Each handler is registered beside it, as the broker's APIs are: in
``CONTROLLER_APIS`` (handlers given the QuorumController), Envelope in ``ENVELOPE_APIS`` (given the
listener, whose APIs answer the inner request); :func:`register_controller_apis` adds both to a
:class:`~kafkalab.raft.raft_server.RaftServer`.
"""
from __future__ import annotations

from kafka.protocol.admin.configs import (AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
                                          IncrementalAlterConfigsResponse)
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                         CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
                                         ElectLeadersRequest, ElectLeadersResponse)

from ..broker.apis import ApiRegistry
from ..broker.apis.alter_user_scram_credentials import every_user
from ..broker.common.message.zk_messages import AlterPartitionRequest, AlterPartitionResponse
from ..broker.common.errors import KafkaError
from .controller_messages import (AllocateProducerIdsRequest, AllocateProducerIdsResponse, BrokerHeartbeatRequest,
                                  BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse,
                                  EnvelopeRequest, EnvelopeResponse)
from .envelope_utils import handle_envelope

#: the controller's APIs; each handler takes the QuorumController and the request
CONTROLLER_APIS = ApiRegistry()
#: Envelope; its handler takes the listener (a RaftServer) and the request
ENVELOPE_APIS = ApiRegistry()
controller_api = CONTROLLER_APIS.api


@controller_api(BrokerRegistrationRequest, BrokerRegistrationResponse, versions=(0, 4))
async def handle_broker_registration(controller, request) -> dict:
    try:
        epoch = await controller.register_broker(request)
        return {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": epoch}
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "broker_epoch": -1}


@controller_api(BrokerHeartbeatRequest, BrokerHeartbeatResponse, versions=(0, 1))
async def handle_broker_heartbeat(controller, request) -> dict:
    try:
        state = await controller.process_broker_heartbeat(request)
        return {"throttle_time_ms": 0, "error_code": 0, **state}
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "is_caught_up": False, "is_fenced": True,
                "should_shut_down": False}


@controller_api(CreateTopicsRequest, CreateTopicsResponse, versions=(2, 7))
async def handle_create_topics(controller, request) -> dict:
    try:
        results = await controller.create_topics(request)
    except KafkaError as exc:   # not the active controller, or not committed in time: every topic fails alike
        results = [{"name": t.name, "error_code": int(exc.code), "error_message": exc.message, "num_partitions": -1,
                    "replication_factor": -1, "configs": []} for t in request.topics]
    return {"throttle_time_ms": 0, "topics": results}


@controller_api(DeleteTopicsRequest, DeleteTopicsResponse, versions=(1, 6))
async def handle_delete_topics(controller, request) -> dict:
    try:
        results = await controller.delete_topics(request)
    except KafkaError as exc:
        names = list(getattr(request, "topic_names", None) or [])
        names += [t.name for t in getattr(request, "topics", None) or []]
        results = [{"name": n, "error_code": int(exc.code), "error_message": exc.message} for n in names]
    return {"throttle_time_ms": 0, "responses": results}


@controller_api(CreatePartitionsRequest, CreatePartitionsResponse, versions=(0, 3))
async def handle_create_partitions(controller, request) -> dict:
    try:
        results = await controller.create_partitions(request)
    except KafkaError as exc:
        results = [{"name": t.name, "error_code": int(exc.code), "error_message": exc.message} for t in request.topics]
    return {"throttle_time_ms": 0, "results": results}


def _config_results(request, exc: KafkaError) -> list[dict]:
    return [{"error_code": int(exc.code), "error_message": exc.message, "resource_type": r.resource_type,
             "resource_name": r.resource_name} for r in request.resources]


async def _alter_configs(alter, request) -> dict:
    try:
        results = await alter(request)
    except KafkaError as exc:
        results = _config_results(request, exc)
    return {"throttle_time_ms": 0, "responses": results}


@controller_api(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, versions=(0, 1))
async def handle_incremental_alter_configs(controller, request) -> dict:
    return await _alter_configs(controller.incremental_alter_configs, request)


@controller_api(AlterConfigsRequest, AlterConfigsResponse, versions=(0, 2))
async def handle_alter_configs(controller, request) -> dict:
    return await _alter_configs(controller.legacy_alter_configs, request)


@controller_api(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, versions=(0, 0))
async def handle_alter_user_scram_credentials(controller, request) -> dict:
    try:
        return {"throttle_time_ms": 0, "results": await controller.alter_user_scram_credentials(request)}
    except KafkaError as exc:   # NOT_CONTROLLER: the forwarding broker looks for the active one
        return every_user(request, exc.code, exc.message)


@controller_api(AlterPartitionRequest, AlterPartitionResponse, versions=(1, 1))
async def handle_alter_partition(controller, request) -> dict:
    try:
        return await controller.alter_partition(request)
    except KafkaError as exc:   # NOT_CONTROLLER, STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED: the leader retries
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "topics": []}


@controller_api(AllocateProducerIdsRequest, AllocateProducerIdsResponse, versions=(0, 0))
async def handle_allocate_producer_ids(controller, request) -> dict:
    try:
        block = await controller.allocate_producer_ids(request)
        return {"throttle_time_ms": 0, "error_code": 0, "producer_id_start": block.start,
                "producer_id_len": len(block)}
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "producer_id_start": -1, "producer_id_len": 0}


@controller_api(ElectLeadersRequest, ElectLeadersResponse, versions=(0, 2))
async def handle_elect_leaders(controller, request) -> dict:
    """ElectLeaders (v0: preferred elections only). A KafkaError for the whole request (NOT_CONTROLLER,
    an unknown election type: INVALID_REQUEST) becomes the top-level error and every partition's."""
    election_type = request.election_type if request.API_VERSION >= 1 else 0
    partitions = None if request.topic_partitions is None else \
        [(t.topic, list(t.partitions)) for t in request.topic_partitions]
    try:
        results = await controller.elect_leaders(election_type, partitions)
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "replica_election_results": [
            {"topic": name, "partition_result": [{"partition_id": p, "error_code": int(exc.code),
                                                  "error_message": exc.message} for p in indexes]}
            for name, indexes in partitions or []]}
    return {"throttle_time_ms": 0, "error_code": 0, "replica_election_results": [
        {"topic": name, "partition_result": [{"partition_id": p, "error_code": code, "error_message": message}
                                             for p, code, message in answers]} for name, answers in results]}


@ENVELOPE_APIS.api(EnvelopeRequest, EnvelopeResponse, versions=(0, 0))
async def handle_envelope_request(server, request) -> dict:
    """A forwarded request, answered by the listener's own APIs (:mod:`kafkalab.controller.envelope_utils`)."""
    apis = {key: (spec.request, spec.response, spec.min_version, spec.max_version,
                  lambda _client, inner, handler=spec.handler: handler(inner)) for key, spec in server.apis.items()}
    return await handle_envelope(apis, request)


def register_controller_apis(server, controller) -> None:
    """Add the controller's APIs to a :class:`~kafkalab.raft.raft_server.RaftServer`."""
    server.serve(CONTROLLER_APIS, controller)
    server.serve(ENVELOPE_APIS, server)
