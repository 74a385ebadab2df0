"""SASL on a live mini broker, byte by byte: what a connection may send before it authenticates, SaslHandshake v0
and v1, PLAIN and SCRAM exchanges, failures answered and closed as Kafka does, KIP-368 session expiry."""
from __future__ import annotations

import base64
import socket
import logging
import struct
import time

import pytest
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

import kafkalab
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.scram.scram_formatter import ScramFormatter, auth_message
from kafkalab.broker.common.security.scram.scram_mechanism import SCRAM_SHA_256
from kafkalab.broker.common.security.scram.scram_messages import ClientFinalMessage, ServerFirstMessage
from tests.helpers import kafka_wire as wire

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SASL_CONFIGS = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "security.inter.broker.protocol": "SASL_PLAINTEXT",   # Kafka: the inter-broker listener must be one of them
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
}


@pytest.fixture(scope="module")
def broker():
    with kafkalab.mini(**SASL_CONFIGS) as b:
        yield b


def metadata_v1():
    return MetadataRequest(topics=None)


def api_versions(sock, version=3):
    return wire.roundtrip(sock, ApiVersionsRequest(client_software_name="kafkalab-tests", client_software_version="1"),
                          ApiVersionsResponse, version)


def handshake(sock, mechanism="PLAIN", version=1, correlation_id=2):
    return wire.roundtrip(sock, SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse, version,
                          correlation_id)


def authenticate(sock, token: bytes, version=2, correlation_id=3):
    return wire.roundtrip(sock, SaslAuthenticateRequest(auth_bytes=token), SaslAuthenticateResponse, version,
                          correlation_id)


def test_metadata_before_authentication_closes_the_connection(broker, caplog):
    with caplog.at_level(logging.INFO), wire.connect(broker.bootstrap_servers) as sock:
        sock.sendall(wire.encode(metadata_v1(), 1))
        assert wire.is_closed(sock)
    assert any("Failed authentication with /127.0.0.1 (channelId=" in r.getMessage()
               and r.getMessage().endswith("(Unexpected Kafka request of type METADATA during SASL handshake.)")
               for r in caplog.records)


def test_api_versions_is_allowed_and_lists_the_sasl_apis(broker):
    with wire.connect(broker.bootstrap_servers) as sock:
        answer = api_versions(sock)
        assert answer.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        assert keys[17] == (0, 1) and keys[36] == (0, 2) and keys[50] == (0, 0) and keys[51] == (0, 0)
        # then a handshake, still before authentication; a second ApiVersions would close
        assert handshake(sock).mechanisms == ["PLAIN", "SCRAM-SHA-256"]


def test_plain_then_requests_are_served_as_the_user(broker):
    with wire.connect(broker.bootstrap_servers) as sock:
        api_versions(sock)
        assert handshake(sock).error_code == 0
        answer = authenticate(sock, b"\0alice\0alice-secret")
        assert (answer.error_code, answer.session_lifetime_ms) == (0, 0)
        assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 4).brokers
        again = authenticate(sock, b"\0alice\0alice-secret", correlation_id=5)   # after success: refused, kept
        assert (again.error_code, again.error_message) == (
            ErrorCode.ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication")
        assert handshake(sock, correlation_id=6).error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 7).brokers


def test_a_wrong_password_is_answered_then_closed_and_logged(broker, caplog):
    with caplog.at_level(logging.INFO), wire.connect(broker.bootstrap_servers) as sock:
        handshake(sock)
        answer = authenticate(sock, b"\0alice\0wrong")
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert wire.is_closed(sock)
    assert any(r.getMessage().startswith("Failed authentication with /127.0.0.1 (channelId=127.0.0.1:")
               and r.getMessage().endswith("(Authentication failed: Invalid username or password)")
               for r in caplog.records)
    with wire.connect(broker.bootstrap_servers) as sock:   # still serving others
        handshake(sock)
        assert authenticate(sock, b"\0admin\0admin-secret").error_code == 0


def test_an_unsupported_mechanism_answers_the_enabled_list_then_closes(broker):
    with wire.connect(broker.bootstrap_servers) as sock:
        answer = handshake(sock, "GSSAPI")
        assert (answer.error_code, answer.mechanisms) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                                          ["PLAIN", "SCRAM-SHA-256"])
        assert wire.is_closed(sock)


