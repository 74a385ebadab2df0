"""AlterUserScramCredentials / DescribeUserScramCredentials on the standalone broker's CredentialProvider: Kafka's
checks, the credential cache updated at once, the credentials kept across a restart."""
from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace as NS

from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.security.scram.scram_credential import credential_from_string
from kafkalab.broker.common.security.scram.scram_formatter import ScramFormatter
from kafkalab.broker.common.security.scram.scram_mechanism import SCRAM_SHA_256, SCRAM_SHA_512
from kafkalab.broker.server.credential_provider import CREDENTIALS_FILE, CredentialProvider


def upsert(name, password="secret", mechanism=1, iterations=4096, salt=b"salt"):
    m = {1: SCRAM_SHA_256, 2: SCRAM_SHA_512}.get(mechanism, SCRAM_SHA_256)
    return NS(name=name, mechanism=mechanism, iterations=iterations, salt=salt,
              salted_password=ScramFormatter(m).salted_password(password, salt, max(iterations, 1)))


def delete(name, mechanism=1):
    return NS(name=name, mechanism=mechanism)


def alter(provider, upsertions=(), deletions=()):
    results = asyncio.run(provider.alter(list(upsertions), list(deletions)))
    return {r["user"]: (r["error_code"], r["error_message"]) for r in results}


def test_an_upsertion_is_stored_and_served_at_once(tmp_path):
    provider = CredentialProvider(log_dir=str(tmp_path))
    # a success carries Kafka 3.9's default message, "" (measured: test_cluster_listeners.py on Kafka 3.9)
    assert alter(provider, [upsert("alice", iterations=8192), upsert("alice", mechanism=2)]) == {"alice": (0, "")}
    cred = provider.cache.get("SCRAM-SHA-256", "alice")
    f = ScramFormatter(SCRAM_SHA_256)
    assert cred.iterations == 8192 and cred.salt == b"salt"
    assert cred.stored_key == f.stored_key(f.client_key(f.salted_password("secret", b"salt", 8192)))
    assert provider.cache.get("SCRAM-SHA-512", "alice").iterations == 4096
    stored = json.loads((tmp_path / CREDENTIALS_FILE).read_text())["users"]["alice"]
    assert credential_from_string(stored["SCRAM-SHA-256"]) == cred     # Kafka's salt=...,stored_key=... form
    again = CredentialProvider(log_dir=str(tmp_path))                  # a restarted broker
    assert again.cache.get("SCRAM-SHA-256", "alice") == cred
    assert alter(provider, deletions=[delete("alice")]) == {"alice": (0, "")}
    assert provider.cache.get("SCRAM-SHA-256", "alice") is None
    assert provider.cache.get("SCRAM-SHA-512", "alice") is not None


def test_kafkas_checks_fail_only_their_user(tmp_path):
    provider = CredentialProvider(log_dir=str(tmp_path))
    results = alter(provider, [upsert("few", iterations=4095), upsert("many", iterations=16385),
                               upsert("mech", mechanism=3), upsert(""), upsert("dup"), upsert("dup", "x"),
                               upsert("ok", iterations=16384)],
                    [delete("gone"), delete("bad", mechanism=0)])
    assert results == {
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "mech": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "bad": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "dup": (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "gone": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "ok": (0, "")}
    assert provider.cache.users() == {"ok"}


def test_describe_lists_mechanisms_and_iterations_only(tmp_path):
    provider = CredentialProvider(log_dir=str(tmp_path))
    alter(provider, [upsert("bob", iterations=5000), upsert("bob", mechanism=2), upsert("alice")])
    everyone = provider.describe(None)
    assert [r["user"] for r in everyone["results"]] == ["alice", "bob"]
    assert everyone["results"][1]["credential_infos"] == [{"mechanism": 1, "iterations": 5000},
                                                          {"mechanism": 2, "iterations": 4096}]
    named = {r["user"]: r for r in provider.describe(["bob", "nobody", "alice", "alice"])["results"]}
    assert named["bob"]["error_code"] == 0
    assert (named["nobody"]["error_code"], named["nobody"]["error_message"]) == (
        ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: nobody")
    assert (named["alice"]["error_code"], named["alice"]["error_message"]) == (
        ErrorCode.DUPLICATE_RESOURCE, "Cannot describe SCRAM credentials for the same user twice in a single "
                                      "request: alice")
