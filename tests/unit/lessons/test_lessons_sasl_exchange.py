"""kafkalab.lessons.sasl_exchange: the SCRAM client on RFC 7677's test vector, PLAIN's token, the hex dump, and the
exchange by hand against a mini broker's SASL_PLAINTEXT and SASL_SSL listeners (PLAIN and SCRAM-SHA-256)."""
from __future__ import annotations

import ssl

import pytest
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

import kafkalab
from kafkalab.lessons.sasl_exchange import SaslExchange, ScramClient, hexdump, plain_token
from kafkalab.security import CertificateAuthority

# RFC 7677, section 3: user "user", password "pencil"
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def test_the_scram_client_reproduces_rfc_7677():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.client_first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.client_final(SERVER_FIRST) == CLIENT_FINAL
    assert (client.iterations, client.nonce) == (4096, "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert client.verify_server_final(SERVER_FINAL)
    assert not client.verify_server_final(b"v=" + b"A" * 44)


def test_the_scram_client_refuses_a_server_nonce_that_is_not_its_own_extended():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    with pytest.raises(ValueError, match="does not extend"):
        client.client_final(b"r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    with pytest.raises(ValueError, match="does not extend"):
        client.client_final(b"r=abc,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")   # no nonce of the server's at all
    with pytest.raises(ValueError, match="unknown SCRAM mechanism"):
        ScramClient("SCRAM-SHA-1", "user", "pencil")


def test_user_names_are_escaped_and_nonces_are_fresh():
    a, b = ScramClient("SCRAM-SHA-512", "a=b,c", "x"), ScramClient("SCRAM-SHA-512", "a=b,c", "x")
    assert a.client_first().startswith(b"n,,n=a=3Db=2Cc,r=")
    assert a.client_nonce != b.client_nonce and "," not in a.client_nonce


def test_plain_token_and_hexdump():
    assert plain_token("alice", "alice-secret") == b"\0alice\0alice-secret"
    assert plain_token("alice", "s", authorization_id="alice") == b"alice\0alice\0s"
    assert hexdump(b"\0alice\0alice-secret") == (
        "00000000  00 61 6c 69 63 65 00 61 6c 69 63 65 2d 73 65 63  |.alice.alice-sec|\n"
        "00000010  72 65 74                                         |ret|")


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    authority = CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))
    yield authority
    authority.close()


@pytest.fixture(scope="module")
def broker(ca, tmp_path_factory):
    configs = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
               **ca.broker_configs(listener="SASL_SSL"), "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}
    for listener in ("sasl_plaintext", "sasl_ssl"):
        configs[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        configs[f"listener.name.{listener}.scram-sha-256.sasl.jaas.config"] = SCRAM_JAAS
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("b")), **configs) as b:
        admin = AdminClient({"bootstrap.servers": b.listeners["PLAINTEXT"]})
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"bob-secret")]).values():
            f.result(30)
        del admin
        yield b


def test_plain_by_hand_keeps_every_frame(broker):
    with SaslExchange(broker.listeners["SASL_PLAINTEXT"]) as conn:
        assert conn.handshake("PLAIN") == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
        answer = conn.authenticate(plain_token("alice", "alice-secret"))
        assert (answer["error_code"], answer["auth_bytes"], answer["session_lifetime_ms"]) == (0, b"", 0)
        assert conn.metadata()["brokers"]
    assert [(f.direction, f.api) for f in conn.frames] == [
        ("client → broker", "SaslHandshake"), ("broker → client", "SaslHandshake"),
        ("client → broker", "SaslAuthenticate"), ("broker → client", "SaslAuthenticate"),
        ("client → broker", "Metadata"), ("broker → client", "Metadata")]
    request = conn.frames[2].data
    assert request.endswith(b"\x14\0alice\0alice-secret\x00")   # compact bytes (length + 1), then no tagged fields
    assert int.from_bytes(request[:4], "big") == len(request) - 4


def test_a_wrong_password_over_tls_is_answered_then_closed(broker, ca):
    context = ssl.create_default_context(cafile=ca.ca_path)
    with SaslExchange(broker.listeners["SASL_SSL"], ssl_context=context) as conn:
        conn.handshake("PLAIN")
        answer = conn.authenticate(plain_token("alice", "wrong"))
        assert (answer["error_code"], answer["error_message"]) == (
            58, "Authentication failed: Invalid username or password")   # SASL_AUTHENTICATION_FAILED
        assert conn.closed_by_broker()


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_scram_by_hand_authenticates_and_verifies_the_broker(broker, ca, listener):
    context = ssl.create_default_context(cafile=ca.ca_path) if listener == "SASL_SSL" else None
    client = ScramClient("SCRAM-SHA-256", "bob", "bob-secret")
    with SaslExchange(broker.listeners[listener], ssl_context=context) as conn:
        assert conn.handshake("SCRAM-SHA-256")["error_code"] == 0
        server_first = conn.authenticate(client.client_first())
        assert server_first["error_code"] == 0 and client.iterations is None
        server_final = conn.authenticate(client.client_final(server_first["auth_bytes"]))
        assert server_final["error_code"] == 0 and client.iterations == 8192
        assert client.verify_server_final(server_final["auth_bytes"])
        assert conn.metadata()["brokers"]
    assert not any(b"bob-secret" in f.data for f in conn.frames)


def test_scram_with_a_wrong_password_is_refused(broker):
    client = ScramClient("SCRAM-SHA-256", "bob", "not-bob-secret")
    with SaslExchange(broker.listeners["SASL_PLAINTEXT"]) as conn:
        conn.handshake("SCRAM-SHA-256")
        server_first = conn.authenticate(client.client_first())
        answer = conn.authenticate(client.client_final(server_first["auth_bytes"]))
        assert (answer["error_code"], answer["error_message"]) == (
            58, "Authentication failed during authentication due to invalid credentials with SASL mechanism "
                "SCRAM-SHA-256")
        assert conn.closed_by_broker()
