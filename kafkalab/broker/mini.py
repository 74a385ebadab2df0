"""``kafkalab.mini()``: a real (mini) Kafka broker inside the current Python process.

The broker gets its own thread running its own asyncio loop, so a notebook
cell that starts one returns at once while clients (confluent-kafka,
kafka-python, or the Java client in Spark) talk to it over TCP like to any
Kafka broker::

    import kafkalab
    with kafkalab.mini(**{"num.partitions": 3}) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

Several listeners, e.g. PLAINTEXT for the lab's tooling and SSL, SASL_PLAINTEXT or SASL_SSL for a lesson's
clients, are Kafka's configs too (``listeners``, ``listener.security.protocol.map``, the ``ssl.*`` configs and the
SASL ones per listener, ``listener.name.<l>.sasl.enabled.mechanisms`` and
``listener.name.<l>.<mechanism>.sasl.jaas.config``; :mod:`kafkalab.security` makes the certificates);
``broker.listeners`` then maps each listener name to its ``host:port``.

Configs use Kafka's names (``kafkalab.mini(**{"log.segment.bytes": 1024})``);
Python identifiers work too (``kafkalab.mini(num_partitions=3)``). Without
``log_dir`` the broker writes into a fresh temporary directory that is
removed on ``close()``. Every broker still open at interpreter exit is closed.
A process killed outside Python's control (``kill -9``, nbval's kernel
shutdown, a test killing its child) runs no ``atexit`` handler: for that case
the temporary directory is also handed to ``MiniBroker.temp_dir_guard``, which the
``kafkalab`` package sets to the cluster's watchdog
(:mod:`kafkalab.cluster.watchdog`), a tiny process that removes the directory
once this process has died. (The broker does not import the launcher; the
package wires the two together.)
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import shutil
import tempfile
import threading
import weakref
from typing import Any, Callable

from .server.config import BrokerConfig
from .kafka_server import KafkaServer

log = logging.getLogger(__name__)
_OPEN: "weakref.WeakSet[MiniBroker]" = weakref.WeakSet()


def config_name(name: str) -> str:
    """Kafka's name for a config given as a Python identifier: ``num_partitions`` -> ``num.partitions``."""
    return name if "." in name else name.replace("_", ".")


