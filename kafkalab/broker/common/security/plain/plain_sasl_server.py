"""``PlainSaslServer``: SASL/PLAIN on the broker, as Kafka's ``PlainSaslServer`` and ``PlainServerCallbackHandler``.

One token from the client, ``[authzid] NUL authcid NUL passwd`` (RFC 4616), in clear: PLAIN belongs inside TLS
(SASL_SSL). The password must equal the ``user_<authcid>`` option of the listener's JAAS entry
(``org.apache.kafka.common.security.plain.PlainLoginModule required ... user_alice="alice-secret";``), compared in
constant time. Kafka's messages, all told to the client (SASL_AUTHENTICATION_FAILED)::

    Invalid SASL/PLAIN response: expected 3 tokens, got N
    Authentication failed: username not specified
    Authentication failed: password not specified
    Authentication failed: Invalid username or password
    Authentication failed: Client requested an authorization id that is different from username
"""
from __future__ import annotations

import hmac

from ..errors import IllegalSaslStateException, SaslAuthenticationException

PLAIN_MECHANISM = "PLAIN"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS_USER_PREFIX = "user_"


def _tokens(response: str) -> list[str]:
    tokens = response.split("\0", 3)
    if len(tokens) != 3:
        raise SaslAuthenticationException(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}")
    return tokens


class PlainSaslServer:
    mechanism_name = PLAIN_MECHANISM

    def __init__(self, jaas_options: dict[str, str]):
        self._options = jaas_options
        self.authorization_id: str | None = None
        self._complete = False

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_response(self, response: bytes) -> bytes:
        if self._complete:
            raise IllegalSaslStateException("Authentication exchange has completed")
        authzid, user, password = _tokens(response.decode("utf-8", errors="replace"))
        if not user:
            raise SaslAuthenticationException("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationException("Authentication failed: password not specified")
        expected = self._options.get(JAAS_USER_PREFIX + user)
        if expected is None or not hmac.compare_digest(password.encode(), expected.encode()):
            raise SaslAuthenticationException("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that is "
                                              "different from username")
        self.authorization_id = user
        self._complete = True
        return b""
