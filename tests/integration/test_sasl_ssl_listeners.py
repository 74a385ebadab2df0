"""One mini broker with three listeners at once, each its own security protocol and SASL configs: PLAINTEXT (the
lab's tooling), CLIENT (SASL_PLAINTEXT, PLAIN only) and SASL_SSL (TLS, then SCRAM-SHA-512 only). confluent-kafka
produces and consumes with SCRAM-SHA-512 over SASL_SSL as the SASL user (not the certificate's name); a wrong
password, or a mechanism that listener does not enable, is refused there while PLAINTEXT keeps serving; a TLS
connection that skips SASL is closed; Metadata on each listener advertises that listener's own port; with an
authorizer, the ACLs decide for the SASL user."""
from __future__ import annotations

import logging
import socket
import ssl
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType,
    ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion)
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from tests.helpers import kafka_wire as wire
from tests.helpers.cluster_helpers import wait_until
import kafkalab
from kafkalab.security import CertificateAuthority

WAIT_S = 60
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_bob="bob-secret";')


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def broker(ca, tmp_path_factory):
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        **ca.broker_configs(listener="SASL_SSL"),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.client.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS,
    }
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("b")), **configs) as b:
        admin = AdminClient({"bootstrap.servers": b.listeners["PLAINTEXT"]})   # the tooling's listener: no SASL
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-secret")]).values():
            f.result(WAIT_S)
        yield b


