"""Kafka's SaslServerAuthenticator states: what may come before authentication, mechanisms, failures, KIP-368."""
from __future__ import annotations

import pytest

from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.security.authenticator.credential_cache import CredentialCache
from kafkalab.broker.common.security.authenticator.sasl_server_authenticator import (
    AUTHENTICATE, COMPLETE, FAILED, HANDSHAKE_REQUEST, IllegalStateError, SaslServerAuthenticator)
from kafkalab.broker.common.security.authenticator.sasl_server_config import sasl_server_config
from kafkalab.broker.common.security.errors import IllegalSaslStateException
from kafkalab.broker.common.security.kafka_principal import KafkaPrincipal

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
              'user_bob="bob-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def configs(**extra):
    base = {"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS}
    base.update(extra)
    return base


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def authenticator(clock=None, **extra) -> SaslServerAuthenticator:
    config = sasl_server_config("SASL_PLAINTEXT", configs(**extra).get)
    return SaslServerAuthenticator(config, CredentialCache(), "/127.0.0.1 (channelId=test)",
                                   clock=clock or Clock())


def test_before_authentication_only_api_versions_and_the_handshake_pass():
    auth = authenticator()
    auth.check_request(18, "API_VERSIONS")
    auth.api_versions_answered()
    assert auth.state == HANDSHAKE_REQUEST
    with pytest.raises(IllegalStateError, match="Unexpected ApiVersions request"):   # only one ApiVersions
        auth.check_request(18, "API_VERSIONS")
    auth = authenticator()
    with pytest.raises(IllegalSaslStateException) as info:
        auth.check_request(3, "METADATA")
    assert str(info.value) == "Unexpected Kafka request of type METADATA during SASL handshake."
    assert auth.state == FAILED and auth.failure is info.value


def test_plain_after_a_v1_handshake():
    auth = authenticator()
    auth.check_request(17, "SASL_HANDSHAKE")
    assert auth.handshake("PLAIN", 1) == {"error_code": 0, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
    assert auth.state == AUTHENTICATE and not auth.raw_tokens
    with pytest.raises(IllegalSaslStateException, match="Unexpected Kafka request of type PRODUCE during SASL "
                                                        r"authentication\.") as info:
        authenticator_in_authenticate().check_request(0, "PRODUCE")
    assert info.value.respond   # answered with ILLEGAL_SASL_STATE before the close
    auth.check_request(36, "SASL_AUTHENTICATE")
    response = auth.authenticate(b"\0alice\0alice-secret", 2)
    assert response == {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}
    assert auth.complete and auth.principal == KafkaPrincipal("User", "alice") and auth.session_expiration is None


def authenticator_in_authenticate(**extra) -> SaslServerAuthenticator:
    auth = authenticator(**extra)
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("PLAIN", 1)
    return auth


def test_a_wrong_password_fails_with_kafkas_message():
    auth = authenticator_in_authenticate()
    response = auth.authenticate(b"\0alice\0nope", 1)
    assert response["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert response["error_message"] == "Authentication failed: Invalid username or password"
    assert auth.state == FAILED and str(auth.failure) == response["error_message"]


def test_scram_failures_tell_the_client_nothing_more():
    auth = authenticator()
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("SCRAM-SHA-256", 1)
    response = auth.authenticate(b"n,,n=nobody,r=abcdef", 1)   # an unknown user
    assert response["error_message"] == ("Authentication failed during authentication due to invalid credentials "
                                         "with SASL mechanism SCRAM-SHA-256")
    assert str(auth.failure.__cause__) == "Authentication failed: Invalid user credentials"


def test_an_unsupported_mechanism_answers_the_enabled_ones():
    auth = authenticator()
    auth.check_request(17, "SASL_HANDSHAKE")
    assert auth.handshake("GSSAPI", 1) == {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                           "mechanisms": ["PLAIN", "SCRAM-SHA-256"]}
    assert auth.state == FAILED and str(auth.failure) == "Unsupported SASL mechanism GSSAPI"


def test_handshake_v0_takes_bare_tokens():
    auth = authenticator()
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("PLAIN", 0)
    assert auth.raw_tokens
    assert auth.evaluate_raw_token(b"\0bob\0bob-secret") == b"" and auth.principal.name == "bob"


def test_the_session_lifetime_and_its_expiry():
    clock = Clock()
    auth = authenticator(clock, **{"connections.max.reauth.ms": 10_000})
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(b"\0alice\0alice-secret", 1)["session_lifetime_ms"] == 10_000
    assert not auth.session_expired() and auth.may_begin_reauthentication()
    clock.now += 10.001
    assert auth.session_expired()


def test_the_lifetime_may_be_set_per_listener_and_mechanism():
    auth = authenticator(**{"connections.max.reauth.ms": 10_000,
                            "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": 3000})
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(b"\0alice\0alice-secret", 1)["session_lifetime_ms"] == 3000


def reauthenticated(clock, **extra):
    auth = authenticator(clock, **{"connections.max.reauth.ms": 10_000, **extra})
    auth.check_request(17, "SASL_HANDSHAKE")
    auth.handshake("PLAIN", 1)
    auth.authenticate(b"\0alice\0alice-secret", 1)
    clock.now += 9
    new = auth.begin_reauthentication()
    assert new.reauthenticating and not new.complete
    assert not new.may_begin_reauthentication()   # at most once a second
    new.check_request(17, "SASL_HANDSHAKE")
    return new


def test_reauthentication_as_the_same_user_renews_the_session():
    clock = Clock()
    new = reauthenticated(clock)
    new.handshake("PLAIN", 1)
    assert new.authenticate(b"\0alice\0alice-secret", 1)["session_lifetime_ms"] == 10_000
    assert new.state == COMPLETE and new.session_expiration == clock.now + 10


def test_reauthentication_cannot_change_the_user_or_the_mechanism():
    new = reauthenticated(Clock())
    new.handshake("PLAIN", 1)
    response = new.authenticate(b"\0bob\0bob-secret", 1)
    assert response["error_message"] == "Cannot change principals during re-authentication from User.alice: User.bob"
    new = reauthenticated(Clock())
    assert new.handshake("SCRAM-SHA-256", 1)["error_code"] == 0   # Kafka answers the handshake, fails the token
    with pytest.raises(Exception, match="SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for "
                                        "re-authentication of mechanism 'PLAIN'"):
        new.check_request(36, "SASL_AUTHENTICATE")


@pytest.mark.parametrize("extra, message", [
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "does not serve SASL mechanism(s) GSSAPI"),
    ({"sasl.enabled.mechanisms": "PLAIN,OAUTHBEARER"}, "does not serve SASL mechanism(s) OAUTHBEARER"),
    ({"listener.name.sasl_plaintext.plain.sasl.jaas.config": None},
     "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry in the JAAS configuration: set "
     "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"listener.name.sasl_plaintext.plain.sasl.jaas.config": "a.B required; c.D required;"},
     "contains 2 login modules"),
])
def test_listener_configs_the_mini_broker_cannot_serve_are_refused(extra, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sasl_server_config("SASL_PLAINTEXT", configs(**extra).get)


def test_a_listener_may_enable_its_own_mechanisms():
    config = sasl_server_config("SASL_PLAINTEXT", configs(
        **{"sasl.enabled.mechanisms": "GSSAPI", "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"}).get)
    assert config.enabled_mechanisms == ("PLAIN",) and config.failed_authentication_delay_ms == 100
