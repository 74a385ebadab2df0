"""``kafkalab dump-log --offsets-decoder``: ``__consumer_offsets`` records printed as Kafka 3.9's tool prints them.

The expected lines are what Kafka 3.9.2's ``kafka.tools.DumpLogSegments --offsets-decoder`` printed for the same
segment (the records below, in one batch): an offset commit of value version 3 and one of version 1 (with an
expire timestamp, a quote and a non-ASCII character in its metadata), a classic group of protocol type
``consumer`` (its member's subscription and assignment decoded, librdkafka's bytes), a Connect group (its bytes as
base64), a tombstone, a KIP-848 group epoch record (type 3), an unknown record type, a value that does not decode.
"""
from __future__ import annotations

import base64
import io
import struct

from tests.helpers.kafka_spec import record, records_batch

from kafkalab.broker.coordinator.group import offsets_topic as ot
from kafkalab.broker.coordinator.group.consumer_group_records import _key, _value
from kafkalab.tools import dump_log
from kafkalab.tools.offsets_decoder import parse

T0 = 1700000000000
SUBSCRIPTION = base64.b64decode("AAMAAAABAAZvcmRlcnMAAAAAAAAAAP////8AAA==")          # librdkafka's, version 3
ASSIGNMENT = base64.b64decode("AAAAAAABAAZvcmRlcnMAAAADAAAAAAAAAAEAAAACAAAAAA==")    # orders 0, 1, 2

RECORDS = [
    (ot.offset_commit_key("g1", "orders", 0), ot.offset_commit_value(ot.OffsetAndMetadata(10, 0, "", T0))),
    (ot.offset_commit_key("g1", "orders", 1),
     struct.pack(">hq", 1, 42) + ot._string('meta "x" é') + struct.pack(">qq", T0, T0 + 86400000)),
    (ot.group_metadata_key("g1"), ot.group_metadata_value(ot.GroupMetadataValue(
        "consumer", 1, "range", "m-1", T0, [ot.MemberRecord("m-1", None, "rdkafka", "/127.0.0.1", 300000, 45000,
                                                            SUBSCRIPTION, ASSIGNMENT)]))),
    (ot.group_metadata_key("g2"), ot.group_metadata_value(ot.GroupMetadataValue(
        "connect", 3, "sessioned", "w-1", T0, [ot.MemberRecord("w-1", "i-1", "c", "/h", 60000, 10000, b"\x00\x01abc",
                                                               b"")]))),
    (ot.offset_commit_key("g1", "orders", 2), None),
    (_key(3, "g3"), _value(3, epoch=5)),
    (struct.pack(">h", 42) + b"zz", b"\x00\x00"),
    (ot.offset_commit_key("g1", "orders", 3), struct.pack(">h", 9) + b"\x00" * 8),
]

KAFKA_39 = [   # kafka.tools.DumpLogSegments --offsets-decoder (Kafka 3.9.2), after "headerKeys: [] "
    'key: {"type":"1","data":{"group":"g1","topic":"orders","partition":0}} payload: {"version":"3","data":'
    '{"offset":10,"leaderEpoch":0,"metadata":"","commitTimestamp":1700000000000}}',
    'key: {"type":"1","data":{"group":"g1","topic":"orders","partition":1}} payload: {"version":"1","data":'
    '{"offset":42,"metadata":"meta \\"x\\" é","commitTimestamp":1700000000000,"expireTimestamp":1700086400000}}',
    'key: {"type":"2","data":{"group":"g1"}} payload: {"version":"3","data":{"protocolType":"consumer",'
    '"generation":1,"protocol":"range","leader":"m-1","currentStateTimestamp":1700000000000,"members":[{"memberId":'
    '"m-1","groupInstanceId":null,"clientId":"rdkafka","clientHost":"/127.0.0.1","rebalanceTimeout":300000,'
    '"sessionTimeout":45000,"subscription":{"topics":["orders"],"userData":"","ownedPartitions":[],"generationId":-1,'
    '"rackId":""},"assignment":{"assignedPartitions":[{"topic":"orders","partitions":[0,1,2]}],"userData":""}}]}}',
    'key: {"type":"2","data":{"group":"g2"}} payload: {"version":"3","data":{"protocolType":"connect",'
    '"generation":3,"protocol":"sessioned","leader":"w-1","currentStateTimestamp":1700000000000,"members":[{'
    '"memberId":"w-1","groupInstanceId":"i-1","clientId":"c","clientHost":"/h","rebalanceTimeout":60000,'
    '"sessionTimeout":10000,"subscription":"AAFhYmM=","assignment":""}]}}',
    'key: {"type":"1","data":{"group":"g1","topic":"orders","partition":2}} payload: <DELETE>',
    'key: {"type":"3","data":{"groupId":"g3"}} payload: {"version":"0","data":{"epoch":5}}',
    'key: Unknown record type 42 at offset 6, skipping.',
]


def test_a_segment_of_consumer_offsets_prints_as_kafka_39_prints_it(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(records_batch(0, [record(i, 0, k, v) for i, (k, v) in enumerate(RECORDS)], base_ts=T0))
    out, err = io.StringIO(), io.StringIO()
    dump_log(str(path), offsets_decoder=True, file=out, err=err)
    lines = out.getvalue().splitlines()[3:]
    assert [line.split("headerKeys: [] ", 1)[1] for line in lines[:7]] == KAFKA_39
    # Kafka 3.9.2: "... due to: null." (its reader ran out of bytes); the start is Kafka's wording
    assert lines[7].split("headerKeys: [] ", 1)[1].startswith(
        "key: Error at offset 7, skipping. Could not read record with version 9 from value's buffer due to: ")
    assert err.getvalue() == ""


def test_parse_gives_key_and_payload_apart():
    key, value = RECORDS[0]
    assert parse(key, value, 0)[0] == '{"type":"1","data":{"group":"g1","topic":"orders","partition":0}}'
    assert parse(None, value, 3) == ("Failed to decode message at offset 3 using offset topic decoder "
                                     "(message had a missing key)", None)


def test_the_command_line_option_implies_print_data_log(tmp_path, capsys):
    from kafkalab.cli import main
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(records_batch(0, [record(0, 0, *RECORDS[0])], base_ts=T0))
    assert main(["dump-log", "--offsets-decoder", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(KAFKA_39[0])
    assert main(["dump-log", str(path), "--print-data-log"]) == 0    # without the decoder: the raw bytes as text
    assert '"type"' not in capsys.readouterr().out
