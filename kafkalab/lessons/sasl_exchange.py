"""SASL by hand: the SaslHandshake and SaslAuthenticate requests a client sends, over a socket (lesson 11).

:class:`SaslExchange` opens one connection to a broker's SASL listener (plain TCP, or TLS given an
``ssl.SSLContext``), sends the requests a client's authenticator sends, built and decoded with kafka-python's
protocol classes (``kafka.protocol.sasl``), and keeps every frame as it crossed the wire
(:attr:`SaslExchange.frames`), so a lesson can show the bytes. The tokens are the mechanism's:

* PLAIN (RFC 4616): one token, ``[authzid] NUL authcid NUL passwd`` (:func:`plain_token`), answered with an
  empty one: the password travels as it is;
* SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677): :class:`ScramClient` makes the client's two messages,
  client-first ``n,,n=<user>,r=<nonce>`` and client-final ``c=biws,r=<nonce>,p=<proof>``, from the broker's
  server-first (``r=<nonce>,s=<salt>,i=<iterations>``), and checks the broker's server-final ``v=<signature>``:
  the password itself never leaves the client, only a proof that it knows it.

:func:`hexdump` prints bytes as ``hexdump -C`` does. Client-side code only: nothing here imports the broker.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
import struct
from dataclasses import dataclass, field

from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                 SaslHandshakeResponse)

#: the hash of each SCRAM mechanism Kafka serves (Kafka's ``ScramMechanism``: no SHA-1)
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
GS2_HEADER = b"n,,"   # no channel binding, no authorization id: what Kafka's and librdkafka's clients send


@dataclass
class Frame:
    """One size-delimited frame as it crossed the wire (its 4-byte size included)."""
    direction: str          # "client → broker" or "broker → client"
    api: str                # "SaslHandshake", "SaslAuthenticate", "Metadata"
    version: int
    data: bytes
    fields: dict = field(default_factory=dict)   # what the frame says, decoded


def plain_token(username: str, password: str, authorization_id: str = "") -> bytes:
    """SASL/PLAIN's one message (RFC 4616): ``[authzid] NUL authcid NUL passwd``, UTF-8."""
    return f"{authorization_id}\0{username}\0{password}".encode()


def hexdump(data: bytes, width: int = 16) -> str:
    """``data`` as ``hexdump -C`` shows it: offset, the bytes in hex, the printable ones as text."""
    lines = []
    for offset in range(0, len(data), width):
        chunk = data[offset:offset + width]
        hex_part = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in chunk)
        lines.append(f"{offset:08x}  {hex_part:<{width * 3 - 1}}  |{text}|")
    return "\n".join(lines)


def _saslname(username: str) -> str:
    """RFC 5802's escaping of a user name: ``=`` as ``=3D``, ``,`` as ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _attributes(message: bytes) -> dict[str, str]:
    """``r=...,s=...,i=...`` as {"r": ..., "s": ..., "i": ...} (a value may itself contain ``=``)."""
    out = {}
    for part in message.decode().split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ValueError(f"not a SCRAM message: {message!r}")
        out[key] = value
    return out


class ScramClient:
    """The client's side of one SCRAM exchange (RFC 5802 section 3), as Kafka's ``ScramSaslClient`` and librdkafka
    make it. ``nonce``: the client's nonce (a fresh random one by default; RFC 7677's test vector gives one)."""

    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None):
        if mechanism not in SCRAM_HASHES:
            raise ValueError(f"unknown SCRAM mechanism {mechanism!r}: {', '.join(SCRAM_HASHES)}")
        self.mechanism = mechanism
        self._hash = SCRAM_HASHES[mechanism]
        self.username = username
        self._password = password
        self.client_nonce = nonce or secrets.token_urlsafe(24)
        self.salt: bytes | None = None
        self.iterations: int | None = None
        self.nonce: str | None = None          # the combined nonce, client's then server's
        self._server_signature: bytes | None = None

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self._hash).digest()

    def _bare(self) -> bytes:
        return f"n={_saslname(self.username)},r={self.client_nonce}".encode()

    def client_first(self) -> bytes:
        """``n,,n=<user>,r=<client nonce>``."""
        return GS2_HEADER + self._bare()

    def client_final(self, server_first: bytes) -> bytes:
        """``c=biws,r=<combined nonce>,p=<base64 proof>`` for the broker's server-first message. ValueError if the
        server's nonce does not begin with the client's (a reply to another exchange)."""
        attrs = _attributes(server_first)
        if not attrs.get("r", "").startswith(self.client_nonce) or attrs["r"] == self.client_nonce:
            raise ValueError(f"the server's nonce does not extend the client's: {server_first!r}")
        self.nonce, self.salt, self.iterations = attrs["r"], base64.b64decode(attrs["s"]), int(attrs["i"])
        salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), self.salt, self.iterations)  # Hi()
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = b"c=" + base64.b64encode(GS2_HEADER) + b",r=" + self.nonce.encode()
        auth_message = self._bare() + b"," + server_first + b"," + without_proof
        proof = bytes(a ^ b for a, b in zip(client_key, self._hmac(stored_key, auth_message)))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify_server_final(self, server_final: bytes) -> bool:
        """True if the broker's ``v=<signature>`` is the one only a holder of the credential can compute."""
        if self._server_signature is None:
            raise ValueError("client_final() first")
        attrs = _attributes(server_final)
        return "v" in attrs and hmac.compare_digest(base64.b64decode(attrs["v"]), self._server_signature)


