"""One scenario of connections that authenticate, fail to, or never have to, byte by byte, and what the broker's
``socket-server-metrics`` (Kafka's ``Selector`` counts) should say about it: run against a mini broker
(``tests/integration/test_authentication_metrics.py``) and against Apache Kafka 4.4
(``tests/integration/test_security_on_kafka.py``) with the same listeners, so both are held to the same numbers.

The listeners: ``PLAINTEXT``, ``SASL_PLAINTEXT`` (PLAIN, ``user_alice="alice-secret"``) and ``SSL`` with
``ssl.client.auth=required``, its certificates from one :class:`~kafkalab.security.CertificateAuthority`.
"""
from __future__ import annotations

import socket
import ssl
import time
from collections import Counter
from typing import Callable

from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

from tests.helpers import kafka_wire as wire

ALICE_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-secret";')
COUNTS = ("connection_creation_total", "connection_close_total", "successful_authentication_total",
          "successful_authentication_no_reauth_total", "failed_authentication_total")
PREFIX = "kafka_server_socket_server_metrics_"
#: (listener, count) -> how much the scenario adds to it
EXPECTED = {
    # one connection that only asks ApiVersions: PLAINTEXT never authenticates, so nothing counts but the connection
    ("PLAINTEXT", "connection_creation_total"): 1, ("PLAINTEXT", "connection_close_total"): 1,
    ("PLAINTEXT", "successful_authentication_total"): 0, ("PLAINTEXT", "failed_authentication_total"): 0,
    # PLAIN with SaslAuthenticate v2 and v0 (the v0 client cannot re-authenticate), then a wrong password with
    # each: two successes (one no-reauth), two failures. (Not here: a request other than ApiVersions or SaslHandshake
    # before the handshake, which Kafka 3.9 counts as a failed authentication and Kafka 4.4 does not: see
    # test_authentication_metrics.py)
    ("SASL_PLAINTEXT", "connection_creation_total"): 4, ("SASL_PLAINTEXT", "connection_close_total"): 4,
    ("SASL_PLAINTEXT", "successful_authentication_total"): 2,
    ("SASL_PLAINTEXT", "successful_authentication_no_reauth_total"): 1,
    ("SASL_PLAINTEXT", "failed_authentication_total"): 2,
    # TLS with a client certificate (an SSL client never re-authenticates), without one under
    # ssl.client.auth=required, plaintext bytes to the TLS port, and a connection closed before any byte
    ("SSL", "connection_creation_total"): 4, ("SSL", "connection_close_total"): 4,
    ("SSL", "successful_authentication_total"): 1, ("SSL", "successful_authentication_no_reauth_total"): 1,
    ("SSL", "failed_authentication_total"): 2,
}


def broker_listener_configs(ca, plain: int = 0, sasl: int = 0, ssl_port: int = 0) -> dict[str, str]:
    """The broker configs of the scenario's three listeners (ports 0: free ones, on a mini broker)."""
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": ALICE_JAAS,
        **ca.broker_configs(listener="ssl", client_auth="required"),
    }


def counts(samples) -> Counter:
    """(listener, count) -> the value summed over network processors, of scraped ``(name, labels, value)``."""
    out: Counter = Counter()
    for name, labels, value in samples:
        if name.startswith(PREFIX) and name[len(PREFIX):] in COUNTS:
            out[(labels["listener"], name[len(PREFIX):])] += value
    return out


def _sasl_plain(address: str, password: str, authenticate_version: int = 2) -> int:
    """PLAIN over SaslHandshake v1 and SaslAuthenticate ``authenticate_version``: the error code."""
    with wire.connect(address, timeout=10) as sock:
        answer = wire.roundtrip(sock, SaslHandshakeRequest(mechanism="PLAIN"), SaslHandshakeResponse, 1, 1)
        assert answer.error_code == 0, answer
        token = b"\0alice\0" + password.encode()
        answer = wire.roundtrip(sock, SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse,
                                authenticate_version, 2)
        if answer.error_code == 0:   # authenticated: one request as alice, then close
            wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 0, 3)
        else:
            assert wire.is_closed(sock, 10)
        return answer.error_code


def _tls(address: str, ca, certificate=None, send: bytes | None = None) -> bool:
    """A TLS connection to ``address``; True if the broker answered an ApiVersions over it."""
    host, _, port = address.rpartition(":")
    ctx = ssl.create_default_context(cafile=ca.ca_path)
    if certificate is not None:
        ctx.load_cert_chain(certificate.cert_path, certificate.key_path, certificate.key_password)
    try:
        with socket.create_connection((host, int(port)), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as sock:
            sock.settimeout(10)
            wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 0, 1)
            return True
    except (ssl.SSLError, ConnectionError, OSError):
        return False


def _closed_after_reading(sock: socket.socket, timeout: float) -> bool:
    """True if the broker closed ``sock`` within ``timeout`` seconds, whatever it sent before."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            if sock.recv(4096) == b"":
                return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
    return False


def run(addresses: dict[str, str], ca, scrape: Callable[[], list], settle_s: float = 20) -> tuple[Counter, Counter]:
    """Run the scenario against ``addresses`` (listener -> host:port); (the counts' deltas, what EXPECTED wants),
    read once the closes have been counted (a failed authentication's close waits for
    ``connection.failed.authentication.delay.ms``)."""
    before = counts(scrape())
    # PLAINTEXT: a connection that needs no authentication
    with wire.connect(addresses["PLAINTEXT"], timeout=10) as sock:
        wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 0, 1)
    # SASL_PLAINTEXT
    sasl = addresses["SASL_PLAINTEXT"]
    assert _sasl_plain(sasl, "alice-secret", 2) == 0
    assert _sasl_plain(sasl, "alice-secret", 0) == 0
    assert _sasl_plain(sasl, "wrong") != 0
    assert _sasl_plain(sasl, "wrong", 0) != 0
    # SSL with ssl.client.auth=required
    tls = addresses["SSL"]
    alice = ca.issue("CN=alice,OU=lab")
    assert _tls(tls, ca, alice)
    assert not _tls(tls, ca, None)
    with wire.connect(tls, timeout=10) as sock:   # Kafka answers with a TLS alert, then closes
        sock.sendall(wire.encode(ApiVersionsRequest(), 0, 1))
        assert _closed_after_reading(sock, 10)
    with wire.connect(tls, timeout=10):
        pass
    want = Counter({key: n for key, n in EXPECTED.items()})
    deadline = time.monotonic() + settle_s
    while True:
        now = counts(scrape())
        delta = Counter({key: now[key] - before[key] for key in EXPECTED})
        if all(delta[key] == n for key, n in want.items()) or time.monotonic() > deadline:
            return delta, want
        time.sleep(0.2)
