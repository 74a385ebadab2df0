"""``BrokerServer``: a mini broker in KRaft mode (``process.roles=broker``), Kafka's ``kafka.server.BrokerServer``.

It is a sibling of the ZooKeeper-mode :class:`~kafkalab.broker.kafka_server.KafkaServer`, as in Kafka (both
implement the ``KafkaBroker`` contract, :mod:`kafkalab.broker.server.kafka_broker`): both subclass
:class:`~kafkalab.broker.base_broker.BaseBroker`, which wires the same logs, partitions, replication, coordinators
and socket server. Its metadata comes from the controller quorum (``MetadataMode.KRAFT``), at the steps of start-up
where ZooKeeper mode uses ZooKeeper (``BaseBroker``'s hooks):

1. start the metadata source (``_start_metadata_source``): fetch ``__cluster_metadata`` from the quorum as an
   **observer** (a :class:`~kafkalab.raft.kafka_raft_client.KafkaRaftClient` whose replica id is this
   broker's id, not a voter: it never votes and never counts for the high watermark), and apply the
   committed records to a :class:`~kafkalab.kraft.metadata_image.MetadataImage`;
2. load the logs on disk (their topics' configs come later, with the metadata);
3. coordinators and the socket server, as before;
4. instead of the ``/brokers/ids/<id>`` znode: **register** (``_register``) with the active controller and heartbeat
   (:class:`~kafkalab.kraft.broker_lifecycle_manager.BrokerLifecycleManager`); from now on every round
   of applied records is published (:class:`~kafkalab.kraft.broker_metadata_publisher.BrokerMetadataPublisher`:
   the metadata cache, becoming leader or follower); start-up completes once the controller has
   unfenced the broker, i.e. once it has read the metadata log up to its own registration;
5. no controller runs in a broker (``process.roles=broker``). A combined node
   (``process.roles=broker,controller``) is a :class:`~kafkalab.kraft.kafka_raft_server.KafkaRaftServer`: its
   broker is this class given the controller's voter (``raft_client``), read instead of an observer of its own.

Stopping: a controlled shutdown through heartbeats (``WantShutDown`` until ``ShouldShutDown``), then
as before; the observer and the lifecycle manager stop last. AlterPartition, the clients' admin requests (forwarded
in Envelopes, :mod:`kafkalab.kraft.forwarding_manager`) and AllocateProducerIds go to the active controller through a
:class:`~kafkalab.kraft.broker_to_controller_channel.BrokerToControllerChannelManager`.
"""
from __future__ import annotations

import asyncio
import logging
import os
import random
import uuid

from ..broker.base_broker import BaseBroker, StartupError
from ..broker.log.log import parse_partition_dir
from ..broker.server.alter_partition_manager import AlterPartitionManager
from ..broker.server.broker_features import FinalizedFeatures
from ..broker.server.kafka_broker import MetadataMode
from ..broker.server.metadata_cache import BrokerEndpoint
from ..broker.common.endpoint import SECURITY_PROTOCOL_IDS
from ..broker.common.message.codec import build
from ..broker.common.message.zk_messages import ALTER_PARTITION_VERSION, AlterPartitionRequest
from ..raft.raft_config import parse_voters
from ..raft.kafka_raft_client import KafkaRaftClient, RaftConfig
from .broker_lifecycle_manager import BrokerLifecycleManager
from .broker_metadata_publisher import BrokerMetadataPublisher
from .broker_to_controller_channel import BrokerToControllerChannelManager
from .forwarding import KRaftAdminManager, RPCProducerIdManager
from .forwarding_manager import ForwardingManager
from .metadata_image import MetadataImage
from .storage_tool import directory_id_of

log = logging.getLogger(__name__)
METADATA_PARTITION_DIR = "__cluster_metadata-0"
STARTUP_UNFENCE_TIMEOUT_S = 60.0


