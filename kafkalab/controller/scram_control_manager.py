"""``ScramControlManager``: the cluster's SCRAM credentials in KRaft mode, as Kafka 4.x's (KIP-554, KIP-631).

In ZooKeeper mode a broker writes a user's credentials into ``/config/users/<user>``
(:mod:`kafkalab.broker.server.credential_provider`). In KRaft mode AlterUserScramCredentials goes to the active
controller (a broker forwards it in an Envelope), which checks it and writes, per user, one record that every
controller and broker replays:

* ``UserScramCredentialRecord`` (name, mechanism, salt, stored key, server key, iterations): the controller turns
  the client's salted password into the stored and server keys (``ScramFormatter``), so the password and the
  salted password never reach the log;
* ``RemoveUserScramCredentialRecord`` (name, mechanism).

Kafka's checks (``ScramControlManager.alterCredentials``), each failing only that user: one deletion or upsertion
per *user* in a request (two, even for two mechanisms, is DUPLICATE_RESOURCE "A user credential cannot be altered
twice in the same request": stricter than ZooKeeper mode, which keys by user and mechanism), an empty name
UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations below the mechanism's 4096 or
above 16384 UNACCEPTABLE_CREDENTIAL, deleting what is not there RESOURCE_NOT_FOUND. Results come deletions first,
then upsertions, then the errors, as Kafka lists them. A snapshot holds one UserScramCredentialRecord per
credential (Kafka's ``ScramImage.write``).
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

from ..broker.common.errors import ErrorCode
from ..broker.common.security.scram.scram_formatter import ScramFormatter
from ..broker.common.security.scram.scram_mechanism import BY_TYPE
from ..broker.server.credential_provider import scram_change_error
from ..metadata.api_message_and_version import ApiMessageAndVersion

#: the record types this manager writes and replays
SCRAM_RECORDS = ("UserScramCredentialRecord", "RemoveUserScramCredentialRecord")
TWICE = "A user credential cannot be altered twice in the same request"


@dataclass(frozen=True)
class ScramCredentialValue:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class ScramControlManager:
    def __init__(self):
        #: (user, mechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512) -> the credential replayed
        self.credentials: dict[tuple[str, int], ScramCredentialValue] = {}

    # -- AlterUserScramCredentials (the active controller) --------------------------------------------------

    def alter_credentials(self, request) -> tuple[list[ApiMessageAndVersion], list[dict]]:
        """The records to write and the response's results, as Kafka's ``alterCredentials``."""
        deletions: dict[str, object] = {}
        upsertions: dict[str, object] = {}
        errors: dict[str, tuple[ErrorCode, str]] = {}
        for d in request.deletions or ():
            if d.name in errors:
                continue
            if deletions.pop(d.name, None) is not None:
                errors[d.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            elif (error := self._validate_deletion(d)) is not None:
                errors[d.name] = error
            else:
                deletions[d.name] = d
        for u in request.upsertions or ():
            if u.name in errors:
                continue
            if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
                errors[u.name] = (ErrorCode.DUPLICATE_RESOURCE, TWICE)
            elif (error := scram_change_error(u.name, u.mechanism, u.iterations)) is not None:
                errors[u.name] = error
            else:
                upsertions[u.name] = u
        records, results = [], []
        for d in deletions.values():
            results.append({"user": d.name, "error_code": 0, "error_message": None})
            records.append(ApiMessageAndVersion("RemoveUserScramCredentialRecord", 0,
                                                {"name": d.name, "mechanism": d.mechanism}))
        for u in upsertions.values():
            formatter = ScramFormatter(BY_TYPE[u.mechanism])
            salted = bytes(u.salted_password)
            records.append(ApiMessageAndVersion("UserScramCredentialRecord", 0, {
                "name": u.name, "mechanism": u.mechanism, "salt": bytes(u.salt),
                "stored_key": formatter.stored_key(formatter.client_key(salted)),
                "server_key": formatter.server_key(salted), "iterations": u.iterations}))
            results.append({"user": u.name, "error_code": 0, "error_message": None})
        for user, (code, message) in errors.items():
            results.append({"user": user, "error_code": int(code), "error_message": message})
        return records, results

    def _validate_deletion(self, d) -> tuple[ErrorCode, str] | None:
        error = scram_change_error(d.name, d.mechanism)
        if error is None and (d.name, d.mechanism) not in self.credentials:
            return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return error

    # -- replay (every controller and broker) ---------------------------------------------------------------

    def replay(self, name: str, data: dict) -> None:
        key = (data["name"], data["mechanism"])
        if name == "RemoveUserScramCredentialRecord":
            if self.credentials.pop(key, None) is None:
                raise RuntimeError(f"Unable to find credential to delete: {key}")
            return
        self.credentials[key] = ScramCredentialValue(
            base64.b64decode(data["salt"]), base64.b64decode(data["storedKey"]), base64.b64decode(data["serverKey"]),
            data["iterations"])

    def snapshot_records(self) -> list[ApiMessageAndVersion]:
        return [ApiMessageAndVersion("UserScramCredentialRecord", 0, {
            "name": user, "mechanism": mechanism, "salt": v.salt, "stored_key": v.stored_key,
            "server_key": v.server_key, "iterations": v.iterations})
            for (user, mechanism), v in sorted(self.credentials.items())]
