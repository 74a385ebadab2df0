"""``kafkalab.schema_registry(kafka)``: a schema registry on the lesson's Kafka, in this process.

::

    with kafkalab.schema_registry(kafka) as registry:
        client = SchemaRegistryClient({"url": registry.url})

The registry is an HTTP server on a free port of 127.0.0.1 (threads of this process, like the embedded mini
broker: it dies with the kernel, and ``close()`` or leaving the ``with`` stops it) with its state in the
``_schemas`` topic of ``kafka``. ``restart()`` stops it and starts a new one on the same port, which reads every
subject, version and id back from the topic.
"""
from __future__ import annotations

import atexit
import threading
import weakref

from .kafka_schema_registry import KafkaSchemaRegistry
from .kafka_store import DEFAULT_TOPIC
from .rest import RegistryHTTPServer

_open: "weakref.WeakSet[SchemaRegistry]" = weakref.WeakSet()


def bootstrap_servers_of(kafka) -> str:
    """``kafka``: what ``kafkalab.connect()`` returns, a cluster, a mini broker, or a bootstrap string."""
    if isinstance(kafka, str):
        return kafka
    servers = getattr(kafka, "bootstrap_servers", None)
    if isinstance(servers, str) and servers:
        return servers
    raise TypeError(f"schema_registry() needs a Kafka to keep its schemas in: kafkalab.connect()'s object, a "
                    f"cluster or a 'host:port' bootstrap string, not {type(kafka).__name__}")


class SchemaRegistry:
    """A running registry: ``.url``, ``.close()``, ``.restart()``; a context manager."""

    def __init__(self, bootstrap_servers: str, host: str = "127.0.0.1", port: int = 0, topic: str = DEFAULT_TOPIC,
                 timeout: float = 30.0):
        self.bootstrap_servers = bootstrap_servers
        self.topic = topic
        self.host = host
        self._timeout = timeout
        self._port = port
        self._server: RegistryHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.registry: KafkaSchemaRegistry | None = None
        self._start()
        _open.add(self)

    def _start(self) -> None:
        registry = KafkaSchemaRegistry(self.bootstrap_servers, topic=self.topic, timeout=self._timeout)
        registry.start()                                  # reads _schemas to its end before serving
        try:
            server = RegistryHTTPServer((self.host, self._port), registry)
        except BaseException:
            registry.close()
            raise
        self._port = server.server_address[1]             # a restart keeps the port (clients keep their url)
        self.registry, self._server = registry, server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"schema-registry:{self._port}", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self._port}"

    @property
    def closed(self) -> bool:
        return self._server is None

    def close(self) -> None:
        """Stop serving and reading (the schemas stay in the topic)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
            self._thread.join(timeout=10)
        if self.registry is not None:
            self.registry.close()
            self.registry = None

    def restart(self) -> "SchemaRegistry":
        """Stop, and start again on the same port from what the topic holds."""
        self.close()
        self._start()
        return self

    def __enter__(self) -> "SchemaRegistry":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.url
        return f"<SchemaRegistry {state} on {self.bootstrap_servers} topic={self.topic}>"


def schema_registry(kafka, port: int = 0, topic: str = DEFAULT_TOPIC, host: str = "127.0.0.1",
                    timeout: float = 30.0) -> SchemaRegistry:
    """Start a schema registry speaking Confluent's REST API, its state in ``topic`` (``_schemas``) of ``kafka``.

    ``kafka`` is what :func:`kafkalab.connect` returns, a cluster, or a bootstrap string. ``port=0`` picks a free
    port. A second call on the same Kafka starts a second instance that reads the same state."""
    return SchemaRegistry(bootstrap_servers_of(kafka), host=host, port=port, topic=topic, timeout=timeout)


@atexit.register
def _close_all() -> None:
    for registry in list(_open):
        registry.close()


def serve(bootstrap_servers: str, host: str = "127.0.0.1", port: int = 8081, topic: str = DEFAULT_TOPIC,
          timeout: float = 30.0) -> int:
    """``kafkalab schema-registry``: run until SIGINT or SIGTERM; the URL is the first line printed."""
    import signal
    import sys

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        registry = SchemaRegistry(bootstrap_servers, host=host, port=port, topic=topic, timeout=timeout)
    except Exception as e:   # noqa: BLE001 - one line, exit status 1, like kafkalab's other commands
        print(f"error: the schema registry could not start: {e}", file=sys.stderr)
        return 1
    print(registry.url, flush=True)
    print(f"schemas in topic {topic!r} of {bootstrap_servers}; Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        registry.close()
    return 0
