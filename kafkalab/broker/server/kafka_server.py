"""``KafkaServer``: one broker — its configs, logs, partitions, coordinators and socket server.

Named after Kafka's ``kafka.server.KafkaServer`` (the ZooKeeper-mode broker),
it wires the parts together and owns the asyncio loop they run on:

* ``LogManager``        the partition logs under ``log.dirs``
* ``MetadataCache``     the topics, their ids and config overrides
* ``ReplicaManager``    the hosted partitions; produce and fetch go through it
* ``AdminManager``      topic creation/deletion and config changes
* ``GroupCoordinator``  consumer groups and their committed offsets
* ``SocketServer``      the wire protocol's framing; ``KafkaApis`` (:mod:`kafkalab.broker.kafka_apis`)
                        dispatches each request, given the ``ClientQuotaManager`` and ``FaultInjector``

``start()``/``stop()`` run in the broker's own event loop; :mod:`kafkalab.broker.mini`
runs that loop in a thread for notebooks, ``python -m kafkalab.broker`` in a process.

**Cluster mode** (``zookeeper.connect`` set; ``self.zk_mode``) follows the order of
Kafka's ``KafkaServer.startup``:

1. connect to ZooKeeper (``zookeeper.session.timeout.ms``, ``zookeeper.connection.timeout.ms``)
   and create the top-level paths;
2. read the cluster id from ``/cluster/id``, or write a new one there (first broker);
3. load the logs already on disk (partitions are then created as the controller
   says, by LeaderAndIsr: ``get_or_create_partition``);
4. start the coordinators and the socket server (the bound port must be known to register);
5. register the broker: the ephemeral znode ``/brokers/ids/<id>`` with its endpoint; the
   znode's czxid is the *broker epoch*;
6. start the controller (``KafkaController``): one broker of the cluster wins the
   election through ``/controller`` and drives the others.

If the ZooKeeper session expires (the broker was frozen longer than
``zookeeper.session.timeout.ms``, say with SIGSTOP), ZooKeeper deletes the
ephemeral registration and the controller treats the broker as dead. When the
client reconnects with a new session the broker registers again, under a new
broker epoch, as Kafka's controller does on ``RegisterBrokerAndReelect``.

Stopping in cluster mode first asks the controller to move leadership away
(controlled shutdown, ``controlled.shutdown.enable``), then stops as a standalone
broker does, and closes the ZooKeeper session last, which removes the registration.
Simplification: a restarted broker whose old registration is still there (its old
session has not expired yet) waits for it to go, up to the session timeout, instead
of failing at once as Kafka does.
"""
from __future__ import annotations

import asyncio
import base64
import errno
import hashlib
import logging
import os
import tempfile
import time
import uuid

