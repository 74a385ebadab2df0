"""kafkalab's schema registry against Confluent Schema Registry's documented REST API.

One mini broker and one registry serve the whole module; every test uses subjects of its own. The compatibility
cases are the schema resolution rules of the Avro specification (fields added or removed with and without
defaults, int -> long promotion, enum symbols, unions) under each of Confluent's compatibility levels.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import kafkalab
from kafkalab.registry import schema_registry
from conftest import NO_RETENTION_CHECK, ROOT
from tests.helpers.registry_helpers import Rest, avro, record

pytestmark = pytest.mark.timeout(120)

USER_V1 = record("User", ("name", "string"))
USER_V2 = record("User", ("name", "string"), ("age", "int", 0))


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("registry")), **NO_RETENTION_CHECK) as broker:
        yield broker


@pytest.fixture(scope="module")
def registry(kafka):
    with schema_registry(kafka) as r:
        yield r


@pytest.fixture(scope="module")
def rest(registry):
    return Rest(registry.url)


def assert_error(answer, status: int, error_code: int):
    got_status, body = answer
    assert (got_status, body.get("error_code")) == (status, error_code), answer
    assert isinstance(body.get("message"), str) and body["message"], answer


# ---- subjects, versions, ids ---------------------------------------------------------------------------------
def test_register_then_read_by_id_subject_and_version(rest):
    status, body = rest.post("/subjects/reg-value/versions", USER_V1)
    assert status == 200 and set(body) == {"id"}
    first = body["id"]
    # the same schema, keys reordered and spaced: the same id, no new version
    again = {"schema": json.dumps({"fields": [{"type": "string", "name": "name"}], "name": "User", "type": "record"},
                                  indent=2)}
    assert rest.post("/subjects/reg-value/versions", again) == (200, {"id": first})
    second = rest.post("/subjects/reg-value/versions", USER_V2)[1]["id"]
    assert second == first + 1
    assert rest.get("/subjects/reg-value/versions") == (200, [1, 2])
    assert "reg-value" in rest.get("/subjects")[1]

    status, v1 = rest.get("/subjects/reg-value/versions/1")
    assert status == 200 and v1 == {"subject": "reg-value", "version": 1, "id": first, "schema": v1["schema"]}
    assert json.loads(v1["schema"]) == json.loads(USER_V1["schema"])
    for latest in ("latest", "-1"):
        assert rest.get(f"/subjects/reg-value/versions/{latest}")[1]["version"] == 2
    assert rest.get("/subjects/reg-value/versions/2/schema") == (200, json.loads(USER_V2["schema"]))

    assert rest.get(f"/schemas/ids/{first}") == (200, {"schema": v1["schema"]})
    assert rest.get(f"/schemas/ids/{second}/subjects") == (200, ["reg-value"])
    assert rest.get(f"/schemas/ids/{second}/versions") == (200, [{"subject": "reg-value", "version": 2}])
    assert rest.get("/subjects/reg-value/versions/1/referencedby") == (200, [])
    # one schema, one id, whatever the subject
    assert rest.post("/subjects/reg-other-value/versions", USER_V1) == (200, {"id": first})
    assert rest.get(f"/schemas/ids/{first}/subjects") == (200, ["reg-other-value", "reg-value"])


def test_listings_filter_and_page(rest):
    for i in range(3):
        rest.post(f"/subjects/page-{i}-value/versions", record(f"Page{i}", ("p", "int")))
    rest.post("/subjects/page-0-value/versions", record("Page0", ("p", "int"), ("q", "int", 0)))
    rest.delete("/subjects/page-1-value")
    rest.delete("/subjects/page-0-value/versions/1")
    assert rest.get("/subjects?subjectPrefix=page-") == (200, ["page-0-value", "page-2-value"])
    assert rest.get("/subjects?subjectPrefix=page-&deleted=true") == (200, ["page-0-value", "page-1-value",
                                                                             "page-2-value"])
    assert rest.get("/subjects?subjectPrefix=page-&deleted_only=true") == (200, ["page-0-value", "page-1-value"])
    assert rest.get("/subjects?subjectPrefix=page-&offset=1&limit=1") == (200, ["page-2-value"])
    assert rest.get("/subjects/page-0-value/versions?deleted_only=true") == (200, [1])
    assert rest.get("/subjects/page-0-value/versions?deleted=true&limit=1") == (200, [1])
    assert_error(rest.get("/subjects?limit=many"), 400, 400)


def test_lookup_finds_the_version_holding_a_schema(rest):
    schema_id = rest.post("/subjects/look-value/versions", USER_V1)[1]["id"]
    rest.post("/subjects/look-value/versions", USER_V2)
    status, body = rest.post("/subjects/look-value", USER_V1)
    assert status == 200 and (body["subject"], body["version"], body["id"]) == ("look-value", 1, schema_id)
    assert_error(rest.post("/subjects/look-value", record("User", ("other", "long"))), 404, 40403)
    assert_error(rest.post("/subjects/look-nobody", USER_V1), 404, 40401)


def test_schema_types_root_and_mode(rest):
    assert rest.get("/") == (200, {})
    assert rest.get("/schemas/types") == (200, ["JSON", "AVRO"])
    assert rest.get("/mode") == (200, {"mode": "READWRITE"})


def test_json_schema_is_registered_with_its_type(rest):
    body = {"schemaType": "JSON", "schema": json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})}
    schema_id = rest.post("/subjects/json-value/versions", body)[1]["id"]
    status, by_id = rest.get(f"/schemas/ids/{schema_id}")
    assert status == 200 and by_id["schemaType"] == "JSON"
    assert rest.get("/subjects/json-value/versions/1")[1]["schemaType"] == "JSON"
    bad = {"schemaType": "JSON", "schema": json.dumps({"type": "no-such-type"})}
    assert_error(rest.post("/subjects/json-value/versions", bad), 422, 42201)


# ---- errors ---------------------------------------------------------------------------------------------------
def test_not_found_errors(rest):
    rest.post("/subjects/nf-value/versions", USER_V1)
    assert_error(rest.get("/subjects/nf-nobody/versions"), 404, 40401)
    assert_error(rest.get("/subjects/nf-nobody/versions/1"), 404, 40401)
    assert_error(rest.get("/subjects/nf-value/versions/7"), 404, 40402)
    assert_error(rest.get("/schemas/ids/987654"), 404, 40403)
    assert_error(rest.get("/no/such/resource"), 404, 404)
    assert_error(rest.put("/subjects"), 405, 405)


@pytest.mark.parametrize("schema", [
    "not json at all",
    json.dumps({"type": "no-such-type"}),
    json.dumps({"type": "record", "name": "X", "fields": [{"name": "a", "type": "int", "default": "x"}]}),
    json.dumps({"type": "record", "name": "X", "fields": [{"name": "a", "type": "int"}, {"name": "a",
                                                                                       "type": "int"}]}),
    json.dumps({"type": "enum", "name": "E", "symbols": ["A", "A"]}),
    "",
])
def test_invalid_schemas_are_42201(rest, schema):
    assert_error(rest.post("/subjects/bad-value/versions", {"schema": schema}), 422, 42201)
    assert_error(rest.get("/subjects/bad-value/versions"), 404, 40401)      # nothing was registered


def test_invalid_versions_are_42202(rest):
    rest.post("/subjects/iv-value/versions", USER_V1)
    for version in ("0", "abc", "-2", str(2 ** 31)):
        assert_error(rest.get(f"/subjects/iv-value/versions/{version}"), 422, 42202)


def test_malformed_bodies(rest):
    assert_error(rest.post("/subjects/mb-value/versions", raw=b"{not json"), 400, 400)
    assert_error(rest.post("/subjects/mb-value/versions", {"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";"}),
                 422, 42201)
    assert_error(rest.post("/subjects/mb-value/versions", {"schema": "\"int\"", "references": [
        {"name": "x", "subject": "y", "version": 1}]}), 422, 42201)
    assert rest.get("/")[0] == 200                                           # still serving


def test_garbage_on_the_socket_closes_that_connection_only(registry, rest):
    import socket

    for garbage in (b"NONSENSE\r\n\r\n", b"\x00\xff" * 100 + b"\r\n\r\n",
                    b"POST /subjects/g-value/versions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{}"):
        with socket.create_connection(("127.0.0.1", registry.port), timeout=10) as s:
            s.sendall(garbage)
            answer = b""
            while chunk := s.recv(4096):             # the registry closes that connection after answering
                answer += chunk
        # an HTTP/1.x status line, or none at all for a request line without a version (HTTP/0.9's way)
        assert b'"error_code": 4' in answer and not answer.startswith(b"HTTP/1.1 2"), answer[:200]
    assert rest.get("/subjects")[0] == 200


# ---- deletes ----------------------------------------------------------------------------------------------------
def test_version_soft_then_hard_delete(rest):
    ids = [rest.post("/subjects/dv-value/versions", s)[1]["id"] for s in (USER_V1, USER_V2)]
    assert_error(rest.delete("/subjects/dv-value/versions/1?permanent=true"), 404, 40407)   # not soft-deleted first
    assert rest.delete("/subjects/dv-value/versions/1") == (200, 1)
    assert rest.get("/subjects/dv-value/versions") == (200, [2])
    assert rest.get("/subjects/dv-value/versions?deleted=true") == (200, [1, 2])
    assert_error(rest.get("/subjects/dv-value/versions/1"), 404, 40402)
    assert rest.get("/subjects/dv-value/versions/1?deleted=true")[1]["id"] == ids[0]
    assert rest.get(f"/schemas/ids/{ids[0]}")[0] == 200        # consumers can still read old messages
    assert_error(rest.delete("/subjects/dv-value/versions/1"), 404, 40406)                  # already soft-deleted
    assert rest.delete("/subjects/dv-value/versions/1?permanent=true") == (200, 1)
    assert rest.get("/subjects/dv-value/versions?deleted=true") == (200, [2])
    assert_error(rest.delete("/subjects/dv-value/versions/1?permanent=true"), 404, 40402)
    assert_error(rest.delete("/subjects/dv-nobody/versions/1"), 404, 40401)


def test_subject_soft_then_hard_delete(rest):
    ids = [rest.post("/subjects/ds-value/versions", s)[1]["id"] for s in (record("Ds", ("a", "int")),
                                                                       record("Ds", ("a", "int"), ("b", "int", 1)))]
    assert_error(rest.delete("/subjects/ds-value?permanent=true"), 404, 40405)             # not soft-deleted first
    assert rest.delete("/subjects/ds-value") == (200, [1, 2])
    assert "ds-value" not in rest.get("/subjects")[1]
    assert "ds-value" in rest.get("/subjects?deleted=true")[1]
    assert_error(rest.get("/subjects/ds-value/versions"), 404, 40401)
    assert_error(rest.delete("/subjects/ds-value"), 404, 40404)                            # already soft-deleted
    assert rest.get(f"/schemas/ids/{ids[1]}")[0] == 200
    assert rest.delete("/subjects/ds-value?permanent=true") == (200, [1, 2])
    assert "ds-value" not in rest.get("/subjects?deleted=true")[1]
    for schema_id in ids:
        assert_error(rest.get(f"/schemas/ids/{schema_id}"), 404, 40403)
    assert_error(rest.delete("/subjects/ds-value"), 404, 40401)
    # a soft-deleted subject keeps counting versions; a hard-deleted one starts again at 1
    assert rest.post("/subjects/ds-value/versions", record("Ds", ("c", "long")))[0] == 200
    assert rest.get("/subjects/ds-value/versions") == (200, [1])


# ---- config -----------------------------------------------------------------------------------------------------
def test_global_and_subject_config(rest):
    assert rest.get("/config") == (200, {"compatibilityLevel": "BACKWARD"})
    try:
        assert rest.put("/config", {"compatibility": "full"}) == (200, {"compatibility": "FULL"})
        assert rest.get("/config") == (200, {"compatibilityLevel": "FULL"})
        assert_error(rest.get("/config/cfg-value"), 404, 40408)
        assert rest.get("/config/cfg-value?defaultToGlobal=true") == (200, {"compatibilityLevel": "FULL"})
        assert rest.put("/config/cfg-value", {"compatibility": "NONE"}) == (200, {"compatibility": "NONE"})
        assert rest.get("/config/cfg-value") == (200, {"compatibilityLevel": "NONE"})
        assert_error(rest.put("/config/cfg-value", {"compatibility": "SIDEWAYS"}), 422, 42203)
        assert_error(rest.put("/config", {}), 422, 42203)
        assert rest.delete("/config/cfg-value") == (200, {"compatibilityLevel": "NONE"})
        assert_error(rest.get("/config/cfg-value"), 404, 40408)
        assert_error(rest.delete("/config/cfg-value"), 404, 40401)
    finally:
        assert rest.delete("/config")[0] == 200
    assert rest.get("/config") == (200, {"compatibilityLevel": "BACKWARD"})


# ---- compatibility: the Avro specification's schema resolution under each level ------------------------------------
A_INT = record("R", ("a", "int"))
A_LONG = record("R", ("a", "long"))
A_B_DEFAULT = record("R", ("a", "int"), ("b", "string", "x"))
A_B = record("R", ("a", "int"), ("b", "string"))
B_DEFAULT = record("R", ("b", "string", "x"))
A_NULLABLE = record("R", ("a", ["null", "int"], None))
ENUM_AB = avro(type="enum", name="E", symbols=["A", "B"])
ENUM_ABC = avro(type="enum", name="E", symbols=["A", "B", "C"])
STRING = avro(type="string")

COMPAT_CASES = [
    # (why, level, earlier versions, new schema, compatible?)
    ("field added with a default", "BACKWARD", [A_INT], A_B_DEFAULT, True),
    ("field added with a default", "FORWARD", [A_INT], A_B_DEFAULT, True),
    ("field added with a default", "FULL", [A_INT], A_B_DEFAULT, True),
    ("field added without a default: new reader lacks old data", "BACKWARD", [A_INT], A_B, False),
    ("field added without a default: old reader ignores it", "FORWARD", [A_INT], A_B, True),
    ("field added without a default", "FULL", [A_INT], A_B, False),
    ("field removed: new reader ignores it", "BACKWARD", [A_B], A_INT, True),
    ("field removed that had no default: old reader needs it", "FORWARD", [A_B], A_INT, False),
    ("field removed that had a default", "FULL", [A_B_DEFAULT], A_INT, True),
    ("int -> long: a long reader promotes int data", "BACKWARD", [A_INT], A_LONG, True),
    ("int -> long: an int reader cannot read long data", "FORWARD", [A_INT], A_LONG, False),
    ("enum symbol added: the reader knows every old symbol", "BACKWARD", [ENUM_AB], ENUM_ABC, True),
    ("enum symbol added: an old reader meets an unknown symbol", "FORWARD", [ENUM_AB], ENUM_ABC, False),
    ("enum symbol removed", "BACKWARD", [ENUM_ABC], ENUM_AB, False),
    ("int -> union with null: the union has int", "BACKWARD", [A_INT], A_NULLABLE, True),
    ("int -> union with null: an int reader cannot read null", "FORWARD", [A_INT], A_NULLABLE, False),
    ("record -> string", "BACKWARD", [A_INT], STRING, False),
    ("anything goes", "NONE", [A_INT], STRING, True),
    # transitive: only the transitive level looks past the latest version
    ("b lost its default: v2 wrote b, v1 did not", "BACKWARD", [A_INT, A_B_DEFAULT], A_B, True),
    ("b lost its default: v2 wrote b, v1 did not", "BACKWARD_TRANSITIVE", [A_INT, A_B_DEFAULT], A_B, False),
    ("a dropped: v2 reads with a default, v1 cannot", "FORWARD", [A_B, A_B_DEFAULT], B_DEFAULT, False),
    ("b dropped: v2 has a default for b, v1 needs b", "FORWARD", [A_B, A_B_DEFAULT], A_INT, True),
    ("b dropped: v2 has a default for b, v1 needs b", "FORWARD_TRANSITIVE", [A_B, A_B_DEFAULT], A_INT, False),
    ("both ways with v2 only", "FULL", [A_INT, A_B_DEFAULT], A_B, True),
    ("both ways with v1 too", "FULL_TRANSITIVE", [A_INT, A_B_DEFAULT], A_B, False),
    ("field added with a default, every way, every version", "FULL_TRANSITIVE", [A_INT, A_B_DEFAULT],
     record("R", ("a", "int"), ("b", "string", "x"), ("c", "int", 0)), True),
]


@pytest.mark.parametrize("why, level, earlier, new, compatible", COMPAT_CASES,
                         ids=[f"{c[1]}-{i}" for i, c in enumerate(COMPAT_CASES)])
def test_compatibility_levels(rest, why, level, earlier, new, compatible):
    subject = f"compat-{COMPAT_CASES.index((why, level, earlier, new, compatible))}-value"
    rest.put(f"/config/{subject}", {"compatibility": "NONE"})
    for schema in earlier:
        assert rest.post(f"/subjects/{subject}/versions", schema)[0] == 200
    rest.put(f"/config/{subject}", {"compatibility": level})
    status, answer = rest.post(f"/compatibility/subjects/{subject}/versions?verbose=true", new)
    assert status == 200 and answer["is_compatible"] is compatible, (why, answer)
    assert (answer["messages"] == []) is compatible
    status, body = rest.post(f"/subjects/{subject}/versions", new)
    if compatible:
        assert status == 200 and "id" in body
        assert rest.get(f"/subjects/{subject}/versions")[1] == list(range(1, len(earlier) + 2))
    else:
        assert_error((status, body), 409, 40901)
        assert "incompatible" in body["message"]
        assert rest.get(f"/subjects/{subject}/versions")[1] == list(range(1, len(earlier) + 1))


def test_compatibility_against_one_version(rest):
    rest.put("/config/one-value", {"compatibility": "NONE"})
    rest.post("/subjects/one-value/versions", A_INT)
    rest.post("/subjects/one-value/versions", A_B_DEFAULT)
    rest.put("/config/one-value", {"compatibility": "BACKWARD"})
    # A_B reads data of version 2 (which has b) but not of version 1
    assert rest.post("/compatibility/subjects/one-value/versions/latest", A_B) == (200, {"is_compatible": True})
    assert rest.post("/compatibility/subjects/one-value/versions/2", A_B) == (200, {"is_compatible": True})
    assert rest.post("/compatibility/subjects/one-value/versions/1", A_B) == (200, {"is_compatible": False})
    assert_error(rest.post("/compatibility/subjects/one-value/versions/9", A_B), 404, 40402)
    assert_error(rest.post("/compatibility/subjects/one-nobody/versions/latest", A_B), 404, 40401)
    assert_error(rest.post("/compatibility/subjects/one-value/versions/x", A_B), 422, 42202)
    assert_error(rest.post("/compatibility/subjects/one-value/versions/latest", {"schema": "{"}), 422, 42201)
    # no version: against what the level names; a subject without versions takes anything
    assert rest.post("/compatibility/subjects/one-nobody/versions", A_B) == (200, {"is_compatible": True})


# ---- the _schemas topic: restart, a second instance, Confluent's record format -------------------------------------
def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def snapshot(rest) -> dict:
    """Every subject (soft-deleted too) with every version's id and schema, plus the configs."""
    state = {"config": rest.get("/config")[1]}
    for subject in rest.get("/subjects?deleted=true")[1]:
        versions = rest.get(f"/subjects/{subject}/versions?deleted=true")[1]
        state[subject] = {v: rest.get(f"/subjects/{subject}/versions/{v}?deleted=true")[1] for v in versions}
        state[subject]["live"] = rest.get(f"/subjects/{subject}/versions")[1] if rest.get(
            f"/subjects/{subject}/versions")[0] == 200 else []
        state[subject]["config"] = rest.get(f"/config/{subject}")
    return state


