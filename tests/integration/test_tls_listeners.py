"""A mini broker with PLAINTEXT and SSL listeners: real clients over TLS, each listener's own endpoints in Metadata,
mutual TLS with the principal from the client certificate, and every handshake failure refused on its own
connection while the broker keeps serving."""
from __future__ import annotations

import logging
import socket
import struct
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from tests.helpers import kafka_wire as wire
from tests.helpers.cluster_helpers import wait_until
import kafkalab
from kafkalab.security import CertificateAuthority

WAIT_S = 60
LISTENERS = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory):
    return CertificateAuthority("another CA", directory=str(tmp_path_factory.mktemp("other-ca")))


def produce(bootstrap: str, topic: str, values: list[bytes], **configs) -> None:
    p = Producer({"bootstrap.servers": bootstrap, **configs})
    errors = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(WAIT_S) == 0 and not errors


def consume(bootstrap: str, topic: str, n: int, **configs) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}", "auto.offset.reset": "earliest",
                  **configs})
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


def client_error(bootstrap: str, **configs) -> str:
    """The first error a client reports trying to reach ``bootstrap`` (the TLS handshake's, here)."""
    seen: list[str] = []
    got = threading.Event()

    def on_error(err):
        seen.append(str(err))
        got.set()
    p = Producer({"bootstrap.servers": bootstrap, "error_cb": on_error, **configs})
    deadline = time.monotonic() + WAIT_S
    while not got.is_set() and time.monotonic() < deadline:
        p.poll(0.2)
    assert seen, "the client reported no error"
    return seen[0]


def metadata_brokers(bootstrap: str, **configs) -> dict[int, tuple[str, int]]:
    md = AdminClient({"bootstrap.servers": bootstrap, **configs}).list_topics(timeout=WAIT_S)
    return {b.id: (b.host, b.port) for b in md.brokers.values()}


def assert_serves(broker, ca) -> None:
    """The broker still answers on both listeners."""
    assert metadata_brokers(broker.listeners["PLAINTEXT"])
    assert metadata_brokers(broker.listeners["SSL"], **ca.client_configs())


def test_produce_and_consume_on_plaintext_and_ssl_listeners(ca, tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **ca.broker_configs()) as broker:
        assert set(broker.listeners) == {"PLAINTEXT", "SSL"}
        assert broker.bootstrap_servers == broker.listeners["PLAINTEXT"]
        produce(broker.listeners["SSL"], "over-tls", [b"a", b"b"], **ca.client_configs())
        produce(broker.listeners["PLAINTEXT"], "over-tls", [b"c"])
        assert sorted(consume(broker.listeners["PLAINTEXT"], "over-tls", 3)) == [b"a", b"b", b"c"]
        assert sorted(consume(broker.listeners["SSL"], "over-tls", 3, **ca.client_configs(inline=True))) == [
            b"a", b"b", b"c"]


def test_metadata_on_each_listener_advertises_that_listener(ca, tmp_path):
    configs = {"advertised.listeners": "PLAINTEXT://127.0.0.1:0,SSL://localhost:0", **ca.broker_configs()}
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **configs) as broker:
        plain_port, ssl_port = (int(a.rpartition(":")[2]) for a in broker.listeners.values())
        assert broker.listeners == {"PLAINTEXT": f"127.0.0.1:{plain_port}", "SSL": f"localhost:{ssl_port}"}
        response = wire.call(broker.listeners["PLAINTEXT"], MetadataRequest[1](topics=None), MetadataResponse[1], 1)
        assert [(b[1], b[2]) for b in response.brokers] == [("127.0.0.1", plain_port)]
        assert metadata_brokers(broker.listeners["SSL"], **ca.client_configs()) == {0: ("localhost", ssl_port)}


def test_mutual_tls_principal_with_a_mapping_rule(ca, tmp_path):
    alice = ca.issue("CN=alice,OU=payments,O=kafkalab")
    configs = {**ca.broker_configs(client_auth="required"),
               "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=([^,]*).*$/$1@$2/L,DEFAULT"}
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **configs) as broker:
        admin = AdminClient({"bootstrap.servers": broker.listeners["SSL"], **ca.client_configs(alice)})
        assert admin.list_topics(timeout=WAIT_S).brokers
        # librdkafka drops its bootstrap connection once it knows the brokers and opens one to broker 0: wait
        # for that one rather than look while it is still in its TLS handshake
        channels = wait_until(lambda: broker.call(lambda: [
            (str(c.principal), c.peer_certificate is not None, c.security_protocol)
            for c in broker.server.socket_servers["SSL"].channels.values()]), "an SSL connection")
        assert ("User:alice@payments", True, "SSL") in channels
        plain = broker.call(lambda: [str(c.principal) for c in broker.server.socket_servers["PLAINTEXT"]
                                     .channels.values()])
        assert all(p == "User:ANONYMOUS" for p in plain)
        del admin


