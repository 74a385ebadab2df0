"""The schema registry's parts without Kafka: levels, Avro resolution, routes, error bodies, replaying _schemas."""
from __future__ import annotations

import json

import pytest

from kafkalab.registry import compatibility, errors, rest, schemas
from kafkalab.registry.kafka_schema_registry import KafkaSchemaRegistry


def avro(**schema) -> schemas.ParsedSchema:
    return schemas.parse(json.dumps(schema))


def rec(*fields) -> schemas.ParsedSchema:
    return avro(type="record", name="R", fields=[{"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2
                                                                                    else {})} for f in fields])


def test_same_schema_whatever_the_key_order_and_spacing():
    a = schemas.parse('{"type": "record", "name": "R", "fields": [{"name": "x", "type": "int"}]}')
    b = schemas.parse('{"fields":[{"type":"int","name":"x"}],\n "name":"R","type":"record"}')
    assert a == b and a.canonical == '{"type":"record","name":"R","fields":[{"name":"x","type":"int"}]}'
    assert a != rec(("x", "int", 0))            # a default makes another schema
    assert a != rec(("x", "long"))


def test_bare_primitive_schema():
    assert schemas.parse('"string"').canonical == '"string"'


@pytest.mark.parametrize("level, ok", [("NONE", True), ("BACKWARD", True), ("FORWARD", False), ("FULL", False),
                                       ("BACKWARD_TRANSITIVE", True), ("FORWARD_TRANSITIVE", False),
                                       ("FULL_TRANSITIVE", False)])
def test_levels_on_int_to_long(level, ok):
    messages = compatibility.check(level, rec(("a", "long")), [(1, rec(("a", "int")))])
    assert (messages == []) is ok
    if not ok:
        assert messages[0].startswith("{errorType:'TYPE_MISMATCH'") and "{oldSchemaVersion: 1}" in messages


def test_transitive_levels_look_at_every_version():
    history = [(1, rec(("a", "int"))), (2, rec(("a", "int"), ("b", "string", "x")))]
    new = rec(("a", "int"), ("b", "string"))
    assert compatibility.check("BACKWARD", new, history) == []
    messages = compatibility.check("BACKWARD_TRANSITIVE", new, history)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in messages[0] and "{oldSchemaVersion: 1}" in messages


def test_level_names():
    assert compatibility.level_named("full_transitive") == "FULL_TRANSITIVE"
    with pytest.raises(errors.RestError) as e:
        compatibility.level_named("SIDEWAYS")
    assert e.value.error_code == 42203 and e.value.status == 422


def test_error_status_is_the_code_s_first_three_digits():
    assert errors.subject_not_found("s").status == 404
    assert errors.incompatible_schema("s", []).status == 409   # error code 40901, as Confluent 8.x answers
    assert errors.incompatible_schema("s", []).body()["error_code"] == 40901
    assert errors.invalid_schema("x").body() == {"error_code": 42201, "message": "Invalid schema: x"}


def test_json_schema_compatibility_only_under_none():
    old = schemas.parse('{"type":"object"}', "JSON")
    new = schemas.parse('{"type":"object","required":["a"]}', "JSON")
    assert compatibility.check("NONE", new, [(1, old)]) == []
    with pytest.raises(errors.RestError) as e:
        compatibility.check("BACKWARD", new, [(1, old)])
    assert e.value.error_code == 42201 and "NONE" in e.value.message


def test_routes():
    handler, args = rest.route("GET", "/subjects/a%2Fb-value/versions/latest")
    assert handler is rest._version and args == ["a/b-value", "latest"]
    assert rest.route("POST", "/compatibility/subjects/s/versions/")[1] == ["s"]
    for method, path, code in [("GET", "/nothing", 404), ("PATCH", "/subjects", 405), ("GET", "/subjects/s/x", 404)]:
        with pytest.raises(errors.RestError) as e:
            rest.route(method, path)
        assert e.value.error_code == code


def test_state_replayed_from_confluent_records():
    """The records Confluent's registry writes to _schemas, applied in order, give its state back."""
    registry = KafkaSchemaRegistry("127.0.0.1:1")           # never started: no Kafka needed to apply records
    v1 = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}'
    v2 = '{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"int","default":0}]}'
    records = [
        ({"keytype": "NOOP", "magic": 0}, None),
        ({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1},
         {"subject": "s", "version": 1, "id": 1, "schema": v1, "deleted": False}),
        ({"keytype": "SCHEMA", "subject": "s", "version": 2, "magic": 1},
         {"subject": "s", "version": 2, "id": 2, "schema": v2, "deleted": False}),
        ({"keytype": "SCHEMA", "subject": "t", "version": 1, "magic": 1},
         {"subject": "t", "version": 1, "id": 1, "schema": v1, "deleted": False}),
        ({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "FULL"}),
        ({"keytype": "CONFIG", "subject": "s", "magic": 0}, {"compatibilityLevel": "NONE"}),
        ({"keytype": "MODE", "subject": None, "magic": 0}, {"mode": "READWRITE"}),      # kept by Confluent, not us
        ({"keytype": "DELETE_SUBJECT", "subject": "t", "magic": 0}, {"subject": "t", "version": 1}),
        ({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1},
         {"subject": "s", "version": 1, "id": 1, "schema": v1, "deleted": True}),
        ({"keytype": "CONFIG", "subject": "s", "magic": 0}, None),
    ]
    for offset, (key, value) in enumerate(records):
        registry.apply(key, value, offset)
    assert registry.subjects() == ["s"] and registry.subjects(deleted=True) == ["s", "t"]
    assert registry.versions("s") == [2] and registry.versions("s", deleted=True) == [1, 2]
    assert registry.version("s", "latest").id == 2
    assert registry.schema_by_id(1).canonical == v1           # soft-deleted: still readable by id
    assert registry.level("s") == "FULL" and registry.config(None) == "FULL"
    registry.apply({"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}, None, 99)   # hard delete
    assert registry.versions("s", deleted=True) == [2]
    assert [e.subject for e in registry.usages(1, deleted=True)] == ["t"]


def test_what_schema_registry_accepts_as_kafka():
    from kafkalab.lab import LabKafka
    from kafkalab.registry.app import bootstrap_servers_of

    assert bootstrap_servers_of("127.0.0.1:9092") == "127.0.0.1:9092"
    assert bootstrap_servers_of(LabKafka("127.0.0.1:9093")) == "127.0.0.1:9093"
    with pytest.raises(TypeError, match="bootstrap string"):
        bootstrap_servers_of(9092)
