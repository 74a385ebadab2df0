"""``KafkaPrincipal``: who a connection is, as Kafka's ``org.apache.kafka.common.security.auth.KafkaPrincipal``.

A principal is a type and a name, written ``User:alice``. A PLAINTEXT connection is ``User:ANONYMOUS``; an SSL
connection is the client certificate's distinguished name (after ``ssl.principal.mapping.rules``), or
``User:ANONYMOUS`` without one; a SASL connection is the user it authenticated as. ACLs, ``super.users`` and the
authorizer's log name principals this way.
"""
from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def from_string(cls, text: str) -> "KafkaPrincipal":
        """``User:alice`` -> KafkaPrincipal("User", "alice") (Kafka's ``SecurityUtils.parseKafkaPrincipal``:
        the type is everything before the first colon; ValueError without one)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"Invalid principal {text!r}: expected <type>:<name>, e.g. User:alice")
        return cls(principal_type, name)


#: an unauthenticated connection's principal (Kafka's ``KafkaPrincipal.ANONYMOUS``)
ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


# -- DefaultKafkaPrincipalBuilder.serialize / deserialize: the principal a KRaft broker forwards in an Envelope --

#: the version of DefaultPrincipalData written (its only one; flexible)
PRINCIPAL_DATA_VERSION = 0


def _compact_string(text: str) -> bytes:
    data = text.encode()
    return _unsigned_varint(len(data) + 1) + data


def _unsigned_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def serialize_principal(principal: KafkaPrincipal, token_authenticated: bool = False) -> bytes:
    """Kafka's ``DefaultKafkaPrincipalBuilder.serialize``: DefaultPrincipalData v0 prefixed by its version
    (``MessageUtil.toVersionPrefixedBytes``): int16 version, compact strings Type and Name, the TokenAuthenticated
    bool, no tagged fields."""
    return (PRINCIPAL_DATA_VERSION.to_bytes(2, "big") + _compact_string(principal.principal_type)
            + _compact_string(principal.name) + (b"\x01" if token_authenticated else b"\x00") + b"\x00")


def deserialize_principal(data: bytes) -> KafkaPrincipal:
    """Kafka's ``DefaultKafkaPrincipalBuilder.deserialize``; ValueError for bytes that are not a DefaultPrincipalData
    (Kafka: a SerializationException, the envelope's PRINCIPAL_DESERIALIZATION_FAILURE)."""
    pos = 0

    def varint() -> int:
        nonlocal pos
        n, shift = 0, 0
        while True:
            if pos >= len(data) or shift > 28:
                raise ValueError("truncated or malformed varint")
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if not b & 0x80:
                return n
            shift += 7

    def string() -> str:
        nonlocal pos
        length = varint() - 1
        if length < 0 or pos + length > len(data):
            raise ValueError("a null or truncated string")
        text = data[pos:pos + length].decode()
        pos += length
        return text

    if len(data) < 2:
        raise ValueError("no version")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != PRINCIPAL_DATA_VERSION:
        raise ValueError(f"DefaultPrincipalData version {version} is not supported")
    pos = 2
    principal_type, name = string(), string()
    if pos >= len(data):
        raise ValueError("no TokenAuthenticated")
    pos += 1
    for _ in range(varint()):   # tagged fields: skipped
        varint()
        pos += varint()
    if pos > len(data):
        raise ValueError("truncated tagged fields")
    return KafkaPrincipal(principal_type, name)