def test_restart_and_a_second_instance_read_everything_back(kafka, tmp_path):
    with schema_registry(kafka, topic="_schemas_restart") as first:
        rest = Rest(first.url)
        for i in range(3):
            rest.post(f"/subjects/rs-{i}-value/versions", record(f"Rs{i}", ("a", "int")))
            rest.post(f"/subjects/rs-{i}-value/versions", record(f"Rs{i}", ("a", "int"), ("b", "int", i)))
        rest.put("/config", {"compatibility": "FULL"})
        rest.put("/config/rs-1-value", {"compatibility": "NONE"})
        rest.delete("/subjects/rs-2-value/versions/1")
        rest.delete("/subjects/rs-0-value")
        before = snapshot(rest)
        assert len(before) == 4 and before["rs-0-value"]["live"] == [] and before["rs-2-value"]["live"] == [2]

        with schema_registry(kafka, topic="_schemas_restart") as second:
            assert snapshot(Rest(second.url)) == before
            new_id = Rest(second.url).post("/subjects/rs-3-value/versions", record("Rs3", ("z", "int")))[1]["id"]
            assert new_id == 7                                          # after the 6 ids of the first instance
            wait_for(lambda: rest.get("/subjects/rs-3-value/versions")[0] == 200)
            after = snapshot(rest)

        port = first.port
        first.restart()
        assert first.port == port and snapshot(rest) == after
        # ids keep counting up after a restart: a new schema never takes an old id
        assert rest.post("/subjects/rs-4-value/versions", record("Rs4", ("y", "int")))[1]["id"] == 8


