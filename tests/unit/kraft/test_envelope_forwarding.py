"""Envelopes over real sockets to three mini KRaft controllers (KIP-590): a standby answers NOT_CONTROLLER,
the broker's BrokerToControllerChannelManager then finds the active controller and sends the envelope again; the
active controller handles the inner request and every controller replays its records; a bad envelope gets Kafka's
error and the connection keeps serving. Then the broker's side with a stand-in channel: the controller's answer
passed on as it is, envelope errors (UNKNOWN_SERVER_ERROR, UNSUPPORTED_VERSION closing the connection), no active
controller in time (REQUEST_TIMED_OUT), and config resources the broker answers itself.
"""
from __future__ import annotations

import asyncio
import random
import socket
from types import SimpleNamespace

import pytest
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from kafka.protocol.admin.topics import CreatePartitionsRequest, CreatePartitionsResponse

from kafkalab.broker.common.message.codec import build
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.broker.network.socket_server import CloseConnection
from kafkalab.controller.controller_messages import EnvelopeRequest, EnvelopeResponse
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.kraft.broker_to_controller_channel import BrokerToControllerChannelManager
from kafkalab.kraft.forwarding_manager import ANONYMOUS_PRINCIPAL, ForwardingManager
from kafkalab.raft.kafka_raft_client import RaftConfig

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
NOT_CONTROLLER, UNSUPPORTED_VERSION = 41, 35


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def envelope(correlation_id: int, value: str):
    inner = build(IncrementalAlterConfigsRequest, 1, {"resources": [{
        "resource_type": 4, "resource_name": "", "configs": [
            {"name": "log.cleaner.threads", "config_operation": 0, "value": value}]}], "validate_only": False})
    inner.with_header(correlation_id=correlation_id, client_id="admin")
    return build(EnvelopeRequest, 0, {"request_data": bytes(inner.encode(header=True)),
                                      "request_principal": ANONYMOUS_PRINCIPAL,
                                      "client_host_address": b"\x7f\x00\x00\x01"})


def test_envelopes_reach_the_active_controller_and_bad_ones_get_errors(tmp_path):
    async def scenario():
        voters = {i: ("127.0.0.1", free_port()) for i in (1, 2, 3)}
        nodes = {i: ControllerNode(RaftConfig(i, voters, election_timeout_ms=300, fetch_timeout_ms=600,
                                              election_backoff_max_ms=200, request_timeout_ms=1000,
                                              fetch_max_wait_ms=100, cluster_id=CLUSTER_ID),
                                   str(tmp_path / f"node-{i}"), idle_interval_ms=200, rng=random.Random(i))
                 for i in voters}
        for n in nodes.values():
            await n.start()
        channel = BrokerToControllerChannelManager(1, voters)      # no leader hint: it has to look
        clients = []
        try:
            deadline = asyncio.get_running_loop().time() + 10
            while not any(n.controller.is_active and n.controller.features.bootstrapped for n in nodes.values()):
                assert asyncio.get_running_loop().time() < deadline, "no active controller"
                await asyncio.sleep(0.02)
            active = next(i for i, n in nodes.items() if n.controller.is_active)
            standby = next(i for i in nodes if i != active)

            # a standby: the envelope's own error is NOT_CONTROLLER, no data
            to_standby = NetworkClient(*voters[standby], timeout_s=5)
            clients.append(to_standby)
            answer = await to_standby.send(envelope(1, "2"))
            assert (answer.error_code, answer.response_data) == (NOT_CONTROLLER, None)

            # the channel tries the voters in turn until the active one answers
            answer = await channel.send(envelope(77, "3"), "forwarding", timeout_s=10)
            assert answer.error_code == 0 and channel.active_controller == active
            inner = IncrementalAlterConfigsResponse.decode(bytes(answer.response_data), version=1, header=True)
            assert inner.header.correlation_id == 77
            assert [(r.error_code, r.resource_type, r.resource_name) for r in inner.responses] == [(0, 4, "")]
            deadline = asyncio.get_running_loop().time() + 10
            while not all(n.controller.configuration.configs(4, "") == {"log.cleaner.threads": "3"}
                          for n in nodes.values()):
                assert asyncio.get_running_loop().time() < deadline, "every controller to replay the ConfigRecord"
                await asyncio.sleep(0.02)

            # garbage inside: UNSUPPORTED_VERSION, and the same connection keeps serving
            to_active = NetworkClient(*voters[active], timeout_s=5)
            clients.append(to_active)
            bad = build(EnvelopeRequest, 0, {"request_data": b"\x00\x2c\x00\x01\x00\x00\x00\x05\xff\xff\xff",
                                             "request_principal": ANONYMOUS_PRINCIPAL,
                                             "client_host_address": b"\x7f\x00\x00\x01"})
            answer = await to_active.send(bad)
            assert (answer.error_code, answer.response_data) == (UNSUPPORTED_VERSION, None)
            answer = await to_active.send(envelope(78, "4"))
            assert answer.error_code == 0
        finally:
            await channel.close()
            for c in clients:
                await c.close()
            for n in nodes.values():
                await n.stop(resign=False)

    asyncio.run(scenario())


# -- the broker's side: ForwardingManager with a stand-in channel ----------------------------------------------


class Channel:
    """Answers each envelope with ``answer(inner request bytes)``; keeps what was sent."""

    def __init__(self, answer):
        self.answer, self.sent, self.active_controller = answer, [], 3001

    async def send(self, request, purpose, timeout_s):
        self.sent.append(request)
        return self.answer(bytes(request.request_data))


