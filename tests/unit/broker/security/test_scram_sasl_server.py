"""SCRAM as Kafka's ScramSaslServer / ScramFormatter / ScramMessages implement it, checked against RFC 7677's
SCRAM-SHA-256 test vector, and each way an exchange fails with Kafka's message."""
from __future__ import annotations

import base64

import pytest

from kafkalab.broker.common.security.errors import (IllegalSaslStateException, SaslAuthenticationException,
                                                    SaslException)
from kafkalab.broker.common.security.scram.scram_credential import (ScramCredential, credential_from_string,
                                                                    credential_to_string)
from kafkalab.broker.common.security.scram.scram_formatter import (ScramFormatter, auth_message, sasl_name,
                                                                   secure_random_string, username)
from kafkalab.broker.common.security.scram.scram_messages import (ClientFinalMessage, ClientFirstMessage,
                                                                  ServerFinalMessage, ServerFirstMessage)
from kafkalab.broker.common.security.scram.scram_mechanism import SCRAM_SHA_256, SCRAM_SHA_512
from kafkalab.broker.common.security.scram.scram_sasl_server import COMPLETE, FAILED, ScramSaslServer

# RFC 7677, section 3: user "user", password "pencil"
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def rfc_credential(iterations: int = 4096) -> ScramCredential:
    return ScramFormatter(SCRAM_SHA_256).generate_credential("pencil", iterations, salt=SALT)


def rfc_server(credentials=None, nonce_ends_with=False) -> ScramSaslServer:
    store = {"user": rfc_credential()} if credentials is None else credentials
    return ScramSaslServer(SCRAM_SHA_256, store.get, server_nonce=lambda: SERVER_NONCE, nonce_ends_with=nonce_ends_with)


def test_rfc7677_exchange_byte_for_byte():
    server = rfc_server()
    assert server.evaluate_response(CLIENT_FIRST) == SERVER_FIRST
    assert server.evaluate_response(CLIENT_FINAL) == SERVER_FINAL
    assert server.is_complete() and server.state == COMPLETE and server.authorization_id == "user"


