"""A combined KRaft node (in-process) with PLAINTEXT and SSL listeners: its BrokerRegistration carries both
listeners, and a client of each listener is told that listener's endpoint."""
from __future__ import annotations

import asyncio
import socket

from confluent_kafka.admin import AdminClient

from kafkalab.broker.server.config import BrokerConfig
from kafkalab.kraft.kafka_raft_server import KafkaRaftServer
from kafkalab.security import CertificateAuthority


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_kraft_node_registers_every_listener_and_answers_per_listener(tmp_path):
    ca = CertificateAuthority(directory=str(tmp_path / "ca"))
    port = _free_port()
    config = BrokerConfig({"broker.id": 1, "log.dirs": str(tmp_path / "n1"), "process.roles": "broker,controller",
                           "controller.quorum.voters": f"1@127.0.0.1:{port}", "controller.listener.names": "CONTROLLER",
                           "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                           "cluster.id": "Y2x1c3Rlci1pZC0wMDAwMA", "broker.heartbeat.interval.ms": 100,
                           "controlled.shutdown.max.retries": 1, "controlled.shutdown.retry.backoff.ms": 1000,
                           **ca.broker_configs()})

    async def scenario():
        server = KafkaRaftServer(config)
        await asyncio.wait_for(server.start(), 30)
        try:
            broker = server.broker
            registration = server.controller.controller.cluster.registrations[1]
            listeners = {e["name"]: e["port"] for e in registration.listeners}
            assert listeners == {"PLAINTEXT": broker.socket_servers["PLAINTEXT"].port,
                                 "SSL": broker.socket_servers["SSL"].port}
            loop = asyncio.get_running_loop()
            for name, configs in (("PLAINTEXT", {}), ("SSL", ca.client_configs())):
                address = broker.listeners[name]
                md = await loop.run_in_executor(None, lambda: AdminClient(
                    {"bootstrap.servers": address, **configs}).list_topics(timeout=30))
                assert {b.id: b.port for b in md.brokers.values()} == {1: listeners[name]}
        finally:
            await asyncio.wait_for(server.stop(), 30)

    asyncio.run(scenario())
