"""``KafkaServer``: one broker — its configs, logs, partitions, coordinators and socket server.

Named after Kafka's ``kafka.server.KafkaServer`` (the ZooKeeper-mode broker),
it wires the parts together and owns the asyncio loop they run on:

* ``LogManager``        the partition logs under ``log.dirs``
* ``MetadataCache``     the topics, their ids and config overrides
* ``ReplicaManager``    the hosted partitions; produce and fetch go through it
* ``AdminManager``      topic creation/deletion and config changes
* ``GroupCoordinator``  consumer groups and their committed offsets
* ``SocketServer``      the wire protocol

``start()``/``stop()`` run in the broker's own event loop; :mod:`kafkalab.broker.mini`
runs that loop in a thread for notebooks, ``python -m kafkalab.broker`` in a process.
"""
from __future__ import annotations

import asyncio
import base64
import errno
import hashlib
import logging
import os
import tempfile
import uuid

from .admin_manager import AdminManager
from .config import BrokerConfig, LogConfig
from .log.log_manager import LogManager
from .metadata import MetadataCache, TopicMetadata
from .partition import Partition
from .replica_manager import ReplicaManager
from .server import SocketServer

log = logging.getLogger("kafkalab.broker")


def _listener_host_port(listeners: str) -> tuple[str, int]:
    first = listeners.split(",")[0].strip()
    _, _, hostport = first.rpartition("://")
    host, _, port = hostport.rpartition(":")
    return host or "127.0.0.1", int(port or 0)


def kafka_uuid_string(raw: bytes) -> str:
    """A 16-byte id the way Kafka prints its Uuids: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class StartupError(RuntimeError):
    """The broker cannot start: its log directory or its port cannot be used.

    Kafka logs "Fatal error during KafkaServer startup" with the cause and exits;
    ``python -m kafkalab.broker`` prints the message and exits with status 1.
    """


class KafkaServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id: int = config["broker.id"]
        self.log_dir: str = config["log.dirs"]
        if not self.log_dir:
            raise ValueError("log.dirs must be set")
        self.host, port = _listener_host_port(config["listeners"])
        try:  # Kafka's LogManager.createAndValidateLogDirs: the directory must exist (or be creatable) and be writable
            self.log_manager = LogManager(self.log_dir, config)
            self.metadata_cache = MetadataCache(self.log_dir)
            with tempfile.TemporaryFile(dir=self.log_dir):
                pass
        except OSError as exc:
            raise StartupError(f"Failed to create or validate data directory log.dirs={self.log_dir}: {exc}") from exc
        self.replica_manager = ReplicaManager(self.broker_id)
        self.admin_manager = AdminManager(self)
        self.topic_configs: dict[str, LogConfig] = {}
        self.cluster_id = config["cluster.id"] or self._derive_cluster_id()
        self.socket_server = SocketServer(self, self.host, port, config["socket.request.max.bytes"])
        self.group_coordinator = None   # set in start() once the loop runs
        self.producer_id_manager = None
        self._background: list[asyncio.Task] = []

    def _derive_cluster_id(self) -> str:
        return kafka_uuid_string(hashlib.sha1(os.path.abspath(self.log_dir).encode()).digest()[:16])

    # -- lifecycle ------------------------------------------------------------

    async def start(self) -> None:
        """Load the logs, start the background jobs and the coordinators, then listen.

        If a step fails, what was started is stopped again before the error is
        raised (no task or open file is left). As in Kafka, the clean-shutdown
        marker is written back only if every log was loaded, so a start that
        failed half-way through loading still recovers the logs next time.
        """
        from .coordinator import make_coordinators
        logs_loaded = False
        try:
            for topic in self.metadata_cache.topics.values():
                for index in range(topic.num_partitions):
                    self.make_partition(topic, index)
            logs_loaded = True
            self.group_coordinator, self.producer_id_manager = make_coordinators(self)
            self.log_manager.start(self)  # retention, cleaner, flusher, checkpoints
            await self.group_coordinator.start()  # replays __consumer_offsets before the first request
            await self._listen()
        except BaseException:
            try:
                if logs_loaded:
                    await self.stop()
                else:
                    for log_ in self.log_manager.logs.values():
                        log_.close()
            except Exception:
                log.exception("broker %d: error while undoing a failed start", self.broker_id)
            raise
        log.info("broker %d listening on %s:%d, log.dirs=%s", self.broker_id, self.host, self.port, self.log_dir)

    async def _listen(self) -> None:
        try:
            await self.socket_server.start()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EADDRINUSE:
                reason = "the port is in use (is another broker running?); choose another port, or 0 for a free one"
            raise StartupError(f"Socket server failed to bind to {self.host}:{self.socket_server.port}: "
                               f"{reason}") from exc

    async def stop(self) -> None:
        """Kafka's shutdown order: stop taking requests, stop the jobs, then close the logs cleanly."""
        for task in self._background:  # at once, so that no job starts while the connections close
            task.cancel()
        await self.socket_server.stop()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background.clear()
        if self.group_coordinator is not None:
            await self.group_coordinator.stop()
        self.log_manager.close()

    def spawn(self, coro) -> asyncio.Task:
        """Run a background job on the broker's loop; it is cancelled at stop()."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.append(task)
        return task

    # -- what the APIs need ----------------------------------------------------

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def advertised_host(self) -> str:
        adv = self.config["advertised.listeners"]
        return _listener_host_port(adv)[0] if adv else self.host

    @property
    def advertised_port(self) -> int:
        """The port of ``advertised.listeners`` (what clients are told to connect to), else the bound port."""
        adv = self.config["advertised.listeners"]
        return (_listener_host_port(adv)[1] if adv else 0) or self.port

    @property
    def live_brokers(self) -> list[tuple[int, str, int]]:
        """(id, host, port) of every live broker; a standalone broker knows only itself."""
        return [(self.broker_id, self.advertised_host, self.advertised_port)]

    @property
    def live_broker_count(self) -> int:
        return len(self.live_brokers)

    @property
    def controller_id(self) -> int:
        return self.broker_id

    def log_config_for(self, topic: TopicMetadata) -> LogConfig:
        cfg = self.topic_configs.get(topic.name)
        if cfg is None:
            cfg = self.topic_configs[topic.name] = LogConfig(self.config, topic.configs)
        return cfg

    def make_partition(self, topic: TopicMetadata, index: int) -> Partition:
        log_ = self.log_manager.get_or_create_log(topic.name, index, self.log_config_for(topic))
        _write_partition_metadata(log_.dir, topic.topic_id)
        partition = Partition(topic.name, index, log_, self.broker_id)
        self.replica_manager.add_partition(partition)
        return partition


def _write_partition_metadata(directory: str, topic_id: uuid.UUID) -> None:
    """KIP-516's ``partition.metadata`` file: the topic id, base64 as Kafka prints Uuids."""
    path = os.path.join(directory, "partition.metadata")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(f"version: 0\ntopic_id: {kafka_uuid_string(topic_id.bytes)}\n")
