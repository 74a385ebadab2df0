"""``kafkalab dump-log --cluster-metadata-decoder``: KRaft's ``__cluster_metadata`` records.

Two kinds of fixtures. Record values copied (as hex, a few dozen bytes each) from a Kafka 4.4.0 KRaft
cluster run here, with the line Kafka's own ``kafka-dump-log.sh --cluster-metadata-decoder`` printed for
each; and values spelled out byte by byte with ``struct`` from the record layouts (frame version, type,
version as unsigned varints, then the flexible-format fields), not with the decoder's codec. The same
comparison on whole files of a running cluster is ``tests/integration/test_kraft_metadata_log.py``.
"""
from __future__ import annotations

import io
import struct

import pytest
from tests.helpers.kafka_spec import record, records_batch

from kafkalab.tools import dump_log
from kafkalab.metadata.metadata_records import (
    MetadataParseError, control_text, decode_metadata_record, java_json, kafka_uuid, payload_text, type_name,
)

T0 = 1_795_653_231_674
TOPIC_ID = "026ac31daef2496c93abcc45e7d3784e"   # AmrDHa7ySWyTq8xF59N4Tg as Kafka prints it

# value (hex) written by Kafka 4.4.0 -> what Kafka 4.4.0's DumpLogSegments printed after "payload: "
KAFKA_44 = {
    "010200076f7264657273" + TOPIC_ID + "00":
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"orders","topicId":"AmrDHa7ySWyTq8xF59N4Tg"}}',
    "01030200000000" + TOPIC_ID + "04000000020000000300000001040000000200000003000000010101000000020000000000"
    "000000049cd27dc951c66a59086f3a9e5818dd875bbddd81461b929d1c6cd921cd35046260a6b2cf54f626fa399caec93f01fd3000":
        '{"type":"PARTITION_RECORD","version":2,"data":{"partitionId":0,"topicId":"AmrDHa7ySWyTq8xF59N4Tg",'
        '"replicas":[2,3,1],"isr":[2,3,1],"removingReplicas":[],"addingReplicas":[],"leader":2,"leaderEpoch":0,'
        '"partitionEpoch":0,"directories":["nNJ9yVHGalkIbzqeWBjdhw","W73dgUYbkp0cbNkhzTUEYg","YKayz1T2Jvo5nK7JPwH9MA"]}}',
    "01050200000000" + TOPIC_ID + "040001010104ffffffff0605020000000207050200000002":
        '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,"topicId":"AmrDHa7ySWyTq8xF59N4Tg",'
        '"isr":[],"leader":-1,"eligibleLeaderReplicas":[2],"lastKnownElr":[2]}}',
    "01110300000002000000000000003b01030101":
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":3,"data":{"brokerId":2,"brokerEpoch":59,"cordonedLogDirs":[]}}',
    "01110100000003000000000000000a01010101":
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":1,"data":{"brokerId":3,"brokerEpoch":10,"inControlledShutdown":1}}',
    "01110000000002000000000000003b01000101":
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,"brokerEpoch":59,"fenced":1}}',
    "01140000":
        '{"type":"NO_OP_RECORD","version":0,"data":{}}',
}


@pytest.mark.parametrize("value_hex", list(KAFKA_44))
def test_values_written_by_kafka_print_as_kafka_prints_them(value_hex):
    assert payload_text(7, bytes.fromhex(value_hex)) == KAFKA_44[value_hex]


def test_leader_change_control_record_as_kafka_44_prints_it():
    key, value = bytes.fromhex("00000002"), bytes.fromhex("00000000000204000000010000000002000000000300030000000100000000020000")
    assert control_text(key, value) == (
        ' LeaderChange: {"version":0,"leaderId":2,"voters":[{"voterId":1},{"voterId":2},{"voterId":3}],'
        '"grantingVoters":[{"voterId":1},{"voterId":2}]}')


# --- values spelled out from the layout ----------------------------------------------------

