"""``SaslServerAuthenticator``: one connection's SASL exchange on the broker, as Kafka's class of that name.

Kafka's states, and what each lets the client send (anything else fails the authentication)::

    INITIAL_REQUEST                ApiVersions or SaslHandshake
    HANDSHAKE_OR_VERSIONS_REQUEST  ApiVersions or SaslHandshake
    HANDSHAKE_REQUEST              SaslHandshake (an ApiVersions was answered)
    AUTHENTICATE                   SaslAuthenticate (SaslHandshake v1), or bare tokens (SaslHandshake v0)
    COMPLETE                       everything: the connection is authenticated as User:<name>
    FAILED                         nothing: the connection is closed
    REAUTH_PROCESS_HANDSHAKE       the SaslHandshake that starts a re-authentication (KIP-368)
    REAUTH_BAD_MECHANISM           a re-authentication asked for another mechanism: the next token fails

Before authentication a request of another API fails with ``Unexpected Kafka request of type METADATA during SASL
handshake.`` (no response, the connection closed), and in AUTHENTICATE with ``... during SASL authentication.``
(an ILLEGAL_SASL_STATE response of that API, then closed). A mechanism not enabled gets UNSUPPORTED_SASL_MECHANISM
with the enabled ones. A token the mechanism's server refuses gets SASL_AUTHENTICATION_FAILED; its message is the
server's for PLAIN (:class:`~..errors.SaslAuthenticationException`), the generic ``Authentication failed during
authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256`` for SCRAM's
(:class:`~..errors.SaslException`: the client must not learn whether the user exists).

**SaslHandshake v0** (clients before Kafka 1.0): the tokens then follow as bare size-delimited frames without a
request header, answered the same way (:meth:`SaslServerAuthenticator.evaluate_raw_token`).

**Re-authentication** (KIP-368): with ``connections.max.reauth.ms`` > 0, SaslAuthenticate v1+ tells the client the
session's lifetime (``session_lifetime_ms``). Before it ends the client sends SaslHandshake and SaslAuthenticate
again on the same connection, as the same user and with the same mechanism (``Cannot change principals during
re-authentication from User.alice: User.bob``); at most once a second. A connection whose session has expired is
closed at its next request (:meth:`SaslServerAuthenticator.session_expired`).

Simplified: no GSSAPI token as the first packet (Kafka 0.9 clients: ``Exception handling first SASL packet from
client, GSSAPI is not supported by server``, which is what the mini broker answers too, never serving GSSAPI);
``sasl.server.max.receive.size`` is the socket server's ``socket.request.max.bytes``.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from ...errors import ErrorCode
from ..errors import (AuthenticationException, IllegalSaslStateException, SaslAuthenticationException, SaslException,
                      UnsupportedSaslMechanismException)
from ..kafka_principal import USER_TYPE, KafkaPrincipal
from ..plain.plain_sasl_server import PLAIN_MECHANISM, PlainSaslServer
from ..scram.scram_mechanism import MECHANISMS as SCRAM_MECHANISMS
from ..scram.scram_sasl_server import ScramSaslServer
from .credential_cache import CredentialCache
from .sasl_server_config import SaslServerConfig

#: Kafka logs failed authentications from org.apache.kafka.common.network.Selector, at INFO
log = logging.getLogger(__name__)

INITIAL_REQUEST = "INITIAL_REQUEST"
HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
AUTHENTICATE = "AUTHENTICATE"
COMPLETE = "COMPLETE"
FAILED = "FAILED"
REAUTH_PROCESS_HANDSHAKE = "REAUTH_PROCESS_HANDSHAKE"
REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
MIN_REAUTH_INTERVAL_S = 1.0   # Kafka's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS


class IllegalStateError(Exception):
    """Kafka's ``IllegalStateException`` during the exchange (e.g. ApiVersions after ApiVersions): not an
    authentication failure, the connection is just closed."""


class SaslServerAuthenticator:
    def __init__(self, config: SaslServerConfig, credentials: CredentialCache, description: str = "",
                 clock: Callable[[], float] = time.monotonic, previous: "SaslServerAuthenticator | None" = None):
        self.config = config
        self.credentials = credentials
        #: how the broker's log names the connection: ``/127.0.0.1 (channelId=...)``
        self.description = description
        self.clock = clock
        self.state = INITIAL_REQUEST
        self.mechanism: str | None = None
        self.sasl_server: Any = None
        #: SaslHandshake v1+: tokens come in SaslAuthenticate requests (v0: as bare frames)
        self.kafka_sasl_authenticate_headers = False
        self.principal: KafkaPrincipal | None = None
        #: the monotonic time the session ends (None: never; connections.max.reauth.ms is 0)
        self.session_expiration: float | None = None
        self.session_lifetime_ms = 0
        #: the exception that failed the exchange (the broker logs it, answers and closes)
        self.failure: AuthenticationException | None = None
        self.connected_client_supports_reauthentication = False
        #: KIP-368: the authenticator this one re-authenticates (its mechanism and principal must not change)
        self.previous_mechanism = previous.mechanism if previous is not None else None
        self.previous_principal = previous.principal if previous is not None else None
        self.reauthentication_started = self.clock() if previous is not None else None
        self._bad_mechanism_message = ""
        if previous is not None:
            self.connected_client_supports_reauthentication = previous.connected_client_supports_reauthentication
            self.state = REAUTH_PROCESS_HANDSHAKE

    # -- what the connection may send ---------------------------------------------------------------------

    @property
    def reauthenticating(self) -> bool:
        return self.previous_mechanism is not None

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    @property
    def raw_tokens(self) -> bool:
        """SaslHandshake v0 was accepted: the next frames are bare SASL tokens, not requests."""
        return self.state in (AUTHENTICATE, REAUTH_BAD_MECHANISM) and not self.kafka_sasl_authenticate_headers

    def authentication_text(self) -> str:
        return "re-authentication" if self.reauthenticating else "authentication"

    def check_request(self, api_key: int, api_name: str) -> None:
        """May a request of ``api_key`` come now? AuthenticationException (the exchange fails) or
        IllegalStateError (the connection is closed) if not. ``api_name``: Kafka's ApiKeys name, e.g. METADATA."""
        state = self.state
        if state == FAILED:
            raise IllegalStateError("SASL authentication has failed")
        if state in (INITIAL_REQUEST, HANDSHAKE_OR_VERSIONS_REQUEST, HANDSHAKE_REQUEST, REAUTH_PROCESS_HANDSHAKE):
            if state == INITIAL_REQUEST:
                self.state = HANDSHAKE_OR_VERSIONS_REQUEST
            if api_key not in (API_VERSIONS, SASL_HANDSHAKE):
                self._fail(IllegalSaslStateException(f"Unexpected Kafka request of type {api_name} during SASL "
                                                     f"handshake."))
            if api_key == API_VERSIONS and self.state != HANDSHAKE_OR_VERSIONS_REQUEST:
                self.state = FAILED
                raise IllegalStateError(f"Unexpected ApiVersions request received during SASL authentication "
                                        f"state {state}")
        elif state == REAUTH_BAD_MECHANISM:
            self._fail(SaslAuthenticationException(self._bad_mechanism_message))
        elif state == AUTHENTICATE and api_key != SASL_AUTHENTICATE:
            exc = IllegalSaslStateException(f"Unexpected Kafka request of type {api_name} during SASL authentication.")
            exc.respond = True   # type: ignore[attr-defined]  # answered with ILLEGAL_SASL_STATE, then closed
            self._fail(exc)

    def api_versions_answered(self) -> None:
        """An ApiVersions was answered: the next request must be SaslHandshake."""
        if self.state == HANDSHAKE_OR_VERSIONS_REQUEST:
            self.state = HANDSHAKE_REQUEST

    def _fail(self, exc: AuthenticationException) -> None:
        self.state = FAILED
        self.failure = exc
        raise exc

    # -- SaslHandshake ------------------------------------------------------------------------------------

    def handshake(self, mechanism: str, version: int) -> dict:
        """The SaslHandshake response; an unsupported mechanism fails the exchange (UNSUPPORTED_SASL_MECHANISM
        answered, then closed)."""
        self.kafka_sasl_authenticate_headers = version >= 1
        enabled = list(self.config.enabled_mechanisms)
        if mechanism not in enabled:
            self.state = FAILED
            self.failure = UnsupportedSaslMechanismException(f"Unsupported SASL mechanism {mechanism}")
            return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
        if self.reauthenticating and mechanism != self.previous_mechanism:
            self._bad_mechanism_message = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                           f"re-authentication of mechanism '{self.previous_mechanism}'")
            self.state = REAUTH_BAD_MECHANISM
        else:
            self.mechanism = mechanism
            self.sasl_server = self._create_sasl_server(mechanism)
            self.state = AUTHENTICATE
        return {"error_code": 0, "mechanisms": enabled}

    def _create_sasl_server(self, mechanism: str):
        if mechanism == PLAIN_MECHANISM:
            return PlainSaslServer(self.config.plain_users())
        scram = SCRAM_MECHANISMS[mechanism]
        return ScramSaslServer(scram, lambda user: self.credentials.get(mechanism, user),
                               nonce_ends_with=self.config.scram_nonce_ends_with)

    # -- the tokens ---------------------------------------------------------------------------------------

    def authenticate(self, auth_bytes: bytes, version: int) -> dict:
        """One SaslAuthenticate: the response (SASL_AUTHENTICATION_FAILED with Kafka's message on failure, the
        exchange then failed)."""
        if not self.connected_client_supports_reauthentication:
            self.connected_client_supports_reauthentication = version > 0
        try:
            token = self._evaluate(auth_bytes)
        except SaslAuthenticationException as exc:
            self.state, self.failure = FAILED, exc
            return {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": str(exc),
                    "auth_bytes": b"", "session_lifetime_ms": 0}
        except SaslException as exc:   # do not tell the client why (whether the user exists)
            message = (f"Authentication failed during {self.authentication_text()} due to invalid credentials with "
                       f"SASL mechanism {self.mechanism}")
            failure = SaslAuthenticationException(message)
            failure.__cause__ = exc
            self.state, self.failure = FAILED, failure
            return {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": message,
                    "auth_bytes": b"", "session_lifetime_ms": 0}
        return {"error_code": 0, "error_message": None, "auth_bytes": token,
                "session_lifetime_ms": self.session_lifetime_ms if self.complete else 0}

    def evaluate_raw_token(self, token: bytes) -> bytes:
        """SaslHandshake v0: a bare token in, the bare answer out. An AuthenticationException fails the exchange
        without an answer; a SaslException (SCRAM) closes the connection as an I/O error does in Kafka."""
        try:
            return self._evaluate(token)
        except AuthenticationException as exc:
            self.state, self.failure = FAILED, exc
            raise
        except SaslException:
            self.state = FAILED
            raise

    def _evaluate(self, token: bytes) -> bytes:
        if self.state == REAUTH_BAD_MECHANISM:
            raise SaslAuthenticationException(self._bad_mechanism_message)
        if self.state != AUTHENTICATE or self.sasl_server is None:
            raise IllegalSaslStateException(f"Unexpected SASL token in state {self.state}")
        response = self.sasl_server.evaluate_response(bytes(token))
        if self.sasl_server.is_complete():
            principal = KafkaPrincipal(USER_TYPE, self.sasl_server.authorization_id)
            if self.reauthenticating and principal != self.previous_principal:
                prev = self.previous_principal
                assert prev is not None
                raise SaslAuthenticationException(
                    f"Cannot change principals during re-authentication from {prev.principal_type}.{prev.name}: "
                    f"{principal.principal_type}.{principal.name}")
            self.principal = principal
            self._session_lifetime()
            self.state = COMPLETE
        return response

    def _session_lifetime(self) -> None:
        """KIP-368 (Kafka's ``calcCompletionTimesAndReturnSessionLifetimeMs``; no credential expires here)."""
        max_reauth_ms = self.config.connections_max_reauth_ms.get(self.mechanism or "", 0)
        if max_reauth_ms > 0:
            self.session_lifetime_ms = max_reauth_ms
            self.session_expiration = self.clock() + max_reauth_ms / 1000

    # -- after authentication (KIP-368) -----------------------------------------------------------------------

    def session_expired(self) -> bool:
        return self.session_expiration is not None and self.clock() > self.session_expiration

    def may_begin_reauthentication(self) -> bool:
        """A SaslHandshake on the authenticated connection starts a re-authentication if sessions expire and the
        last one started a second ago or more (Kafka's ``maybeBeginServerReauthentication``); else it is served as
        any request (ILLEGAL_SASL_STATE)."""
        if self.session_expiration is None:
            return False
        started = self.reauthentication_started
        return started is None or self.clock() - started >= MIN_REAUTH_INTERVAL_S

    def begin_reauthentication(self) -> "SaslServerAuthenticator":
        return SaslServerAuthenticator(self.config, self.credentials, self.description, self.clock, previous=self)

    def log_failure(self) -> None:
        """Kafka's Selector: ``Failed authentication with /127.0.0.1 (channelId=...) (<message>)``."""
        if self.failure is None:
            return
        cause = self.failure.__cause__
        if cause is not None:
            log.debug("%s with %s failed: %s", self.authentication_text(), self.description, cause)
        log.info("Failed %sauthentication with %s (%s)", "re-" if self.reauthenticating else "", self.description,
                 self.failure)