def test_two_instances_writing_at_once_never_share_an_id(kafka):
    """Only one instance writes at a time (the newest transactional producer fences the other): writes sent to
    both instances at once, from threads, each get an id of their own and are seen alike by both."""
    from concurrent.futures import ThreadPoolExecutor

    with schema_registry(kafka, topic="_schemas_two") as a, schema_registry(kafka, topic="_schemas_two") as b:
        targets = [Rest(a.url), Rest(b.url)]

        def register(i):
            return targets[i % 2].post(f"/subjects/two-{i % 3}-value/versions",
                                       record("Two", (f"f{i}", "int", i)))      # each reads the others

        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(register, range(12)))
        assert all(status == 200 for status, _ in answers), answers
        ids = [body["id"] for _, body in answers]
        assert sorted(ids) == list(range(1, 13))                 # twelve schemas, twelve ids, none twice
        wait_for(lambda: snapshot(targets[0]) == snapshot(targets[1]))
        for subject in ("two-0-value", "two-1-value", "two-2-value"):
            assert targets[0].get(f"/subjects/{subject}/versions") == (200, [1, 2, 3, 4])


def test_schemas_topic_holds_confluents_records(kafka, registry, rest):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource

    schema_id = rest.post("/subjects/topic-value/versions", record("Topic", ("t", "int")))[1]["id"]
    rest.put("/config/topic-value", {"compatibility": "FORWARD"})
    rest.delete("/subjects/topic-value")
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "_schemas")
    assert admin.describe_configs([resource])[resource].result(10)["cleanup.policy"].value == "compact"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "topic-test",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("_schemas", 0, 0)])
    records = []
    while (message := consumer.poll(2.0)) is not None:
        records.append((json.loads(message.key()), None if message.value() is None else json.loads(message.value())))
    consumer.close()
    assert ({"keytype": "SCHEMA", "subject": "topic-value", "version": 1, "magic": 1},
            {"subject": "topic-value", "version": 1, "id": schema_id,
             "schema": '{"type":"record","name":"Topic","fields":[{"name":"t","type":"int"}]}',
             "deleted": False}) in records
    assert ({"keytype": "CONFIG", "subject": "topic-value", "magic": 0}, {"compatibilityLevel": "FORWARD"}) in records
    assert ({"keytype": "DELETE_SUBJECT", "subject": "topic-value", "magic": 0},
            {"subject": "topic-value", "version": 1}) in records
    assert ({"keytype": "NOOP", "magic": 0}, None) in records


