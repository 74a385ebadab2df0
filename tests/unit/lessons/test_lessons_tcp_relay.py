"""kafkalab.lessons.tcp_relay: bytes forwarded both ways and kept, several connections, stop() closing every
connection and ending its thread."""
from __future__ import annotations

import socket
import threading

import pytest

from kafkalab.lessons.tcp_relay import TcpRelay
from tests.helpers.kafka_wire import recv_exactly
from tests.helpers.kafka_wire import connect as _connect


@pytest.fixture
def echo_server():
    """A TCP server that answers each connection's bytes upper-cased, until the connection ends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stopping = threading.Event()
    handlers: list[threading.Thread] = []

    def serve(conn):
        with conn:
            conn.settimeout(10)
            try:
                while data := conn.recv(4096):
                    conn.sendall(data.upper())
            except OSError:
                pass

    def accept():
        while not stopping.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            t = threading.Thread(target=serve, args=(conn,), daemon=True)
            t.start()
            handlers.append(t)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    stopping.set()
    acceptor.join(10)
    server.close()
    for t in handlers:
        t.join(10)


def connect(address: str) -> socket.socket:
    return _connect(address, timeout=10)


def test_bytes_go_through_both_ways_and_are_kept(echo_server):
    with TcpRelay(echo_server) as relay:
        assert relay.address != echo_server and relay.running
        with connect(relay.address) as a, connect(relay.address) as b:
            a.sendall(b"hello ")
            assert recv_exactly(a, 6) == b"HELLO "
            b.sendall(b"secret")
            assert recv_exactly(b, 6) == b"SECRET"
            a.sendall(b"again")
            assert recv_exactly(a, 5) == b"AGAIN"
        assert [(bytes(c.to_broker), bytes(c.to_client)) for c in relay.connections] == [
            (b"hello again", b"HELLO AGAIN"), (b"secret", b"SECRET")]
        assert relay.sent_to_broker() == b"hello againsecret"
    assert not relay.running


def test_stop_closes_the_open_connections_and_the_port(echo_server):
    relay = TcpRelay(echo_server)
    client = connect(relay.address)
    client.sendall(b"x")
    assert recv_exactly(client, 1) == b"X"
    relay.stop()
    assert not relay.running
    assert client.recv(1) == b""          # the relay closed the client's connection
    client.close()
    with pytest.raises(OSError):
        connect(relay.address).close()    # nothing listens there any more
    assert relay.sent_to_broker() == b"x"   # what was captured stays readable


def test_an_upstream_that_refuses_closes_the_client(echo_server):
    unused = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{unused.getsockname()[1]}"
    unused.close()                        # nothing listens on that port now
    with TcpRelay(address) as relay, connect(relay.address) as client:
        assert client.recv(1) == b""
        assert relay.connections == []
