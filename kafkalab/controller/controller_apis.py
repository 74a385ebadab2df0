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
CreateAcls            30   v1-v3   an AccessControlEntryRecord per new ACL (acl_control_manager.py)
DeleteAcls            31   v1-v3   a RemoveAccessControlEntryRecord per ACL the filters match
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
active one and asks again).

**Authorization** (a controller with ``authorizer.class.name``, as Kafka 4's ``ControllerApis``; the principal and
host of :mod:`kafkalab.controller.controller_request_context`): Envelope, BrokerRegistration, BrokerHeartbeat,
AlterPartition and AllocateProducerIds need CLUSTER_ACTION on the cluster; CreateAcls, DeleteAcls, ElectLeaders and
AlterUserScramCredentials ALTER on it (else every item CLUSTER_AUTHORIZATION_FAILED); CreateTopics CREATE on the
cluster or on each topic, DeleteTopics DELETE on the cluster or DESCRIBE and DELETE on each topic, CreatePartitions
ALTER on each topic (else TOPIC_AUTHORIZATION_FAILED for that topic); AlterConfigs and IncrementalAlterConfigs
ALTER_CONFIGS on each resource (the cluster for a BROKER resource, the topic, the group).

Each handler is registered beside it, as the broker's APIs are: in ``CONTROLLER_APIS`` (handlers given the
QuorumController), Envelope in ``ENVELOPE_APIS`` (given the listener, whose APIs answer the inner request);
:func:`register_controller_apis` adds both to a :class:`~kafkalab.raft.raft_server.RaftServer`.
"""
from __future__ import annotations

from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse
from kafka.protocol.admin.configs import (AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
                                          IncrementalAlterConfigsResponse)
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                         CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
                                         ElectLeadersRequest, ElectLeadersResponse)

from ..broker.apis import ApiRegistry
from ..broker.apis.alter_user_scram_credentials import every_user
from ..broker.common.message.zk_messages import AlterPartitionRequest, AlterPartitionResponse
from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.security.authorizer.acl import AclOperation
from . import acl_apis
from .acl_apis import AUTHORIZATION_MESSAGES, alter_resource_error, authorized_topics, cluster_authorized
from .controller_messages import (AllocateProducerIdsRequest, AllocateProducerIdsResponse, BrokerHeartbeatRequest,
                                  BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse,
                                  EnvelopeRequest, EnvelopeResponse)
from .envelope_utils import handle_envelope

#: the controller's APIs; each handler takes the QuorumController and the request
CONTROLLER_APIS = ApiRegistry()
#: Envelope; its handler takes the listener (a RaftServer) and the request
ENVELOPE_APIS = ApiRegistry()
controller_api = CONTROLLER_APIS.api
controller_api(CreateAclsRequest, CreateAclsResponse, versions=(1, 3))(acl_apis.handle_create_acls)
controller_api(DeleteAclsRequest, DeleteAclsResponse, versions=(1, 3))(acl_apis.handle_delete_acls)
CLUSTER_AUTHORIZATION_FAILED = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
TOPIC_AUTHORIZATION_FAILED = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
TOPIC_REFUSED = AUTHORIZATION_MESSAGES[ErrorCode.TOPIC_AUTHORIZATION_FAILED]


@controller_api(BrokerRegistrationRequest, BrokerRegistrationResponse, versions=(0, 4))
async def handle_broker_registration(controller, request) -> dict:
    if not cluster_authorized(controller, 62, AclOperation.CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "broker_epoch": -1}
    try:
        epoch = await controller.register_broker(request)
        return {"throttle_time_ms": 0, "error_code": 0, "broker_epoch": epoch}
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "broker_epoch": -1}


@controller_api(BrokerHeartbeatRequest, BrokerHeartbeatResponse, versions=(0, 1))
async def handle_broker_heartbeat(controller, request) -> dict:
    if not cluster_authorized(controller, 63, AclOperation.CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "is_caught_up": False,
                "is_fenced": True, "should_shut_down": False}
    try:
        state = await controller.process_broker_heartbeat(request)
        return {"throttle_time_ms": 0, "error_code": 0, **state}
    except KafkaError as exc:
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "is_caught_up": False, "is_fenced": True,
                "should_shut_down": False}


@controller_api(CreateTopicsRequest, CreateTopicsResponse, versions=(2, 7))
async def handle_create_topics(controller, request) -> dict:
    refused = []
    if controller.authorizer is not None:   # CREATE on the cluster, else on each topic
        names = [t.name for t in request.topics]
        allowed = authorized_topics(controller, 19, AclOperation.CREATE, (AclOperation.CREATE,), names)
        refused = list(dict.fromkeys(n for n in names if n not in allowed))
        request.topics = [t for t in request.topics if t.name in allowed]
    try:
        results = await controller.create_topics(request)
    except KafkaError as exc:   # not the active controller, or not committed in time: every topic fails alike
        results = [{"name": t.name, "error_code": int(exc.code), "error_message": exc.message, "num_partitions": -1,
                    "replication_factor": -1, "configs": []} for t in request.topics]
    results += [{"name": n, "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": "Authorization failed.",
                 "num_partitions": -1, "replication_factor": -1, "configs": []} for n in refused]
    return {"throttle_time_ms": 0, "topics": results}


@controller_api(DeleteTopicsRequest, DeleteTopicsResponse, versions=(1, 6))
async def handle_delete_topics(controller, request) -> dict:
    refused = []
    if controller.authorizer is not None:   # DELETE on the cluster, else DESCRIBE and DELETE on each topic
        refused = _refuse_unauthorized_deletions(controller, request)
    try:
        results = await controller.delete_topics(request)
    except KafkaError as exc:
        names = list(getattr(request, "topic_names", None) or [])
        names += [t.name for t in getattr(request, "topics", None) or []]
        results = [{"name": n, "error_code": int(exc.code), "error_message": exc.message} for n in names]
    return {"throttle_time_ms": 0, "responses": results + refused}


def _refuse_unauthorized_deletions(controller, request) -> list[dict]:
    """The topics (by name, or by id of a known topic) the principal may not delete taken out of the request;
    their TOPIC_AUTHORIZATION_FAILED results (an id's without its name unless the topic may be described)."""
    by_id = {t.id: t.name for t in controller.replication.topics.values()}
    names = list(getattr(request, "topic_names", None) or [])
    items = list(getattr(request, "topics", None) or [])
    names += [t.name if t.name is not None else by_id.get(t.topic_id) for t in items]
    deletable = authorized_topics(controller, 20, AclOperation.DELETE, (AclOperation.DESCRIBE, AclOperation.DELETE),
                                  names)
    describable = authorized_topics(controller, 20, AclOperation.DELETE, (AclOperation.DESCRIBE,), names)
    refused = []
    if getattr(request, "topic_names", None):
        refused += [{"name": n, "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_REFUSED}
                    for n in request.topic_names if n not in deletable]
        request.topic_names = [n for n in request.topic_names if n in deletable]
    kept = []
    for t in items:
        name = t.name if t.name is not None else by_id.get(t.topic_id)
        if name is None or name in deletable:
            kept.append(t)
        else:
            refused.append({"name": name if name in describable else None, "topic_id": t.topic_id,
                            "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": TOPIC_REFUSED})
    if items:
        request.topics = kept
    return refused


@controller_api(CreatePartitionsRequest, CreatePartitionsResponse, versions=(0, 3))
async def handle_create_partitions(controller, request) -> dict:
    refused = []
    if controller.authorizer is not None:   # ALTER on each topic
        names = [t.name for t in request.topics]
        allowed = authorized_topics(controller, 37, None, (AclOperation.ALTER,), names)
        refused = list(dict.fromkeys(n for n in names if n not in allowed))
        request.topics = [t for t in request.topics if t.name in allowed]
    try:
        results = await controller.create_partitions(request)
    except KafkaError as exc:
        results = [{"name": t.name, "error_code": int(exc.code), "error_message": exc.message} for t in request.topics]
    results += [{"name": n, "error_code": TOPIC_AUTHORIZATION_FAILED, "error_message": None} for n in refused]
    return {"throttle_time_ms": 0, "results": results}


def _config_results(request, exc: KafkaError) -> list[dict]:
    return [{"error_code": int(exc.code), "error_message": exc.message, "resource_type": r.resource_type,
             "resource_name": r.resource_name} for r in request.resources]


async def _alter_configs(controller, api_key: int, alter, request) -> dict:
    refused: dict[int, int] = {}
    resources = list(request.resources)
    if controller.authorizer is not None:   # ALTER_CONFIGS on each resource (authorizeAlterResource)
        for i, r in enumerate(resources):
            error = alter_resource_error(controller, api_key, r.resource_type, r.resource_name)
            if error is not None:
                refused[i] = int(error)
        request.resources = [r for i, r in enumerate(resources) if i not in refused]
    try:
        results = await alter(request) if request.resources or not refused else []
    except KafkaError as exc:
        results = _config_results(request, exc)
    finally:
        request.resources = resources
    if refused:   # in the request's order
        answered = iter(results)
        results = [{"error_code": refused[i], "error_message": AUTHORIZATION_MESSAGES[ErrorCode(refused[i])],
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name} if i in refused else next(answered)
                   for i, r in enumerate(resources)]
    return {"throttle_time_ms": 0, "responses": results}


@controller_api(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, versions=(0, 1))
async def handle_incremental_alter_configs(controller, request) -> dict:
    return await _alter_configs(controller, 44, controller.incremental_alter_configs, request)


@controller_api(AlterConfigsRequest, AlterConfigsResponse, versions=(0, 2))
async def handle_alter_configs(controller, request) -> dict:
    return await _alter_configs(controller, 33, controller.legacy_alter_configs, request)


@controller_api(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, versions=(0, 0))
async def handle_alter_user_scram_credentials(controller, request) -> dict:
    if not cluster_authorized(controller, 51, AclOperation.ALTER):
        return every_user(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    try:
        return {"throttle_time_ms": 0, "results": await controller.alter_user_scram_credentials(request)}
    except KafkaError as exc:   # NOT_CONTROLLER: the forwarding broker looks for the active one
        return every_user(request, exc.code, exc.message)


@controller_api(AlterPartitionRequest, AlterPartitionResponse, versions=(1, 1))
async def handle_alter_partition(controller, request) -> dict:
    if not cluster_authorized(controller, 56, AclOperation.CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "topics": []}
    try:
        return await controller.alter_partition(request)
    except KafkaError as exc:   # NOT_CONTROLLER, STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED: the leader retries
        return {"throttle_time_ms": 0, "error_code": int(exc.code), "topics": []}


@controller_api(AllocateProducerIdsRequest, AllocateProducerIdsResponse, versions=(0, 0))
async def handle_allocate_producer_ids(controller, request) -> dict:
    if not cluster_authorized(controller, 67, AclOperation.CLUSTER_ACTION):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "producer_id_start": -1,
                "producer_id_len": 0}
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
    if not cluster_authorized(controller, 43, AclOperation.ALTER):
        return {"throttle_time_ms": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED, "replica_election_results": [
            {"topic": name, "partition_result": [{"partition_id": p, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                                                  "error_message": None} for p in indexes]}
            for name, indexes in partitions or []]}
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
    """A forwarded request, answered by the listener's own APIs (:mod:`kafkalab.controller.envelope_utils`), if the
    forwarding broker may CLUSTER_ACTION on the cluster (``handleEnvelopeRequest``)."""
    controller = getattr(server, "quorum_controller", None)
    if controller is not None and not cluster_authorized(controller, 58, AclOperation.CLUSTER_ACTION):
        return {"response_data": None, "error_code": CLUSTER_AUTHORIZATION_FAILED}
    apis = {key: (spec.request, spec.response, spec.min_version, spec.max_version,
                  lambda _client, inner, handler=spec.handler: handler(inner)) for key, spec in server.apis.items()}
    return await handle_envelope(apis, request)


def register_controller_apis(server, controller) -> None:
    """Add the controller's APIs to a :class:`~kafkalab.raft.raft_server.RaftServer`."""
    server.serve(CONTROLLER_APIS, controller)
    server.serve(ENVELOPE_APIS, server)
    server.quorum_controller = controller   # the Envelope's authorizer