def test_kafka_down_reads_still_served_writes_fail_then_recover(tmp_path):
    """With its Kafka gone the registry still answers from memory; a write fails with 5000x after ``timeout``
    and nothing is half-written; once Kafka is back (same port, same files), writes go through again."""
    log_dir = str(tmp_path / "broker")
    broker = kafkalab.mini(log_dir=log_dir, **NO_RETENTION_CHECK)
    port = broker.port
    with schema_registry(broker, timeout=3) as registry:
        rest = Rest(registry.url)
        assert rest.post("/subjects/down-value/versions", USER_V1) == (200, {"id": 1})
        broker.close()
        assert rest.get("/subjects") == (200, ["down-value"])
        status, body = rest.post("/subjects/down-value/versions", USER_V2)
        assert status == 500 and body["error_code"] in (50001, 50002), body
        assert rest.get("/subjects/down-value/versions") == (200, [1])          # nothing half-written
        broker = kafkalab.mini(port=port, log_dir=log_dir, **NO_RETENTION_CHECK)
        try:
            deadline = time.monotonic() + 30
            while (answer := rest.post("/subjects/down-value/versions", USER_V2))[0] != 200:
                assert time.monotonic() < deadline, answer
            assert answer == (200, {"id": 2})
            assert rest.get("/subjects/down-value/versions") == (200, [1, 2])
        finally:
            registry.close()
            broker.close()