def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def compact_int32s(xs) -> bytes:
    return uvarint(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def framed(type_id: int, version: int, body: bytes) -> bytes:
    return uvarint(1) + uvarint(type_id) + uvarint(version) + body


def test_config_record_with_null_value():
    body = struct.pack(">b", 2) + compact_string("orders") + compact_string("retention.ms") + compact_string(None) + b"\x00"
    rec = decode_metadata_record(framed(4, 0, body))
    assert (rec.type_id, rec.name, rec.type, rec.version) == (4, "ConfigRecord", "CONFIG_RECORD", 0)
    assert rec.to_json() == ('{"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"orders",'
                             '"name":"retention.ms","value":null}}')


def test_partition_change_prints_only_what_changed():
    topic = bytes(range(16))
    # tagged fields: tag 1 (Leader) = 3; nothing else
    tags = uvarint(1) + uvarint(1) + uvarint(4) + struct.pack(">i", 3)
    rec = decode_metadata_record(framed(5, 0, struct.pack(">i", 4) + topic + tags))
    assert rec.data == {"partitionId": 4, "topicId": "AAECAwQFBgcICQoLDA0ODw", "leader": 3}


def test_client_quota_float_prints_as_java_double():
    entity = uvarint(2) + compact_string("user") + compact_string(None) + b"\x00"
    body = entity + compact_string("producer_byte_rate") + struct.pack(">d", 1048576.0) + b"\x00" + b"\x00"
    data = decode_metadata_record(framed(14, 0, body)).data
    assert java_json(data) == ('{"entity":[{"entityType":"user","entityName":null}],"key":"producer_byte_rate",'
                               '"value":1048576.0,"remove":false}')
    assert java_json([1e7, 1e-4, 0.5, 123456789.0]) == "[1.0E7,1.0E-4,0.5,1.23456789E8]"


def test_scram_credential_bytes_print_as_base64():
    body = (compact_string("alice") + struct.pack(">b", 1) + uvarint(3) + b"\x01\x02" + uvarint(2) + b"\xff"
            + uvarint(1) + struct.pack(">i", 4096) + b"\x00")
    data = decode_metadata_record(framed(11, 0, body)).data
    assert data == {"name": "alice", "mechanism": 1, "salt": "AQI=", "storedKey": "/w==", "serverKey": "",
                    "iterations": 4096}


def test_uuid_prints_as_kafka_base64url():
    import uuid
    assert kafka_uuid(uuid.UUID(TOPIC_ID)) == "AmrDHa7ySWyTq8xF59N4Tg"
    assert kafka_uuid(None) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert type_name("NoOpRecord") == "NO_OP_RECORD" and type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"


# --- what cannot be read is reported, never raised -------------------------------------------

@pytest.mark.parametrize("value, says", [
    (framed(99, 0, b"\x00"), "unknown metadata record type 99"),
    (framed(6, 0, b"\x00"), "unknown metadata record type 6"),          # IsrChangeRecord, gone before Kafka 3.0
    (framed(2, 5, b"\x00"), "TopicRecord version 5 is newer"),
    (uvarint(0) + uvarint(2) + uvarint(0), "unknown frame version 0"),
    (framed(2, 0, compact_string("orders") + b"\x01\x02"), "TopicRecord v0 cannot be read"),
    (framed(2, 0, compact_string("t") + bytes(16) + b"\x00" + b"junk"), r"found 4 byte\(s\) of garbage after TopicRecord"),
    (b"\x01\x80", "ends inside its record type"),
    (None, "has no value"),
])
def test_unreadable_values_are_errors_not_crashes(value, says):
    with pytest.raises(MetadataParseError, match=says):
        decode_metadata_record(value)
    assert payload_text(12, value).startswith("Error at 12, skipping. ")


def test_dump_of_a_metadata_segment_and_snapshot(tmp_path):
    """A segment with a control batch (LeaderChange) and a data batch, one record unknown: every line printed."""
    leader_change = records_batch(0, [record(0, 0, bytes.fromhex("00000002"),
                                             bytes.fromhex("0000000000020400000001000000000200000000030003000000010000000002"
                                                           "0000"))], base_ts=T0, attributes=0x20)
    topic_value = bytes.fromhex("010200076f7264657273" + TOPIC_ID + "00")
    data = records_batch(1, [record(0, 0, None, topic_value), record(1, 0, None, framed(42, 0, b"\x00"))], base_ts=T0)
    for name, first in (("00000000000000000000.log", "Log starting offset: 0"),
                        ("00000000000000000003-0000000002.checkpoint", "Snapshot end offset: 3, epoch: 2")):
        path = tmp_path / name
        path.write_bytes(leader_change + data)
        out, err = io.StringIO(), io.StringIO()
        dump_log(str(path), cluster_metadata_decoder=True, file=out, err=err)
        lines = out.getvalue().splitlines()
        assert lines[1] == first
        assert lines[3].endswith(' LeaderChange: {"version":0,"leaderId":2,"voters":[{"voterId":1},{"voterId":2},'
                                 '{"voterId":3}],"grantingVoters":[{"voterId":1},{"voterId":2}]}')
        assert lines[5].endswith(" keySize: -1 valueSize: 27 sequence: -1 headerKeys: [] payload: "
                                 + KAFKA_44["010200076f7264657273" + TOPIC_ID + "00"])
        assert lines[6].endswith("payload: Error at 2, skipping. unknown metadata record type 42 (version 0, 4 bytes): "
                                 "not a record type of Kafka 4.4")
        assert err.getvalue() == ""


def test_snapshot_file_names():
    from kafkalab.metadata.metadata_records import snapshot_header
    assert snapshot_header("/x/00000000000000000123-0000000004.checkpoint") == "Snapshot end offset: 123, epoch: 4"
    assert snapshot_header("/x/bootstrap.checkpoint") == "KRaft bootstrap snapshot"
    assert snapshot_header("/x/00000000000000000000.log") is None
    assert snapshot_header("/x/replication-offset-checkpoint") is None


def test_the_command_line_option(tmp_path, capsys):
    """``kafkalab dump-log --cluster-metadata-decoder FILE``: payloads decoded without --print-data-log, as Kafka's."""
    from kafkalab.cli import main
    value = bytes.fromhex("010200076f7264657273" + TOPIC_ID + "00")
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(records_batch(0, [record(0, 0, None, value)], base_ts=T0))
    assert main(["dump-log", "--cluster-metadata-decoder", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("payload: " + KAFKA_44[value.hex()])
    assert main(["dump-log", str(path), "--print-data-log"]) == 0    # without the decoder: the raw bytes as text
    assert "TOPIC_RECORD" not in capsys.readouterr().out
