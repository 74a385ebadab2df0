"""The automatic check of lab 08 (schemas): ``check_08(...)``.

It asks the registry (over its REST API, with confluent-kafka's ``SchemaRegistryClient``) which versions
the subject ``<topic>-value`` has, reads the topic back with its own consumer, takes each value apart
(magic byte, schema id, Avro body) and decodes it with fastavro: the new schema must have been
registered as version 2 and used for the new payments, and the student's answers must be what the
bytes and the registry really say.
"""
from __future__ import annotations

import io
import json

from kafkalab.checks import Report, read_partition, shown, unfilled, unfilled_detail

PAYMENT_V1 = {"type": "record", "name": "Payment", "namespace": "kafkalab.lab08",
              "fields": [{"name": "id", "type": "string"},
                         {"name": "amount", "type": "double"}]}
OLD_PAYMENTS = [{"id": f"p-{i}", "amount": 10.0 * (i + 1)} for i in range(4)]
NEW_PAYMENTS = [{"id": f"p-{i}", "amount": 5.0 * i, "currency": "USD"} for i in range(4, 7)]


def _wire(value: bytes):
    return value[0], int.from_bytes(value[1:5], "big"), value[5:]


def _decode(body: bytes, writer: dict, reader: dict | None = None) -> dict:
    import fastavro

    return fastavro.schemaless_reader(io.BytesIO(body), fastavro.parse_schema(writer),
                                      fastavro.parse_schema(reader) if reader is not None else None)


def _as_schema(value) -> dict:
    """A schema given as a dict, a JSON string or a confluent_kafka ``Schema``."""
    if hasattr(value, "schema_str"):
        value = value.schema_str
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise TypeError(f"expected the schema as a dict (or its JSON text), got {type(value).__name__}")
    return value


def check_08(kafka, registry_url, topic, payment_v2, schema_ids, as_v2, refused_status,
             connect=None, lines_topic=None, payments_file=None, source_position=...) -> None:
    """Check lab 08 (``labs/08_schemas``); the arguments are the variables the lab asks for."""
    from confluent_kafka.schema_registry import SchemaRegistryClient, SchemaRegistryError

    report = Report(f"Lab 08 — evolving a schema (topic {shown(topic)})")
    client = SchemaRegistryClient({"url": registry_url})
    subject = f"{topic}-value"
    try:
        versions = client.get_versions(subject)
    except SchemaRegistryError:
        versions = []
    registered = {v: client.get_version(subject, v) for v in versions}
    records = read_partition(kafka.bootstrap_servers, str(topic), 0)
    values = [m.value() for m in records]
    framed = [_wire(v) for v in values if v is not None and len(v) >= 5]
    ids = [schema_id for _, schema_id, _ in framed]

    # step 1: version 2 registered, compatible (the registry accepted it), used for the new payments
    name = "PAYMENT_V2 is registered as version 2 of the subject, with a default for its new field"
    with report.answer(name, "PAYMENT_V2"):
        if unfilled(payment_v2):
            report.step(name, False, unfilled_detail("PAYMENT_V2", payment_v2,
                                                     "PAYMENT_V1 plus a field `currency` (a string) with a default"))
        else:
            schema = _as_schema(payment_v2)
            fields = {f["name"]: f for f in schema.get("fields", [])}
            if versions[:2] != [1, 2]:
                hint = (f"the subject {subject!r} has versions {versions}: register PAYMENT_V2 (an AvroSerializer "
                        f"registers its schema on its first record, or client.register_schema(...))")
            elif json.loads(registered[2].schema.schema_str) != schema:
                hint = "version 2 in the registry is not PAYMENT_V2: was PAYMENT_V2 changed after registering it?"
            elif "currency" not in fields or "default" not in fields["currency"]:
                hint = "PAYMENT_V2 needs a field `currency` with a default"
            else:
                hint = ""
            report.step(name, not hint, hint)

    name = f"the topic holds the {len(OLD_PAYMENTS)} old payments (version 1) and the {len(NEW_PAYMENTS)} new ones, " \
           f"written with version 2"
    v2_id = registered[2].schema_id if 2 in registered else None
    want_ids = [registered[1].schema_id] * len(OLD_PAYMENTS) + [v2_id] * len(NEW_PAYMENTS) if v2_id else None
    written = []
    for magic, schema_id, body in framed:
        try:
            written.append(_decode(body, json.loads(client.get_schema(schema_id).schema_str)))
        except Exception:   # noqa: BLE001 -- not Avro of a registered schema: shown below as wrong
            written.append(None)
    if len(values) != len(OLD_PAYMENTS) + len(NEW_PAYMENTS):
        hint = (f"the topic holds {len(values)} records, expected {len(OLD_PAYMENTS) + len(NEW_PAYMENTS)}: "
                f"produce each of NEW_PAYMENTS once (was the cell run twice?)")
    elif len(framed) != len(values) or any(magic != 0 for magic, _, _ in framed):
        hint = "some values are not in the registry's wire format: serialize them with an AvroSerializer"
    elif want_ids is None or ids != want_ids:
        hint = f"the schema ids in the values are {ids}, expected {want_ids}: write NEW_PAYMENTS with version 2"
    elif written != OLD_PAYMENTS + NEW_PAYMENTS:
        hint = "the new payments read back are not NEW_PAYMENTS"
    else:
        hint = ""
    report.step(name, not hint, hint)

    # step 2: the schema ids, read from the bytes
    name = "schema_ids holds the schema id in each value, in offset order"
    with report.answer(name, "schema_ids"):
        if unfilled(schema_ids):
            report.step(name, False, unfilled_detail("schema_ids", schema_ids,
                                                     "bytes 1 to 4 of each value, int.from_bytes(..., 'big')"))
        else:
            got = [int(i) for i in schema_ids]
            hint = f"got {got}, the values say {ids}"
            if got == [int.from_bytes(v[1:5], "little") for v in values if v is not None]:
                hint += " — the id is big-endian (network byte order): int.from_bytes(value[1:5], 'big')"
            elif got and all(i == 0 for i in got):
                hint += " — byte 0 is the magic byte (always 0); the id is in bytes 1 to 4"
            report.step(name, got == ids, hint)

    # step 3: every record as a version-2 reader sees it
    name = "as_v2 is every payment as a reader with PAYMENT_V2 reads it (old ones with the default currency)"
    with report.answer(name, "as_v2"):
        if unfilled(as_v2):
            report.step(name, False, unfilled_detail("as_v2", as_v2,
                                                     "AvroDeserializer(client, json.dumps(PAYMENT_V2)) on each value"))
        elif v2_id is None:
            report.step(name, False, "step 1 is not done yet: there is no version 2 to read with")
        else:
            reader = json.loads(registered[2].schema.schema_str)
            want = [_decode(body, json.loads(client.get_schema(schema_id).schema_str), reader)
                    for _, schema_id, body in framed]
            got = [dict(r) for r in as_v2]
            hint = f"got {len(got)} payments, expected {len(want)}"
            if len(got) == len(want):
                wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
                hint = f"offset {wrong[0]}: got {got[wrong[0]]}, a version-2 reader reads {want[wrong[0]]}" if wrong else ""
                if wrong and "currency" not in got[wrong[0]]:
                    hint += " — pass PAYMENT_V2 as the reader schema: AvroDeserializer(client, schema_str)"
            report.step(name, got == want, hint)

    # step 4: a change the registry refuses
    name = "refused_status is the HTTP status the registry answers a narrowed `amount` (double to float) with"
    with report.answer(name, "refused_status"):
        if unfilled(refused_status):
            report.step(name, False, unfilled_detail("refused_status", refused_status,
                                                     "register the schema and catch SchemaRegistryError: "
                                                     "its http_status_code"))
        else:
            ok = int(refused_status) == 409 and versions == [1, 2]
            hint = (f"got {refused_status}: an incompatible schema is refused with 409 (Conflict)"
                    if int(refused_status) != 409 else
                    f"the subject has versions {versions}: the refused schema must not have become a version")
            report.step(name, ok, hint)

    # step 5: the file source connector
    if connect is not None:
        _check_connect(report, kafka, connect, lines_topic, payments_file, source_position)
    report.finish()


