"""``PlainSaslClient``: SASL/PLAIN's client (RFC 4616), what Java's ``PlainClient`` is to Kafka: one token,
``[authzid] NUL authcid NUL passwd``, the password in clear (PLAIN belongs inside TLS: SASL_SSL)."""
from __future__ import annotations

from ..errors import IllegalSaslStateException


class PlainSaslClient:
    mechanism_name = "PLAIN"

    def __init__(self, username: str, password: str, authorization_id: str = ""):
        self._token = f"{authorization_id}\0{username}\0{password}".encode()
        self._complete = False

    def has_initial_response(self) -> bool:
        return True

    def is_complete(self) -> bool:
        return self._complete

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._complete:
            raise IllegalSaslStateException("PLAIN authentication already completed")
        self._complete = True
        return self._token