def test_another_request_during_the_exchange_gets_illegal_sasl_state_and_closes(broker):
    with wire.connect(broker.bootstrap_servers) as sock:
        handshake(sock)
        sock.sendall(wire.encode(metadata_v1(), 1, correlation_id=9))
        frame = wire.recv_frame(sock)
        assert struct.unpack_from(">i", frame)[0] == 9   # an answer of that request, then the close
        assert wire.is_closed(sock)


def test_handshake_v0_takes_bare_tokens(broker):
    with wire.connect(broker.bootstrap_servers) as sock:
        assert handshake(sock, version=0).error_code == 0
        token = b"\0alice\0alice-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert wire.recv_frame(sock) == b""           # PLAIN's empty answer, bare
        assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 4).brokers
    with wire.connect(broker.bootstrap_servers) as sock:
        handshake(sock, version=0)
        token = b"\0alice\0not-her-password"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert wire.is_closed(sock)                   # v0: no answer, closed


def scram_exchange(sock, user, password, tamper=None):
    """SaslHandshake v1 + SCRAM-SHA-256 client-first / client-final; the two SaslAuthenticate answers."""
    assert handshake(sock, "SCRAM-SHA-256").error_code == 0
    first_bare = f"n={user},r=clientnonce123"
    first = authenticate(sock, f"n,,{first_bare}".encode())
    if first.error_code:
        return first, None
    server_first = ServerFirstMessage.parse(first.auth_bytes)
    f = ScramFormatter(SCRAM_SHA_256)
    final = ClientFinalMessage(b"n,,", server_first.nonce if tamper != "nonce" else "clientnonce123other")
    salted = f.salted_password(password, server_first.salt, server_first.iterations)
    final.proof = f.client_proof(salted, auth_message(first_bare, server_first.to_message(), final.without_proof()))
    return first, authenticate(sock, final.to_bytes(), correlation_id=4)


def test_scram_with_a_credential_made_over_the_wire(broker):
    from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
    with wire.connect(broker.bootstrap_servers) as sock:
        handshake(sock)
        authenticate(sock, b"\0admin\0admin-secret")
        salt = b"0123456789abcdef"
        salted = ScramFormatter(SCRAM_SHA_256).salted_password("bob-secret", salt, 4096)
        request = build(AlterUserScramCredentialsRequest, 0, {"deletions": [], "upsertions": [
            {"name": "bob", "mechanism": 1, "iterations": 4096, "salt": salt, "salted_password": salted}]})
        answer = wire.roundtrip(sock, request, AlterUserScramCredentialsResponse, 0, 5)
        assert [(r.user, r.error_code) for r in answer.results] == [("bob", 0)]
    with wire.connect(broker.bootstrap_servers) as sock:
        first, final = scram_exchange(sock, "bob", "bob-secret")
        assert first.auth_bytes.startswith(b"r=clientnonce123") and b",s=" + base64.b64encode(salt) in first.auth_bytes
        assert final.error_code == 0 and final.auth_bytes.startswith(b"v=")
        assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 6).brokers
    for password, tamper in (("wrong", None), ("bob-secret", "nonce")):
        with wire.connect(broker.bootstrap_servers) as sock:
            _, final = scram_exchange(sock, "bob", password, tamper)
            assert (final.error_code, final.error_message) == (
                ErrorCode.SASL_AUTHENTICATION_FAILED, "Authentication failed during authentication due to invalid "
                                                      "credentials with SASL mechanism SCRAM-SHA-256")
            assert wire.is_closed(sock)
    with wire.connect(broker.bootstrap_servers) as sock:   # an unknown user fails at client-first
        first, _ = scram_exchange(sock, "nobody", "x")
        assert first.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_garbage_before_authentication_closes_and_the_broker_serves_on(broker):
    for junk in (b"\x60\x82\x01\x00" + b"\0" * 20, b"\xff\xff" + b"\0" * 20, struct.pack(">hhih", 3, 99, 1, -1)):
        with wire.connect(broker.bootstrap_servers) as sock:
            sock.sendall(struct.pack(">i", len(junk)) + junk)
            assert wire.is_closed(sock)
    with wire.connect(broker.bootstrap_servers) as sock:
        assert api_versions(sock).error_code == 0


