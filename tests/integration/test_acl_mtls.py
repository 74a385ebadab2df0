"""Named principals end to end: mutual TLS gives each client its certificate's name (``ssl.client.auth=required``
and ``ssl.principal.mapping.rules``), and the ACLs of that principal decide, while the PLAINTEXT listener's
``User:ANONYMOUS`` is the super user that made them."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType)

import kafkalab
from kafkalab.security import CertificateAuthority

TIMEOUT = 30


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    ca = CertificateAuthority(directory=str(tmp_path_factory.mktemp("acl-ca")))
    configs = {**ca.broker_configs(client_auth="required"),
               "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*).*$/$1/,DEFAULT",
               "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS",
               "num.partitions": 1}
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("acl-mtls")),
                       listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0", **configs) as broker:
        admin = AdminClient({"bootstrap.servers": broker.listeners["PLAINTEXT"]})
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("alice-orders", "bob-orders")]).values():
            f.result(TIMEOUT)
        for f in admin.create_acls([AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED,
                                               "User:alice", "*", AclOperation.WRITE,
                                               AclPermissionType.ALLOW)]).values():
            f.result(TIMEOUT)
        yield broker, ca


def produce_one(bootstrap, topic, **conf):
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10_000, **conf})
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(TIMEOUT)
    return errors[0]


def test_the_certificates_principal_is_authorized(secured):
    broker, ca = secured
    alice, bob = ca.issue("CN=alice,O=kafkalab"), ca.issue("CN=bob,O=kafkalab")
    ssl = broker.listeners["SSL"]
    assert produce_one(ssl, "alice-orders", **ca.client_configs(alice)) is None
    assert produce_one(ssl, "bob-orders", **ca.client_configs(alice)).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_one(ssl, "alice-orders", **ca.client_configs(bob)).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_one(broker.listeners["PLAINTEXT"], "bob-orders") is None          # the super user
    rows = broker.authorizer_log()
    assert {"principal": "User:alice", "operation": "Write", "resource": "Topic:LITERAL:alice-orders",
            "host": "127.0.0.1", "decision": "ALLOWED", "request": "Produce"} in rows
    assert {"principal": "User:bob", "operation": "Describe", "resource": "Topic:LITERAL:alice-orders",
            "host": "127.0.0.1", "decision": "DENIED", "request": "Metadata"} in rows
