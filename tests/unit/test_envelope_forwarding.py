"""Envelopes over real sockets to three mini KRaft controllers (issue #21, KIP-590): a standby answers NOT_CONTROLLER,
the broker's BrokerToControllerChannelManager then finds the active controller and sends the envelope again; the
active controller handles the inner request and every controller replays its records; a bad envelope gets Kafka's
error and the connection keeps serving.
"""
from __future__ import annotations

import asyncio
import random
import socket

from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from kafkalab.broker.apis.messages import build
from kafkalab.broker.network.network_client import NetworkClient
from kafkalab.controller.controller_messages import EnvelopeRequest
from kafkalab.controller.controller_node import ControllerNode
from kafkalab.kraft.broker_to_controller_channel import BrokerToControllerChannelManager
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
    return build(EnvelopeRequest, 0, {"request_data": bytes(inner.encode(header=True)), "request_principal": None,
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
                                             "request_principal": None, "client_host_address": b"\x7f\x00\x00\x01"})
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
