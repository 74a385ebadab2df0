"""check_08 (labs/08_schemas): the solution's answers pass, and each kind of wrong answer is named."""
from __future__ import annotations

import importlib.util
import json
import os
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import kafkalab
from kafkalab.checks import LabCheckFailed, read_partition

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("lab08_check", os.path.join(ROOT, "labs", "08_schemas", "check.py"))
lab08 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab08)

V2 = dict(lab08.PAYMENT_V1, fields=lab08.PAYMENT_V1["fields"] + [{"name": "currency", "type": "string", "default": "EUR"}])


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with kafkalab.connect(log_dir=str(tmp_path_factory.mktemp("broker"))) as kafka:
        with kafkalab.schema_registry(kafka) as registry:
            yield kafka, registry, SchemaRegistryClient({"url": registry.url})


def _write(kafka, client, topic, schema, payments):
    context = SerializationContext(topic, MessageField.VALUE)
    serialize = AvroSerializer(client, json.dumps(schema))
    producer = Producer(kafka.client_config())
    for payment in payments:
        producer.produce(topic, key=payment["id"], value=serialize(payment, context))
    assert producer.flush(10) == 0
    producer.close()


def _setup(lab, name):
    kafka, registry, client = lab
    topic = kafka.create_topic(name)
    _write(kafka, client, topic, lab08.PAYMENT_V1, lab08.OLD_PAYMENTS)
    return topic


def _solve(lab, topic, v2=V2):
    """The solution's steps; returns check_08's arguments."""
    kafka, registry, client = lab
    _write(kafka, client, topic, v2, lab08.NEW_PAYMENTS)
    values = [m.value() for m in read_partition(kafka.bootstrap_servers, topic)]
    read_v2 = AvroDeserializer(client, json.dumps(v2))
    context = SerializationContext(topic, MessageField.VALUE)
    narrowed = dict(v2, fields=[v2["fields"][0], {"name": "amount", "type": "float"}, *v2["fields"][2:]])
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(f"{topic}-value", Schema(json.dumps(narrowed), "AVRO"))
    return dict(kafka=kafka, registry_url=registry.url, topic=topic, payment_v2=v2,
                schema_ids=[int.from_bytes(v[1:5], "big") for v in values],
                as_v2=[read_v2(v, context) for v in values], refused_status=refused.value.http_status_code), values


def test_right_answers_pass(lab, capsys):
    answers, _ = _solve(lab, _setup(lab, "right"))
    lab08.check_08(**answers)
    assert "All checks passed" in capsys.readouterr().out


def test_a_field_without_default_is_refused_and_named(lab, capsys):
    kafka, registry, client = lab
    topic = _setup(lab, "nodefault")
    v2 = dict(lab08.PAYMENT_V1, fields=lab08.PAYMENT_V1["fields"] + [{"name": "currency", "type": "string"}])
    with pytest.raises(SchemaRegistryError):                       # the serializer's registration is refused
        _write(kafka, client, topic, v2, lab08.NEW_PAYMENTS)
    with pytest.raises(LabCheckFailed):
        lab08.check_08(kafka, registry.url, topic, v2, [1, 1, 1, 1], ..., ...)
    out = capsys.readouterr().out
    assert "has versions [1]: register PAYMENT_V2" in out
    assert "the topic holds 4 records, expected 7" in out
    assert "as_v2 is still `...`" in out and "refused_status is still `...`" in out


def test_wrong_answers_are_named(lab, capsys):
    answers, values = _solve(lab, _setup(lab, "wrong"))
    answers["schema_ids"] = [int.from_bytes(v[1:5], "little") for v in values]
    answers["as_v2"] = [AvroDeserializer(lab[2])(v, SerializationContext(answers["topic"], MessageField.VALUE))
                        for v in values]                            # the writer's schema, not version 2
    answers["refused_status"] = 422
    with pytest.raises(LabCheckFailed, match="3 of 5 checks failed"):
        lab08.check_08(**answers)
    out = capsys.readouterr().out
    assert "big-endian" in out and "pass PAYMENT_V2 as the reader schema" in out and "got 422" in out


