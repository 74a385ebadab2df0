"""``CredentialProvider``: the SCRAM users of the cluster, as Kafka's ``CredentialProvider`` and the SCRAM half of
``ZkAdminManager`` (``alterUserScramCredentials`` / ``describeUserScramCredentials``).

AlterUserScramCredentials (KIP-554) sends, per user and mechanism, an *upsertion* (the salt, the salted password
``Hi(password, salt, iterations)`` and the iterations: never the password) or a *deletion*. The broker keeps
:class:`~kafkalab.broker.common.security.scram.scram_credential.ScramCredential` (salt, stored key, server key,
iterations) and authenticates against it at once: the :class:`CredentialCache` the SASL listeners read is updated
with every change. Kafka's checks, each failing only that user:

=====================================  ==========================  ==========================================
user name empty                        UNACCEPTABLE_CREDENTIAL     ``Username must not be empty``
mechanism unknown                      UNSUPPORTED_SASL_MECHANISM  ``Unknown SCRAM mechanism``
iterations < 4096 / > 16384            UNACCEPTABLE_CREDENTIAL     ``Too few iterations`` / ``Too many iterations``
the same user and mechanism twice      DUPLICATE_RESOURCE          ``A user credential cannot be altered twice in
                                                                   the same request``
deleting a credential that is not      RESOURCE_NOT_FOUND          ``Attempt to delete a user credential that
there                                                              does not exist``
=====================================  ==========================  ==========================================

DescribeUserScramCredentials lists each user's mechanisms and iterations (never the keys); a user asked for by name
without credentials is RESOURCE_NOT_FOUND ``Attempt to describe a user credential that does not exist: <user>``,
one asked twice DUPLICATE_RESOURCE.

**Where they live.** Standalone, in ``scram-credentials.json`` in the log directory, each credential written as
Kafka writes it. In ZooKeeper mode as Kafka 3.x keeps them: in the user's config znode ``/config/users/<user>``
(next to the user's client quotas), one key per mechanism, ``{"version":1,"config":{"SCRAM-SHA-256":
"salt=...,stored_key=...,server_key=...,iterations=4096"}}``, then a change notification
``{"entity_path":"users/<user>"}`` that every broker follows. In KRaft mode the broker forwards
AlterUserScramCredentials to the active controller, which writes ``UserScramCredentialRecord`` /
``RemoveUserScramCredentialRecord`` to ``__cluster_metadata``
(:mod:`kafkalab.controller.scram_control_manager`); the broker replays them into its metadata image and from there
into this provider, and answers DescribeUserScramCredentials from it.
"""
from __future__ import annotations

import asyncio
import logging
import os
import urllib.parse

from kazoo.exceptions import NoNodeError

from ..common.errors import ErrorCode
from ..common.state_file import read_state_file, write_state_file
from ..common.security.authenticator.credential_cache import CredentialCache
from ..common.security.scram.scram_credential import ScramCredential, credential_from_string, credential_to_string
from ..common.security.scram.scram_formatter import ScramFormatter
from ..common.security.scram.scram_mechanism import BY_TYPE, MECHANISMS
from ..zk import zk_data as zd

log = logging.getLogger(__name__)
CREDENTIALS_FILE = "scram-credentials.json"
USERNAME_MUST_NOT_BE_EMPTY = "Username must not be empty"
UNKNOWN_SCRAM_MECHANISM = "Unknown SCRAM mechanism"
MAX_ITERATIONS = 16384


def scram_change_error(name: str, mechanism: int, iterations: int | None = None) -> tuple[ErrorCode, str] | None:
    """What is wrong with one deletion (``iterations`` None) or upsertion, Kafka's checks in both modes
    (``ZkAdminManager`` and ``ScramControlManager``); None if nothing is."""
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, USERNAME_MUST_NOT_BE_EMPTY
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, UNKNOWN_SCRAM_MECHANISM
    if iterations is not None and iterations < BY_TYPE[mechanism].min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if iterations is not None and iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def sanitize(user: str) -> str:
    """A user name as a znode name (Kafka's ``Sanitizer.sanitize``: URL-encoded, ``*`` and space as %2A, %20)."""
    return urllib.parse.quote(user, safe="._-")