class BrokerServer(BaseBroker):
    REQUESTS_AT_BIND = False   # requests are read once the broker is unfenced (``_register``)

    @staticmethod
    def check_config(config, combined: bool = False) -> None:
        """ValueError naming what is wrong with a KRaft broker's configs (``combined``: the broker of a
        :class:`~kafkalab.kraft.kafka_raft_server.KafkaRaftServer`, which checks its own)."""
        if not combined and config["process.roles"] != "broker":
            raise ValueError("a BrokerServer runs with process.roles=broker (a combined node, broker,controller, "
                             "is a KafkaRaftServer)")
        if not config["controller.quorum.voters"]:
            raise ValueError("process.roles=broker needs controller.quorum.voters")
        if config["zookeeper.connect"]:
            raise ValueError("a KRaft broker has no zookeeper.connect")
        if not combined and config["broker.id"] in parse_voters(config["controller.quorum.voters"]):
            raise ValueError(f"node id {config['broker.id']} is a controller's (controller.quorum.voters): a broker "
                             "needs an id of its own")
        config.listener_configs.controller_client_security()   # the controllers' listener: ValueError if it cannot

    def __init__(self, config, raft_client: KafkaRaftClient | None = None):
        """``raft_client``: a combined node's voter, shared with its controller (Kafka's ``SharedServer``): the
        broker reads the metadata from it instead of fetching as an observer, and neither starts nor closes it."""
        self.check_config(config, combined=raft_client is not None)
        super().__init__(config, MetadataMode.KRAFT)
        self.forwarding_manager = ForwardingManager(self)
        self.voters = parse_voters(config["controller.quorum.voters"])
        self.metadata_log_dir = config["metadata.log.dir"] or self.log_dir
        self.raft_client: KafkaRaftClient | None = raft_client
        self._owns_raft_client = raft_client is None
        self.image = MetadataImage()
        self.publisher = BrokerMetadataPublisher(self)
        try:   # how this broker connects to the controllers' listener (controller.listener.names)
            self.controller_security = self.listener_configs.controller_client_security()
        except ValueError as exc:
            raise StartupError(str(exc)) from exc
        self.controller_channel = BrokerToControllerChannelManager(
            self.broker_id, self.voters, self._quorum_leader, config["controller.quorum.request.timeout.ms"],
            security=self.controller_security)
        self.lifecycle: BrokerLifecycleManager | None = None
        self._publishing = False
        self._publish_lock = asyncio.Lock()   # a publish runs whole: stopping waits for the one under way
        self._metadata_task: asyncio.Task | None = None
        self.replica_manager.alter_partition_manager = AlterPartitionManager(
            self.broker_id, send=self._send_alter_partition, broker=self)

    def _new_admin_manager(self) -> KRaftAdminManager:
        return KRaftAdminManager(self)

    def _start_coordinators(self):
        """As every broker's, and Kafka 4's new group coordinator's metrics (``BrokerServer`` builds its
        ``GroupCoordinatorMetrics``): ``kafka.server:type=group-coordinator-metrics``, which a ZooKeeper-mode or
        standalone broker (Kafka 3.9's) has not."""
        group_coordinator = super()._start_coordinators()
        if self.metrics is not None:
            group_coordinator.coordinator_metrics.register(self.metrics)
        return group_coordinator

    def make_producer_id_manager(self) -> RPCProducerIdManager:
        return RPCProducerIdManager(self)

    def _quorum_leader(self) -> int:
        return self.raft_client.quorum.leader_id if self.raft_client is not None else -1

    @property
    def fenced_broker_nodes(self) -> list[BrokerEndpoint]:
        """The registered brokers the controller has fenced (DescribeCluster v2 with include_fenced_brokers)."""
        return self.publisher.live_brokers(self.image, fenced=True)

    @property
    def broker_epoch(self) -> int:
        """Given by the controller at registration; the lifecycle manager holds it."""
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def _clean_shutdown_broker_epoch(self) -> int:
        return self.broker_epoch

    # -- the hooks of BaseBroker: the KRaft metadata -------------------------------------------------

    async def _start_metadata_source(self) -> None:
        """Start the metadata observer (where ZooKeeper mode connects to ZooKeeper)."""
        if not self._owns_raft_client:   # combined: the controller's voter already runs
            self._metadata_task = asyncio.get_running_loop().create_task(self._metadata_loop())
            return
        cfg = self.config
        raft_config = RaftConfig(self.broker_id, self.voters,
                                 fetch_timeout_ms=cfg["controller.quorum.fetch.timeout.ms"],
                                 request_timeout_ms=cfg["controller.quorum.request.timeout.ms"],
                                 cluster_id=self.cluster_id, security=self.controller_security)
        self.raft_client = KafkaRaftClient(raft_config, self.metadata_log_dir, random.Random())
        await self.raft_client.start()
        self._metadata_task = asyncio.get_running_loop().create_task(self._metadata_loop())

    async def _metadata_loop(self) -> None:
        while True:
            try:
                delta = self.image.apply_committed(self.raft_client.log, self.raft_client.high_watermark)
                if self.metadata_cache.features.epoch != self.image.offset:
                    self.metadata_cache.features = FinalizedFeatures(dict(self.image.features.finalized),
                                                                     self.image.offset)
                async with self._publish_lock:
                    if self._publishing and delta:
                        await self.publisher.publish(self.image, delta)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("broker %d: applying the metadata failed", self.broker_id)
                await asyncio.sleep(1.0)
            await self.raft_client.wait_for_change(0.1)

    def _load_logs_on_disk(self) -> None:
        for name in sorted(os.listdir(self.log_dir)):
            parsed = parse_partition_dir(name)
            if not parsed or name == METADATA_PARTITION_DIR or not os.path.isdir(os.path.join(self.log_dir, name)):
                continue
            topic, index = parsed
            self.log_manager.get_or_create_log(topic, index, self._topic_log_config(topic, {}))

    async def _register(self) -> None:
        """Kafka's ``BrokerServer.startup`` order: register and heartbeat (asking to stay fenced); wait until the
        controller says the applied metadata has reached this registration; publish it (and every change from now
        on); then ask to be unfenced, and wait for it.

        Publishing only once caught up matters after a crash: the broker's own copy of the metadata log ends where
        it died, when it may still have led partitions that have moved on since. Published then, it would act as
        their leader, at an old leader epoch, until the newer records arrived."""
        self.lifecycle = BrokerLifecycleManager(
            self.broker_id, self.cluster_id, self.controller_channel, (self.advertised_host, self.advertised_port),
            self.config["broker.rack"], self._log_dir_id(), lambda: self.image.offset,
            self.config["broker.heartbeat.interval.ms"], self.log_manager.previous_broker_epoch)
        protocols = self.listener_configs.protocol_map
        self.lifecycle.listeners = [{"name": name, "host": host, "port": port,
                                     "security_protocol": SECURITY_PROTOCOL_IDS[protocols[name]]}
                                    for name, (host, port) in self.advertised_listeners.items()]
        self.lifecycle.start()
        deadline = asyncio.get_running_loop().time() + STARTUP_UNFENCE_TIMEOUT_S
        try:
            await asyncio.wait_for(self.lifecycle.initial_catch_up.wait(), STARTUP_UNFENCE_TIMEOUT_S)
            async with self._publish_lock:
                self._publishing = True
                await self.publisher.publish(self.image, self.image.everything())
            self.lifecycle.set_ready_to_unfence()
            await asyncio.wait_for(self.lifecycle.unfenced.wait(),
                                   max(0.0, deadline - asyncio.get_running_loop().time()))
            self.enable_request_processing()   # every listener
        except asyncio.TimeoutError:
            what = "unfenced" if self._publishing else "told it had caught up with the metadata"
            raise StartupError(f"broker {self.broker_id} was not {what} by the controllers in "
                               f"{STARTUP_UNFENCE_TIMEOUT_S:.0f} s (are they up? controller.quorum.voters="
                               f"{self.config['controller.quorum.voters']})") from None
        self._registered = True
        self.producer_id_manager.maybe_request_next_block()
        log.info("broker %d: registered (broker epoch %d) and unfenced", self.broker_id, self.broker_epoch)

    def _log_dir_id(self) -> uuid.UUID:
        """The log directory's id: ``directory.id`` in its meta.properties (``kafka-storage format`` writes it),
        else one derived from its path."""
        return directory_id_of(self.log_dir) or uuid.uuid5(uuid.NAMESPACE_URL, os.path.abspath(self.log_dir))

    async def _send_alter_partition(self, data: dict):
        return await self.controller_channel.send(build(AlterPartitionRequest, ALTER_PARTITION_VERSION, data),
                                                  "alter-partition")

    # -- stopping ---------------------------------------------------------------------------------------

    async def controlled_shutdown(self) -> bool:
        timeout_s = (self.config["controlled.shutdown.max.retries"]
                     * self.config["controlled.shutdown.retry.backoff.ms"] / 1000)
        done = await self.lifecycle.controlled_shutdown(max(timeout_s, 5.0)) if self.lifecycle else False
        log.info("broker %d: controlled shutdown %s", self.broker_id, "done" if done else "timed out")
        return done

    def _stop_metadata_source(self) -> None:
        """The observer itself stops in :meth:`stop`, after this."""
        self._registered = False

    async def _requests_stopped(self) -> None:
        """Kafka's ``BrokerServer.shutdown`` removes the metadata publishers once the socket server has stopped
        processing requests (after the controlled shutdown): from here on no metadata change makes this broker a
        leader or a follower, or starts a fetcher, while its replica manager and logs close."""
        async with self._publish_lock:
            self._publishing = False

    async def stop(self, controlled: bool = True) -> None:
        try:
            await super().stop(controlled)
        finally:
            if self._metadata_task is not None:
                self._metadata_task.cancel()
                await asyncio.gather(self._metadata_task, return_exceptions=True)
            if self.lifecycle is not None:
                await self.lifecycle.stop()
            await self.controller_channel.close()
            if self.raft_client is not None and self._owns_raft_client:
                await self.raft_client.close()
