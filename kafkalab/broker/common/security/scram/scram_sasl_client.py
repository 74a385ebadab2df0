"""``ScramSaslClient``: the client's side of SCRAM (RFC 5802), as Kafka's ``ScramSaslClient``.

A broker is a client of the other brokers (and of the controllers): with ``sasl.mechanism.inter.broker.protocol``
a SCRAM mechanism, its replica fetchers, controller channel and other connections authenticate with this. Three
states, one token each::

    SEND_CLIENT_FIRST_MESSAGE      -> n,,n=<saslname>,r=<client nonce>
    RECEIVE_SERVER_FIRST_MESSAGE   r=<nonce>,s=<salt>,i=<iterations>  -> c=biws,r=<nonce>,p=<proof>
    RECEIVE_SERVER_FINAL_MESSAGE   v=<server signature>  (checked: only a holder of the credential can make it)

Kafka's messages for a server that answers wrongly: ``Invalid server nonce: does not start with client nonce``,
``Requested iterations N is less than the minimum 4096 for SCRAM-SHA-512``, ``Invalid server signature in server
final message``, ``Sasl authentication using SCRAM-SHA-512 failed with error: <e>``.
"""
from __future__ import annotations

import hmac

from ..errors import IllegalSaslStateException, SaslException
from .scram_formatter import ScramFormatter, auth_message, sasl_name, secure_random_string
from .scram_mechanism import MECHANISMS
from .scram_messages import ClientFinalMessage, ClientFirstMessage, ServerFinalMessage, ServerFirstMessage

SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
COMPLETE = "COMPLETE"
FAILED = "FAILED"


class ScramSaslClient:
    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        self.mechanism = MECHANISMS[mechanism]
        self.mechanism_name = mechanism
        self._formatter = ScramFormatter(self.mechanism)
        self._username, self._password = username, password
        self._nonce = nonce
        self.state = SEND_CLIENT_FIRST_MESSAGE
        self._client_first: ClientFirstMessage | None = None
        self._server_first: ServerFirstMessage | None = None
        self._client_final: ClientFinalMessage | None = None
        self._salted_password = b""

    def has_initial_response(self) -> bool:
        return True

    def is_complete(self) -> bool:
        return self.state == COMPLETE

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """The next token for the server's ``challenge`` (empty at first); None when the exchange is complete."""
        try:
            if self.state == SEND_CLIENT_FIRST_MESSAGE:
                if challenge:
                    raise SaslException("Expected empty challenge")
                nonce = self._nonce or secure_random_string()
                self._client_first = ClientFirstMessage(sasl_name(self._username), nonce)
                self.state = RECEIVE_SERVER_FIRST_MESSAGE
                return self._client_first.to_bytes()
            if self.state == RECEIVE_SERVER_FIRST_MESSAGE:
                return self._server_first_message(challenge)
            if self.state == RECEIVE_SERVER_FINAL_MESSAGE:
                final = ServerFinalMessage.parse(challenge)
                if final.error is not None:
                    raise SaslException(f"Sasl authentication using {self.mechanism_name} failed with error: "
                                        f"{final.error}")
                expected = self._formatter.server_signature(self._formatter.server_key(self._salted_password),
                                                            self._auth_message())
                if not hmac.compare_digest(final.server_signature or b"", expected):
                    raise SaslException("Invalid server signature in server final message")
                self.state = COMPLETE
                return None
        except SaslException:
            self.state = FAILED
            raise
        raise IllegalSaslStateException(f"Unexpected challenge in Sasl client state {self.state}")

    def _server_first_message(self, challenge: bytes) -> bytes:
        assert self._client_first is not None
        first = self._server_first = ServerFirstMessage.parse(challenge)
        if not first.nonce.startswith(self._client_first.nonce):
            raise SaslException("Invalid server nonce: does not start with client nonce")
        if first.iterations < self.mechanism.min_iterations:
            raise SaslException(f"Requested iterations {first.iterations} is less than the minimum "
                                f"{self.mechanism.min_iterations} for {self.mechanism_name}")
        self._salted_password = self._formatter.salted_password(self._password, first.salt, first.iterations)
        self._client_final = ClientFinalMessage(b"n,,", first.nonce)
        self._client_final.proof = self._formatter.client_proof(self._salted_password, self._auth_message())
        self.state = RECEIVE_SERVER_FINAL_MESSAGE
        return self._client_final.to_bytes()

    def _auth_message(self) -> bytes:
        assert self._client_first and self._server_first and self._client_final
        return auth_message(self._client_first.bare(), self._server_first.to_message(),
                            self._client_final.without_proof())
