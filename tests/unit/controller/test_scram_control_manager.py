"""ScramControlManager: KRaft's SCRAM credentials as Kafka 4.x's controller checks and writes them, replays them and
puts them in a snapshot; a broker's CredentialProvider authenticates against what its image replayed."""
from __future__ import annotations

from kafka.protocol.admin.users import AlterUserScramCredentialsRequest

from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.scram.scram_formatter import ScramFormatter
from kafkalab.broker.common.security.scram.scram_mechanism import BY_TYPE
from kafkalab.broker.server.credential_provider import CredentialProvider
from kafkalab.controller.scram_control_manager import ScramControlManager
from kafkalab.metadata.metadata_records import decode_metadata_record

SHA512 = BY_TYPE[2]
SALT = b"0123456789abcdef"


def request(upsertions=(), deletions=()):
    return build(AlterUserScramCredentialsRequest, 0, {"upsertions": list(upsertions), "deletions": list(deletions)})


def upsert(name, password="secret", mechanism=2, iterations=4096):
    salted = ScramFormatter(BY_TYPE.get(mechanism, SHA512)).salted_password(password, SALT, iterations)
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": SALT, "salted_password": salted}


def committed(manager, records):
    """The records as the log holds them, replayed."""
    for r in records:
        decoded = decode_metadata_record(r.encode())
        manager.replay(decoded.name, decoded.data)


def test_an_upsertion_writes_the_stored_and_server_keys_not_the_password():
    m = ScramControlManager()
    records, results = m.alter_credentials(request([upsert("alice")]))
    assert results == [{"user": "alice", "error_code": 0, "error_message": None}]
    (record,) = records
    assert record.name == "UserScramCredentialRecord"
    expected = ScramFormatter(SHA512).generate_credential("secret", 4096, SALT)
    assert (record.data["stored_key"], record.data["server_key"]) == (expected.stored_key, expected.server_key)
    assert b"secret" not in record.encode() and upsert("alice")["salted_password"] not in record.encode()
    assert m.credentials == {}                    # nothing changes before the record is committed and replayed
    committed(m, records)
    assert m.credentials[("alice", 2)].stored_key == expected.stored_key


def test_kafka_4s_refusals_one_change_per_user():
    m = ScramControlManager()
    records, results = m.alter_credentials(request(
        [upsert(""), upsert("bob", mechanism=9), upsert("carol", iterations=1000), upsert("dave", iterations=20000),
         upsert("erin", mechanism=1), upsert("erin", mechanism=2), upsert("ok")],
        [{"name": "frank", "mechanism": 2}]))
    assert [r.data["name"] for r in records] == ["ok"]
    got = {r["user"]: (ErrorCode(r["error_code"]).name, r["error_message"]) for r in results}
    assert got == {"": ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty"),
                   "bob": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
                   "carol": ("UNACCEPTABLE_CREDENTIAL", "Too few iterations"),
                   "dave": ("UNACCEPTABLE_CREDENTIAL", "Too many iterations"),
                   "erin": ("DUPLICATE_RESOURCE", "A user credential cannot be altered twice in the same request"),
                   "frank": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist"),
                   "ok": ("NONE", None)}
    assert [r["user"] for r in results][0] == "ok"   # the successes first, then the errors, as Kafka lists them


def test_a_deletion_then_a_snapshot():
    m = ScramControlManager()
    committed(m, m.alter_credentials(request([upsert("alice")]))[0])
    committed(m, m.alter_credentials(request([upsert("bob", mechanism=1)]))[0])
    records, results = m.alter_credentials(request(deletions=[{"name": "alice", "mechanism": 2}]))
    assert [r.name for r in records] == ["RemoveUserScramCredentialRecord"] and results[0]["error_code"] == 0
    committed(m, records)
    assert set(m.credentials) == {("bob", 1)}
    again = ScramControlManager()
    committed(again, m.snapshot_records())        # a snapshot holds one record per credential
    assert again.credentials == m.credentials


def test_a_broker_authenticates_against_its_image():
    m = ScramControlManager()
    committed(m, m.alter_credentials(request([upsert("alice")]))[0])
    provider = CredentialProvider()
    provider.apply_scram_image(m.credentials)
    credential = provider.cache.get("SCRAM-SHA-512", "alice")   # what the SASL listeners authenticate against
    assert credential == ScramFormatter(SHA512).generate_credential("secret", 4096, SALT)
    described = provider.describe(["alice"])
    assert described["results"][0]["credential_infos"] == [{"mechanism": 2, "iterations": 4096}]
    provider.apply_scram_image({})
    assert provider.cache.get("SCRAM-SHA-512", "alice") is None
    assert provider.describe(["alice"])["results"][0]["error_code"] == ErrorCode.RESOURCE_NOT_FOUND