from .admin_manager import AdminManager
from ..utils.async_util import cancel_and_wait
from .config import BrokerConfig, LogConfig
from ..log.log_manager import LogDirLockedError, LogManager
from ..common.errors import ErrorCode, KafkaError
from .metadata_cache import BrokerEndpoint, MetadataCache, TopicMetadata
from ..cluster.partition import Partition
from .replica_manager import ReplicaManager
from ..network.socket_server import SocketServer
from ..kafka_apis import KafkaApis
from .client_quota_manager import ClientQuotaManager
from .faults import ControlSocket, FaultInjector

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
        #: cluster mode: ZooKeeper holds the metadata, a controller drives the brokers
        self.zk_mode: bool = bool(config["zookeeper.connect"])
        self.log_manager = None
        try:  # Kafka's LogManager.createAndValidateLogDirs: the directory must exist (or be creatable) and be writable
            self.log_manager = LogManager(self.log_dir, config, lock_dir=True)  # .lock: one broker per directory
            self.metadata_cache = MetadataCache(self.log_dir, zk_mode=self.zk_mode)
            with tempfile.TemporaryFile(dir=self.log_dir):
                pass
        except LogDirLockedError as exc:  # Kafka's wording: "Failed to acquire lock on file .lock in <dir>. ..."
            raise StartupError(str(exc)) from exc
        except OSError as exc:
            if self.log_manager is not None:
                self.log_manager.release_lock()
            raise StartupError(f"Failed to create or validate data directory log.dirs={self.log_dir}: {exc}") from exc
        self.replica_manager = ReplicaManager(self.broker_id, self)
        self.admin_manager = AdminManager(self)
        self.topic_configs: dict[str, LogConfig] = {}
        self.cluster_id = config["cluster.id"] or self._derive_cluster_id()
        self.forwarding_manager = None        # a KRaft broker's ForwardingManager (kafkalab.kraft)
        #: client quotas (KIP-13/219) and the lab's fault injection, handed to the request handling
        self.quotas = ClientQuotaManager(self)
        self.faults = FaultInjector(self)
        self._fault_control: ControlSocket | None = None   # the faults' control socket, in cluster mode
        self.kafka_apis = KafkaApis(self, self.quotas, self.faults)
        self.socket_server = SocketServer(self.host, port, config["socket.request.max.bytes"], self.kafka_apis.handle)
        self.group_coordinator = None   # set in start() once the loop runs
        self.producer_id_manager = None
        self.transaction_coordinator = None   # set in start(), as the group coordinator
        self.share_partition_manager = None   # KIP-932 share-partitions and share sessions, set in start()
        self.share_coordinator = None         # KIP-932 share coordinator (__share_group_state), set in start()
        self._background: list[asyncio.Task] = []
        # -- cluster mode ----------------------------------------------------------
        self.zk_client = None           # KafkaZkClient, connected in start()
        self.kafka_controller = None    # KafkaController, active on one broker of the cluster
        self.broker_epoch: int = -1     # czxid of /brokers/ids/<id>
        self.loop: asyncio.AbstractEventLoop | None = None
        self.config_change_listener = None
        self._session_lost = False
        self._registered = False
        self._stopping = False

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
        from ..coordinator import make_coordinators, make_share_partition_manager, make_transaction_coordinator
        self.loop = asyncio.get_running_loop()
        logs_loaded = False
        try:
            if self.zk_mode:
                await self._start_zookeeper()
                await asyncio.to_thread(self._load_logs_on_disk)
            else:
                for topic in self.metadata_cache.topics.values():
                    for index in range(topic.num_partitions):
                        self.make_partition(topic, index)
            logs_loaded = True
            self.group_coordinator, self.producer_id_manager = make_coordinators(self)
            self.transaction_coordinator = make_transaction_coordinator(self)
            self.share_partition_manager = make_share_partition_manager(self)
            if self.share_partition_manager is not None:   # KIP-932: a share session ends with its connection
                self.socket_server.add_connection_close_listener(self.share_partition_manager.connection_closed)
            self.log_manager.start(self)  # retention, cleaner, flusher, checkpoints
            await self.group_coordinator.start()  # replays __consumer_offsets before the first request
            if self.transaction_coordinator is not None:
                await self.transaction_coordinator.start()   # loads __transaction_state, aborts timed-out ones
            await self._listen()
            if self.zk_mode:
                await self._register_broker()
                await self._start_controller()
        except BaseException:
            try:
                if logs_loaded:
                    await self.stop(controlled=False)
                else:
                    for log_ in self.log_manager.logs.values():
                        log_.close()
                    self.log_manager.release_lock()
                    self._close_zookeeper()
            except Exception:
                log.exception("broker %d: error while undoing a failed start", self.broker_id)
            raise
        log.info("broker %d listening on %s:%d, log.dirs=%s", self.broker_id, self.host, self.port, self.log_dir)

    #: serve requests as soon as the listener is bound (a KRaft broker: only once it is unfenced, as Kafka's)
    REQUESTS_AT_BIND = True

    async def _listen(self) -> None:
        try:
            await self.socket_server.start(enable_request_processing=self.REQUESTS_AT_BIND)
            if self.zk_mode:
                if self.zk_client is not None:   # a KRaft broker (kafkalab.kraft) has none
                    await asyncio.to_thread(self.quotas.load_zk)
                self._fault_control = ControlSocket(self.faults, self.log_dir)
                await self._fault_control.start()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EADDRINUSE:
                reason = "the port is in use (is another broker running?); choose another port, or 0 for a free one"
            raise StartupError(f"Socket server failed to bind to {self.host}:{self.socket_server.port}: "
                               f"{reason}") from exc

    def _clean_shutdown_broker_epoch(self) -> int:
        """What the clean-shutdown marker records: nothing in ZooKeeper mode (a KRaft broker: its epoch)."""
        return -1

    async def stop(self, controlled: bool = True) -> None:
        """Kafka's shutdown order: (cluster mode: controlled shutdown,) stop taking requests, stop the
        jobs, then close the logs cleanly (cluster mode: then the controller and the ZooKeeper session)."""
        self._stopping = True
        if self.zk_mode and controlled and self._registered and self.config["controlled.shutdown.enable"]:
            try:
                await self.controlled_shutdown()
            except Exception:
                log.exception("broker %d: controlled shutdown failed; shutting down anyway", self.broker_id)
        for task in self._background:  # at once, so that no job starts while the connections close
            task.cancel()
        await self.socket_server.stop()
        if self._fault_control is not None:
            await self._fault_control.stop()
        await self._requests_stopped()
        await cancel_and_wait(self._background)
        self._background.clear()
        if self.config_change_listener is not None:
            self.config_change_listener.stop()
        if self.share_partition_manager is not None:
            await self.share_partition_manager.stop()
        if self.group_coordinator is not None:
            await self.group_coordinator.stop()
        if self.transaction_coordinator is not None:
            await self.transaction_coordinator.stop()
        shutdown = getattr(self.replica_manager, "shutdown", None)
        if shutdown is not None:  # cluster mode: the replica fetchers stop
            result = shutdown()
            if asyncio.iscoroutine(result):
                await result
        self.log_manager.close(self._clean_shutdown_broker_epoch())
        if self.kafka_controller is not None:
            try:
                await self.kafka_controller.shutdown()
            except Exception:
                log.exception("broker %d: error while stopping the controller", self.broker_id)
        self._close_zookeeper()

    async def _requests_stopped(self) -> None:
        """Stopping: no request is served any more (a KRaft broker stops applying metadata here)."""

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
        """(id, host, port) of every live broker; a standalone broker knows only itself, a broker in
        cluster mode what the controller's last UpdateMetadata said."""
        if self.zk_mode:
            return [(b.id, b.host, b.port) for b in self.live_broker_nodes]
        return [(self.broker_id, self.advertised_host, self.advertised_port)]

    @property
    def live_broker_nodes(self) -> list[BrokerEndpoint]:
        """The live brokers with their racks (Metadata and DescribeCluster show racks)."""
        if self.zk_mode:
            return sorted(self.metadata_cache.alive_brokers.values(), key=lambda b: b.id)
        return [BrokerEndpoint(self.broker_id, self.advertised_host, self.advertised_port, self.config["broker.rack"])]

    @property
    def live_broker_count(self) -> int:
        return len(self.live_brokers)

    @property
    def controller_id(self) -> int:
        if self.zk_mode:
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


    # -- cluster mode: ZooKeeper --------------------------------------------------

    async def _start_zookeeper(self) -> None:
        """Connect (Kafka's ``initZkClient``), create the top-level paths, get or create the cluster id."""
        from ..zk.kafka_zk_client import KafkaZkClient
        cfg = self.config
        session_ms = cfg["zookeeper.session.timeout.ms"]
        connect_ms = cfg["zookeeper.connection.timeout.ms"] or session_ms
        self.zk_client = KafkaZkClient(cfg["zookeeper.connect"], session_timeout_ms=session_ms,
                                       connection_timeout_ms=connect_ms)
        try:
            await asyncio.to_thread(self.zk_client.start)
        except Exception as exc:
            self._close_zookeeper()
            raise StartupError(f"Cannot connect to ZooKeeper at zookeeper.connect={cfg['zookeeper.connect']} "
                               f"within zookeeper.connection.timeout.ms={connect_ms}: {exc or type(exc).__name__}. "
                               f"Is ZooKeeper running?") from exc
        self.zk_client.add_state_listener(self._on_zk_state)
        await asyncio.to_thread(self.zk_client.create_top_level_paths)
        proposed = cfg["cluster.id"] or kafka_uuid_string(uuid.uuid4().bytes)
        self.cluster_id = await asyncio.to_thread(self.zk_client.get_or_create_cluster_id, proposed)
        if cfg["cluster.id"] and cfg["cluster.id"] != self.cluster_id:
            log.warning("broker %d: cluster.id=%s is configured, but ZooKeeper's /cluster/id says %s; using %s",
                        self.broker_id, cfg["cluster.id"], self.cluster_id, self.cluster_id)
        log.info("broker %d: connected to ZooKeeper %s, cluster id %s", self.broker_id, cfg["zookeeper.connect"],
                 self.cluster_id)

    def _close_zookeeper(self) -> None:
        if self.zk_client is not None:
            try:
                self.zk_client.close()
            except Exception:
                log.exception("broker %d: error while closing the ZooKeeper session", self.broker_id)
            self.zk_client = None
            self._registered = False

    def _load_logs_on_disk(self) -> None:
        """Kafka's ``LogManager.loadLogs`` in cluster mode: open (and, after a crash, recover) every
        partition directory, with its topic's configs from ``/config/topics/<t>``. The partitions
        themselves (leader or follower) come later, from the controller's LeaderAndIsr."""
        from ..log.log import parse_partition_dir
        configs: dict[str, dict[str, str]] = {}
        for name in sorted(os.listdir(self.log_dir)):
            parsed = parse_partition_dir(name)
            if not parsed or not os.path.isdir(os.path.join(self.log_dir, name)):
                continue
            topic, index = parsed
            if topic not in configs:
                configs[topic] = self.zk_client.get_topic_config(topic)
            self.log_manager.get_or_create_log(topic, index, self._topic_log_config(topic, configs[topic]))

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

    def _broker_info(self):
        from ..zk import zk_data
        return zk_data.BrokerInfo(self.broker_id, self.advertised_host, self.advertised_port,
                                  self.config["broker.rack"])

    async def _register_broker(self) -> None:
        """Create ``/brokers/ids/<id>`` (ephemeral); its czxid becomes the broker epoch.

        A registration left by this broker's previous process (killed, restarted before its session
        expired) is waited for, up to the session timeout; another live broker with the same id is
        a StartupError."""
        from kazoo.exceptions import NodeExistsError
        deadline = time.monotonic() + self.config["zookeeper.session.timeout.ms"] / 1000 + 2
        waited = False
        while True:
            try:
                self.broker_epoch = await asyncio.to_thread(self.zk_client.register_broker, self._broker_info())
                break
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise StartupError(
                        f"Broker id {self.broker_id} is already registered in ZooKeeper "
                        f"(/brokers/ids/{self.broker_id}) by another session: is another broker running with "
                        f"broker.id={self.broker_id}?") from None
                if not waited:
                    log.warning("broker %d: /brokers/ids/%d is still held by an earlier session; waiting up to "
                                "zookeeper.session.timeout.ms for it to expire", self.broker_id, self.broker_id)
                    waited = True
                await asyncio.sleep(0.25)
        self._registered = True
        log.info("broker %d: registered at /brokers/ids/%d as %s:%d, broker epoch %d", self.broker_id,
                 self.broker_id, self.advertised_host, self.advertised_port, self.broker_epoch)
        if self.config_change_listener is None:
            from .metadata_cache import ConfigChangeListener
            self.config_change_listener = ConfigChangeListener(self)
            self.config_change_listener.start()

    async def _start_controller(self) -> None:
        from ..controller import KafkaController
        self.kafka_controller = KafkaController(self)
        await self.kafka_controller.startup()

    def _on_zk_state(self, state: str) -> None:
        """kazoo's connection listener (on kazoo's thread): hand the state change to the loop."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._zk_state_changed, state)

    def _zk_state_changed(self, state: str) -> None:
        if self._stopping:
            return
        if state == "EXPIRED":
            if not self._session_lost:
                self._session_lost = True
                log.warning("broker %d: ZooKeeper session expired: its registration /brokers/ids/%d is gone "
                            "and the cluster sees this broker as dead", self.broker_id, self.broker_id)
        elif state == "SUSPENDED":
            log.info("broker %d: connection to ZooKeeper lost; reconnecting", self.broker_id)
        elif state == "NEW_SESSION" and not self._stopping and self._registered:
            self._session_lost = False
            self.spawn(self._reregister())

    async def _reregister(self) -> None:
        """A new ZooKeeper session: register again, under a new broker epoch (Kafka's
        ``RegisterBrokerAndReelect``), then let the controller stand for election again."""
        old = self.broker_epoch
        try:
            await self._register_broker()
        except Exception:
            log.exception("broker %d: re-registration after session expiry failed", self.broker_id)
            return
        log.warning("broker %d: new ZooKeeper session: registered again, broker epoch %d -> %d",
                    self.broker_id, old, self.broker_epoch)
        hook = getattr(self.kafka_controller, "on_new_session", None)
        if hook is not None:
            result = hook()
            if asyncio.iscoroutine(result):
                await result

    # -- cluster mode: controlled shutdown -------------------------------------------

    async def controlled_shutdown(self) -> bool:
        """Kafka's ``KafkaServer.controlledShutdown``: ask the controller to move the leadership of this
        broker's partitions to other replicas (and take it out of their ISRs) before stopping, so that
        producers and consumers move on at once instead of waiting for the session timeout.

        Sends ControlledShutdown v3 to the controller; retries ``controlled.shutdown.max.retries`` times,
        ``controlled.shutdown.retry.backoff.ms`` apart, while the controller is unknown, unreachable, or
        answers with partitions remaining. Returns whether it succeeded."""
        from ..apis.messages import build
        from ..apis.zk_messages import CONTROLLED_SHUTDOWN_VERSION, ControlledShutdownRequest
        from ..network.network_client import NetworkClient
        cfg = self.config
        retries = cfg["controlled.shutdown.max.retries"]
        backoff_s = cfg["controlled.shutdown.retry.backoff.ms"] / 1000
        timeout_s = cfg["controller.socket.timeout.ms"] / 1000
        client: NetworkClient | None = None
        remaining_retries = retries
        try:
            while remaining_retries > 0:
                remaining_retries -= 1
                node = self.metadata_cache.alive_broker(self.controller_id)
                if node is None:
                    log.info("broker %d: controlled shutdown: no controller known yet", self.broker_id)
                else:
                    if client is None or (client.host, client.port) != (node.host, node.port):
                        if client is not None:
                            await client.close()
                        client = NetworkClient(node.host, node.port, client_id=f"broker-{self.broker_id}-shutdown",
                                               timeout_s=timeout_s)
                    request = build(ControlledShutdownRequest, CONTROLLED_SHUTDOWN_VERSION,
                                    {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch})
                    try:
                        response = await client.send(request)
                    except (OSError, asyncio.TimeoutError) as exc:
                        log.warning("broker %d: controlled shutdown: controller %d unreachable: %r",
                                    self.broker_id, node.id, exc)
                    else:
                        remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions or []]
                        if response.error_code != 0:
                            log.info("broker %d: controlled shutdown: controller answered %s", self.broker_id,
                                     ErrorCode(response.error_code).name)
                        elif not remaining:
                            log.info("broker %d: controlled shutdown succeeded", self.broker_id)
                            return True
                        else:
                            log.info("broker %d: controlled shutdown: partitions remaining to move: %s",
                                     self.broker_id, remaining)
                if remaining_retries > 0:
                    await asyncio.sleep(backoff_s)
                    log.info("broker %d: retrying controlled shutdown (%d retries remaining)", self.broker_id,
                             remaining_retries)
        finally:
            if client is not None:
                await client.close()
        log.warning("broker %d: proceeding to do an unclean shutdown as all the controlled shutdown attempts "
                    "failed", self.broker_id)
        return False

    # -- cluster mode: what the controller tells this broker ---------------------------

    def get_or_create_partition(self, topic: str, index: int, topic_id: uuid.UUID) -> Partition:
        """The local replica of a partition the controller assigned to this broker (LeaderAndIsr),
        with its log created if it is new. Called by ``ReplicaManager.become_leader_or_follower``.

        The topic's configs come from ``/config/topics/<t>``; the metadata cache gets an entry for the
        topic if UpdateMetadata has not brought one yet. A partition directory holding another topic id
        (the topic was deleted and re-created while this broker was away) is INCONSISTENT_TOPIC_ID."""
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


def _read_partition_metadata(directory: str) -> uuid.UUID | None:
    path = os.path.join(directory, "partition.metadata")
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "topic_id":
                    from ..zk.zk_data import parse_kafka_uuid
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
