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