# ---- unmodified clients ------------------------------------------------------------------------------------------
def test_confluent_client_serializer_and_wire_format(kafka, registry):
    import io

    import fastavro
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = SchemaRegistryClient({"url": registry.url})
    v1 = json.loads(USER_V1["schema"])
    serializer = AvroSerializer(client, json.dumps(v1))
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    users = [{"name": f"user-{i}"} for i in range(5)]
    for user in users:
        value = serializer(user, SerializationContext("users", MessageField.VALUE))
        producer.produce("users", value=value, partition=0)
    producer.flush(10)

    registered = client.get_latest_version("users-value")
    assert (registered.subject, registered.version) == ("users-value", 1)
    assert client.get_versions("users-value") == [1]
    assert client.get_schema(registered.schema_id).schema_str == registered.schema.schema_str

    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "users-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["users"])
    raw = []
    while len(raw) < len(users):
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        raw.append(message.value())
    consumer.close()
    # the wire format: magic byte 0, the schema id in 4 big-endian bytes, then the Avro binary body
    for value, user in zip(raw, users):
        assert value[0] == 0 and int.from_bytes(value[1:5], "big") == registered.schema_id
        assert fastavro.schemaless_reader(io.BytesIO(value[5:]), fastavro.parse_schema(v1)) == user

    deserializer = AvroDeserializer(client)
    context = SerializationContext("users", MessageField.VALUE)
    assert [deserializer(value, context) for value in raw] == users
    # evolution: a reader with version 2 (age, default 0) reads version 1's messages
    client.register_schema("users-value", Schema(USER_V2["schema"], "AVRO"))
    reader = AvroDeserializer(client, USER_V2["schema"])
    assert [reader(value, context) for value in raw] == [dict(u, age=0) for u in users]
    assert client.get_versions("users-value") == [1, 2]
    email = record("User", ("name", "string"), ("email", "string"))["schema"]     # no default: cannot read v2's data
    assert client.test_compatibility("users-value", Schema(email, "AVRO")) is False
    assert client.delete_subject("users-value") == [1, 2]