def payment_lines() -> list[str]:
    return [f"{p['id']},{p['amount']},{p['currency']}" for p in NEW_PAYMENTS]


def _check_connect(report, kafka, connect, lines_topic, payments_file, source_position) -> None:
    import os

    name = "the connector `payments-file` copied each line of the file once, as {\"line\": ...}"
    records = read_partition(kafka.bootstrap_servers, str(lines_topic), 0)
    try:
        status = connect.status("payments-file")
    except Exception:   # noqa: BLE001 -- no such connector: named below
        status = None
    values = []
    for m in records:
        try:
            values.append(json.loads(m.value()))
        except (TypeError, ValueError):
            values.append(m.value())
    want = [{"line": line} for line in payment_lines()]
    if status is None:
        hint = "there is no connector `payments-file`: fill in source_config, then run the cell that creates it"
    elif status["connector"]["state"] != "RUNNING" or any(t["state"] != "RUNNING" for t in status["tasks"]):
        traces = [t.get("trace", "").splitlines()[0] for t in status["tasks"] if t.get("trace")]
        hint = f"the connector is not RUNNING: {status}" + (f" — {traces[0]}" if traces else "")
    elif values == payment_lines():
        hint = "the lines are there, but bare: add the transform HoistField$Value with the field `line`"
    elif values != want:
        hint = f"{lines_topic!r} holds {values[:3]}..., expected {want[:2]}..."
    else:
        hint = ""
    report.step(name, not hint, hint)

    name = "source_position is the connector's source offset: the bytes of the file it has read, all of them"
    with report.answer(name, "source_position"):
        if unfilled(source_position):
            report.step(name, False, unfilled_detail("source_position", source_position,
                                                     "connect.source_offsets('payments-file')[0]['offset']['position']"))
        else:
            flushed = [r for r in connect.source_offsets("payments-file")
                       if r["partition"].get("filename") == str(payments_file)]   # the source partition: the file
            position = flushed[0]["offset"]["position"] if flushed else None
            size = os.path.getsize(payments_file)
            hint = f"got {source_position}, the offsets topic says {position} and the file has {size} bytes"
            if isinstance(source_position, dict):
                hint += " — keep the number: offset['position']"
            elif source_position == len(payment_lines()):
                hint += " — the file connector counts bytes, not lines"
            report.step(name, source_position == position == size, hint)
