"""A mini broker counts connections and authentications per listener as Kafka's ``Selector`` does
(``kafka.server:type=socket-server-metrics,listener=..,networkProcessor=..``): the scenario of
``tests/helpers/authentication_scenario.py``, which ``test_security_on_kafka.py`` runs against Kafka 4.4 too, then
re-authentication (KIP-368), the names and labels served, and the counts not kept when metrics are off."""
from __future__ import annotations

import time

import pytest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

import kafkalab
from kafkalab.cluster.metrics import scrape
from kafkalab.security import CertificateAuthority
from tests.helpers import authentication_scenario as scenario
from tests.helpers import kafka_wire as wire


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    with CertificateAuthority(directory=str(tmp_path_factory.mktemp("auth-metrics-ca"))) as authority:
        yield authority


@pytest.fixture(scope="module")
def broker(ca):
    with kafkalab.mini(**scenario.broker_listener_configs(ca), **{"connections.max.reauth.ms": 60_000}) as b:
        yield b


def test_the_scenario_counts_what_kafka_counts(broker, ca):
    delta, want = scenario.run(broker.listeners, ca, lambda: scrape(broker.metrics_url), settle_s=10)
    assert dict(delta) == dict(want)


def test_a_request_before_the_sasl_handshake_is_a_failed_authentication_as_in_kafka_3_9(broker):
    """Kafka 3.9's SaslServerAuthenticator throws IllegalSaslStateException (an AuthenticationException: counted)
    for a Metadata request before SaslHandshake; Kafka 4.4 throws InvalidRequestException instead ("Invalid
    request, potential reasons: ...") and closes the connection without counting it. The mini broker does as 3.9
    (docs/differences.md)."""
    def failed():
        return sum(value for name, labels, value in scrape(broker.metrics_url)
                   if name == scenario.PREFIX + "failed_authentication_total"
                   and labels["listener"] == "SASL_PLAINTEXT")
    before = failed()
    with wire.connect(broker.listeners["SASL_PLAINTEXT"], timeout=10) as sock:
        sock.sendall(wire.encode(MetadataRequest(topics=None, allow_auto_topic_creation=False), 4, 1))
        assert wire.is_closed(sock, 10)
    assert failed() == before + 1


def test_names_and_labels_are_the_exporters(broker):
    samples = scrape(broker.metrics_url)
    served = {(name, tuple(sorted(labels.items()))) for name, labels, _ in samples
              if name.startswith(scenario.PREFIX)}
    for processor, listener in enumerate(("PLAINTEXT", "SASL_PLAINTEXT", "SSL")):
        labels = (("listener", listener), ("networkProcessor", str(processor)))
        for count in scenario.COUNTS + ("successful_reauthentication_total", "failed_reauthentication_total",
                                        "connection_count"):
            assert (scenario.PREFIX + count, labels) in served, (count, listener)
    frame = broker.metrics("kafka_server_socket_server_metrics_failed_authentication_total")
    assert set(frame["metric"]) == {"kafka_server_socket_server_metrics_failed_authentication_total"}
    assert sorted(labels["listener"] for labels in frame["labels"]) == ["PLAINTEXT", "SASL_PLAINTEXT", "SSL"]


def test_connection_count_is_the_open_connections(broker):
    def open_now():
        return {labels["listener"]: value for name, labels, value in scrape(broker.metrics_url)
                if name == scenario.PREFIX + "connection_count"}
    before = open_now()["PLAINTEXT"]
    socks = [wire.connect(broker.listeners["PLAINTEXT"], timeout=10) for _ in range(3)]
    try:
        for sock in socks:   # served: the broker has surely accepted them
            wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 0, 1)
        assert open_now()["PLAINTEXT"] == before + 3
    finally:
        for sock in socks:
            sock.close()
    deadline = time.monotonic() + 10
    while open_now()["PLAINTEXT"] != before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_now()["PLAINTEXT"] == before


def test_a_reauthentication_counts_apart_from_the_first(broker):
    sasl = broker.listeners["SASL_PLAINTEXT"]

    def reauth_counts():
        c = {name[len(scenario.PREFIX):]: value for name, labels, value in scrape(broker.metrics_url)
             if name.startswith(scenario.PREFIX) and labels["listener"] == "SASL_PLAINTEXT"}
        return c["successful_authentication_total"], c["successful_reauthentication_total"]
    first, again = reauth_counts()
    with wire.connect(sasl, timeout=10) as sock:
        for round_, correlation in ((0, 1), (1, 11)):   # KIP-368: the same user, a second later
            if round_:
                time.sleep(1.05)
            answer = wire.roundtrip(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1,
                                    correlation)
            assert answer.error_code == 0
            answer = wire.roundtrip(sock, SaslAuthenticateRequest(auth_bytes=b"\0alice\0alice-secret"),
                                    SaslAuthenticateResponse, 2, correlation + 1)
            assert answer.error_code == 0 and answer.session_lifetime_ms == 60_000
    assert reauth_counts() == (first + 1, again + 1)


def test_no_metrics_no_counts_registered(ca):
    with kafkalab.mini(**scenario.broker_listener_configs(ca), **{"kafkalab.metrics.enabled": "false"}) as b:
        assert b.metrics_url is None
        assert b.server.metrics is None