def client_request(cls, version, data, correlation_id=9):
    request = build(cls, version, data)
    request.with_header(correlation_id=correlation_id, client_id="cli")
    frame = bytes(request.encode(header=True))
    return frame, cls.decode(frame, version=version, header=True)


def forward(answer, cls, version, data):
    manager = ForwardingManager(SimpleNamespace(broker_id=1, controller_channel=Channel(answer)))
    frame, request = client_request(cls, version, data)
    out = asyncio.run(manager.forward(frame, request, "10.1.2.3", version, 9))
    return manager, out


GROW = {"topics": [{"name": "t", "count": 3, "assignments": None}], "timeout_ms": 1000, "validate_only": False}


def test_the_controllers_answer_goes_to_the_client_as_it_is():
    inner = build(CreatePartitionsResponse, 3, {"throttle_time_ms": 0, "results": [
        {"name": "t", "error_code": 0, "error_message": None}]})
    inner.with_header(correlation_id=9)
    data = bytes(inner.encode(header=True))
    manager, out = forward(lambda req: build(EnvelopeResponse, 0, {"response_data": data, "error_code": 0}),
                           CreatePartitionsRequest, 3, GROW)
    assert out == struct_size(data) + data
    sent = manager.broker.controller_channel.sent[0]
    frame, _ = client_request(CreatePartitionsRequest, 3, GROW)
    assert bytes(sent.request_data) == frame and bytes(sent.client_host_address) == bytes([10, 1, 2, 3])


def struct_size(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big")


@pytest.mark.parametrize("envelope_error, code", [(42, -1), (0, -1)])
def test_an_envelope_error_is_unknown_server_error_for_the_client(envelope_error, code):
    _, out = forward(lambda req: build(EnvelopeResponse, 0, {"response_data": None, "error_code": envelope_error}),
                     CreatePartitionsRequest, 3, GROW)
    response = CreatePartitionsResponse.decode(out[4:], version=3, header=True)
    assert response.header.correlation_id == 9
    assert [(r.name, r.error_code) for r in response.results] == [("t", code)]


def test_unsupported_version_closes_the_clients_connection():
    with pytest.raises(CloseConnection):
        forward(lambda req: build(EnvelopeResponse, 0, {"response_data": None, "error_code": 35}),
                CreatePartitionsRequest, 3, GROW)


def test_no_active_controller_in_time_is_request_timed_out():
    def answer(req):
        raise TimeoutError("no active controller answered in 60 s")
    _, out = forward(answer, CreatePartitionsRequest, 3, GROW)
    response = CreatePartitionsResponse.decode(out[4:], version=3, header=True)
    assert [(r.name, r.error_code) for r in response.results] == [("t", 7)]


def test_config_resources_the_broker_answers_are_left_out_and_the_answers_reassembled():
    request = {"resources": [
        {"resource_type": 4, "resource_name": "2", "configs": [{"name": "x", "config_operation": 0, "value": "1"}]},
        {"resource_type": 2, "resource_name": "t", "configs": [{"name": "retention.ms", "config_operation": 0,
                                                                "value": "1000"}]},
        {"resource_type": 2, "resource_name": "u", "configs": [{"name": "a", "config_operation": 0, "value": None}]}],
        "validate_only": False}
    seen = []

    def answer(data):
        inner = IncrementalAlterConfigsRequest.decode(data, version=1, header=True)
        seen.append(inner)
        response = build(IncrementalAlterConfigsResponse, 1, {"throttle_time_ms": 0, "responses": [
            {"error_code": 3, "error_message": "no", "resource_type": r.resource_type,
             "resource_name": r.resource_name} for r in inner.resources]})
        response.with_header(correlation_id=inner.header.correlation_id)
        return build(EnvelopeResponse, 0, {"response_data": bytes(response.encode(header=True)), "error_code": 0})
    _, out = forward(answer, IncrementalAlterConfigsRequest, 1, request)
    assert [r.resource_name for r in seen[0].resources] == ["t"] and seen[0].header.client_id == "cli"
    response = IncrementalAlterConfigsResponse.decode(out[4:], version=1, header=True)
    assert [(r.resource_name, r.error_code, r.error_message) for r in response.responses] == [
        ("2", 42, "Unexpected broker id, expected 1, but received 2"), ("t", 3, "no"),
        ("u", 42, "Null value not supported for : a")]


def test_the_clients_principal_is_forwarded_in_the_envelope():
    from kafkalab.broker.common.security.kafka_principal import KafkaPrincipal, deserialize_principal
    inner = build(CreatePartitionsResponse, 3, {"throttle_time_ms": 0, "results": [
        {"name": "t", "error_code": 0, "error_message": None}]})
    inner.with_header(correlation_id=9)
    data = bytes(inner.encode(header=True))
    channel = Channel(lambda req: build(EnvelopeResponse, 0, {"response_data": data, "error_code": 0}))
    manager = ForwardingManager(SimpleNamespace(broker_id=1, controller_channel=channel))
    frame, request = client_request(CreatePartitionsRequest, 3, GROW)
    alice = KafkaPrincipal("User", "alice")
    asyncio.run(manager.forward(frame, request, "10.1.2.3", 3, 9, alice))
    asyncio.run(manager.forward(frame, request, "10.1.2.3", 3, 9))      # none given: User:ANONYMOUS
    assert [deserialize_principal(bytes(e.request_principal)) for e in channel.sent] == [
        alice, KafkaPrincipal("User", "ANONYMOUS")]
