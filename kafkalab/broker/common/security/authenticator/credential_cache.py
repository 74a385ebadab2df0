"""``CredentialCache``: the SCRAM credentials a broker authenticates against, as Kafka's ``CredentialCache``
(mechanism -> user -> :class:`~kafkalab.broker.common.security.scram.scram_credential.ScramCredential`).

The broker's :class:`~kafkalab.broker.server.credential_provider.CredentialProvider` fills it from where the
credentials are kept (a file of the standalone broker, ``/config/users/<user>`` in ZooKeeper mode) and updates it
when AlterUserScramCredentials changes them: a user created is served at once, a deleted one no more.
"""
from __future__ import annotations

from ..scram.scram_credential import ScramCredential
from ..scram.scram_mechanism import MECHANISMS


class CredentialCache:
    def __init__(self) -> None:
        self._caches: dict[str, dict[str, ScramCredential]] = {m: {} for m in MECHANISMS}

    def get(self, mechanism: str, user: str) -> ScramCredential | None:
        return self._caches.get(mechanism, {}).get(user)

    def put(self, mechanism: str, user: str, credential: ScramCredential) -> None:
        self._caches[mechanism][user] = credential

    def remove(self, mechanism: str, user: str) -> None:
        self._caches[mechanism].pop(user, None)

    def update_user(self, user: str, credentials: dict[str, ScramCredential]) -> None:
        """A user's credentials now (Kafka's ``CredentialProvider.updateCredentials``): the mechanisms missing are
        removed."""
        for mechanism, cache in self._caches.items():
            if mechanism in credentials:
                cache[user] = credentials[mechanism]
            else:
                cache.pop(user, None)

    def users(self) -> set[str]:
        return {u for cache in self._caches.values() for u in cache}

    def clear(self) -> None:
        for cache in self._caches.values():
            cache.clear()
