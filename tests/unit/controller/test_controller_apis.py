"""The KRaft controller's admin paths without sockets: StripedReplicaPlacer, CreatePartitions
(ReplicationControlManager), ConfigurationControlManager (IncrementalAlterConfigs, AlterConfigs, replay) and the
Envelope unwrapping (EnvelopeUtils). State is built as a controller builds it: records generated, encoded in
Kafka's format, decoded and replayed (``replay_record``) into a metadata image.
"""
from __future__ import annotations

import asyncio
import random
import struct
import uuid
from collections import Counter
from types import SimpleNamespace as NS

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from kafka.protocol.admin.topics import (CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
                                         CreateTopicsResponse)

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.controller.cluster_control_manager import BrokerRegistration
from kafkalab.controller.controller_messages import EnvelopeRequest
from kafkalab.controller.envelope_utils import handle_envelope
from kafkalab.kraft.forwarding_manager import ANONYMOUS_PRINCIPAL
from kafkalab.controller.quorum_controller import replay_record
from kafkalab.controller.striped_replica_placer import StripedReplicaPlacer, UsableBroker
from kafkalab.kraft.metadata_image import MetadataImage
from kafkalab.metadata.metadata_records import decode_metadata_record

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# -- StripedReplicaPlacer -----------------------------------------------------------------------------------

def test_each_unfenced_broker_leads_once_per_round_and_replicas_are_distinct():
    brokers = [UsableBroker(i) for i in range(1, 6)]
    placement = StripedReplicaPlacer(random.Random(7)).place(10, 3, brokers)
    assert all(len(set(r)) == 3 for r in placement)
    # two rounds of five partitions: in each, every broker is the first replica (the preferred leader) once
    assert Counter(r[0] for r in placement[:5]) == Counter(range(1, 6))
    assert Counter(r[0] for r in placement[5:]) == Counter(range(1, 6))


def test_replicas_are_striped_over_racks():
    brokers = [UsableBroker(i, f"rack-{i % 3}") for i in range(6)]
    rack = {b.id: b.rack for b in brokers}
    for replicas in StripedReplicaPlacer(random.Random(1)).place(12, 3, brokers):
        assert len({rack[b] for b in replicas}) == 3


def test_fenced_brokers_never_lead_and_come_last():
    brokers = [UsableBroker(1), UsableBroker(2), UsableBroker(3, fenced=True)]
    for replicas in StripedReplicaPlacer(random.Random(3)).place(6, 2, brokers):
        assert 3 not in replicas                    # two unfenced brokers suffice
    for replicas in StripedReplicaPlacer(random.Random(3)).place(6, 3, brokers):
        assert replicas[0] != 3 and replicas[-1] == 3


@pytest.mark.parametrize("factor, brokers, message", [
    (0, [UsableBroker(1)], "Invalid replication factor 0: the replication factor must be positive."),
    (3, [UsableBroker(1), UsableBroker(2)], "The target replication factor of 3 cannot be reached because only 2 "
                                            "broker(s) are registered."),
    (1, [UsableBroker(1, fenced=True)], "All brokers are currently fenced."),
])
def test_placer_errors(factor, brokers, message):
    with pytest.raises(KafkaError) as err:
        StripedReplicaPlacer(random.Random(0)).place(1, factor, brokers)
    assert err.value.code == ErrorCode.INVALID_REPLICATION_FACTOR and err.value.message == message


# -- a controller's state, built from records -----------------------------------------------------------------

def replay(image, records) -> None:
    for record in records:
        replay_record(image, image.next_offset, decode_metadata_record(record.encode()))
        image.next_offset += 1


def make_image(brokers=(1, 2, 3), fenced=()) -> MetadataImage:
    image = MetadataImage()
    for b in brokers:
        image.cluster.registrations[b] = BrokerRegistration(b, 10 + b, str(uuid.UUID(int=b)), fenced=b in fenced)
    request = build(CreateTopicsRequest, 7, {"topics": [{"name": "t", "num_partitions": 2, "replication_factor": 2,
                                                          "assignments": [], "configs": []}],
                                             "timeout_ms": 0, "validate_only": False})
    records, results = image.replication.create_topics(request)
    assert results[0]["error_code"] == 0
    replay(image, records)
    return image


