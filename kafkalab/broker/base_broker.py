"""``BaseBroker``: what every kind of broker wires the same way — logs, partitions, coordinators, socket server.

Kafka's two brokers, the ZooKeeper-mode ``kafka.server.KafkaServer`` and the KRaft ``kafka.server.BrokerServer``,
are siblings: both extend the trait ``kafka.server.KafkaBroker`` (here the Protocol
:class:`kafkalab.broker.server.kafka_broker.KafkaBroker`) and differ in where their metadata comes from. So are
kafkalab's: :class:`kafkalab.broker.kafka_server.KafkaServer` (ZooKeeper mode, and the standalone notebook
broker) and :class:`kafkalab.kraft.broker_server.BrokerServer` (KRaft) both subclass this class, which owns the
asyncio loop and the parts they share:

* ``LogManager``        the partition logs under ``log.dirs``
* ``MetadataCache``     the topics, their ids and config overrides
* ``ReplicaManager``    the hosted partitions; produce and fetch go through it
* ``AdminManager``      topic creation/deletion and config changes
* ``GroupCoordinator``  consumer groups and their committed offsets
* ``TransactionCoordinator``, the producer-id manager, the share coordinator and share-partition manager
* ``SocketServer``      the wire protocol's framing; ``KafkaApis`` (:mod:`kafkalab.broker.kafka_apis`)
                        dispatches each request, given the ``ClientQuotaManager`` and ``FaultInjector``

``start()``/``stop()`` run in the broker's own event loop; :mod:`kafkalab.broker.mini` runs that loop in a
thread for notebooks, ``python -m kafkalab.broker`` in a process.

Start-up, in Kafka's order (the steps in *italics* are the hooks each mode implements; a standalone broker,
whose metadata is its own, skips them and creates the partitions of the topics it knows):

1. *start the metadata source* (``_start_metadata_source``: connect to ZooKeeper, or fetch the KRaft metadata
   log), then load the logs already on disk (``_load_logs_on_disk``);
2. the coordinators (``_start_coordinators``: the producer-id manager is the mode's,
   ``make_producer_id_manager``), the log manager's background jobs, then the socket server (the bound port
   must be known to register);
3. *register* (``_register``: the ``/brokers/ids/<id>`` znode, or a registration with the KRaft controller);
4. *start the controller* (``_start_controller``: ZooKeeper mode only).

Stopping: (in a cluster: controlled shutdown,) stop taking requests, stop the jobs and the coordinators,
close the logs cleanly, stop the ZooKeeper-mode controller, and last *stop the metadata source*
(``_stop_metadata_source``).
"""
from __future__ import annotations

import asyncio
import base64
import dataclasses
import errno
import hashlib
import logging
import os
import tempfile
import uuid
from typing import TYPE_CHECKING

from .cluster.partition import Partition
from .common.errors import ErrorCode, KafkaError
from .common.metrics import MetricsRegistry
from .common.metrics.prometheus import MetricsHttpServer, loop_reader
from .coordinator.group.group_coordinator import GroupCoordinator
from .coordinator.share.share_coordinator import ShareCoordinator
from .coordinator.transaction.transaction_coordinator import TransactionCoordinator
from .log.log_manager import LogDirLockedError, LogManager
from .apis import load_all
from .kafka_apis import KafkaApis
from .common.endpoint import Endpoint
from .network.socket_server import SocketServer
from .security.authorizer.acl_authorizer import AclAuthorizer
from .security.authorizer.acl_store import broker_authorizer
from .server.admin_manager import AdminManager
from .server.client_quota_manager import ClientQuotaManager
from .server.config import BrokerConfig, LogConfig
from .server.credential_provider import CredentialProvider
from .server.faults import ControlSocket, FaultInjector
from .server.kafka_broker import ForwardingManagerLike, MetadataMode, ProducerIdGenerator, ZkControllerLike
from .server.metadata_cache import BrokerEndpoint, MetadataCache, TopicMetadata
from .server.fetch_session import FetchManager, FetchSessionCache
from .server.replica_manager import ReplicaManager
from .server.share.persister import SharePersister
from .server.share.share_partition_manager import SharePartitionManager
from .utils.async_util import cancel_and_wait
from .zk.zk_data import parse_kafka_uuid