class SaslExchange:
    """One connection to a SASL listener, its requests sent by hand and every frame kept (:attr:`frames`).

    ``address``: ``host:port``; ``ssl_context`` (and ``server_hostname``): TLS first, as on a SASL_SSL listener.
    A context manager; :meth:`closed_by_broker` tells whether the broker has closed the connection."""

    def __init__(self, address: str, ssl_context: ssl.SSLContext | None = None, server_hostname: str = "localhost",
                 timeout: float = 30, client_id: str = "lesson-11"):
        host, _, port = address.rpartition(":")
        raw = socket.create_connection((host, int(port)), timeout=timeout)
        try:
            self.sock = ssl_context.wrap_socket(raw, server_hostname=server_hostname) if ssl_context else raw
        except BaseException:
            raw.close()
            raise
        self.sock.settimeout(timeout)
        self.client_id = client_id
        self.frames: list[Frame] = []
        self._correlation_id = 0

    # -- the requests ---------------------------------------------------------------------------------------

    def handshake(self, mechanism: str, version: int = 1) -> dict:
        """SaslHandshake: the broker's answer (``error_code``, ``mechanisms``: the ones the listener enables)."""
        return self._roundtrip("SaslHandshake", SaslHandshakeRequest(mechanism=mechanism), SaslHandshakeResponse,
                               version, {"mechanism": mechanism})

    def authenticate(self, token: bytes, version: int = 2) -> dict:
        """SaslAuthenticate with one token: the broker's answer (``error_code``, ``error_message``, ``auth_bytes``:
        the mechanism's next message, ``session_lifetime_ms``)."""
        return self._roundtrip("SaslAuthenticate", SaslAuthenticateRequest(auth_bytes=token),
                               SaslAuthenticateResponse, version, {"auth_bytes": token})

    def metadata(self, version: int = 1) -> dict:
        """Metadata for no topic: served only once the connection has authenticated."""
        return self._roundtrip("Metadata", MetadataRequest(topics=[]), MetadataResponse, version, {"topics": []})

    def _roundtrip(self, api: str, request, response_cls, version: int, fields: dict) -> dict:
        self._correlation_id += 1
        request.API_VERSION = version
        request.with_header(correlation_id=self._correlation_id, client_id=self.client_id)
        data = bytes(request.encode(header=True, framed=True))
        self.frames.append(Frame("client → broker", api, version, data, fields))
        self.sock.sendall(data)
        size = self._recv_exactly(4)
        body = self._recv_exactly(struct.unpack(">i", size)[0])
        response = response_cls.decode(body, version=version, header=True)
        if response.header.correlation_id != self._correlation_id:
            raise ValueError(f"answer to correlation id {response.header.correlation_id}, not {self._correlation_id}")
        answer = response.to_dict(json=False)   # bytes stay bytes
        self.frames.append(Frame("broker → client", api, version, size + body, answer))
        return answer

    def _recv_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"the broker closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)

    def closed_by_broker(self, timeout: float = 30) -> bool:
        """True if the broker closes the connection (EOF or reset) within ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, ssl.SSLError):
            return True
        except socket.timeout:
            return False

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "SaslExchange":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

