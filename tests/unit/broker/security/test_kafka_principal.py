"""KafkaPrincipal as Kafka writes it, and the KafkaChannel every request carries."""
from __future__ import annotations

import asyncio
import struct

import pytest

from kafkalab.broker.common.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from kafkalab.broker.network.socket_server import SocketServer


def test_principals_are_written_type_colon_name():
    assert str(ANONYMOUS) == "User:ANONYMOUS"
    assert KafkaPrincipal.from_string("User:alice") == KafkaPrincipal("User", "alice")
    assert KafkaPrincipal.from_string("User:CN=client,O=lab").name == "CN=client,O=lab"   # the first colon only
    assert KafkaPrincipal.from_string("Group:ops:east") == KafkaPrincipal("Group", "ops:east")
    for bad in ("alice", ":alice", ""):
        with pytest.raises(ValueError, match="Invalid principal"):
            KafkaPrincipal.from_string(bad)


@pytest.mark.parametrize("protocol, authenticated", [("PLAINTEXT", True), ("SASL_PLAINTEXT", False)])
def test_every_request_carries_its_connections_channel(protocol, authenticated):
    seen = []

    async def handler(request):
        seen.append(request.channel)
        return None

    async def run():
        server = SocketServer("127.0.0.1", 0, 1 << 20, handler, listener_name="CLIENT", security_protocol=protocol)
        await server.start()
        frame = struct.pack(">hhih", 18, 0, 7, -1)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        for _ in range(2):
            writer.write(struct.pack(">i", len(frame)) + frame)
        await writer.drain()
        for _ in range(100):
            if len(seen) == 2:
                break
            await asyncio.sleep(0.01)
        local_port = writer.get_extra_info("sockname")[1]
        writer.close()
        await server.stop()
        return local_port

    local_port = asyncio.run(run())
    assert len(seen) == 2 and seen[0] is seen[1]          # one channel per connection
    channel = seen[0]
    assert (channel.listener_name, channel.security_protocol) == ("CLIENT", protocol)
    assert (channel.client_host, channel.client_port) == ("127.0.0.1", local_port)
    assert channel.principal == ANONYMOUS and channel.authenticated is authenticated
    assert channel.uses_sasl is (not authenticated) and not channel.uses_ssl


