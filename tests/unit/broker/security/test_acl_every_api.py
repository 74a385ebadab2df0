"""Every API's authorization check, at the request level: a principal without any ACL (User:mallory; but READ on
the groups ``allowed-*``) sends each
API's request to a mini broker with Kafka's AclAuthorizer, through KafkaApis.handle, and gets the error code
Kafka 3.9's KafkaApis answers (the response must also encode and decode at the version asked)."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType)

import kafkalab
from kafkalab.broker.apis import REGISTRY, load_all
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.kafka_principal import KafkaPrincipal
from kafkalab.broker.network.kafka_channel import KafkaChannel
from kafkalab.broker.network.request_channel import Request
from tests.helpers.kafka_wire import encode

T, G, C, TX = ("TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
               "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")
COMMIT = [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                                              "committed_metadata": ""}]}]
CASES = [   # (API, version, request, the error Kafka answers)
    ("Fetch", 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000, "isolation_level": 0,
                   "session_id": 0, "session_epoch": -1, "topics": [{"topic": "orders", "partitions": [
                       {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000, "current_leader_epoch": -1,
                        "last_fetched_epoch": -1, "log_start_offset": -1}]}], "forgotten_topics_data": [],
                   "rack_id": ""}, T),
    ("Fetch", 12, {"replica_id": 1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1000, "isolation_level": 0,
                   "session_id": 0, "session_epoch": -1, "topics": [{"topic": "orders", "partitions": [
                       {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1000, "current_leader_epoch": -1,
                        "last_fetched_epoch": -1, "log_start_offset": -1}]}], "forgotten_topics_data": [],
                   "rack_id": ""}, T),     # a follower without CLUSTER_ACTION
    ("ListOffsets", 8, {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -1, "current_leader_epoch": -1}]}]}, T),
    ("OffsetCommit", 8, {"group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
                         "group_instance_id": None, "topics": COMMIT}, G),
    ("OffsetFetch", 7, {"group_id": "g", "topics": [{"name": "orders", "partition_indexes": [0]}],
                        "require_stable": False}, G),
    ("OffsetFetch", 8, {"groups": [{"group_id": "g", "topics": None}], "require_stable": False}, G),
    ("SyncGroup", 5, {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                      "protocol_type": "consumer", "protocol_name": "range", "assignments": []}, G),
    ("Heartbeat", 4, {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}, G),
    ("LeaveGroup", 5, {"group_id": "g", "members": [{"member_id": "m", "group_instance_id": None, "reason": None}]},
     G),
    ("LeaveGroup", 1, {"group_id": "g", "member_id": "m"}, G),
    ("DescribeGroups", 5, {"groups": ["g"], "include_authorized_operations": True}, G),
    ("DeleteGroups", 2, {"groups_names": ["g"]}, G),
    ("FindCoordinator", 4, {"key_type": 0, "coordinator_keys": ["g"]}, G),
    ("FindCoordinator", 4, {"key_type": 1, "coordinator_keys": ["tx"]}, TX),
    ("FindCoordinator", 3, {"key_type": 0, "key": "g"}, G),
    ("CreateTopics", 7, {"topics": [{"name": "new-topic", "num_partitions": 1, "replication_factor": 1,
                                     "assignments": [], "configs": []}], "timeout_ms": 1000,
                         "validate_only": False}, T),
    ("DeleteTopics", 5, {"topic_names": ["orders"], "timeout_ms": 1000}, T),
    ("CreatePartitions", 3, {"topics": [{"name": "orders", "count": 2, "assignments": None}], "timeout_ms": 1000,
                             "validate_only": True}, T),
    ("DescribeConfigs", 4, {"resources": [{"resource_type": 2, "resource_name": "orders",
                                           "configuration_keys": None}], "include_synonyms": False,
                            "include_documentation": False}, T),
    ("DescribeConfigs", 4, {"resources": [{"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
                            "include_synonyms": False, "include_documentation": False}, C),
    ("AlterConfigs", 2, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": [
        {"name": "retention.ms", "value": "1000"}]}], "validate_only": True}, T),
    ("IncrementalAlterConfigs", 1, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": [
        {"name": "retention.ms", "config_operation": 0, "value": "1000"}]}], "validate_only": True}, T),
    ("InitProducerId", 4, {"transactional_id": "tx", "transaction_timeout_ms": 60000, "producer_id": -1,
                           "producer_epoch": -1}, TX),
    ("InitProducerId", 4, {"transactional_id": None, "transaction_timeout_ms": 60000, "producer_id": -1,
                           "producer_epoch": -1}, C),
    ("AddPartitionsToTxn", 3, {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1,
                               "v3_and_below_producer_epoch": 0,
                               "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]}, TX),
    ("AddOffsetsToTxn", 3, {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "group_id": "g"}, TX),
    ("EndTxn", 3, {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0, "committed": True}, TX),
    ("TxnOffsetCommit", 3, {"transactional_id": "tx", "group_id": "g", "producer_id": 1, "producer_epoch": 0,
                            "generation_id": -1, "member_id": "", "group_instance_id": None, "topics": COMMIT}, TX),
    ("DeleteRecords", 2, {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "offset": 0}]}],
                          "timeout_ms": 1000}, T),
    ("OffsetForLeaderEpoch", 4, {"replica_id": -1, "topics": [{"topic": "orders", "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}]}, T),
    ("ElectLeaders", 2, {"election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0]}],
                         "timeout_ms": 1000}, C),
    ("DescribeClientQuotas", 1, {"components": [], "strict": False}, C),
    ("AlterClientQuotas", 1, {"entries": [{"entity": [{"entity_type": "client-id", "entity_name": "x"}], "ops": [
        {"key": "producer_byte_rate", "value": 1024.0, "remove": False}]}], "validate_only": True}, C),
    ("WriteTxnMarkers", 1, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": True,
                                         "topics": [{"name": "orders", "partition_indexes": [0]}],
                                         "coordinator_epoch": 0}]}, C),
    ("CreateAcls", 3, {"creations": [{"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3,
                                      "principal": "User:mallory", "host": "*", "operation": 3,
                                      "permission_type": 3}]}, C),
    ("DeleteAcls", 3, {"filters": [{"resource_type_filter": 1, "resource_name_filter": None,
                                    "pattern_type_filter": 1, "principal_filter": None, "host_filter": None,
                                    "operation": 1, "permission_type": 1}]}, C),
    ("ConsumerGroupHeartbeat", 1, {"group_id": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 1000,
                                   "subscribed_topic_names": ["orders"], "topic_partitions": []}, G),
    ("ConsumerGroupDescribe", 1, {"group_ids": ["g"], "include_authorized_operations": False}, G),
    ("ConsumerGroupHeartbeat", 1, {"group_id": "allowed-g", "member_id": "m", "member_epoch": 0,
                                   "rebalance_timeout_ms": 1000, "subscribed_topic_names": ["orders"],
                                   "topic_partitions": []}, T),    # READ on the group, no DESCRIBE on the topic
    ("ShareGroupHeartbeat", 1, {"group_id": "g", "member_id": "m", "member_epoch": 0,
                                "subscribed_topic_names": ["orders"]}, G),
    ("ShareGroupHeartbeat", 1, {"group_id": "allowed-g", "member_id": "m", "member_epoch": 0,
                                "subscribed_topic_names": ["orders"]}, T),    # READ on the group only
    ("ShareGroupDescribe", 1, {"group_ids": ["g"], "include_authorized_operations": False}, G),
    ("ShareFetch", 1, {"group_id": "g", "member_id": "m", "share_session_epoch": 0, "topics": []}, G),
    ("ShareAcknowledge", 1, {"group_id": "g", "member_id": "m", "share_session_epoch": 1, "topics": []}, G),
    ("ReadShareGroupState", 0, {"group_id": "g", "topics": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition": 0, "leader_epoch": 0}]}]}, C),
    ("WriteShareGroupState", 0, {"group_id": "g", "topics": [{"topic_id": TOPIC_ID, "partitions": [
        {"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "state_batches": []}]}]}, C),
    ("DescribeTransactions", 0, {"transactional_ids": ["tx"]}, TX),
    ("DescribeShareGroupOffsets", 1, {"groups": [{"group_id": "g", "topics": None}]}, G),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    load_all()
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("acl-every")), **{
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS",
            "num.partitions": 1}) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        for f in admin.create_topics([NewTopic("orders", 1, 1)]).values():
            f.result(30)
        for f in admin.create_acls([AclBinding(ResourceType.GROUP, "allowed-", ResourcePatternType.PREFIXED,
                                               "User:mallory", "*", AclOperation.READ,
                                               AclPermissionType.ALLOW)]).values():
            f.result(30)
        yield b


def send(broker, principal: str, api: str, version: int, body: dict):
    spec = next(s for s in REGISTRY.values() if s.name == api)
    frame = encode(build(spec.request, version, body), version)[4:]
    channel = KafkaChannel(connection_id=1, client_host="127.0.0.1", principal=KafkaPrincipal.from_string(principal))
    answer = broker.call(broker.server.kafka_apis.handle, Request(spec.key, version, 1, frame, 1, "127.0.0.1",
                                                                  channel=channel))
    return spec.response.decode(bytes(answer)[4:], version=version, header=True)


def error_codes(value) -> set[int]:
    """Every ``error_code`` / ``partition_error_code`` in a decoded response."""
    found: set[int] = set()
    if isinstance(value, (list, tuple)):
        for v in value:
            found |= error_codes(v)
    elif hasattr(value, "_struct"):
        for field in value._struct._fields:
            v = getattr(value, field.name, None)
            if field.name in ("error_code", "partition_error_code") and isinstance(v, int):
                found.add(v)
            elif isinstance(v, (list, tuple)) or hasattr(v, "_struct"):
                found |= error_codes(v)
    return found


@pytest.mark.parametrize("api, version, body, expected", CASES,
                         ids=[f"{c[0]}-v{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_a_principal_without_acls_is_refused(broker, api, version, body, expected):
    response = send(broker, "User:mallory", api, version, body)
    assert ErrorCode[expected] in error_codes(response), (api, response)


def test_list_groups_shows_only_the_groups_one_may_describe(broker):
    send(broker, "User:ANONYMOUS", "OffsetCommit", 8, {"group_id": "listed", "generation_id_or_member_epoch": -1,
                                                      "member_id": "", "group_instance_id": None, "topics": COMMIT})
    assert "listed" in {g.group_id for g in send(broker, "User:ANONYMOUS", "ListGroups", 4,
                                                  {"states_filter": []}).groups}
    r = send(broker, "User:mallory", "ListGroups", 4, {"states_filter": []})
    assert r.error_code == 0 and r.groups == []
    assert not broker.server.metadata_cache.get("new-topic")      # CreateTopics refused: nothing created


def test_list_transactions_shows_only_the_ids_one_may_describe(broker):
    init = send(broker, "User:ANONYMOUS", "InitProducerId", 4, {
        "transactional_id": "tx-listed", "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1})
    assert init.error_code == 0
    body = {"state_filters": [], "producer_id_filters": [], "duration_filter": -1}
    assert "tx-listed" in {t.transactional_id for t in send(broker, "User:ANONYMOUS", "ListTransactions", 1,
                                                            body).transaction_states}
    assert send(broker, "User:mallory", "ListTransactions", 1, body).transaction_states == []


def test_share_fetch_needs_read_on_each_topic(broker):
    topic_id = broker.server.metadata_cache.get("orders").topic_id
    r = send(broker, "User:mallory", "ShareFetch", 1, {
        "group_id": "allowed-share", "member_id": "m" * 22, "share_session_epoch": 0, "max_wait_ms": 0,
        "min_bytes": 1, "max_bytes": 1000, "max_records": 10, "batch_size": 10,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0}]}]})
    assert ErrorCode.TOPIC_AUTHORIZATION_FAILED in error_codes(r), r