def test_formatter_computes_the_rfc7677_proof_and_signature():
    f = ScramFormatter(SCRAM_SHA_256)
    salted = f.salted_password("pencil", SALT, 4096)
    message = auth_message("n=user,r=rOprNGfwEbeRWgbNEkqO", SERVER_FIRST.decode(),
                           "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    assert base64.b64encode(f.client_proof(salted, message)) == b"dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    assert base64.b64encode(f.server_signature(f.server_key(salted), message)) == SERVER_FINAL[2:]
    cred = f.credential_from_salted_password(SALT, salted, 4096)
    assert cred == rfc_credential()
    assert cred.stored_key == f.hash(f.client_key(salted))
    # Kafka's Hi loop of HMACs and PBKDF2 are the same function
    u, acc = f.hmac(b"pencil", SALT + b"\0\0\0\1"), None
    acc = u
    for _ in range(2, 4097):
        u = f.hmac(b"pencil", u)
        acc = bytes(a ^ b for a, b in zip(acc, u))
    assert acc == salted


def test_credential_string_as_kafka_writes_it():
    cred = rfc_credential()
    text = credential_to_string(cred)
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=") and text.endswith(",iterations=4096")
    assert ",server_key=" in text
    assert credential_from_string(text) == cred
    for bad in ("salt=abc,iterations=4096", text + ",extra=1", ""):
        with pytest.raises(ValueError, match="Credentials not valid"):
            credential_from_string(bad)


def test_sasl_names_escape_equals_and_comma():
    assert sasl_name("a=b,c") == "a=3Db=2Cc"
    assert username("a=3Db=2Cc") == "a=b,c"
    with pytest.raises(ValueError, match="Invalid username"):
        username("a=b")
    assert secure_random_string().isalnum() and secure_random_string() != secure_random_string()


def test_messages_parse_and_print_as_kafka_does():
    first = ClientFirstMessage.parse(b"n,a=user,n=user,r=abc,tokenauth=true")
    assert (first.authorization_id, first.sasl_name, first.nonce, first.extensions) == ("user", "user", "abc",
                                                                                       "tokenauth=true")
    assert first.bare() == "n=user,r=abc,tokenauth=true"
    assert ServerFirstMessage.parse(SERVER_FIRST).to_bytes() == SERVER_FIRST
    assert ClientFinalMessage.parse(CLIENT_FINAL).to_bytes() == CLIENT_FINAL
    assert ServerFinalMessage.parse(SERVER_FINAL).to_bytes() == SERVER_FINAL
    assert ServerFinalMessage.parse(b"e=invalid-proof").error == "invalid-proof"
    for bad in (b"y,,n=user,r=abc", b"n,,n=user", b"p=tls-unique,,n=user,r=abc", b"\xff"):
        with pytest.raises(SaslException, match="Invalid SCRAM client first message format"):
            ClientFirstMessage.parse(bad)


def test_a_wrong_proof_is_invalid_client_credentials():
    server = rfc_server()
    server.evaluate_response(CLIENT_FIRST)
    wrong = CLIENT_FINAL[:-10] + b"AAAAAAAAA="
    with pytest.raises(SaslException, match="^Invalid client credentials$"):
        server.evaluate_response(wrong)
    assert server.state == FAILED


def test_a_wrong_password_fails_the_proof():
    """A client with another password computes the proof from the same server-first: refused."""
    server = rfc_server()
    server_first = ServerFirstMessage.parse(server.evaluate_response(CLIENT_FIRST))
    f = ScramFormatter(SCRAM_SHA_256)
    final = ClientFinalMessage(b"n,,", server_first.nonce)
    message = auth_message("n=user,r=rOprNGfwEbeRWgbNEkqO", server_first.to_message(), final.without_proof())
    final.proof = f.client_proof(f.salted_password("pencil2", server_first.salt, server_first.iterations), message)
    with pytest.raises(SaslException, match="Invalid client credentials"):
        server.evaluate_response(final.to_bytes())


def test_a_nonce_that_is_not_the_servers_is_refused():
    """A client-final replayed from another exchange carries another server nonce."""
    server = ScramSaslServer(SCRAM_SHA_256, {"user": rfc_credential()}.get, server_nonce=lambda: "othernonce")
    server.evaluate_response(CLIENT_FIRST)
    with pytest.raises(SaslException, match=r"^Invalid client nonce in the final client message\.$"):
        server.evaluate_response(CLIENT_FINAL)


def _final_with_the_client_nonce_in_front(server):
    server_first = ServerFirstMessage.parse(server.evaluate_response(CLIENT_FIRST))
    f = ScramFormatter(SCRAM_SHA_256)
    final = ClientFinalMessage(b"n,,", "rOprNGfwEbeRWgbNEkqO" + server_first.nonce)
    message = auth_message("n=user,r=rOprNGfwEbeRWgbNEkqO", server_first.to_message(), final.without_proof())
    final.proof = f.client_proof(f.salted_password("pencil", server_first.salt, server_first.iterations), message)
    return final.to_bytes()


def test_a_nonce_that_only_ends_with_the_servers_is_refused():
    """librdkafka before 2.6.1 puts its own nonce in front of the combined one in client-final (its proof computed
    over that very message, so valid): Kafka 4's ScramSaslServer compares the nonces with equals and refuses it, as
    RFC 5802 5.1 asks (Kafka 3.9 compared with endsWith and let it through)."""
    server = rfc_server()
    with pytest.raises(SaslException, match=r"^Invalid client nonce in the final client message\.$"):
        server.evaluate_response(_final_with_the_client_nonce_in_front(server))
    assert server.state == FAILED


def test_kafka_39s_check_lets_that_nonce_through():
    """A ZooKeeper-mode broker is Kafka 3.9's: ``endsWith`` (ScramSaslServer.java on branch 3.9)."""
    server = rfc_server(nonce_ends_with=True)
    assert server.evaluate_response(_final_with_the_client_nonce_in_front(server)).startswith(b"v=")
    assert server.is_complete()
    other = rfc_server(nonce_ends_with=True)   # a nonce that does not end with the combined one: still refused
    other.evaluate_response(CLIENT_FIRST)
    with pytest.raises(SaslException, match="Invalid client nonce"):
        other.evaluate_response(b"c=biws,r=somethingelse,p=" + b"A" * 44)


def test_an_unknown_user_is_invalid_user_credentials():
    server = rfc_server({})
    with pytest.raises(SaslException, match="^Authentication failed: Invalid user credentials$"):
        server.evaluate_response(CLIENT_FIRST)
    assert server.state == FAILED


def test_an_authorization_id_of_another_user_is_told_to_the_client():
    with pytest.raises(SaslAuthenticationException, match="authorization id that is different from username"):
        rfc_server().evaluate_response(b"n,a=admin,n=user,r=abc")


def test_too_few_iterations_in_the_credential_are_refused():
    server = rfc_server({"user": rfc_credential(iterations=1000)})
    with pytest.raises(SaslException, match="Iterations 1000 is less than the minimum 4096 for SCRAM-SHA-256"):
        server.evaluate_response(CLIENT_FIRST)


def test_a_token_after_the_exchange_is_an_illegal_state():
    server = rfc_server()
    server.evaluate_response(CLIENT_FIRST)
    server.evaluate_response(CLIENT_FINAL)
    with pytest.raises(IllegalSaslStateException, match="Unexpected challenge in Sasl server state COMPLETE"):
        server.evaluate_response(CLIENT_FINAL)


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_a_whole_exchange_with_a_client_made_of_the_formatter(mechanism):
    f = ScramFormatter(mechanism)
    cred = f.generate_credential("alice-secret", 4096)
    server = ScramSaslServer(mechanism, {"al,ice": cred}.get)
    first = ClientFirstMessage(sasl_name("al,ice"), secure_random_string())
    server_first = ServerFirstMessage.parse(server.evaluate_response(first.to_bytes()))
    assert server_first.nonce.startswith(first.nonce) and len(server_first.nonce) > len(first.nonce)
    assert (server_first.salt, server_first.iterations) == (cred.salt, 4096)
    salted = f.salted_password("alice-secret", server_first.salt, server_first.iterations)
    final = ClientFinalMessage(b"n,,", server_first.nonce)
    message = auth_message(first.bare(), server_first.to_message(), final.without_proof())
    final.proof = f.client_proof(salted, message)
    server_final = ServerFinalMessage.parse(server.evaluate_response(final.to_bytes()))
    assert server_final.server_signature == f.server_signature(f.server_key(salted), message)
    assert server.authorization_id == "al,ice"
