"""``kafkalab.mini()``: a real (mini) Kafka broker inside the current Python process.

The broker gets its own thread running its own asyncio loop, so a notebook
cell that starts one returns at once while clients (confluent-kafka,
kafka-python, or the Java client in Spark) talk to it over TCP like to any
Kafka broker::

    import kafkalab
    with kafkalab.mini(**{"num.partitions": 3}) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

Configs use Kafka's names (``kafkalab.mini(**{"log.segment.bytes": 1024})``);
Python identifiers work too (``kafkalab.mini(num_partitions=3)``). Without
``log_dir`` the broker writes into a fresh temporary directory that is
removed on ``close()``. Every broker still open at interpreter exit is closed.
"""
from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import threading
import weakref

from .config import BrokerConfig
from .kafka_server import KafkaServer

_OPEN: "weakref.WeakSet[MiniBroker]" = weakref.WeakSet()


def _config_name(name: str) -> str:
    return name.replace("_", ".") if "." not in name else name


class MiniBroker:
    """A handle on a running in-process broker."""

    def __init__(self, port: int = 0, log_dir: str | None = None, broker_id: int = 0,
                 host: str = "127.0.0.1", **configs):
        self._temp_dir = None
        if log_dir is None:
            self._temp_dir = log_dir = tempfile.mkdtemp(prefix="kafkalab-")
        overrides = {_config_name(k): v for k, v in configs.items()}
        overrides.setdefault("broker.id", broker_id)
        overrides["log.dirs"] = log_dir
        overrides.setdefault("listeners", f"PLAINTEXT://{host}:{port}")
        self.config = BrokerConfig(overrides)
        self.log_dir = log_dir
        self.server = KafkaServer(self.config)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"kafkalab-broker-{broker_id}", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            self._cleanup_temp()
            raise self._error
        _OPEN.add(self)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.server.start())
        except BaseException as exc:  # e.g. port in use: report it to the caller
            self._error = exc
            self._ready.set()
            self._loop.close()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(self.server.stop())
        pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
        for t in pending:
            t.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.server.advertised_host}:{self.server.port}"

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def closed(self) -> bool:
        return not self._thread.is_alive()

    def call(self, fn, *args):
        """Run ``fn(*args)`` on the broker's loop and return its result (for inspection from a notebook)."""
        async def run():
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result()

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
        _OPEN.discard(self)
        self._cleanup_temp()

    def _cleanup_temp(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def __enter__(self) -> "MiniBroker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "running"
        return f"<MiniBroker {state} bootstrap_servers={self.bootstrap_servers!r} log_dir={self.log_dir!r}>"


def mini(**configs) -> MiniBroker:
    """Start a broker in this process; see :class:`MiniBroker`."""
    return MiniBroker(**configs)


@atexit.register
def _close_all() -> None:
    for broker in list(_OPEN):
        broker.close()