def test_an_expired_session_is_closed_at_its_next_request():
    with kafkalab.mini(**SASL_CONFIGS, **{"connections.max.reauth.ms": 1000}) as b:
        with wire.connect(b.bootstrap_servers) as sock:
            handshake(sock)
            answer = authenticate(sock, b"\0alice\0alice-secret")
            assert answer.session_lifetime_ms == 1000
            assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 4).brokers
            time.sleep(1.2)                      # the session's lifetime is a lower bound: it has ended now
            sock.sendall(wire.encode(metadata_v1(), 1, correlation_id=5))
            assert wire.is_closed(sock)
        with wire.connect(b.bootstrap_servers) as sock:   # re-authentication on the same connection
            handshake(sock)
            authenticate(sock, b"\0alice\0alice-secret")
            time.sleep(1.2)
            assert handshake(sock, correlation_id=6).error_code == 0
            assert authenticate(sock, b"\0alice\0alice-secret", correlation_id=7).session_lifetime_ms == 1000
            assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 8).brokers
            # at most one re-authentication a second: this handshake is served as after authentication
            assert handshake(sock, correlation_id=9).error_code == ErrorCode.ILLEGAL_SASL_STATE


def test_gssapi_by_default_is_refused_at_start_naming_the_fix():
    with pytest.raises(ValueError, match="does not serve SASL mechanism\\(s\\) GSSAPI .*Kafka's default is GSSAPI"):
        kafkalab.mini(listeners="SASL_PLAINTEXT://127.0.0.1:0", **{"security.inter.broker.protocol": "SASL_PLAINTEXT"})


def test_a_listener_name_mapped_to_sasl_plaintext():
    configs = {"listeners": "CLIENT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT",
               "inter.broker.listener.name": "CLIENT", "sasl.enabled.mechanisms": "PLAIN",
               "listener.name.client.plain.sasl.jaas.config": PLAIN_JAAS}
    with kafkalab.mini(**configs) as b, wire.connect(b.bootstrap_servers) as sock:
        handshake(sock)
        assert authenticate(sock, b"\0alice\0alice-secret").error_code == 0
    with pytest.raises(ValueError, match="No security protocol defined for listener CLIENT"):
        kafkalab.mini(listeners="CLIENT://127.0.0.1:0")


def test_malformed_frames_before_and_during_the_exchange_close_only_their_connection(broker, caplog):
    """Seeded junk at each step of the exchange (random tokens, bodies cut short, sizes that lie, random API keys):
    each closes or fails its own connection, no handler error, and the broker authenticates the next client."""
    import random
    rng = random.Random(30)
    steps = ("before", "after_handshake", "after_client_first")
    with caplog.at_level(logging.WARNING):
        for i in range(120):
            step = steps[i % 3]
            with wire.connect(broker.bootstrap_servers, timeout=10) as sock:
                try:
                    if step != "before":
                        handshake(sock, "SCRAM-SHA-256" if step == "after_client_first" else rng.choice(
                            ["PLAIN", "SCRAM-SHA-256"]))
                    if step == "after_client_first":
                        authenticate(sock, b"n,,n=bob,r=nonce" + str(i).encode())
                    kind = rng.randrange(5)
                    if kind == 0:     # a SaslAuthenticate with random bytes
                        sock.sendall(wire.encode(SaslAuthenticateRequest(auth_bytes=rng.randbytes(rng.randrange(64))),
                                                 rng.randrange(3)))
                    elif kind == 1:   # a real frame cut short
                        frame = wire.encode(SaslHandshakeRequest(mechanism="PLAIN"), 1)[4:]
                        frame = frame[:rng.randrange(2, len(frame))]
                        sock.sendall(struct.pack(">i", len(frame)) + frame)
                    elif kind == 2:   # a size that lies
                        sock.sendall(struct.pack(">i", rng.choice([-1, 0, 3, 1 << 30])) + rng.randbytes(16))
                    elif kind == 3:   # a random API key and version
                        body = struct.pack(">hhih", rng.randrange(-5, 100), rng.randrange(-2, 20), 7, -1)
                        body += rng.randbytes(rng.randrange(32))
                        sock.sendall(struct.pack(">i", len(body)) + body)
                    else:             # random bytes
                        sock.sendall(rng.randbytes(rng.randrange(1, 200)))
                    sock.settimeout(2)
                    while sock.recv(4096):
                        pass
                except (ConnectionError, socket.timeout, OSError):
                    pass
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records
                                                                            if r.levelno >= logging.ERROR]
    with wire.connect(broker.bootstrap_servers) as sock:
        handshake(sock)
        assert authenticate(sock, b"\0alice\0alice-secret").error_code == 0
        assert wire.roundtrip(sock, metadata_v1(), MetadataResponse, 1, 4).brokers
