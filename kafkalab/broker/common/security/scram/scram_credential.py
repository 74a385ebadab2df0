"""``ScramCredential``: what a broker keeps of a SCRAM user's password (RFC 5802 section 3), never the password
itself: the salt, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))``, ``ServerKey = HMAC(SaltedPassword,
"Server Key")`` and the iteration count.

Kafka writes it as ``ScramCredentialUtils.credentialToString`` does, the form ZooKeeper holds in
``/config/users/<user>`` (one key per mechanism, e.g. ``SCRAM-SHA-256``)::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=4096
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

SALT, STORED_KEY, SERVER_KEY, ITERATIONS = "salt", "stored_key", "server_key", "iterations"


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def credential_to_string(credential: ScramCredential) -> str:
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return (f"{SALT}={b64(credential.salt)},{STORED_KEY}={b64(credential.stored_key)},"
            f"{SERVER_KEY}={b64(credential.server_key)},{ITERATIONS}={credential.iterations}")


def credential_from_string(text: str) -> ScramCredential:
    """ValueError ``Credentials not valid: ...`` unless it holds exactly the four keys (Kafka's check)."""
    props = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep:
            props[key] = value
    if set(props) != {SALT, STORED_KEY, SERVER_KEY, ITERATIONS}:
        raise ValueError(f"Credentials not valid: {text}")
    try:
        return ScramCredential(base64.b64decode(props[SALT], validate=True),
                               base64.b64decode(props[STORED_KEY], validate=True),
                               base64.b64decode(props[SERVER_KEY], validate=True), int(props[ITERATIONS]))
    except ValueError as exc:
        raise ValueError(f"Credentials not valid: {text}") from exc