class CredentialProvider:
    def __init__(self, broker=None, log_dir: str | None = None):
        self.broker = broker
        self.log_dir = broker.log_dir if broker is not None else log_dir
        self.cache = CredentialCache()
        #: user -> {mechanism name: credential string}, what is stored
        self.users: dict[str, dict[str, str]] = {}
        if self.log_dir is not None and not self.in_cluster:
            self._load_file()

    @property
    def in_cluster(self) -> bool:
        return self.broker is not None and self.broker.in_cluster

    @property
    def served(self) -> bool:
        """Whether this broker alters credentials itself: standalone or in ZooKeeper mode. A KRaft broker forwards
        AlterUserScramCredentials to the controller and learns the credentials from its metadata image
        (:meth:`apply_scram_image`)."""
        return not self.in_cluster or self.broker.zk_client is not None

    def apply_scram_image(self, credentials: dict) -> None:
        """A KRaft broker's credentials as its metadata image has them (the controller's UserScramCredentialRecords:
        (user, mechanism type) -> salt, stored key, server key, iterations), the users whose changed updated."""
        found: dict[str, dict[str, str]] = {}
        for (user, mechanism), v in credentials.items():
            found.setdefault(user, {})[BY_TYPE[mechanism].mechanism_name] = credential_to_string(
                ScramCredential(v.salt, v.stored_key, v.server_key, v.iterations))
        for user in set(self.users) - set(found):
            self._set(user, {})
        for user, configs in found.items():
            if configs != self.users.get(user):
                self._set(user, configs)

    # -- AlterUserScramCredentials ----------------------------------------------------------------------------

    async def alter(self, upsertions: list, deletions: list) -> list[dict]:
        """Kafka's ``alterUserScramCredentials``: the results, one per user."""
        if not self.served:   # a KRaft broker forwards the request to the controller (kafka_apis): never here
            users = dict.fromkeys([u.name for u in upsertions] + [d.name for d in deletions])
            return [{"user": u, "error_code": ErrorCode.NOT_CONTROLLER,
                     "error_message": "a KRaft broker's controller alters SCRAM credentials"} for u in users]
        results: list[dict] = []
        illegal: dict[str, tuple[ErrorCode, str]] = {}
        for x in [*deletions, *upsertions]:
            error = scram_change_error(x.name, x.mechanism, getattr(x, "iterations", None))
            if error is not None:
                illegal[x.name] = error
        for user, (code, message) in illegal.items():
            results.append({"user": user, "error_code": code, "error_message": message})
        pairs = [(x.name, x.mechanism) for x in [*upsertions, *deletions] if x.name not in illegal]
        duplicated = {name for name, _ in pairs if pairs.count((name, _)) > 1}
        for user in dict.fromkeys(n for n, _ in pairs if n in duplicated):
            results.append({"user": user, "error_code": ErrorCode.DUPLICATE_RESOURCE,
                            "error_message": "A user credential cannot be altered twice in the same request"})
        candidates = list(dict.fromkeys(n for n, _ in pairs if n not in duplicated))
        current = {user: await self._fetch(user) for user in candidates}
        missing = {d.name for d in deletions if d.name in current
                   and BY_TYPE[d.mechanism].mechanism_name not in current[d.name]}
        for user in (u for u in candidates if u in missing):
            results.append({"user": user, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                            "error_message": "Attempt to delete a user credential that does not exist"})
        for user in (u for u in candidates if u not in missing):
            configs = current[user]
            try:
                for d in (d for d in deletions if d.name == user):
                    configs.pop(BY_TYPE[d.mechanism].mechanism_name, None)
                for u in (u for u in upsertions if u.name == user):
                    mechanism = BY_TYPE[u.mechanism]
                    credential = ScramFormatter(mechanism).credential_from_salted_password(
                        bytes(u.salt), bytes(u.salted_password), u.iterations)
                    configs[mechanism.mechanism_name] = credential_to_string(credential)
                await self._store(user, configs)
            except Exception as exc:   # noqa: BLE001 - Kafka answers the error of whatever failed for this user
                log.info("Error encountered while altering user SCRAM credentials", exc_info=True)
                results.append({"user": user, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                "error_message": str(exc)})
                continue
            # Kafka 3.9's ZkAdminManager sets no message on a success: the field's default, "" (not null)
            results.append({"user": user, "error_code": 0, "error_message": ""})
        return results

    async def _fetch(self, user: str) -> dict[str, str]:
        """The user's stored SCRAM credentials (mechanism -> string), a copy."""
        if self.in_cluster:
            return {k: v for k, v in (await asyncio.to_thread(self._read_zk_user, user)).items() if k in MECHANISMS}
        return dict(self.users.get(user, {}))

    async def _store(self, user: str, configs: dict[str, str]) -> None:
        if self.in_cluster:
            await asyncio.to_thread(self._write_zk_user, user, configs)
        self._set(user, configs)
        if not self.in_cluster:
            self._save_file()

    def _set(self, user: str, configs: dict[str, str]) -> None:
        creds = {}
        for mechanism, text in configs.items():
            try:
                creds[mechanism] = credential_from_string(text)
            except ValueError as exc:
                log.warning("user %s: %s is ignored: %s", user, mechanism, exc)
        if configs:
            self.users[user] = dict(configs)
        else:
            self.users.pop(user, None)
        self.cache.update_user(user, creds)

    # -- DescribeUserScramCredentials -------------------------------------------------------------------------

    def describe(self, users: list[str] | None) -> dict:
        """Kafka's ``describeUserScramCredentials``: the response's fields (a KRaft broker: from its metadata image,
        as Kafka 4's broker answers from its ``ScramImage``)."""

        def result(user: str) -> dict:
            configs = self.users.get(user, {})
            infos = []
            for mechanism in MECHANISMS.values():
                if mechanism.mechanism_name in configs:
                    credential = credential_from_string(configs[mechanism.mechanism_name])
                    infos.append({"mechanism": mechanism.type, "iterations": credential.iterations})
            return {"user": user, "error_code": 0, "error_message": None, "credential_infos": infos}

        if not users:
            return {"error_code": 0, "error_message": None, "results": [result(u) for u in sorted(self.users)]}
        out: dict[str, dict] = {}
        for user in users:
            if user in out:
                continue
            if not user:
                out[user] = {"user": user, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                             "error_message": USERNAME_MUST_NOT_BE_EMPTY, "credential_infos": []}
            elif users.count(user) > 1:
                out[user] = {"user": user, "error_code": ErrorCode.DUPLICATE_RESOURCE, "credential_infos": [],
                             "error_message": f"Cannot describe SCRAM credentials for the same user twice in a "
                                              f"single request: {user}"}
            elif user not in self.users:
                out[user] = {"user": user, "error_code": ErrorCode.RESOURCE_NOT_FOUND, "credential_infos": [],
                             "error_message": f"Attempt to describe a user credential that does not exist: {user}"}
            else:
                out[user] = result(user)
        return {"error_code": 0, "error_message": None, "results": list(out.values())}

    # -- storage ----------------------------------------------------------------------------------------------

    def _file(self) -> str:
        assert self.log_dir is not None
        return os.path.join(self.log_dir, CREDENTIALS_FILE)

    def _load_file(self) -> None:
        data = read_state_file(self._file(), "SCRAM credentials")
        if data is None:
            return
        for user, configs in data.get("users", {}).items():
            self._set(user, {k: v for k, v in configs.items() if k in MECHANISMS})

    def _save_file(self) -> None:
        write_state_file(self._file(), {"version": 1, "users": self.users})

    def _read_zk_user(self, user: str) -> dict[str, str]:
        try:
            data, _ = self.broker.zk_client.zk.get(f"/config/users/{sanitize(user)}")
        except NoNodeError:
            return {}
        return zd.decode_topic_config(data)

    def _write_zk_user(self, user: str, scram: dict[str, str]) -> None:
        """The user's config znode with its SCRAM keys replaced, its other keys (quotas) kept."""
        zk = self.broker.zk_client
        configs = {k: v for k, v in self._read_zk_user(user).items() if k not in MECHANISMS}
        configs.update(scram)
        zk.set_or_create_entity_configs(f"/config/users/{sanitize(user)}", configs)
        zk.create_config_change_notification(f"users/{sanitize(user)}")

    def load_zk(self) -> None:
        """Read every user's SCRAM credentials from ZooKeeper (at start and on each user change notification)."""
        kz = self.broker.zk_client.zk
        try:
            names = kz.get_children("/config/users")
        except NoNodeError:
            names = []
        found = {}
        for name in names:
            user = urllib.parse.unquote(name)
            configs = {k: v for k, v in self._read_zk_user(user).items() if k in MECHANISMS}
            if configs:
                found[user] = configs
        for user in set(self.users) - set(found):
            self._set(user, {})
        for user, configs in found.items():
            if configs != self.users.get(user):
                self._set(user, configs)