def sasl_ssl(broker, ca, mechanism="SCRAM-SHA-512", user="alice", password="alice-secret", **extra) -> dict:
    return {**ca.client_configs(), "bootstrap.servers": broker.listeners["SASL_SSL"], "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password, **extra}


def produce(configs: dict, topic: str, values: list[bytes]) -> None:
    errors: list = []
    p = Producer({**configs, "error_cb": errors.append})
    for v in values:
        p.produce(topic, v)
    assert p.flush(WAIT_S) == 0, errors


def consume(configs: dict, topic: str, n: int) -> list[bytes]:
    c = Consumer({**configs, "group.id": f"g-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list[bytes] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value())
    finally:
        c.close()
    return out


def auth_errors(configs: dict) -> list:
    """The error callbacks of a producer that cannot authenticate (its first _AUTHENTICATION one, waited for)."""
    errors: list = []
    p = Producer({**configs, "error_cb": errors.append})
    p.produce("never", b"x")
    deadline = time.monotonic() + WAIT_S
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        p.poll(0.2)
    p.purge()
    p.flush(1)
    return [e for e in errors if e.code() == KafkaError._AUTHENTICATION]


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


def test_scram_sha_512_over_sasl_ssl_produces_and_consumes_as_the_sasl_user(broker, ca):
    topic = f"sasl-ssl-{uuid.uuid4().hex[:8]}"
    produce(sasl_ssl(broker, ca), topic, [b"a", b"b"])
    produce({"bootstrap.servers": broker.listeners["PLAINTEXT"]}, topic, [b"c"])
    assert sorted(consume(sasl_ssl(broker, ca), topic, 3)) == [b"a", b"b", b"c"]
    assert sorted(consume({"bootstrap.servers": broker.listeners["PLAINTEXT"]}, topic, 3)) == [b"a", b"b", b"c"]
    admin = AdminClient(sasl_ssl(broker, ca))   # connected while its channels are looked at
    assert admin.list_topics(timeout=WAIT_S).brokers
    # librdkafka drops its bootstrap connection once it knows the brokers: wait for the one to broker 0
    channels = wait_until(lambda: [row for row in broker.call(lambda: [
        (str(c.principal), c.authenticated, c.security_protocol, c.listener_name)
        for c in broker.server.socket_servers["SASL_SSL"].channels.values()]) if row[1]], "an authenticated connection")
    assert ("User:alice", True, "SASL_SSL", "SASL_SSL") in channels
    assert {p for p, *_ in channels} == {"User:alice"}
    plain = broker.call(lambda: {str(c.principal) for c in broker.server.socket_servers["PLAINTEXT"]
                                 .channels.values()})
    assert plain <= {"User:ANONYMOUS"}
    del admin


def test_plain_on_the_sasl_plaintext_listener_with_its_own_mechanisms(broker):
    topic = f"client-{uuid.uuid4().hex[:8]}"
    client = {"bootstrap.servers": broker.listeners["CLIENT"], "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "bob-secret"}
    produce(client, topic, [b"x"])
    assert consume(client, topic, 1) == [b"x"]
    # SCRAM-SHA-512 is the SASL_SSL listener's, not this one's (and alice is no PLAIN user here)
    refused = auth_errors({**client, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                           "sasl.password": "alice-secret"})
    assert refused and "PLAIN" in refused[0].str()


def test_a_wrong_password_is_refused_on_sasl_ssl_while_plaintext_serves(broker, ca, caplog):
    with caplog.at_level(logging.INFO):
        refused = auth_errors(sasl_ssl(broker, ca, password="wrong"))
    assert refused and ("Authentication failed during authentication due to invalid credentials with SASL "
                        "mechanism SCRAM-SHA-512") in refused[0].str()
    sasl_ssl_port = port_of(broker.listeners["SASL_SSL"])
    failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Failed authentication with /")]
    assert any(f"(channelId=127.0.0.1:{sasl_ssl_port}-127.0.0.1:" in m for m in failed), failed
    # a mechanism this listener does not enable
    assert "SCRAM-SHA-512" in auth_errors(sasl_ssl(broker, ca, mechanism="PLAIN", user="bob",
                                                   password="bob-secret"))[0].str()
    response = wire.call(broker.listeners["PLAINTEXT"], MetadataRequest[1](topics=None), MetadataResponse[1], 1)
    assert response.brokers
    produce(sasl_ssl(broker, ca), f"after-{uuid.uuid4().hex[:8]}", [b"ok"])   # and SASL_SSL serves the right one


def test_a_tls_connection_that_skips_sasl_is_closed(broker, ca):
    context = ssl.create_default_context(cafile=ca.ca_path)
    host, _, port = broker.listeners["SASL_SSL"].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=WAIT_S) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            tls.sendall(wire.encode(MetadataRequest[1](topics=None), 1))
            try:   # not answered: closed (Unexpected Kafka request of type METADATA during SASL handshake.)
                got = tls.recv(4)
            except (ssl.SSLError, ConnectionError):
                got = b""
            assert got == b""
    assert wire.call(broker.listeners["PLAINTEXT"], MetadataRequest[1](topics=None), MetadataResponse[1], 1).brokers


def test_metadata_on_each_listener_advertises_that_listener(broker, ca):
    md = AdminClient(sasl_ssl(broker, ca)).list_topics(timeout=WAIT_S)
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {
        0: ("127.0.0.1", port_of(broker.listeners["SASL_SSL"]))}
    response = wire.call(broker.listeners["PLAINTEXT"], MetadataRequest[1](topics=None), MetadataResponse[1], 1)
    assert [(b[1], b[2]) for b in response.brokers] == [("127.0.0.1", port_of(broker.listeners["PLAINTEXT"]))]
    client = {"bootstrap.servers": broker.listeners["CLIENT"], "security.protocol": "SASL_PLAINTEXT",
              "sasl.mechanism": "PLAIN", "sasl.username": "bob", "sasl.password": "bob-secret"}
    md = AdminClient(client).list_topics(timeout=WAIT_S)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", port_of(broker.listeners["CLIENT"]))]


def test_the_sasl_user_is_the_principal_the_acls_decide_for(ca, tmp_path):
    """With an authorizer: the SASL_SSL connection's principal is its SCRAM user (the PLAINTEXT listener's
    ``User:ANONYMOUS`` is the super user that sets things up)."""
    configs = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", **ca.broker_configs(listener="SASL_SSL"),
               "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
               "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
               "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"}
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **configs) as broker:
        admin = AdminClient({"bootstrap.servers": broker.listeners["PLAINTEXT"]})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), f"{user}-secret".encode())
                for user in ("alice", "bob")]).values():
            f.result(WAIT_S)
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("alice-orders", "bob-orders")]).values():
            f.result(WAIT_S)
        for f in admin.create_acls([AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED,
                                               "User:alice", "*", AclOperation.WRITE,
                                               AclPermissionType.ALLOW)]).values():
            f.result(WAIT_S)

        def produce_one(user: str, topic: str):
            errors: list = []
            p = Producer(sasl_ssl(broker, ca, user=user, password=f"{user}-secret", **{"message.timeout.ms": 10_000}))
            p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
            p.flush(WAIT_S)
            return errors[0]
        assert produce_one("alice", "alice-orders") is None
        assert produce_one("alice", "bob-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        assert produce_one("bob", "alice-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        rows = broker.authorizer_log()
        assert {"principal": "User:alice", "operation": "Write", "resource": "Topic:LITERAL:alice-orders",
                "host": "127.0.0.1", "decision": "ALLOWED", "request": "Produce"} in rows
        assert any(r["principal"] == "User:bob" and r["decision"] == "DENIED" for r in rows)
