"""``ScramFormatter``: RFC 5802's computations for one mechanism, as Kafka's ``ScramFormatter``::

    SaltedPassword  := Hi(Normalize(password), salt, i)          (PBKDF2 with HMAC-H)
    ClientKey       := HMAC(SaltedPassword, "Client Key")
    StoredKey       := H(ClientKey)
    AuthMessage     := client-first-message-bare + "," + server-first-message + "," + client-final-message-without-proof
    ClientSignature := HMAC(StoredKey, AuthMessage)
    ClientProof     := ClientKey XOR ClientSignature
    ServerKey       := HMAC(SaltedPassword, "Server Key")
    ServerSignature := HMAC(ServerKey, AuthMessage)

The server checks a proof by ``H(ClientSignature XOR ClientProof) == StoredKey``. As in Kafka, ``Normalize`` is
UTF-8 only (no SASLprep), and a user name travels as a *saslname*, ``=`` written ``=3D`` and ``,`` written ``=2C``.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets

from .scram_credential import ScramCredential
from .scram_mechanism import ScramMechanism


def xor(first: bytes, second: bytes) -> bytes:
    if len(first) != len(second):
        raise ValueError("Argument arrays must be of the same length")
    return bytes(a ^ b for a, b in zip(first, second))


def sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


def username(saslname: str) -> str:
    """The user name of a saslname; ValueError ``Invalid username`` for a ``=`` not starting ``=2C`` / ``=3D``."""
    name = saslname.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise ValueError(f"Invalid username: {saslname}")
    return name.replace("=3D", "=")


def auth_message(client_first_bare: str, server_first: str, client_final_without_proof: str) -> bytes:
    return f"{client_first_bare},{server_first},{client_final_without_proof}".encode()


def secure_random_string() -> str:
    """A nonce: a 130-bit random number in base 36, as Kafka's ``secureRandomString``."""
    n = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"


class ScramFormatter:
    def __init__(self, mechanism: ScramMechanism):
        self.mechanism = mechanism
        self._hash = mechanism.hash_name

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self._hash, data).digest()

    def hi(self, password: bytes, salt: bytes, iterations: int) -> bytes:
        """RFC 5802's Hi: PBKDF2 with HMAC-H and one block (what Kafka's loop of HMACs computes)."""
        return hashlib.pbkdf2_hmac(self._hash, password, salt, iterations)

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return self.hi(password.encode(), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def stored_key(self, client_key: bytes) -> bytes:
        return self.hash(client_key)

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")

    def client_signature(self, stored_key: bytes, message: bytes) -> bytes:
        return self.hmac(stored_key, message)

    def client_proof(self, salted_password: bytes, message: bytes) -> bytes:
        client_key = self.client_key(salted_password)
        return xor(client_key, self.hmac(self.hash(client_key), message))

    def stored_key_from_proof(self, client_signature: bytes, client_proof: bytes) -> bytes:
        """``H(ClientSignature XOR ClientProof)``: equal to the StoredKey iff the proof is right."""
        return self.hash(xor(client_signature, client_proof))

    def server_signature(self, server_key: bytes, message: bytes) -> bytes:
        return self.hmac(server_key, message)

    def generate_credential(self, password: str, iterations: int, salt: bytes | None = None) -> ScramCredential:
        """A new credential (a random salt unless given, as Kafka's ``secureRandomBytes``)."""
        salt = secure_random_string().encode() if salt is None else salt
        return self.credential_from_salted_password(salt, self.salted_password(password, salt, iterations),
                                                    iterations)

    def credential_from_salted_password(self, salt: bytes, salted_password: bytes, iterations: int
                                        ) -> ScramCredential:
        """What AlterUserScramCredentials stores: the client sends the salt and the salted password (never the
        password), the broker keeps the two keys (Kafka's ``generateCredential(salt, saltedPassword, i)``)."""
        return ScramCredential(salt, self.stored_key(self.client_key(salted_password)),
                               self.server_key(salted_password), iterations)