def test_payments_written_twice_and_garbage_answers(lab, capsys):
    kafka, registry, client = lab
    topic = _setup(lab, "twice")
    _write(kafka, client, topic, V2, lab08.NEW_PAYMENTS)
    _write(kafka, client, topic, V2, lab08.NEW_PAYMENTS)                # the cell run twice
    with pytest.raises(LabCheckFailed, match="4 of 5 checks failed"):
        lab08.check_08(kafka, registry.url, topic, json.dumps(V2), "1 1 1", [("p-0",)], "409?")
    out = capsys.readouterr().out
    assert "✓ PAYMENT_V2 is registered" in out                       # the JSON text of the schema is accepted
    assert "the topic holds 10 records, expected 7" in out and "run twice" in out
    assert "could not check `schema_ids`" in out and "could not check `refused_status`" in out
    assert "Traceback" not in out


# --- step 5: the file source connector (a Kafka Connect worker of the lab's own) --------------------------

def test_the_connector_step_passes_right_answers_and_names_wrong_ones(lab, tmp_path, capsys):
    kafka, registry, client = lab
    answers, _ = _solve(lab, _setup(lab, "connect"))
    path = tmp_path / "payments.txt"
    path.write_text("".join(line + "\n" for line in lab08.payment_lines()))
    hoisted, bare = kafka.create_topic("payment-lines"), kafka.create_topic("payment-lines-bare")
    source = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(path),
              "tasks.max": 1}
    with kafkalab.connect_cluster(kafka, workers=1, work_dir=str(tmp_path / "connect")) as connect:
        with pytest.raises(LabCheckFailed, match="2 of 7 checks failed"):     # no connector yet, nothing filled in
            lab08.check_08(**answers, connect=connect, lines_topic=hoisted, payments_file=str(path),
                           source_position=...)
        out = capsys.readouterr().out
        assert "there is no connector `payments-file`" in out and "source_position is still `...`" in out

        connect.create_connector("payments-file", dict(source, topic=hoisted, transforms="hoist", **{
            "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
            "transforms.hoist.field": "line"}))
        size = path.stat().st_size
        deadline = time.monotonic() + 60
        while [r["offset"] for r in connect.source_offsets("payments-file")] != [{"position": size}]:
            assert time.monotonic() < deadline, "the connector's offset never reached the end of the file"
            time.sleep(0.2)
        lab08.check_08(**answers, connect=connect, lines_topic=hoisted, payments_file=str(path), source_position=size)
        assert "All checks passed" in capsys.readouterr().out

        with pytest.raises(LabCheckFailed, match="1 of 7 checks failed"):
            lab08.check_08(**answers, connect=connect, lines_topic=hoisted, payments_file=str(path),
                           source_position=len(lab08.payment_lines()))
        assert "counts bytes, not lines" in capsys.readouterr().out

        connect.delete_connector("payments-file")                 # again, without the transform
        deadline = time.monotonic() + 30
        while "payments-file" in connect.connectors():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        # a file of its own: the offsets of the deleted connector's file are still in the offsets topic, under
        # the same connector name, so a new `payments-file` on that file would start at its end
        other = tmp_path / "payments-bare.txt"
        other.write_text(path.read_text())
        connect.create_connector("payments-file", dict(source, topic=bare, file=str(other)))
        deadline = time.monotonic() + 60
        while len(read_partition(kafka.bootstrap_servers, bare)) < len(lab08.payment_lines()):
            assert time.monotonic() < deadline, "the bare connector copied nothing"
            time.sleep(0.2)
        with pytest.raises(LabCheckFailed):
            lab08.check_08(**answers, connect=connect, lines_topic=bare, payments_file=str(other), source_position=size)
        assert "add the transform HoistField$Value" in capsys.readouterr().out