def test_schema_registry_client_api(registry):
    """confluent-kafka's SchemaRegistryClient, method by method, unmodified."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError

    client = SchemaRegistryClient({"url": registry.url})
    api_v1, api_v2 = record("Api", ("name", "string")), record("Api", ("name", "string"), ("n", "int", 0))
    v1, v2 = Schema(api_v1["schema"], "AVRO"), Schema(api_v2["schema"], "AVRO")     # in no other subject
    assert client.get_schema_types() == ["JSON", "AVRO"]
    client.set_compatibility("api-value", "FORWARD")
    assert client.get_compatibility("api-value") == "FORWARD"
    first = client.register_schema("api-value", v1)
    assert client.register_schema_full_response("api-value", v2).schema_id == first + 1
    found = client.lookup_schema("api-value", v2)
    assert (found.subject, found.version, found.schema_id) == ("api-value", 2, first + 1)
    assert "api-value" in client.get_subjects()
    assert client.get_versions("api-value") == [1, 2]
    assert client.get_version("api-value", 1).schema_id == first
    assert client.get_latest_version("api-value").version == 2
    assert client.get_subjects_by_schema_id(first + 1) == ["api-value"]
    assert [(v.subject, v.version) for v in client.get_schema_versions(first + 1)] == [("api-value", 2)]
    assert client.get_referenced_by("api-value", 1) == []
    assert client.test_compatibility_all_versions("api-value", v1) is True
    assert client.get_config("api-value").compatibility_level == "FORWARD"
    assert client.delete_config("api-value").compatibility_level == "FORWARD"
    assert client.delete_version("api-value", 1) == 1
    assert client.delete_version("api-value", 1, permanent=True) == 1
    assert client.get_versions("api-value") == [2]
    assert client.get_global_mode() == "READWRITE"
    with pytest.raises(SchemaRegistryError) as e:
        client.get_versions("api-nobody")
    assert (e.value.http_status_code, e.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("api-value", Schema('{"type": "nothing"}', "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (422, 42201)
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("api-value", Schema(json.dumps({"type": "record", "name": "Api", "fields": [
            {"name": "name", "type": "int"}]}), "AVRO"))
    assert (e.value.http_status_code, e.value.error_code) == (409, 40901)


# ---- the command line ---------------------------------------------------------------------------------------------
def test_cli_serves_until_sigterm(kafka):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "kafkalab.cli", "schema-registry", "--bootstrap-servers",
                             kafka.bootstrap_servers, "--port", "0", "--topic", "_schemas_cli"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.poll() is not None else url
        rest = Rest(url)
        assert rest.post("/subjects/cli-value/versions", USER_V1) == (200, {"id": 1})
        assert rest.get("/subjects") == (200, ["cli-value"])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_cli_help_and_a_kafka_that_is_not_there():
    from conftest import free_port

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("KAFKALAB_BOOTSTRAP_SERVERS", None)
    cli = [sys.executable, "-m", "kafkalab.cli"]
    listed = subprocess.run(cli + ["--help"], capture_output=True, text=True, env=env)
    assert "schema-registry" in listed.stdout
    usage = subprocess.run(cli + ["schema-registry"], capture_output=True, text=True, env=env)
    assert usage.returncode == 2 and "--bootstrap-servers" in usage.stderr
    nobody = subprocess.run(cli + ["schema-registry", "--bootstrap-servers", f"127.0.0.1:{free_port()}", "--port",
                                   "0", "--timeout", "2"], capture_output=True, text=True, env=env, timeout=60)
    assert nobody.returncode == 1 and nobody.stdout == ""
    assert nobody.stderr.strip().splitlines()[-1].startswith("error: the schema registry could not start")
