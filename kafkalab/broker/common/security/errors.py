"""The exceptions of a SASL exchange, as Kafka names them (``org.apache.kafka.common.errors`` and
``javax.security.sasl.SaslException``).

An :class:`AuthenticationException` fails the authentication: the broker logs ``Failed authentication with
/<client address> (...)`` with its message, sends the failure response it built (if any) after
``connection.failed.authentication.delay.ms`` and closes the connection. Kafka tells the client the message of a
:class:`SaslAuthenticationException`; a :class:`SaslException` (a SCRAM server's ``Invalid client credentials``,
``Invalid client nonce in the final client message.``, ...) may reveal whether a user exists, so the client gets
only ``Authentication failed during authentication due to invalid credentials with SASL mechanism <M>`` and the
SASL server's own message stays on the broker (its ``__cause__``).
"""
from __future__ import annotations


class AuthenticationException(Exception):
    """Kafka's ``AuthenticationException``: the connection fails authentication and is closed."""


class SaslAuthenticationException(AuthenticationException):
    """Kafka's ``SaslAuthenticationException``: SASL_AUTHENTICATION_FAILED, its message sent to the client."""


class IllegalSaslStateException(AuthenticationException):
    """Kafka's ``IllegalSaslStateException``: a request the SASL state does not allow (ILLEGAL_SASL_STATE)."""


class UnsupportedSaslMechanismException(AuthenticationException):
    """Kafka's ``UnsupportedSaslMechanismException``: UNSUPPORTED_SASL_MECHANISM."""


class SaslException(Exception):
    """``javax.security.sasl.SaslException``: the SASL server refused the client's token. The authenticator turns
    it into a :class:`SaslAuthenticationException` with a message that tells the client nothing more."""