def test_requested_client_auth_accepts_a_client_without_a_certificate(ca, tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS,
                       **ca.broker_configs(client_auth="requested")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.listeners["SSL"], **ca.client_configs()})
        assert admin.list_topics(timeout=WAIT_S).brokers
        principals = wait_until(lambda: broker.call(lambda: [str(c.principal) for c in broker.server
                                                             .socket_servers["SSL"].channels.values()]),
                                "an SSL connection")
        assert principals and set(principals) == {"User:ANONYMOUS"}
        del admin


def test_a_client_that_does_not_trust_the_ca_is_refused(ca, other_ca, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="kafkalab.broker.network.socket_server")
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **ca.broker_configs()) as broker:
        error = client_error(broker.listeners["SSL"], **other_ca.client_configs())
        assert "certificate verify failed" in error, error
        deadline = time.monotonic() + WAIT_S
        while "Failed authentication with /127.0.0.1" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "Failed authentication with /127.0.0.1" in caplog.text and "SSL handshake failed" in caplog.text
        assert_serves(broker, ca)


def test_a_certificate_for_another_host_is_refused_by_endpoint_identification(ca, tmp_path):
    elsewhere = ca.issue("CN=elsewhere.example", ["elsewhere.example"], name="elsewhere")
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **ca.broker_configs(elsewhere)) as broker:
        error = client_error(broker.listeners["SSL"], **ca.client_configs())   # https: the default
        assert "certificate verify failed" in error, error
        assert metadata_brokers(broker.listeners["SSL"], **ca.client_configs(endpoint_identification=False))


def test_required_client_auth_refuses_a_client_without_a_certificate_or_with_another_cas(ca, other_ca, tmp_path):
    stranger = other_ca.issue("CN=mallory")
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS,
                       **ca.broker_configs(client_auth="required")) as broker:
        assert client_error(broker.listeners["SSL"], **ca.client_configs())
        assert client_error(broker.listeners["SSL"], **{**ca.client_configs(),
                                                         "ssl.certificate.location": stranger.cert_path,
                                                         "ssl.key.location": stranger.key_path})
        alice = ca.issue("CN=alice")
        assert metadata_brokers(broker.listeners["SSL"], **ca.client_configs(alice))
        assert metadata_brokers(broker.listeners["PLAINTEXT"])


def test_plaintext_bytes_to_the_ssl_port_close_that_connection_only(ca, tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **ca.broker_configs()) as broker:
        sock = wire.connect(broker.listeners["SSL"])
        body = wire.encode(MetadataRequest[1](topics=None), 1)
        sock.sendall(body)
        assert wire.is_closed(sock)
        sock.close()
        raw = socket.create_connection(("127.0.0.1", int(broker.listeners["SSL"].rpartition(":")[2])))
        raw.sendall(struct.pack(">i", 2**30) + b"\x00" * 64)   # a huge "frame": the handshake fails, not a read
        assert wire.is_closed(raw)
        raw.close()
        assert_serves(broker, ca)


def test_kafka_python_over_ssl(ca, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer
    alice = ca.issue("CN=alice")
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS,
                       **ca.broker_configs(client_auth="required")) as broker:
        producer = KafkaProducer(bootstrap_servers=broker.listeners["SSL"], **ca.kafka_python_configs(alice))
        producer.send("kp-tls", b"hello").get(timeout=WAIT_S)
        producer.close()
        consumer = KafkaConsumer("kp-tls", bootstrap_servers=broker.listeners["SSL"], auto_offset_reset="earliest",
                                 consumer_timeout_ms=WAIT_S * 1000, **ca.kafka_python_configs(alice))
        try:
            assert next(iter(consumer)).value == b"hello"
        finally:
            consumer.close()


def test_a_bad_ssl_config_stops_the_start_with_kafkas_message(ca, tmp_path):
    from kafkalab.broker.kafka_server import StartupError
    with pytest.raises(StartupError, match="listener SSL: SSL private key is specified, but certificate chain is "
                                           "not specified."):
        kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS,
                      **{"ssl.keystore.type": "PEM", "ssl.keystore.key": ca.broker_certificate.key_pem})
    with kafkalab.mini(log_dir=str(tmp_path / "b")) as broker:   # the failed start left its log directory free
        assert metadata_brokers(broker.bootstrap_servers)


def test_describe_configs_hides_ssl_passwords(ca, tmp_path):
    from confluent_kafka.admin import ConfigResource
    cert = ca.issue("CN=broker", ["127.0.0.1"], key_password="s3cret", name="encrypted")
    with kafkalab.mini(log_dir=str(tmp_path / "b"), listeners=LISTENERS, **ca.broker_configs(cert)) as broker:
        assert metadata_brokers(broker.listeners["SSL"], **ca.client_configs())   # the encrypted key was read
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        entries = admin.describe_configs([resource])[resource].result(timeout=WAIT_S)
        assert entries["ssl.key.password"].is_sensitive and entries["ssl.key.password"].value is None
        assert entries["ssl.client.auth"].value == "none" and not entries["ssl.client.auth"].is_sensitive
        assert entries["listener.security.protocol.map"].value == (
            "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT")