class MiniBroker:
    """A handle on a running in-process broker."""

    #: Called with each new temporary log directory; returns a guard whose ``close()`` is called once the
    #: broker has removed the directory itself. The guard removes it should this process die without
    #: ``close()``. ``kafkalab/__init__.py`` sets it to
    #: :func:`kafkalab.cluster.processes.remove_dir_when_this_process_dies`.
    temp_dir_guard: "Callable[[str], Any] | None" = None
    #: ``metrics_reader({broker_id: url}, names)``: the DataFrame :meth:`metrics` returns. ``kafkalab/__init__.py``
    #: sets it to :func:`kafkalab.cluster.metrics.metrics_frame` (the broker does not import the lab).
    metrics_reader: "Callable[..., Any] | None" = None

    def __init__(self, port: int = 0, log_dir: str | None = None, broker_id: int = 0,
                 host: str = "127.0.0.1", **configs):
        self._temp_dir = None
        self._guard = None   # removes the temporary directory should this process die without close()
        if log_dir is None:
            self._temp_dir = log_dir = tempfile.mkdtemp(prefix="kafkalab-")
        self.log_dir = log_dir
        self._lock = threading.Lock()   # close() and call() may come from any thread
        self._closing = False
        self._started = False
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None   # the broker thread's, once it runs
        self._thread: threading.Thread | None = None
        try:
            if self._temp_dir is not None and self.temp_dir_guard is not None:
                self._guard = type(self).temp_dir_guard(self._temp_dir)
            overrides = {config_name(k): v for k, v in configs.items()}
            overrides.setdefault("broker.id", broker_id)
            overrides["log.dirs"] = log_dir
            overrides.setdefault("listeners", f"PLAINTEXT://{host}:{port}")
            self.config = BrokerConfig(overrides)
            self.server = KafkaServer(self.config)   # StartupError if log_dir cannot be used
            self._thread = threading.Thread(target=self._run, name=f"kafkalab-broker-{self.server.broker_id}",
                                            daemon=True)
            self._thread.start()
            self._ready.wait()
            if self._error is not None:  # e.g. the port is in use: KafkaServer.start() undid itself
                self._thread.join()
                raise self._error
        except BaseException:  # also KeyboardInterrupt while starting: stop what may be running
            if self._thread is not None:
                self.close()
            self._cleanup_temp()
            raise
        _OPEN.add(self)

    def _run(self) -> None:
        """The broker thread: its own event loop until close(); asyncio.run() then cancels what is left
        and joins the loop's worker threads."""
        try:
            asyncio.run(self._serve())
        except BaseException as exc:
            if self._started:
                log.exception("broker %d stopped with an error", self.server.broker_id)
            else:
                self._error = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        await self.server.start()
        self._started = True
        self._ready.set()
        try:
            if not self._closing:  # close() may have come while the broker was starting
                await self._stop.wait()
        finally:
            await self.server.stop()

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.server.advertised_host}:{self.server.advertised_port}"

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def listeners(self) -> dict[str, str]:
        """``{listener name: "host:port"}``, e.g. ``{"PLAINTEXT": "127.0.0.1:40123", "SSL": "127.0.0.1:40124"}``:
        where a client of each listener connects (its ``advertised.listeners`` address, with the bound port).
        ``bootstrap_servers`` is the first PLAINTEXT listener's, else the first listener's."""
        return self.server.listeners

    @property
    def metrics_url(self) -> str | None:
        """``http://host:port/metrics``: this broker's Kafka metrics as Prometheus text, under the JMX exporter's
        names (None with ``kafkalab.metrics.port=-1`` or ``kafkalab.metrics.enabled=false``)."""
        return self.server.metrics_url

    @property
    def closed(self) -> bool:
        return not self._thread.is_alive()

    def call(self, fn, *args):
        """Run ``fn(*args)`` on the broker's loop and return its result (for inspection from a notebook)."""
        async def run():
            result = fn(*args)
            return await result if asyncio.iscoroutine(result) else result
        with self._lock:  # once close() has begun, nothing new is scheduled on the loop
            if self._closing:
                raise RuntimeError("this broker is closed")
            future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        return future.result()

    def metrics(self, names=None):
        """This broker's Kafka metrics, scraped from :attr:`metrics_url`: a pandas DataFrame with the columns
        broker, metric (the Prometheus name, e.g. ``kafka_server_brokertopicmetrics_messagesin_total``), labels
        (a dict), value, time. ``names``: a metric name or prefix, or a list of them, to keep only those."""
        url = self.metrics_url
        if url is None:
            raise RuntimeError("this broker serves no metrics (kafkalab.metrics.port=-1 or "
                               "kafkalab.metrics.enabled=false)")
        reader = type(self).metrics_reader
        if reader is None:
            raise RuntimeError("MiniBroker.metrics_reader is not set (import kafkalab, which sets it)")
        return reader({self.server.broker_id: url}, names)

    def authorizer_log(self) -> list[dict]:
        """The authorizer's last decisions, oldest first, as rows for a table (principal, operation, resource,
        host, decision ALLOWED/DENIED, request): what ``kafka.authorizer.logger`` logged at INFO or DEBUG.
        Empty without ``authorizer.class.name``. (The lab's own; Kafka has only the log.)"""
        authorizer = self.server.authorizer
        return [] if authorizer is None else authorizer.decision_rows()

    # -- lab faults (kafkalab.broker.server.faults) --------------------------------------------

    def inject_fault(self, kind: str, api: str | None = None, **options) -> dict:
        """Make this broker misbehave on cue, e.g. ``inject_fault("drop_response", api="Produce", count=2)``
        or ``inject_fault("fail", api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=3)``; see
        :mod:`kafkalab.broker.server.faults`. Returns the fault as :meth:`faults` lists it."""
        return self.call(lambda: self.server.faults.inject(kind, api, **options))

    def faults(self) -> list[dict]:
        """The active faults, with what is left of each."""
        return self.call(self.server.faults.faults)

    def clear_faults(self, fault_id: int | None = None) -> int:
        """End one fault (by id) or all; returns how many ended."""
        return self.call(self.server.faults.clear, fault_id)

    def close(self) -> None:
        """Stop the broker: connections closed, logs flushed, checkpoints and the clean-shutdown marker
        written. Safe to call twice, and from any thread (also at interpreter exit)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("close() cannot run on the broker's own thread (e.g. inside call())")
        with self._lock:
            if not self._closing:
                self._closing = True
                try:
                    if self._loop is not None:  # else the thread sees _closing once the broker started
                        self._loop.call_soon_threadsafe(self._stop.set)
                except RuntimeError:  # the loop has already ended: the broker failed to start
                    pass
        self._thread.join()
        _OPEN.discard(self)
        with self._lock:
            self._cleanup_temp()

    def _cleanup_temp(self) -> None:
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None
        if self._guard is not None:  # its work is done
            self._guard.close()
            self._guard = None

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
