"""The ZooKeeper-era inter-broker messages: each served version round-trips with its
header, and a reader ignores tagged fields it does not know (as Kafka's do)."""
from __future__ import annotations

import uuid

import pytest

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.message.zk_messages import (
    AlterPartitionRequest, AlterPartitionResponse, ControlledShutdownRequest, ControlledShutdownResponse,
    LeaderAndIsrRequest, LeaderAndIsrResponse, StopReplicaRequest, StopReplicaResponse,
    UpdateMetadataRequest, UpdateMetadataResponse)

TID = uuid.UUID("0b4b2a3c-6a56-4d0f-9d55-6f0e2b8d9a11")

CASES = [
    (LeaderAndIsrRequest, 4, 7, dict(
        controller_id=1, controller_epoch=3, broker_epoch=4242, request_type=0,
        topic_states=[dict(topic_name="orders", topic_id=TID, partition_states=[
            dict(partition_index=0, controller_epoch=3, leader=1, leader_epoch=5, isr=[1, 2], partition_epoch=7,
                 replicas=[1, 2, 3], adding_replicas=[], removing_replicas=[], is_new=True,
                 leader_recovery_state=0),
            dict(partition_index=1, controller_epoch=2, leader=-1, leader_epoch=6, isr=[], partition_epoch=9,
                 replicas=[2, 3], adding_replicas=[], removing_replicas=[], is_new=False,
                 leader_recovery_state=1)])],
        live_leaders=[dict(broker_id=1, host_name="localhost", port=9092)])),
    (LeaderAndIsrResponse, 4, 7, dict(error_code=0, topics=[dict(topic_id=TID, partition_errors=[
        dict(partition_index=0, error_code=0), dict(partition_index=1, error_code=75)])])),
    (UpdateMetadataRequest, 6, 8, dict(
        controller_id=2, controller_epoch=9, broker_epoch=77, request_type=2,
        topic_states=[dict(topic_name="t", topic_id=TID, partition_states=[
            dict(partition_index=0, controller_epoch=9, leader=2, leader_epoch=1, isr=[2], zk_version=3,
                 replicas=[1, 2], offline_replicas=[1])])],
        live_brokers=[dict(id=2, endpoints=[dict(port=19092, host="127.0.0.1", listener="PLAINTEXT",
                                                 security_protocol=0)], rack=None),
                      dict(id=3, endpoints=[], rack="r1")])),
    (UpdateMetadataResponse, 6, 8, dict(error_code=11)),
    (StopReplicaRequest, 5, 4, dict(
        controller_id=1, controller_epoch=3, broker_epoch=10,
        topic_states=[dict(topic_name="t", partition_states=[
            dict(partition_index=0, leader_epoch=-2, delete_partition=True),
            dict(partition_index=3, leader_epoch=4, delete_partition=False)])])),
    (StopReplicaResponse, 5, 4, dict(error_code=0, partition_errors=[
        dict(topic_name="t", partition_index=0, error_code=0)])),
    (ControlledShutdownRequest, 7, 3, dict(broker_id=3, broker_epoch=123456789012)),
    (ControlledShutdownResponse, 7, 3, dict(error_code=0, remaining_partitions=[
        dict(topic_name="t", partition_index=2)])),
    (AlterPartitionRequest, 56, 1, dict(broker_id=1, broker_epoch=99, topics=[dict(topic_name="t", partitions=[
        dict(partition_index=0, leader_epoch=4, new_isr=[1, 3], leader_recovery_state=0, partition_epoch=12)])])),
    (AlterPartitionResponse, 56, 1, dict(throttle_time_ms=0, error_code=0, topics=[dict(topic_name="t", partitions=[
        dict(partition_index=0, error_code=0, leader_id=1, leader_epoch=4, isr=[1, 3], leader_recovery_state=0,
             partition_epoch=13)])])),
]


def _plain(obj):
    """A message as nested dicts/lists, for comparison."""
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    if hasattr(obj, "to_dict"):
        return _plain(obj.to_dict())
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items() if k != "version"}
    if isinstance(obj, uuid.UUID):
        return str(obj)          # to_dict() renders UUIDs as strings
    return obj


def _roundtrip(cls, version, data, correlation_id=17):
    msg = build(cls, version, data)
    msg.with_header(correlation_id=correlation_id, client_id="broker-1")
    return cls.decode(msg.encode(header=True), version=version, header=True)


