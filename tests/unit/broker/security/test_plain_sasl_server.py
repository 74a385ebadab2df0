"""SASL/PLAIN on the broker and the JAAS config its users come from, with Kafka's messages."""
from __future__ import annotations

import pytest

from kafkalab.broker.common.security.errors import SaslAuthenticationException
from kafkalab.broker.common.security.jaas_config import parse_jaas_config, server_login_module
from kafkalab.broker.common.security.plain.plain_sasl_server import PlainSaslServer

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
        '  username="admin" password="admin-secret" // the broker\'s own\n'
        '  /* users */ user_admin="admin-secret" user_alice=\'alice-secret\' user_bob=plain;')


def test_the_jaas_config_parses_as_kafkas():
    entry = server_login_module(JAAS)
    assert entry.login_module_name == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert entry.control_flag == "REQUIRED"
    assert entry.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                             "user_alice": "alice-secret", "user_bob": "plain"}
    two = parse_jaas_config("a.B required; c.D optional x=\"1\";")
    assert [e.login_module_name for e in two] == ["a.B", "c.D"]


@pytest.mark.parametrize("text, message", [
    ("", "Login module not specified in JAAS config"),
    ("a.B", "Login module control flag not specified in JAAS config"),
    ("a.B needed;", "Invalid login module control flag 'needed' in JAAS config"),
    ("a.B required x=;", "Value not specified for key 'x' in JAAS config"),
    ("a.B required x=4096;", "Value not specified for key 'x' in JAAS config"),   # a bare number: quote it
    ('a.B required x="1"', "JAAS config entry not terminated by semi-colon"),
])
def test_malformed_jaas_configs_fail_with_kafkas_message(text, message):
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(")):
        parse_jaas_config(text)
    with pytest.raises(ValueError, match="contains 2 login modules, should be 1 module"):
        server_login_module("a.B required; c.D required;")


def server() -> PlainSaslServer:
    return PlainSaslServer(server_login_module(JAAS).options)


def test_the_right_password_authenticates():
    s = server()
    assert s.evaluate_response(b"\0alice\0alice-secret") == b""
    assert s.is_complete() and s.authorization_id == "alice"
    s = server()
    s.evaluate_response(b"alice\0alice\0alice-secret")   # an authorization id equal to the user is fine
    assert s.authorization_id == "alice"


@pytest.mark.parametrize("token, message", [
    (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
    (b"\0mallory\0alice-secret", "Authentication failed: Invalid username or password"),
    (b"\0username\0admin", "Authentication failed: Invalid username or password"),   # options are not users
    (b"\0\0alice-secret", "Authentication failed: username not specified"),
    (b"\0alice\0", "Authentication failed: password not specified"),
    (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
    (b"a\0b\0c\0d\0e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
    (b"bob\0alice\0alice-secret", "Authentication failed: Client requested an authorization id that is different "
                                  "from username"),
])
def test_refusals_carry_kafkas_message(token, message):
    s = server()
    with pytest.raises(SaslAuthenticationException) as info:
        s.evaluate_response(token)
    assert str(info.value) == message and not s.is_complete()
