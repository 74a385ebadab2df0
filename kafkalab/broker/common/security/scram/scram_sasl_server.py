"""``ScramSaslServer``: the broker's side of a SCRAM exchange, as Kafka's ``ScramSaslServer``.

States: RECEIVE_CLIENT_FIRST_MESSAGE -> RECEIVE_CLIENT_FINAL_MESSAGE -> COMPLETE (or FAILED).

1. client-first: the user's credential is looked up (an unknown user: ``Authentication failed: Invalid user
   credentials``); a credential with fewer iterations than the mechanism's minimum is refused; an authorization id
   other than the user is refused (``Authentication failed: Client requested an authorization id that is different
   from username``, the one message the client is told). The answer, server-first, carries the client's nonce
   followed by a fresh one of the server's, the salt and the iterations.
2. client-final: its nonce must be the combined nonce, exactly (``Invalid client nonce in the final client
   message.``: a message replayed from another exchange fails here, and so does librdkafka before 2.6.1's, which
   puts its own nonce in front of the combined one: Kafka 4 compares with ``equals``, Kafka 3.9 with ``endsWith``
   and let those through), then the proof is checked against the stored key
   (``Invalid client credentials``). The answer, server-final, is the server's signature, which proves to the
   client that the broker knows the credential too.

Any token after COMPLETE or FAILED: ``Unexpected challenge in Sasl server state ...``.
"""
from __future__ import annotations

import hmac
from typing import Callable

from ..errors import IllegalSaslStateException, SaslAuthenticationException, SaslException
from .scram_credential import ScramCredential
from .scram_formatter import ScramFormatter, auth_message, secure_random_string, username
from .scram_messages import ClientFinalMessage, ClientFirstMessage, ServerFinalMessage, ServerFirstMessage
from .scram_mechanism import ScramMechanism

RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
COMPLETE, FAILED = "COMPLETE", "FAILED"

#: user name -> the user's credential for this mechanism, or None (Kafka's ``ScramServerCallbackHandler``)
CredentialLookup = Callable[[str], "ScramCredential | None"]


class ScramSaslServer:
    def __init__(self, mechanism: ScramMechanism, credentials: CredentialLookup,
                 server_nonce: Callable[[], str] = secure_random_string, nonce_ends_with: bool = False):
        self.mechanism = mechanism
        #: Kafka 3.9's check of the client-final nonce (``endsWith`` the combined one) instead of Kafka 4's
        #: (``equals``): a ZooKeeper-mode broker is Kafka 3.9's
        self.nonce_ends_with = nonce_ends_with
        self.mechanism_name = mechanism.mechanism_name
        self.formatter = ScramFormatter(mechanism)
        self._credentials = credentials
        self._server_nonce = server_nonce
        self.state = RECEIVE_CLIENT_FIRST_MESSAGE
        self.authorization_id: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first: ClientFirstMessage | None = None
        self._server_first: ServerFirstMessage | None = None

    def is_complete(self) -> bool:
        return self.state == COMPLETE

    def evaluate_response(self, response: bytes) -> bytes:
        try:
            if self.state == RECEIVE_CLIENT_FIRST_MESSAGE:
                return self._client_first_message(response)
            if self.state == RECEIVE_CLIENT_FINAL_MESSAGE:
                return self._client_final_message(response)
            raise IllegalSaslStateException(f"Unexpected challenge in Sasl server state {self.state}")
        except (SaslException, SaslAuthenticationException, IllegalSaslStateException):
            self._clear()
            self.state = FAILED
            raise

    def _client_first_message(self, response: bytes) -> bytes:
        first = self._client_first = ClientFirstMessage.parse(response)
        try:
            user = username(first.sasl_name)
        except ValueError as exc:
            raise SaslException("Authentication failed: Credentials could not be obtained") from exc
        credential = self._credentials(user)
        if credential is None:
            raise SaslException("Authentication failed: Invalid user credentials")
        if first.authorization_id and first.authorization_id != user:
            raise SaslAuthenticationException("Authentication failed: Client requested an authorization id that is "
                                              "different from username")
        if credential.iterations < self.mechanism.min_iterations:
            raise SaslException(f"Iterations {credential.iterations} is less than the minimum "
                                f"{self.mechanism.min_iterations} for {self.mechanism_name}")
        self.authorization_id, self._credential = user, credential
        self._server_first = ServerFirstMessage(first.nonce + self._server_nonce(), credential.salt,
                                                credential.iterations)
        self.state = RECEIVE_CLIENT_FINAL_MESSAGE
        return self._server_first.to_bytes()

    def _client_final_message(self, response: bytes) -> bytes:
        final = ClientFinalMessage.parse(response)
        assert self._client_first is not None and self._server_first is not None and self._credential is not None
        combined = self._server_first.nonce
        if not (final.nonce.endswith(combined) if self.nonce_ends_with else final.nonce == combined):
            raise SaslException("Invalid client nonce in the final client message.")
        message = auth_message(self._client_first.bare(), self._server_first.to_message(), final.without_proof())
        f = self.formatter
        stored_key = self._credential.stored_key
        client_signature = f.client_signature(stored_key, message)
        if len(final.proof) != len(client_signature) or not hmac.compare_digest(
                f.stored_key_from_proof(client_signature, final.proof), stored_key):
            raise SaslException("Invalid client credentials")
        signature = f.server_signature(self._credential.server_key, message)
        self._clear()
        self.state = COMPLETE
        return ServerFinalMessage(None, signature).to_bytes()

    def _clear(self) -> None:
        self._credential = self._client_first = self._server_first = None