if TYPE_CHECKING:
    from .zk.kafka_zk_client import KafkaZkClient   # kazoo is imported only when ZooKeeper mode connects

log = logging.getLogger(__name__)


def _primary_endpoint(endpoints: list[Endpoint]) -> Endpoint:
    """The listener ``bootstrap_servers`` and ``port`` name: the first PLAINTEXT one, else the first."""
    return next((e for e in endpoints if e.security_protocol == "PLAINTEXT"), endpoints[0])


def kafka_uuid_string(raw: bytes) -> str:
    """A 16-byte id the way Kafka prints its Uuids: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class StartupError(RuntimeError):
    """The broker cannot start: its log directory or its port cannot be used.

    Kafka logs "Fatal error during KafkaServer startup" with the cause and exits;
    ``python -m kafkalab.broker`` prints the message and exits with status 1.
    """


class BaseBroker:
    """The wiring every broker shares; a subclass says where its metadata comes from (``metadata_mode``) and
    implements the hooks of its mode. Implements :class:`~kafkalab.broker.server.kafka_broker.KafkaBroker`."""

    #: serve requests as soon as the listener is bound (a KRaft broker: only once it is unfenced, as Kafka's)
    REQUESTS_AT_BIND = True

    @staticmethod
    def check_config(config: BrokerConfig) -> None:
        """ValueError naming what is wrong with the configs of this mode, before the broker is built
        (``python -m kafkalab.broker``); a ZooKeeper or standalone broker has nothing of its own to check."""

    def __init__(self, config: BrokerConfig, metadata_mode: MetadataMode):
        self.config = config
        self.broker_id: int = config["broker.id"]
        self.log_dir: str = config["log.dirs"]
        if not self.log_dir:
            raise ValueError("log.dirs must be set")
        #: the listeners (Kafka's ``config.listeners``): one SocketServer each, made below
        self.listener_configs = config.listener_configs
        try:   # before the log directory is locked: bad ssl.* configs fail here
            ssl_contexts, mappers = self.listener_configs.ssl_contexts()
        except ValueError as exc:
            raise StartupError(str(exc)) from exc
        #: each SASL listener's mechanisms and JAAS entries, by listener name (bad sasl.* configs: ValueError here)
        self.sasl_configs = self.listener_configs.sasl_server_configs()
        if metadata_mode is MetadataMode.ZOOKEEPER:   # Kafka 3.9's SCRAM nonce check (4.x: an exact match)
            self.sasl_configs = {name: dataclasses.replace(c, scram_nonce_ends_with=True)
                                 for name, c in self.sasl_configs.items()}
        if metadata_mode is not MetadataMode.STANDALONE:   # how this broker connects to the others (made once)
            try:
                self.listener_configs.inter_broker_client_security()
            except ValueError as exc:
                raise StartupError(str(exc)) from exc
        primary = _primary_endpoint(self.listener_configs.listeners)
        self.host = primary.host or "127.0.0.1"
        self._metadata_mode = metadata_mode
        #: Kafka's metrics of this broker (its Yammer registry), None if ``kafkalab.metrics.enabled`` is false;
        #: served at ``metrics_url`` unless ``kafkalab.metrics.port`` is -1
        self.metrics: MetricsRegistry | None = MetricsRegistry() if config["kafkalab.metrics.enabled"] else None
        self.metrics_server: MetricsHttpServer | None = None
        #: ACL authorization (``authorizer.class.name``); in ZooKeeper mode given its ZooKeeper store in start()
        try:
            self.authorizer: AclAuthorizer | None = broker_authorizer(config, metadata_mode.name, self.log_dir)
        except ValueError as exc:
            raise StartupError(str(exc)) from exc
        log_manager: LogManager | None = None
        try:  # Kafka's LogManager.createAndValidateLogDirs: the directory must exist (or be creatable) and be writable
            log_manager = self.log_manager = LogManager(self.log_dir, config, lock_dir=True)  # one broker per directory
            log_manager.metrics = self.metrics
            self.metadata_cache = MetadataCache(self.log_dir, metadata_mode)
            with tempfile.TemporaryFile(dir=self.log_dir):
                pass
        except LogDirLockedError as exc:  # Kafka's wording: "Failed to acquire lock on file .lock in <dir>. ..."
            raise StartupError(str(exc)) from exc
        except OSError as exc:
            if log_manager is not None:
                log_manager.release_lock()
            raise StartupError(f"Failed to create or validate data directory log.dirs={self.log_dir}: {exc}") from exc
        self.replica_manager = ReplicaManager(self.broker_id, self)
        self.fetch_manager = FetchManager(FetchSessionCache(config["max.incremental.fetch.session.cache.slots"],
                                                            metrics=self.metrics, changes=self.replica_manager))
        self.admin_manager: AdminManager = self._new_admin_manager()
        self.topic_configs: dict[str, LogConfig] = {}
        self.cluster_id = config["cluster.id"] or self._derive_cluster_id()
        #: client quotas (KIP-13/219) and the lab's fault injection, handed to the request handling
        self.quotas = ClientQuotaManager(self)
        self.faults = FaultInjector(self, load_all().values())
        self._fault_control: ControlSocket | None = None   # the faults' control socket, in cluster mode
        #: the SCRAM credentials (AlterUserScramCredentials) the SASL listeners authenticate against
        self.credential_provider = CredentialProvider(self)
        self.kafka_apis = KafkaApis(self, self.quotas, self.faults, sasl_configs=self.sasl_configs,
                                    credentials=self.credential_provider.cache)
        #: one SocketServer per listener, by listener name (Kafka's one Acceptor per endpoint); ``socket_server`` is
        #: the primary listener's (``bootstrap_servers``)
        self.socket_servers: dict[str, SocketServer] = {}
        for processor, endpoint in enumerate(self.listener_configs.listeners):
            name = endpoint.listener_name
            server = self.socket_servers[name] = SocketServer(
                endpoint.host or "127.0.0.1", endpoint.port, config["socket.request.max.bytes"],
                self.kafka_apis.handle, name, endpoint.security_protocol, ssl_contexts.get(name), mappers[name],
                network_processor=processor)
            if self.metrics is not None:   # kafka.server:type=socket-server-metrics,listener=..,networkProcessor=..
                server.metrics.register(self.metrics, server.connection_count)
        self.socket_server = self.socket_servers[primary.listener_name]
        self.group_coordinator: GroupCoordinator | None = None   # set in start() once the loop runs
        self.producer_id_manager: ProducerIdGenerator | None = None
        self.transaction_coordinator: TransactionCoordinator | None = None   # set in start(), as the group coordinator
        self.share_partition_manager: SharePartitionManager | None = None   # KIP-932 share-partitions and sessions
        self.share_coordinator: ShareCoordinator | None = None   # KIP-932 share coordinator (__share_group_state)
        self._background: list[asyncio.Task] = []
        # -- one mode's parts: None in the others ------------------------------------------------------
        self.zk_client: KafkaZkClient | None = None            # ZooKeeper mode: connected in start()
        self.kafka_controller: ZkControllerLike | None = None  # ZooKeeper mode: active on one broker of the cluster
        self.forwarding_manager: ForwardingManagerLike | None = None   # KRaft: admin requests to the controller
        self._broker_epoch = -1
        self.loop: asyncio.AbstractEventLoop | None = None
        self._registered = False
        self._stopping = False

    def _new_admin_manager(self) -> AdminManager:
        return AdminManager(self)

    def _derive_cluster_id(self) -> str:
        return kafka_uuid_string(hashlib.sha1(os.path.abspath(self.log_dir).encode()).digest()[:16])

    # -- the metadata mode ----------------------------------------------------------------------------

    @property
    def metadata_mode(self) -> MetadataMode:
        return self._metadata_mode

    @property
    def in_cluster(self) -> bool:
        """The metadata comes from a controller (ZooKeeper or KRaft mode), not from this broker itself."""
        return self._metadata_mode is not MetadataMode.STANDALONE

    @property
    def broker_epoch(self) -> int:
        """-1 until registered; ZooKeeper mode sets it when it registers (a KRaft broker computes it)."""
        return self._broker_epoch

    @broker_epoch.setter
    def broker_epoch(self, value: int) -> None:
        self._broker_epoch = value

    @property
    def fenced_broker_nodes(self) -> list[BrokerEndpoint]:
        """The registered brokers the controller keeps fenced: only KRaft has them."""
        return []

    def make_producer_id_manager(self) -> ProducerIdGenerator:
        raise NotImplementedError

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the logs, start the background jobs and the coordinators, then listen.

        If a step fails, what was started is stopped again before the error is
        raised (no task or open file is left). As in Kafka, the clean-shutdown
        marker is written back only if every log was loaded, so a start that
        failed half-way through loading still recovers the logs next time.
        """
        self.loop = asyncio.get_running_loop()
        logs_loaded = False
        try:
            if self.in_cluster:
                await self._start_metadata_source()
                await asyncio.to_thread(self._load_logs_on_disk)
            else:
                for topic in self.metadata_cache.topics.values():
                    for index in range(topic.num_partitions):
                        self.make_partition(topic, index)
            logs_loaded = True
            group_coordinator = self._start_coordinators()
            self.log_manager.start(self)  # retention, cleaner, flusher, checkpoints
            await group_coordinator.start()  # replays __consumer_offsets before the first request
            if self.transaction_coordinator is not None:
                await self.transaction_coordinator.start()   # loads __transaction_state, aborts timed-out ones
            await self._listen()
            self._start_metrics_server()
            if self.in_cluster:
                await self._register()
                await self._start_controller()
        except BaseException:
            try:
                if logs_loaded:
                    await self.stop(controlled=False)
                else:
                    for log_ in self.log_manager.logs.values():
                        log_.close()
                    self.log_manager.release_lock()
                    self._stop_metadata_source()
            except Exception:
                log.exception("broker %d: error while undoing a failed start", self.broker_id)
            raise
        log.info("broker %d listening on %s:%d, log.dirs=%s", self.broker_id, self.host, self.port, self.log_dir)

    # the hooks of a mode whose metadata comes from a controller (never called on a standalone broker,
    # except _stop_metadata_source, which then has nothing to stop)

    async def _start_metadata_source(self) -> None:
        """Start where the metadata comes from (before the logs on disk are loaded)."""

    def _load_logs_on_disk(self) -> None:
        """Open (and, after a crash, recover) the partition logs on disk; runs in a thread."""

    async def _register(self) -> None:
        """Make this broker known to the cluster (after the socket server is bound)."""

    async def _start_controller(self) -> None:
        """Start the controller this broker runs, if its mode has one (after registering)."""

    def _stop_metadata_source(self) -> None:
        """The last step of stopping (and of undoing a failed start)."""

    async def controlled_shutdown(self) -> bool:
        """Move this broker's leaderships away before stopping; whether it succeeded."""
        return False

    def _start_coordinators(self) -> GroupCoordinator:
        """The coordinators, once the loop runs: groups, producer ids (the mode's), transactions, and KIP-932's
        share coordinator (the states in the ``__share_group_state`` partitions this broker leads) with the
        share-partitions this broker leads and their share sessions."""
        group_coordinator = self.group_coordinator = GroupCoordinator(self)
        self.producer_id_manager = self.make_producer_id_manager()
        self.transaction_coordinator = TransactionCoordinator(self)
        coordinator = self.share_coordinator = ShareCoordinator(self)
        coordinator.start()
        manager = SharePartitionManager(self, persister=SharePersister(self, coordinator))
        if self.in_cluster:
            if self.zk_client is not None:   # a KRaft broker has no ZooKeeper
                manager.load_zk_group_configs()
            self.replica_manager.leadership_listeners.append(manager.on_leadership_change)
        self.share_partition_manager = manager
        # KIP-932: a share session ends with its connection (its acquired records are released)
        for server in self.socket_servers.values():
            server.add_connection_close_listener(manager.connection_closed)
        return group_coordinator

    async def _listen(self) -> None:
        server = self.socket_server
        try:
            for server in self.socket_servers.values():
                await server.start(enable_request_processing=self.REQUESTS_AT_BIND)
                self.kafka_apis.local_addresses[server.listener_name] = (server.host, server.port)
            if self.in_cluster:
                if self.zk_client is not None:   # client quotas from /config/clients (a KRaft broker: from records)
                    await asyncio.to_thread(self.quotas.load_zk)
                    await asyncio.to_thread(self.credential_provider.load_zk)   # SCRAM users from /config/users
                self._fault_control = ControlSocket(self.faults, self.log_dir)
                await self._fault_control.start()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EADDRINUSE:
                reason = "the port is in use (is another broker running?); choose another port, or 0 for a free one"
            raise StartupError(f"Socket server failed to bind to {server.host}:{server.port}: "
                               f"{reason}") from exc

    def _start_metrics_server(self) -> None:
        """``http://host:port/metrics`` (kafkalab's own: Kafka's metrics are JMX MBeans), read on this loop."""
        port = self.config["kafkalab.metrics.port"]
        if self.metrics is None or port == -1:
            return
        server = MetricsHttpServer(self.metrics, self.host, port, read=loop_reader(asyncio.get_running_loop()))
        try:
            server.start()
        except OSError as exc:
            raise StartupError(f"the metrics server failed to bind to {self.host}:{port} "
                               f"(kafkalab.metrics.port): {exc.strerror or exc}") from exc
        self.metrics_server = server

    @property
    def metrics_url(self) -> str | None:
        """Where this broker's metrics are served as Prometheus text, once started (None: not served)."""
        return self.metrics_server.url if self.metrics_server is not None else None

    def _stop_metrics_server(self) -> None:
        server, self.metrics_server = self.metrics_server, None
        if server is not None:
            server.stop()

    def _clean_shutdown_broker_epoch(self) -> int:
        """What the clean-shutdown marker records: nothing in ZooKeeper mode (a KRaft broker: its epoch)."""
        return -1

    async def stop(self, controlled: bool = True) -> None:
        """Kafka's shutdown order: (cluster mode: controlled shutdown,) stop taking requests, stop the
        jobs, then close the logs cleanly (cluster mode: then the controller and the metadata source)."""
        try:
            self._stopping = True
            if self.in_cluster and controlled and self._registered and self.config["controlled.shutdown.enable"]:
                try:
                    await self.controlled_shutdown()
                except Exception:
                    log.exception("broker %d: controlled shutdown failed; shutting down anyway", self.broker_id)
            for task in self._background:  # at once, so that no job starts while the connections close
                task.cancel()
            for server in self.socket_servers.values():
                await server.stop()
            if self._fault_control is not None:
                await self._fault_control.stop()
            await self._requests_stopped()
            await cancel_and_wait(self._background)
            self._background.clear()
            await self._jobs_stopped()
            if self.share_partition_manager is not None:
                await self.share_partition_manager.stop()
            if self.group_coordinator is not None:
                await self.group_coordinator.stop()
            if self.transaction_coordinator is not None:
                await self.transaction_coordinator.stop()
            await self.replica_manager.shutdown()   # cluster mode: the replica fetchers stop
            self.log_manager.close(self._clean_shutdown_broker_epoch())
            if self.kafka_controller is not None:
                try:
                    await self.kafka_controller.shutdown()
                except Exception:
                    log.exception("broker %d: error while stopping the controller", self.broker_id)
            self._stop_metadata_source()
        finally:   # its thread and socket go whatever failed above
            self._stop_metrics_server()

    async def _requests_stopped(self) -> None:
        """Stopping: no request is served any more (a KRaft broker stops applying metadata here)."""

    async def _jobs_stopped(self) -> None:
        """Stopping: the background jobs are stopped (ZooKeeper mode stops its config change listener here)."""

    def spawn(self, coro) -> asyncio.Task:
        """Run a background job on the broker's loop; it is cancelled at stop()."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.append(task)
        return task

    # -- what the APIs need ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return self.socket_server.port

    def enable_request_processing(self) -> None:
        for server in self.socket_servers.values():
            server.enable_request_processing()

    def advertised_endpoint(self, listener_name: str) -> tuple[str, int] | None:
        """Where clients of ``listener_name`` are told to connect: its ``advertised.listeners`` entry, else its
        listener; a wildcard host is this broker's host, port 0 the bound port (Kafka's ``KafkaServer.startup``)."""
        endpoint = self.listener_configs.advertised(listener_name)
        if endpoint is None:
            return None
        server = self.socket_servers.get(listener_name)
        host = endpoint.host or (server.host if server is not None else self.host)
        return host, endpoint.port or (server.port if server is not None else 0)

    @property
    def advertised_listeners(self) -> dict[str, tuple[str, int]]:
        """Every advertised listener (less the controller's), by name, as Metadata gives them."""
        out = {}
        for endpoint in self.listener_configs.advertised_listeners:
            address = self.advertised_endpoint(endpoint.listener_name)
            if address is not None:
                out[endpoint.listener_name] = address
        return out

    @property
    def listeners(self) -> dict[str, str]:
        """``{listener name: "host:port"}``: where a client of each listener connects (advertised, bound port)."""
        return {name: f"{host}:{port}" for name, (host, port) in self.advertised_listeners.items()}

    @property
    def advertised_host(self) -> str:
        address = self.advertised_endpoint(self.socket_server.listener_name)
        return address[0] if address is not None else self.host

    @property
    def advertised_port(self) -> int:
        """The port of ``advertised.listeners`` (what clients are told to connect to), else the bound port."""
        address = self.advertised_endpoint(self.socket_server.listener_name)
        return address[1] if address is not None else self.port

    @property
    def live_brokers(self) -> list[tuple[int, str, int]]:
        """(id, host, port) of every live broker; a standalone broker knows only itself, a broker in
        cluster mode what the controller's last UpdateMetadata said."""
        if self.in_cluster:
            return [(b.id, b.host, b.port) for b in self.live_broker_nodes]
        return [(self.broker_id, self.advertised_host, self.advertised_port)]

    @property
    def live_broker_nodes(self) -> list[BrokerEndpoint]:
        """The live brokers with their racks (Metadata and DescribeCluster show racks)."""
        if self.in_cluster:
            return sorted(self.metadata_cache.alive_brokers.values(), key=lambda b: b.id)
        return [BrokerEndpoint(self.broker_id, self.advertised_host, self.advertised_port, self.config["broker.rack"],
                               self.advertised_listeners)]

    def live_broker_nodes_for(self, listener_name: str) -> list[BrokerEndpoint]:
        """The live brokers as clients of ``listener_name`` reach them, those without that listener left out
        (Kafka's ``metadataCache.getAliveBrokerNodes(request.context.listenerName)``)."""
        nodes = (b.for_listener(listener_name) for b in self.live_broker_nodes)
        return [n for n in nodes if n is not None]

    @property
    def live_broker_count(self) -> int:
        return len(self.live_brokers)

    @property
    def controller_id(self) -> int:
        if self.in_cluster:
            cid = self.metadata_cache.controller_id
            return -1 if cid is None else cid
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

    def _topic_log_config(self, topic: str, overrides: dict[str, str]) -> LogConfig:
        """The topic's one live LogConfig, (re)set to ``overrides``; a config this broker does not know
        is skipped with a warning rather than keeping the log closed."""
        cfg = self.topic_configs.get(topic)
        if cfg is None:
            cfg = self.topic_configs[topic] = LogConfig(self.config)
        try:
            cfg.replace(overrides)
        except ValueError as exc:
            log.warning("broker %d: topic %s: ignoring configs from ZooKeeper: %s", self.broker_id, topic, exc)
        return cfg

    # -- cluster mode: what the controller tells this broker ----------------------------------------

    def get_or_create_partition(self, topic: str, index: int, topic_id: uuid.UUID) -> Partition:
        """The local replica of a partition the controller assigned to this broker (LeaderAndIsr),
        with its log created if it is new. Called by ``ReplicaManager.become_leader_or_follower``.

        The topic's configs come from ``/config/topics/<t>``; the metadata cache gets an entry for the
        topic if UpdateMetadata has not brought one yet (Metadata does not show it until then). A partition
        directory holding another topic id (the topic was deleted and re-created while this broker was away) is
        INCONSISTENT_TOPIC_ID."""
        existing = self.replica_manager.partitions.get((topic, index))
        if existing is not None:
            return existing
        meta = self.metadata_cache.get(topic)
        if meta is None or meta.topic_id != topic_id:
            configs = self.zk_client.get_topic_config(topic) if self.zk_client is not None else {}
            meta = self.metadata_cache.ensure_topic(topic, topic_id, index + 1, configs)
            self._topic_log_config(topic, configs)
        else:
            meta.num_partitions = max(meta.num_partitions, index + 1)
        on_disk = _read_partition_metadata(os.path.join(self.log_dir, f"{topic}-{index}"))
        if on_disk is not None and on_disk != topic_id:
            raise KafkaError(ErrorCode.INCONSISTENT_TOPIC_ID,
                             f"{topic}-{index}: the log on disk belongs to topic id {on_disk}, not {topic_id}")
        return self.make_partition(meta, index)

    async def apply_update_metadata(self, controller_id: int, topic_states, live_brokers) -> None:
        """UpdateMetadata: update the cache; read the configs of topics new to it; forget the committed
        offsets of deleted topics; wake CreateTopics/DeleteTopics waiting for the metadata."""
        new_topics, deleted = self.metadata_cache.update_metadata(controller_id, topic_states, live_brokers)
        for name in new_topics:
            meta = self.metadata_cache.get(name)
            configs = await asyncio.to_thread(self.zk_client.get_topic_config, name) if self.zk_client else {}
            if meta is not None:
                meta.configs = configs
                if name in self.topic_configs:
                    self._topic_log_config(name, configs)
        gone_topics = {t for t, _ in deleted if self.metadata_cache.get(t) is None}
        for name in gone_topics:
            self.topic_configs.pop(name, None)
            if self.group_coordinator is not None:
                self.group_coordinator.delete_offsets_of_topic(name)
        self.admin_manager.metadata_updated()

    def apply_topic_config_change(self, topic: str, configs: dict[str, str]) -> None:
        """A config change notification for ``topic``: its new overrides reach the live LogConfig
        (in place, as ``AdminManager._apply_topic_overrides`` does) and the metadata cache."""
        meta = self.metadata_cache.get(topic)
        if meta is not None:
            meta.configs = dict(configs)
        if topic in self.topic_configs:
            self._topic_log_config(topic, configs)
        log.info("broker %d: topic %s configs changed: %s", self.broker_id, topic, configs)

    def apply_topic_configs(self, topic: str, configs: dict) -> None:
        """KRaft: a topic's configs as the metadata log has them now, to its live LogConfig."""
        self._topic_log_config(topic, dict(configs))


def _read_partition_metadata(directory: str) -> uuid.UUID | None:
    path = os.path.join(directory, "partition.metadata")
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "topic_id":
                    return parse_kafka_uuid(value.strip())
    except (OSError, ValueError):
        return None
    return None


def _write_partition_metadata(directory: str, topic_id: uuid.UUID) -> None:
    """KIP-516's ``partition.metadata`` file: the topic id, base64 as Kafka prints Uuids."""
    path = os.path.join(directory, "partition.metadata")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(f"version: 0\ntopic_id: {kafka_uuid_string(topic_id.bytes)}\n")
