"""``ScramMessages``: the four messages of a SCRAM exchange (RFC 5802 section 7), matched with the patterns of
Kafka's ``ScramMessages``::

    client-first  n,[a=<authzid>],n=<saslname>,r=<client nonce>[,<extensions>]
    server-first  r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>
    client-final  c=<base64 channel binding>,r=<combined nonce>,p=<base64 proof>
    server-final  v=<base64 server signature>        (or e=<error>)

As in Kafka, only the gs2 header ``n`` (no channel binding) is accepted and extensions are ignored (Kafka reads
``tokenauth`` for delegation tokens, not served here). A message that does not match raises
:class:`~kafkalab.broker.common.security.errors.SaslException` ``Invalid SCRAM client first message format: ...``.
"""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from ..errors import SaslException

# Kafka's character classes (Java's "&&[^...]" intersections written out)
_ALPHA = r"[A-Za-z]+"
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"          # [\x01-\x7F&&[^=,]]+
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"                        # [\x01-\x7F&&[^,]]+
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"                    # [\x21-\x7E&&[^,]]+
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = rf"(m={_VALUE},)?"
_EXTENSIONS = rf"(,{_ALPHA}={_VALUE})*"

_CLIENT_FIRST = re.compile(rf"n,(a=(?P<authzid>{_SASLNAME}))?,{_RESERVED}n=(?P<saslname>{_SASLNAME}),"
                           rf"r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXTENSIONS})")
_SERVER_FIRST = re.compile(rf"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),"
                           rf"i=(?P<iterations>[0-9]+){_EXTENSIONS}")
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},"
                           rf"p=(?P<proof>{_BASE64})")
_SERVER_FINAL = re.compile(rf"(?:e=(?P<error>{_VALUE_SAFE}))|(?:v=(?P<signature>{_BASE64})){_EXTENSIONS}")


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _b64(text: str) -> str:
    return base64.b64encode(text if isinstance(text, bytes) else text.encode()).decode()


@dataclass
class ClientFirstMessage:
    sasl_name: str
    nonce: str
    authorization_id: str = ""
    extensions: str = ""

    @classmethod
    def parse(cls, data: bytes) -> "ClientFirstMessage":
        message = _text(data)
        m = _CLIENT_FIRST.fullmatch(message)
        if m is None:
            raise SaslException(f"Invalid SCRAM client first message format: {message}")
        return cls(m["saslname"], m["nonce"], m["authzid"] or "", m["extensions"].removeprefix(","))

    def gs2_header(self) -> str:
        return f"n,{self.authorization_id},"

    def bare(self) -> str:
        """client-first-message-bare (with the extensions, as Kafka puts them back)."""
        return f"n={self.sasl_name},r={self.nonce}" + (f",{self.extensions}" if self.extensions else "")

    def to_bytes(self) -> bytes:
        return (self.gs2_header() + self.bare()).encode()


@dataclass
class ServerFirstMessage:
    nonce: str          # the client's nonce followed by the server's
    salt: bytes
    iterations: int

    @classmethod
    def parse(cls, data: bytes) -> "ServerFirstMessage":
        message = _text(data)
        m = _SERVER_FIRST.fullmatch(message)
        if m is None:
            raise SaslException(f"Invalid SCRAM server first message format: {message}")
        iterations = int(m["iterations"])
        if iterations <= 0:
            raise SaslException(f"Invalid SCRAM server first message format: invalid iterations {iterations}")
        return cls(m["nonce"], base64.b64decode(m["salt"]), iterations)

    def to_message(self) -> str:
        return f"r={self.nonce},s={base64.b64encode(self.salt).decode()},i={self.iterations}"

    def to_bytes(self) -> bytes:
        return self.to_message().encode()


@dataclass
class ClientFinalMessage:
    channel_binding: bytes
    nonce: str
    proof: bytes = b""

    @classmethod
    def parse(cls, data: bytes) -> "ClientFinalMessage":
        message = _text(data)
        m = _CLIENT_FINAL.fullmatch(message)
        if m is None:
            raise SaslException(f"Invalid SCRAM client final message format: {message}")
        return cls(base64.b64decode(m["channel"]), m["nonce"], base64.b64decode(m["proof"]))

    def without_proof(self) -> str:
        return f"c={base64.b64encode(self.channel_binding).decode()},r={self.nonce}"

    def to_bytes(self) -> bytes:
        return f"{self.without_proof()},p={base64.b64encode(self.proof).decode()}".encode()


@dataclass
class ServerFinalMessage:
    error: str | None
    server_signature: bytes | None

    @classmethod
    def parse(cls, data: bytes) -> "ServerFinalMessage":
        message = _text(data)
        m = _SERVER_FINAL.fullmatch(message)
        if m is None:
            raise SaslException(f"Invalid SCRAM server final message format: {message}")
        if m["error"] is not None:
            return cls(m["error"], None)
        return cls(None, base64.b64decode(m["signature"]))

    def to_bytes(self) -> bytes:
        if self.error is not None:
            return f"e={self.error}".encode()
        return f"v={base64.b64encode(self.server_signature or b'').decode()}".encode()