@pytest.mark.parametrize("cls,key,version,data", CASES, ids=[c[0].__name__ for c in CASES])
def test_round_trip_with_header(cls, key, version, data):
    assert cls.API_KEY == key
    assert cls.max_version == version
    decoded = _roundtrip(cls, version, data)
    assert decoded.header.correlation_id == 17
    if cls.is_request():
        assert decoded.header.request_api_key == key
        assert decoded.header.request_api_version == version
        assert decoded.header.client_id == "broker-1"
    got = _plain(decoded)
    for field, value in data.items():
        assert got[field] == _plain(value), field


def test_flexible_encoding_uses_compact_strings():
    # ControlledShutdown v3 is flexible: int32 id, int64 epoch, then an empty tagged-field section
    body = build(ControlledShutdownRequest, 3, dict(broker_id=3, broker_epoch=5)).encode()
    assert body == (3).to_bytes(4, "big") + (5).to_bytes(8, "big") + b"\x00"
    # a compact string is length+1 as a varint: "t" -> 0x02 't'
    resp = build(ControlledShutdownResponse, 3, dict(error_code=0, remaining_partitions=[
        dict(topic_name="t", partition_index=1)])).encode()
    assert resp == b"\x00\x00" + b"\x02" + b"\x02t" + (1).to_bytes(4, "big") + b"\x00" + b"\x00"


def test_unknown_tagged_field_is_ignored():
    body = build(ControlledShutdownRequest, 3, dict(broker_id=3, broker_epoch=5)).encode()
    assert body.endswith(b"\x00")
    # one tagged field: tag 9, 2 bytes of payload that this reader does not know
    with_unknown = body[:-1] + b"\x01" + b"\x09" + b"\x02" + b"\xab\xcd"
    decoded = ControlledShutdownRequest.decode(with_unknown, version=3)
    assert (decoded.broker_id, decoded.broker_epoch) == (3, 5)


def test_unknown_tagged_field_next_to_a_known_one():
    # UpdateMetadata v8 has one known tagged field (RequestType, tag 0) at the top level
    msg = build(UpdateMetadataRequest, 8, dict(controller_id=1, controller_epoch=2, broker_epoch=3,
                                               request_type=1, topic_states=[], live_brokers=[]))
    body = msg.encode()
    # the top-level tagged section ends the message: count=1, tag 0, size 1, value 1
    assert body.endswith(b"\x01\x00\x01\x01")
    with_unknown = body[:-4] + b"\x02\x00\x01\x01" + b"\x07\x03xyz"
    decoded = UpdateMetadataRequest.decode(with_unknown, version=8)
    assert (decoded.controller_id, decoded.controller_epoch, decoded.broker_epoch) == (1, 2, 3)
    assert decoded.request_type == 1


def test_request_type_default_is_not_written():
    # a tagged field at its default is left out, as Kafka does
    body = build(UpdateMetadataRequest, 8, dict(controller_id=1, controller_epoch=2, broker_epoch=3,
                                                topic_states=[], live_brokers=[])).encode()
    assert body.endswith(b"\x01\x01\x00")   # two empty compact arrays, then no tagged fields


# -- the controller-side APIs on a broker whose controller is not active ---------------------

def test_controller_apis_answer_not_controller_on_a_standalone_broker(broker):
    from tests.helpers import kafka_wire as wire
    from kafka.protocol.admin.topics import ElectLeadersRequest, ElectLeadersResponse
    from kafkalab.broker.common.errors import ErrorCode

    resp = wire.call(broker.bootstrap_servers, build(ControlledShutdownRequest, 3, dict(broker_id=0, broker_epoch=-1)),
                     ControlledShutdownResponse, 3)
    assert resp.error_code == ErrorCode.NOT_CONTROLLER
    resp = wire.call(broker.bootstrap_servers, build(AlterPartitionRequest, 1, dict(broker_id=0, broker_epoch=1,
                                                                                   topics=[])),
                     AlterPartitionResponse, 1)
    assert resp.error_code == ErrorCode.NOT_CONTROLLER
    req = build(ElectLeadersRequest, 2, dict(election_type=0, topic_partitions=[dict(topic="t", partitions=[0])],
                                             timeout_ms=1000))
    resp = wire.call(broker.bootstrap_servers, req, ElectLeadersResponse, 2)
    assert resp.error_code == ErrorCode.NOT_CONTROLLER
    assert resp.replica_election_results[0].partition_result[0].error_code == ErrorCode.NOT_CONTROLLER
