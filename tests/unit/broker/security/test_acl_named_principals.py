"""Authorization of named principals, at the request level: requests handed to the broker's KafkaApis with a
connection (KafkaChannel) whose principal is User:alice (what SASL or an SSL certificate will set), against a
mini broker with Kafka's AclAuthorizer whose ACLs were made over the wire by User:ANONYMOUS, its super user."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType)
from kafka.protocol.admin.acl import DescribeAclsRequest, DescribeAclsResponse
from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

import kafkalab
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.kafka_principal import KafkaPrincipal
from kafkalab.broker.network.kafka_channel import KafkaChannel
from kafkalab.broker.network.request_channel import Request
from tests.helpers.kafka_wire import encode

ALICE = "User:alice"
TOPIC_OPS = {3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER", 8: "DESCRIBE", 10: "DESCRIBE_CONFIGS",
             11: "ALTER_CONFIGS"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("acl-named")), **{
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS",
            "num.partitions": 1}) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        for f in a.create_topics([NewTopic(t, 1, 1) for t in ("orders", "secret")]).values():
            f.result(30)

        def acl(rtype, name, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL, host="*"):
            return AclBinding(rtype, name, pattern, ALICE, host, op, perm)
        for f in a.create_acls([
                acl(ResourceType.TOPIC, "orders", AclOperation.WRITE),
                acl(ResourceType.TOPIC, "orders", AclOperation.WRITE, AclPermissionType.DENY, host="10.0.0.9"),
                acl(ResourceType.TOPIC, "auto-", AclOperation.DESCRIBE, pattern=ResourcePatternType.PREFIXED),
                acl(ResourceType.TOPIC, "auto-yes", AclOperation.CREATE),
        ]).values():
            f.result(30)
        yield b


def handle(broker, principal, request, response_cls, version, host="127.0.0.1"):
    """``request`` (a request class and a dict) as if sent by ``principal`` from ``host``: through the broker's
    KafkaApis, decoded."""
    request = build(request[0], version, request[1])
    frame = encode(request, version)[4:]
    channel = KafkaChannel(connection_id=1, client_host=host, principal=KafkaPrincipal.from_string(principal))
    req = Request(request.API_KEY, version, 1, frame, 1, host, channel=channel)
    answer = broker.call(broker.server.kafka_apis.handle, req)
    return response_cls.decode(bytes(answer)[4:], version=version, header=True)


def metadata(broker, principal, topics, version=12, **kw):
    body = {"topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": True, "include_topic_authorized_operations": False, **kw}
    r = handle(broker, principal, (MetadataRequest, body), MetadataResponse, version)
    return [(t.name, ErrorCode(t.error_code).name) for t in r.topics], r


def test_metadata_names_or_hides_what_alice_may_not_describe(broker):
    named, _ = metadata(broker, ALICE, ["orders", "secret", "no-such-topic"])
    # an existing topic and a missing one answer alike: the broker does not say which exists
    assert named == [("orders", "NONE"), ("secret", "TOPIC_AUTHORIZATION_FAILED"),
                     ("no-such-topic", "TOPIC_AUTHORIZATION_FAILED")]
    every, _ = metadata(broker, ALICE, None)
    assert every == [("orders", "NONE")]
    everything, _ = metadata(broker, "User:ANONYMOUS", None)
    assert {"orders", "secret"} <= {n for n, _ in everything}


def test_auto_creation_needs_create(broker):
    named = dict(metadata(broker, ALICE, ["auto-no", "auto-yes"])[0])
    assert named["auto-no"] == "TOPIC_AUTHORIZATION_FAILED"     # DESCRIBE, no CREATE: refused, not created
    assert named["auto-yes"] == "NONE"
    assert broker.server.metadata_cache.get("auto-no") is None
    assert broker.server.metadata_cache.get("auto-yes") is not None


def test_kip_430_topic_authorized_operations(broker):
    _, r = metadata(broker, ALICE, ["orders"], include_topic_authorized_operations=True)
    assert {TOPIC_OPS[code] for code in r.topics[0].authorized_operations} == {"WRITE", "DESCRIBE"}


def test_kip_430_cluster_authorized_operations(broker):
    from kafka.protocol.admin.cluster import DescribeClusterRequest, DescribeClusterResponse
    req = (DescribeClusterRequest, {"include_cluster_authorized_operations": True, "endpoint_type": 1,
                                    "include_fenced_brokers": False})
    assert handle(broker, ALICE, req, DescribeClusterResponse, 1).authorized_operations == set()  # no DESCRIBE
    every = handle(broker, "User:ANONYMOUS", req, DescribeClusterResponse, 1).authorized_operations
    assert every == {5, 9, 10, 11, 12, 7, 8}   # the super user: every operation the cluster supports


def test_join_group_without_read_on_the_group(broker):
    r = handle(broker, ALICE, (JoinGroupRequest, dict(
        group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="", group_instance_id=None,
        protocol_type="consumer", protocols=[{"name": "range", "metadata": b""}], reason=None)), JoinGroupResponse, 9)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED and r.generation_id == -1


def test_init_producer_id_of_an_idempotent_producer(broker):
    req = (InitProducerIdRequest, dict(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                       producer_epoch=-1))
    assert handle(broker, ALICE, req, InitProducerIdResponse, 4).error_code == 0      # WRITE on some topic
    assert handle(broker, "User:carol", req, InitProducerIdResponse, 4).error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # only from the host it is allowed from: the DENY for 10.0.0.9 covers alice's one topic
    assert handle(broker, ALICE, req, InitProducerIdResponse, 4, host="10.0.0.9").error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_describe_acls_needs_describe_on_the_cluster(broker):
    req = (DescribeAclsRequest, dict(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                     principal_filter=None, host_filter=None, operation=1, permission_type=1))
    r = handle(broker, ALICE, req, DescribeAclsResponse, 3)
    assert r.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and r.resources == []
    r = handle(broker, "User:ANONYMOUS", req, DescribeAclsResponse, 3)
    assert r.error_code == 0 and len(r.resources) == 3
    rows = broker.authorizer_log()
    assert {"principal": ALICE, "operation": "Describe", "resource": "Cluster:LITERAL:kafka-cluster",
            "host": "127.0.0.1", "decision": "DENIED", "request": "DescribeAcls"} in rows
