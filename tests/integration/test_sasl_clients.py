"""SASL_PLAINTEXT with unmodified clients against the mini broker: confluent-kafka (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512) and kafka-python (PLAIN, SCRAM-SHA-256) produce and consume; a wrong password reaches the client's
error callback while the broker serves others; SCRAM users created, described, rotated and deleted with
AdminClient and authenticating (or not) at once; librdkafka re-authenticating under connections.max.reauth.ms."""
from __future__ import annotations

import logging
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion,
                                   UserScramCredentialUpsertion)

import kafkalab

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
CONFIGS = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "security.inter.broker.protocol": "SASL_PLAINTEXT",   # Kafka: the inter-broker listener must be one of them
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
}
SCRAM = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


@pytest.fixture(scope="module")
def broker():
    with kafkalab.mini(**CONFIGS) as b:
        yield b


def sasl(broker, mechanism, user, password, **extra):
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password, **extra}


def admin(broker):
    return AdminClient(sasl(broker, "PLAIN", "admin", "admin-secret"))


def set_scram(broker, user, password, mechanisms=("SCRAM-SHA-256", "SCRAM-SHA-512"), iterations=4096):
    client = admin(broker)   # kept until the futures are done (a destroyed client fails them with _DESTROY)
    futures = client.alter_user_scram_credentials([
        UserScramCredentialUpsertion(user, ScramCredentialInfo(SCRAM[m], iterations), password.encode())
        for m in mechanisms])
    for f in futures.values():
        f.result(30)


def produce_and_consume(broker, mechanism, user, password) -> list[bytes]:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    errors: list = []
    producer = Producer(sasl(broker, mechanism, user, password, error_cb=errors.append))
    for i in range(3):
        producer.produce(topic, f"{mechanism}-{i}".encode())
    assert producer.flush(30) == 0, errors
    consumer = Consumer(sasl(broker, mechanism, user, password, **{"group.id": topic, "auto.offset.reset": "earliest"}))
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    return got


def auth_errors(broker, mechanism, user, password, wait_s=15) -> list:
    """The error callbacks of a producer that cannot authenticate (its first one, waited for)."""
    errors: list = []
    producer = Producer(sasl(broker, mechanism, user, password, error_cb=errors.append))
    producer.produce("never", b"x")
    deadline = time.monotonic() + wait_s
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.purge()
    producer.flush(1)
    return errors


def test_confluent_kafka_plain_produces_and_consumes(broker):
    assert produce_and_consume(broker, "PLAIN", "alice", "alice-secret") == [b"PLAIN-0", b"PLAIN-1", b"PLAIN-2"]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_scram_produces_and_consumes(broker, mechanism):
    set_scram(broker, "carol", "carol-secret")
    assert produce_and_consume(broker, mechanism, "carol", "carol-secret") == [
        f"{mechanism}-{i}".encode() for i in range(3)]


@pytest.mark.parametrize("mechanism, message", [
    ("PLAIN", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-256", "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                      "SCRAM-SHA-256")])
def test_a_wrong_password_reaches_the_error_callback_and_others_are_served(broker, mechanism, message, caplog):
    set_scram(broker, "dave", "dave-secret")
    with caplog.at_level(logging.INFO):
        errors = auth_errors(broker, mechanism, "alice" if mechanism == "PLAIN" else "dave", "wrong")
    failed = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert failed and message in failed[0].str()
    assert any(r.getMessage().startswith("Failed authentication with /127.0.0.1") and message in r.getMessage()
               for r in caplog.records)
    assert produce_and_consume(broker, "PLAIN", "admin", "admin-secret")   # the broker serves on


def test_scram_users_created_described_rotated_and_deleted_over_the_admin_api(broker):
    client = admin(broker)
    set_scram(broker, "erin", "first", mechanisms=("SCRAM-SHA-256",), iterations=8192)
    described = client.describe_user_scram_credentials(["erin"])["erin"].result(30)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)]
    assert produce_and_consume(broker, "SCRAM-SHA-256", "erin", "first")
    set_scram(broker, "erin", "second", mechanisms=("SCRAM-SHA-256",))          # rotated: the old one fails
    assert any(e.code() == KafkaError._AUTHENTICATION for e in auth_errors(broker, "SCRAM-SHA-256", "erin", "first"))
    assert produce_and_consume(broker, "SCRAM-SHA-256", "erin", "second")
    for f in client.alter_user_scram_credentials([UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)]
                                                 ).values():
        f.result(30)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in auth_errors(broker, "SCRAM-SHA-256", "erin", "second"))
    with pytest.raises(KafkaException) as info:
        client.describe_user_scram_credentials(["erin"])["erin"].result(30)
    assert info.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(KafkaException) as info:
        list(client.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 20000), b"x")]).values())[0].result(30)
    assert info.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert info.value.args[0].str() == "Too many iterations"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_produces_and_consumes(broker, mechanism):
    from kafka import KafkaConsumer, KafkaProducer
    user, password = ("alice", "alice-secret") if mechanism == "PLAIN" else ("grace", "grace-secret")
    if mechanism != "PLAIN":
        set_scram(broker, user, password)
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    common = {"bootstrap_servers": broker.bootstrap_servers, "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
    producer = KafkaProducer(**common)
    for i in range(3):
        producer.send(topic, f"kp-{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **common)
    got = []
    for record in consumer:
        got.append(record.value)
        if len(got) == 3:
            break
    consumer.close()
    assert got == [b"kp-0", b"kp-1", b"kp-2"]


def test_librdkafka_reauthenticates_within_the_session_lifetime(caplog):
    """KIP-368: with connections.max.reauth.ms the client re-authenticates on its connection before the session
    ends, so a producer keeps producing past several lifetimes on the connection it has."""
    with kafkalab.mini(**CONFIGS, **{"connections.max.reauth.ms": 2000}) as b:
        errors: list = []
        with caplog.at_level(logging.DEBUG, logger="kafkalab.broker.sasl_gate"):   # SaslGate logs the exchange
            producer = Producer(sasl(b, "PLAIN", "alice", "alice-secret", error_cb=errors.append))
            deadline = time.monotonic() + 6
            sent = 0
            while time.monotonic() < deadline:
                producer.produce("reauth", b"x")
                sent += 1
                producer.flush(10)
                time.sleep(0.2)
            assert producer.flush(10) == 0
        assert not [e for e in errors if e.code() == KafkaError._AUTHENTICATION], errors
        assert any(r.getMessage().startswith("Successfully re-authenticated with") for r in caplog.records)
