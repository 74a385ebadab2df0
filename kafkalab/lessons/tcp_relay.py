"""A TCP relay that keeps a copy of what it forwards: what someone on the network between a client and a broker
would capture (lesson 11: the PLAIN password in clear on SASL_PLAINTEXT, and not on SASL_SSL).

``TcpRelay(upstream)`` listens on a free local port (:attr:`TcpRelay.address`) and forwards each connection it
accepts to ``upstream`` (``host:port``), both ways, byte for byte, on one thread of its own; each connection's
bytes are kept (:attr:`TcpRelay.connections`: ``to_broker`` and ``to_client``). Point a client's
``bootstrap.servers`` at the relay: its bootstrap connection, which authenticates before anything else, goes
through it (the connections it opens later follow the broker's Metadata, to the broker's own port).
:meth:`TcpRelay.stop` closes every connection and the listening socket and ends the thread; a context manager.
"""
from __future__ import annotations

import selectors
import socket
import threading
from dataclasses import dataclass, field
from typing import cast


@dataclass
class Captured:
    """One relayed connection's bytes, each way."""
    to_broker: bytearray = field(default_factory=bytearray)
    to_client: bytearray = field(default_factory=bytearray)


class TcpRelay:
    def __init__(self, upstream: str, host: str = "127.0.0.1", timeout: float = 10):
        upstream_host, _, upstream_port = upstream.rpartition(":")
        self.upstream = (upstream_host, int(upstream_port))
        self.timeout = timeout
        self._listener = socket.create_server((host, 0))
        self._listener.setblocking(False)
        self.address = f"{host}:{self._listener.getsockname()[1]}"
        self.connections: list[Captured] = []
        self._lock = threading.Lock()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"tcp-relay-{self.address}", daemon=True)
        self._thread.start()

    def sent_to_broker(self) -> bytes:
        """Every byte the clients sent through the relay so far, connection after connection."""
        with self._lock:
            return b"".join(bytes(c.to_broker) for c in self.connections)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # -- the relay's thread -----------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                for key, _ in self._selector.select(timeout=0.05):
                    if key.fileobj is self._listener:
                        self._accept()
                    else:
                        self._forward(key)
        finally:
            for key in list(self._selector.get_map().values()):
                cast(socket.socket, key.fileobj).close()
            self._selector.close()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        try:
            broker = socket.create_connection(self.upstream, timeout=self.timeout)
        except OSError:
            client.close()
            return
        captured = Captured()
        with self._lock:
            self.connections.append(captured)
        for sock in (client, broker):
            sock.settimeout(self.timeout)
        self._selector.register(client, selectors.EVENT_READ, (broker, captured.to_broker))
        self._selector.register(broker, selectors.EVENT_READ, (client, captured.to_client))

    def _forward(self, key: selectors.SelectorKey) -> None:
        source = cast(socket.socket, key.fileobj)
        destination, copy = key.data
        try:
            data = source.recv(65536)
            if data:
                with self._lock:
                    copy += data
                destination.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, destination):   # one side ended: end both
            if sock.fileno() != -1:
                self._selector.unregister(sock)
                sock.close()

    # -- stopping ---------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Close every relayed connection and the listening socket; wait for the thread to end."""
        self._stopping.set()
        self._thread.join(timeout=30)
        if self._thread.is_alive():
            raise RuntimeError(f"the relay's thread {self._thread.name} did not stop")

    def __enter__(self) -> "TcpRelay":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
