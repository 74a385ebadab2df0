"""``SaslClientAuthenticator``: a broker authenticating its own connections, as Kafka's client authenticator.

A broker connecting to another broker's SASL listener (its replica fetchers, the ZooKeeper-mode controller's
channel, AlterPartition, controlled shutdown, transaction markers) or to a controller's, sends what every Kafka
client sends after the TCP (and TLS) handshake and before any other request::

    SaslHandshake v1      mechanism            -> error_code, the listener's enabled mechanisms
    SaslAuthenticate v2   the mechanism's token -> error_code, error_message, the server's token,
                                                   session_lifetime_ms
    ... SaslAuthenticate until the mechanism is complete (PLAIN: one token; SCRAM: two)

Kafka's messages for a refusal: ``Client SASL mechanism 'X' not enabled in the server, enabled mechanisms are
[...]`` (UNSUPPORTED_SASL_MECHANISM), the broker's own message for SASL_AUTHENTICATION_FAILED. A positive
``session_lifetime_ms`` (the server's ``connections.max.reauth.ms``, KIP-368) makes the client re-authenticate
on the same connection after a random 85% to 95% of it (:attr:`reauthenticate_at`), as Kafka's does, before the
server closes the connection at the session's end.

Simplified: no ApiVersions request first (the versions above are fixed; Kafka's client asks which the broker
supports), and the SASL exchange runs once per connection or re-authentication, never interleaved with other
requests.
"""
from __future__ import annotations

import logging
import random
import time
from typing import Awaitable, Callable

from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from ...errors import ErrorCode
from ...message.codec import build
from ..errors import (AuthenticationException, IllegalSaslStateException, SaslAuthenticationException,
                      UnsupportedSaslMechanismException)
from ..plain.plain_sasl_client import PlainSaslClient
from ..scram.scram_mechanism import is_scram
from ..scram.scram_sasl_client import ScramSaslClient

log = logging.getLogger(__name__)

SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_VERSION = 2


def sasl_client(mechanism: str, username: str, password: str):
    """The SASL client of ``mechanism`` (PLAIN or SCRAM-SHA-256 / -512)."""
    if mechanism == "PLAIN":
        return PlainSaslClient(username, password)
    if is_scram(mechanism):
        return ScramSaslClient(mechanism, username, password)
    raise ValueError(f"the mini broker's own connections authenticate with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, "
                     f"not {mechanism}")


class SaslClientAuthenticator:
    def __init__(self, mechanism: str, username: str, password: str, clock: Callable[[], float] = time.monotonic):
        self.mechanism = mechanism
        self._username, self._password = username, password
        self.clock = clock
        #: the monotonic time after which the connection re-authenticates (None: the session does not expire)
        self.reauthenticate_at: float | None = None
        self.session_lifetime_ms = 0

    async def authenticate(self, roundtrip: Callable[[object], Awaitable[object]]) -> None:
        """One (re-)authentication over ``roundtrip`` (sends a request, returns its response); raises an
        :class:`AuthenticationException` with Kafka's message if the broker refuses."""
        response = await roundtrip(build(SaslHandshakeRequest, SASL_HANDSHAKE_VERSION, {"mechanism": self.mechanism}))
        self._check_handshake(response.error_code, list(response.mechanisms or []))
        client = sasl_client(self.mechanism, self._username, self._password)
        token = client.evaluate_challenge(b"")
        lifetime_ms = 0
        while True:
            response = await roundtrip(build(SaslAuthenticateRequest, SASL_AUTHENTICATE_VERSION,
                                             {"auth_bytes": token}))
            if response.error_code != ErrorCode.NONE:
                raise SaslAuthenticationException(response.error_message or ErrorCode(response.error_code).name)
            lifetime_ms = response.session_lifetime_ms or 0
            if client.is_complete():
                break
            token = client.evaluate_challenge(response.auth_bytes or b"")
            if client.is_complete():
                break
        self.session_lifetime_ms = lifetime_ms
        # Kafka: "pick a random percentage between 85% and 95% for session re-authentication"
        self.reauthenticate_at = (self.clock() + lifetime_ms / 1000 * (0.85 + random.random() * 0.10)
                                  if lifetime_ms > 0 else None)
        log.debug("SASL/%s: authenticated as %s, session lifetime %d ms", self.mechanism, self._username,
                  lifetime_ms)

    def _check_handshake(self, error_code: int, mechanisms: list[str]) -> None:
        if error_code == ErrorCode.NONE:
            return
        if error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
            raise UnsupportedSaslMechanismException(f"Client SASL mechanism '{self.mechanism}' not enabled in the "
                                                    f"server, enabled mechanisms are [{', '.join(mechanisms)}]")
        if error_code == ErrorCode.ILLEGAL_SASL_STATE:
            raise IllegalSaslStateException(f"Unexpected handshake request with client mechanism {self.mechanism}, "
                                            f"enabled mechanisms are [{', '.join(mechanisms)}]")
        raise AuthenticationException(f"Unknown error code {ErrorCode(error_code).name}, client mechanism is "
                                      f"{self.mechanism}, enabled mechanisms are [{', '.join(mechanisms)}]")

    def needs_reauthentication(self) -> bool:
        return self.reauthenticate_at is not None and self.clock() >= self.reauthenticate_at
