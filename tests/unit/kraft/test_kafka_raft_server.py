"""A combined mini KRaft node (``process.roles=broker,controller``, :class:`KafkaRaftServer`): what its configs must
say, the command the mini backend runs for it, and one node started in-process: a quorum of one, its broker
unfenced by its own controller, reading the metadata from the shared Raft client (no observer)."""
from __future__ import annotations

import asyncio
import socket

import pytest

from kafkalab.broker.server.config import BrokerConfig
from kafkalab.cluster.mini_kraft import MiniKRaftBackend
from kafkalab.kraft.kafka_raft_server import kraft_server
from kafkalab.kraft.broker_server import BrokerServer
from kafkalab.kraft.kafka_raft_server import KafkaRaftServer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(tmp_path, node_id=1, voters="1@127.0.0.1:9093", **extra) -> BrokerConfig:
    return BrokerConfig({"broker.id": node_id, "log.dirs": str(tmp_path), "process.roles": "broker,controller",
                         "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                         "listeners": "PLAINTEXT://127.0.0.1:0", "cluster.id": "Y2x1c3Rlci1pZC0wMDAwMA", **extra})


@pytest.mark.parametrize("change, message", [
    ({"controller.quorum.voters": "2@127.0.0.1:9093"}, "must be a voter"),
    ({"controller.listener.names": None}, "needs controller.listener.names"),
    # Kafka's KafkaConfig refuses it first, as the mini broker's BrokerConfig now does
    ({"controller.listener.names": "PLAINTEXT"}, "There must be at least one broker advertised listener. Perhaps all "
                                                 "listeners appear in controller.listener.names\\?"),
    ({"process.roles": "controller"}, "process.roles=broker,controller"),
    ({"controller.quorum.voters": "1@nowhere"}, "is not id@host:port"),
])
def test_a_combined_node_refuses_configs_it_cannot_run_with(tmp_path, change, message):
    with pytest.raises(ValueError, match=message):
        KafkaRaftServer.check_config(config(tmp_path, **change))


def test_a_broker_alone_still_needs_an_id_of_its_own_and_process_roles_picks_the_server(tmp_path):
    broker_only = config(tmp_path, **{"process.roles": "broker"})
    with pytest.raises(ValueError, match="needs an id of its own"):
        kraft_server.check_config(broker_only)
    kraft_server.check_config(config(tmp_path, **{"process.roles": "controller,broker"}))   # either order


def test_the_mini_backend_runs_a_combined_node_as_python_m_kafkalab_kraft(tmp_path):
    backend = MiniKRaftBackend()
    text = backend.server_properties(2, "broker,controller", "127.0.0.1", 9092, 9093, str(tmp_path / "node-2"),
                                     "1@127.0.0.1:9193,2@127.0.0.1:9093", {"broker.session.timeout.ms": "3000",
                                                                          "controller.quorum.election.timeout.ms": "500",
                                                                          "metadata.max.idle.interval.ms": "500"})
    path = tmp_path / "node-2.properties"
    path.write_text(text)
    cmd = backend.command(str(path), "broker,controller")
    assert cmd[1:3] == ["-m", "kafkalab.kraft"] and cmd[cmd.index("--port") + 1] == "9092"
    configs = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--config"]
    assert {"process.roles=broker,controller", "controller.listener.names=CONTROLLER",
            "controller.quorum.voters=1@127.0.0.1:9193,2@127.0.0.1:9093", "broker.session.timeout.ms=3000",
            "controller.quorum.election.timeout.ms=500", "metadata.max.idle.interval.ms=500"} <= set(configs)
    # a broker alone is not given the controllers' own configs
    path.write_text(backend.server_properties(2, "broker", "127.0.0.1", 9092, None, str(tmp_path / "node-2"),
                                              "1@127.0.0.1:9193", {"controller.quorum.election.timeout.ms": "500"}))
    assert not any("election" in arg for arg in backend.command(str(path), "broker"))


def test_one_combined_node_is_its_own_quorum_controller_and_unfenced_broker(tmp_path):
    async def scenario():
        port = _free_port()
        server = KafkaRaftServer(config(tmp_path, voters=f"1@127.0.0.1:{port}",
                                        **{"broker.heartbeat.interval.ms": 100, "controlled.shutdown.max.retries": 1,
                                           "controlled.shutdown.retry.backoff.ms": 1000}))
        assert isinstance(server.broker, BrokerServer)
        await asyncio.wait_for(server.start(), 30)
        try:
            # one Raft client for both roles, no observer: the broker applies what its own voter has committed
            assert server.broker.raft_client is server.controller.client
            assert server.controller.controller.is_active and server.controller_address == ("127.0.0.1", port)
            assert server.broker.lifecycle.unfenced.is_set() and server.broker.image.offset >= 0
            assert [b.id for b in server.broker.live_broker_nodes] == [1] and server.broker.fenced_broker_nodes == []
            assert server.broker.port != port
        finally:
            await asyncio.wait_for(server.stop(), 30)
        # the shared client was closed once, by the controller, after the broker had stopped
        assert server.broker._metadata_task.done() and not server.controller.client._running

    asyncio.run(scenario())


def test_the_broker_reads_no_request_before_it_is_unfenced(tmp_path):
    """Kafka's ``BrokerServer.startup``: the listener is bound early, but requests are read only once the broker has
    caught up with the metadata, published it and been unfenced. A client that connects meanwhile waits."""
    import struct

    from tests.helpers import kafka_wire as wire
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    async def scenario():
        port = _free_port()
        server = KafkaRaftServer(config(tmp_path, voters=f"1@127.0.0.1:{port}",
                                        **{"broker.heartbeat.interval.ms": 100, "controlled.shutdown.max.retries": 1,
                                           "controlled.shutdown.retry.backoff.ms": 1000}))
        starting = asyncio.create_task(server.start())
        try:
            while not server.broker.socket_server.port and not starting.done():
                await asyncio.sleep(0.001)
            reader, writer = await asyncio.open_connection("127.0.0.1", server.broker.socket_server.port)
            writer.write(wire.encode(ApiVersionsRequest(), 0, correlation_id=7, client_id="early"))
            await writer.drain()
            size, = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 30))
            answer = await reader.readexactly(size)
            # the first answer comes from an unfenced broker that has published what it caught up to
            assert server.broker.lifecycle.unfenced.is_set() and server.broker._publishing
            assert struct.unpack_from(">i", answer)[0] == 7
            writer.close()
            await asyncio.wait_for(starting, 30)
        finally:
            if not starting.done():
                starting.cancel()
            await asyncio.wait_for(server.stop(), 30)

    asyncio.run(scenario())
