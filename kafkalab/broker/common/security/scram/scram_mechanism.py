"""``ScramMechanism``: SCRAM-SHA-256 and SCRAM-SHA-512, as Kafka's ``ScramMechanism`` (internals) and the public
``org.apache.kafka.clients.admin.ScramMechanism`` (whose type byte AlterUserScramCredentials carries: 0 UNKNOWN,
1 SCRAM-SHA-256, 2 SCRAM-SHA-512). Both need at least 4096 iterations; AlterUserScramCredentials accepts at most
16384 (Kafka's ``ZkAdminManager`` / ``ScramControlManager``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ScramMechanism:
    type: int
    mechanism_name: str
    hash_name: str        # hashlib's name for the hash ("SHA-256" in Java)
    min_iterations: int = 4096
    max_iterations: int = 16384


SCRAM_SHA_256 = ScramMechanism(1, "SCRAM-SHA-256", "sha256")
SCRAM_SHA_512 = ScramMechanism(2, "SCRAM-SHA-512", "sha512")
MECHANISMS = {m.mechanism_name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_TYPE = {m.type: m for m in MECHANISMS.values()}


def is_scram(mechanism: str | None) -> bool:
    return mechanism in MECHANISMS