def test_a_kraft_cluster_knows_no_message_format_version():
    """Kafka 4.0 removed message.format.version and message.downconversion.enable (KIP-724); Kafka 3.9 (and the
    ZooKeeper-mode mini broker) accept them, deprecated and ignored."""
    image = make_image()
    for name, value in (("message.format.version", "2.8"), ("message.downconversion.enable", "true")):
        request = build(CreateTopicsRequest, 7, {"topics": [{"name": "u", "num_partitions": 1, "replication_factor": 1,
                                                              "assignments": [], "configs": [
                                                                  {"name": name, "value": value}]}],
                                                 "timeout_ms": 0, "validate_only": False})
        records, results = image.replication.create_topics(request)
        assert records == [] and (results[0]["error_code"], results[0]["error_message"]) == (
            ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        records, results = image.configuration.incremental_alter_configs([resource(2, "t", (name, SET, value))])
        assert (results[0]["error_code"], results[0]["error_message"]) == (
            ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")


def topics(*entries):
    return [NS(name=n, count=c, assignments=None if a is None else [NS(broker_ids=r) for r in a])
            for n, c, a in entries]


def test_create_partitions_records_new_partitions_numbered_on():
    image = make_image()
    records, results = image.replication.create_partitions(topics(("t", 4, None)), validate_only=False)
    assert results == [{"name": "t", "error_code": 0, "error_message": None}]
    assert [(r.name, r.data["partition_id"]) for r in records] == [("PartitionRecord", 2), ("PartitionRecord", 3)]
    for r in records:
        assert len(r.data["replicas"]) == 2 and r.data["isr"] == r.data["replicas"]
        assert r.data["leader"] == r.data["replicas"][0] and r.data["leader_epoch"] == 0
    replay(image, records)
    assert sorted(image.replication.topics[image.replication.topics_by_name["t"]].partitions) == [0, 1, 2, 3]


def test_create_partitions_validate_only_writes_nothing():
    records, results = make_image().replication.create_partitions(topics(("t", 9, None)), validate_only=True)
    assert records == [] and results[0]["error_code"] == 0


@pytest.mark.parametrize("entry, code, message", [
    (("t", 2, None), ErrorCode.INVALID_PARTITIONS, "Topic already has 2 partition(s)."),
    (("t", 1, None), ErrorCode.INVALID_PARTITIONS, "The topic t currently has 2 partition(s); 1 would not be an "
                                                   "increase."),
    (("nope", 3, None), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None),
    (("t", 4, [[1, 2]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Attempted to add 2 additional partition(s), but only "
                                                               "1 assignment(s) were specified."),
    (("t", 3, [[1, 9]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker 9, "
                                                               "but no such broker is registered."),
    (("t", 3, [[1, 1]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker 1 "
                                                               "more than once."),
    (("t", 3, [[1, 2, 3]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes a "
                                                                  "partition with 3 replica(s), but this is not "
                                                                  "consistent with previous partitions, which have 2 "
                                                                  "replica(s)."),
    (("t", 3, [[]]), ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty "
                                                           "replica list."),
])
def test_create_partitions_errors(entry, code, message):
    records, results = make_image().replication.create_partitions(topics(entry), validate_only=False)
    assert records == [] and results == [{"name": entry[0], "error_code": int(code), "error_message": message}]


def test_create_partitions_manual_assignment_on_fenced_brokers_is_refused():
    image = make_image()
    image.cluster.registrations[2].fenced = image.cluster.registrations[3].fenced = True
    records, results = image.replication.create_partitions(topics(("t", 3, [[2, 3]])), validate_only=False)
    assert results[0]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT and "are fenced" in \
        results[0]["error_message"]
    records, results = image.replication.create_partitions(topics(("t", 3, [[3, 1]])), validate_only=False)
    assert results[0]["error_code"] == 0 and records[0].data["isr"] == [1] and records[0].data["leader"] == 1


def test_duplicate_topic_in_create_partitions():
    _, results = make_image().replication.create_partitions(topics(("t", 3, None), ("t", 4, None)), False)
    assert [r["error_code"] for r in results] == [ErrorCode.INVALID_REQUEST] * 2


# -- ConfigurationControlManager ---------------------------------------------------------------------------------

def resource(kind, name, *configs):
    return NS(resource_type=kind, resource_name=name,
              configs=[NS(name=n, config_operation=op, value=v) for n, op, v in configs])


def test_incremental_alter_configs_records_replay_and_list_operations():
    image = make_image()
    manager = image.configuration
    records, results = manager.incremental_alter_configs([resource(2, "t", ("min.insync.replicas", SET, "2"),
                                                                   ("cleanup.policy", APPEND, "compact"))])
    assert results[0]["error_code"] == 0
    assert [(r.data["name"], r.data["value"]) for r in records] == [("min.insync.replicas", "2"),
                                                                     ("cleanup.policy", "delete,compact")]
    replay(image, records)
    assert manager.configs(2, "t") == {"min.insync.replicas": "2", "cleanup.policy": "delete,compact"}
    records, _ = manager.incremental_alter_configs([resource(2, "t", ("min.insync.replicas", SET, "2"),
                                                             ("cleanup.policy", SUBTRACT, "delete"))])
    assert [(r.data["name"], r.data["value"]) for r in records] == [("cleanup.policy", "compact")]   # unchanged: none
    records, _ = manager.incremental_alter_configs([resource(2, "t", ("min.insync.replicas", DELETE, None))])
    assert [(r.data["name"], r.data["value"]) for r in records] == [("min.insync.replicas", None)]
    replay(image, records)
    assert manager.configs(2, "t") == {"cleanup.policy": "delete,compact"}


@pytest.mark.parametrize("res, code, message", [
    (resource(2, "t", ("no.such", SET, "1")), ErrorCode.INVALID_CONFIG, "Unknown topic config name: no.such"),
    (resource(2, "t", ("retention.ms", APPEND, "1")), ErrorCode.INVALID_CONFIG,
     "Can't APPEND to key retention.ms because its type is not LIST."),
    (resource(2, "nope", ("retention.ms", SET, "1")), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
     "The topic 'nope' does not exist."),
    (resource(2, "", ("retention.ms", SET, "1")), ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
    (resource(4, "x", ("log.retention.ms", SET, "1")), ErrorCode.INVALID_REQUEST,
     "Unable to parse broker name as a base 10 number."),
    (resource(4, "-1", ("log.retention.ms", SET, "1")), ErrorCode.INVALID_REQUEST, "Invalid negative broker ID."),
    (resource(8, "1", ("kafka", SET, "DEBUG")), ErrorCode.INVALID_REQUEST, "Unknown resource type BROKER_LOGGER"),
    (resource(32, "g", ("share.auto.offset.reset", SET, "middle")), ErrorCode.INVALID_CONFIG,
     # Kafka 4.4.0's message (test_share_groups.py's test_group_configs_are_checked_as_kafka_4_4_checks_them)
     "Invalid value middle for configuration share.auto.offset.reset: Invalid value `middle` for configuration "
     "share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
     "'by_duration:<PnDTnHnMn.nS>'."),
])
def test_alter_configs_validation(res, code, message):
    records, results = make_image().configuration.incremental_alter_configs([res])
    assert records == [] and (results[0]["error_code"], results[0]["error_message"]) == (int(code), message)


def test_a_bad_value_fails_the_whole_resource_and_only_it():
    records, results = make_image().configuration.incremental_alter_configs([
        resource(2, "t", ("retention.ms", SET, "1000"), ("min.insync.replicas", SET, "zero")),
        resource(4, "", ("log.retention.ms", SET, "1000"))])
    assert results[0]["error_code"] == ErrorCode.INVALID_CONFIG and results[1]["error_code"] == 0
    assert [(r.data["resource_type"], r.data["name"]) for r in records] == [(4, "log.retention.ms")]


def test_legacy_alter_configs_replaces_the_whole_set():
    image = make_image()
    replay(image, image.configuration.incremental_alter_configs([resource(2, "t", ("retention.ms", SET, "1000"),
                                                                          ("segment.ms", SET, "60000"))])[0])
    records, results = image.configuration.legacy_alter_configs([resource(2, "t", ("retention.ms", None, "5000"))])
    assert results[0]["error_code"] == 0
    assert [(r.data["name"], r.data["value"]) for r in records] == [("retention.ms", "5000"), ("segment.ms", None)]
    replay(image, records)
    assert image.configuration.configs(2, "t") == {"retention.ms": "5000"}


def test_broker_and_group_configs_are_replayed():
    image = make_image()
    records, _ = image.configuration.incremental_alter_configs([
        resource(4, "1", ("log.retention.ms", SET, "1000")), resource(32, "g", ("share.auto.offset.reset", SET,
                                                                                "earliest"))])
    replay(image, records)
    assert image.configuration.configs(4, "1") == {"log.retention.ms": "1000"}
    assert image.configuration.configs(32, "g") == {"share.auto.offset.reset": "earliest"}
    records, _ = image.configuration.incremental_alter_configs([resource(4, "1", ("log.retention.ms", SET, "1000"))])
    assert len(records) == 1          # BROKER: a record even when unchanged (brokers reload), as Kafka does


# -- Envelope ------------------------------------------------------------------------------------------------

def inner(request_cls, version, data, correlation_id=7) -> bytes:
    request = build(request_cls, version, data)
    request.with_header(correlation_id=correlation_id, client_id="a-client")
    return bytes(request.encode(header=True))


def envelope(data: bytes, address: bytes = b"\x7f\x00\x00\x01"):
    return build(EnvelopeRequest, 0, {"request_data": data, "request_principal": ANONYMOUS_PRINCIPAL,
                                      "client_host_address": address})


CREATE_PARTITIONS = {"topics": [{"name": "t", "count": 3, "assignments": None}], "timeout_ms": 100,
                     "validate_only": False}


def apis(answer):
    async def handler(_client, request):
        return answer(request)
    return {37: (CreatePartitionsRequest, CreatePartitionsResponse, 0, 3, handler),
            19: (CreateTopicsRequest, CreateTopicsResponse, 2, 7, handler),
            44: (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1, handler)}


def test_envelope_round_trip_keeps_the_clients_header():
    seen = []

    def answer(request):
        seen.append(request)
        return {"throttle_time_ms": 0, "results": [{"name": "t", "error_code": 37, "error_message": "no"}]}
    result = asyncio.run(handle_envelope(apis(answer), envelope(inner(CreatePartitionsRequest, 3, CREATE_PARTITIONS,
                                                                      correlation_id=12345))))
    assert result["error_code"] == 0 and seen[0].topics[0].name == "t" and seen[0].header.client_id == "a-client"
    data = result["response_data"]
    assert struct.unpack_from(">i", data)[0] == 12345      # the response header: the client's correlation id
    response = CreatePartitionsResponse.decode(data[5:], version=3)   # v3 is flexible: header tag buffer byte
    assert response.results[0].error_code == 37


@pytest.mark.parametrize("data, address, code", [
    (b"\x00\x25", b"\x7f\x00\x00\x01", ErrorCode.UNSUPPORTED_VERSION),                   # no header
    (inner(CreatePartitionsRequest, 3, CREATE_PARTITIONS)[:12], b"\x7f\x00\x00\x01", ErrorCode.UNSUPPORTED_VERSION),
    (struct.pack(">hhi", 37, 9, 1) + b"\x00\x00", b"\x7f\x00\x00\x01", ErrorCode.UNSUPPORTED_VERSION),   # v9
    (struct.pack(">hhi", 0, 9, 1) + b"\x00\x00", b"\x7f\x00\x00\x01", ErrorCode.INVALID_REQUEST),        # Produce
    (struct.pack(">hhi", 999, 0, 1) + b"\x00\x00", b"\x7f\x00\x00\x01", ErrorCode.UNSUPPORTED_VERSION),  # no such API
    (inner(CreatePartitionsRequest, 3, CREATE_PARTITIONS), b"\x01\x02", ErrorCode.INVALID_REQUEST),
])
def test_bad_envelopes_get_kafkas_errors(data, address, code):
    result = asyncio.run(handle_envelope(apis(lambda r: pytest.fail("handled")), envelope(data, address)))
    assert result == {"response_data": None, "error_code": int(code)}


def test_not_controller_inside_becomes_the_envelopes_error():
    def answer(request):
        return {"throttle_time_ms": 0, "results": [{"name": "t", "error_code": 41, "error_message": "not me"}]}
    result = asyncio.run(handle_envelope(apis(answer), envelope(inner(CreatePartitionsRequest, 3, CREATE_PARTITIONS))))
    assert result == {"response_data": None, "error_code": int(ErrorCode.NOT_CONTROLLER)}


def test_broker_and_group_configs_are_in_a_snapshot():
    from kafkalab.controller.snapshot_generator import snapshot_records
    image = make_image()
    replay(image, image.configuration.incremental_alter_configs([
        resource(2, "t", ("retention.ms", SET, "1000")), resource(4, "", ("log.retention.ms", SET, "5")),
        resource(32, "g", ("share.auto.offset.reset", SET, "earliest"))])[0])
    records = snapshot_records(image)
    configs = [(r.data["resource_type"], r.data["resource_name"], r.data["name"], r.data["value"])
               for r in records if r.name == "ConfigRecord"]
    assert configs == [(2, "t", "retention.ms", "1000"), (4, "", "log.retention.ms", "5"),
                       (32, "g", "share.auto.offset.reset", "earliest")]
    again = MetadataImage()
    replay(again, records)
    assert again.configuration.config_data == image.configuration.config_data
    assert again.configuration.configs(2, "t") == {"retention.ms": "1000"}
