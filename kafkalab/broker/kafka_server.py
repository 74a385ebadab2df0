"""``KafkaServer``: a broker in ZooKeeper mode, or the standalone notebook broker.

Named after Kafka's ``kafka.server.KafkaServer`` (the ZooKeeper-mode broker). The parts every broker
shares (logs, partitions, coordinators, socket server, the start/stop skeleton) are wired by
:class:`kafkalab.broker.base_broker.BaseBroker`, which the KRaft
:class:`kafkalab.kraft.broker_server.BrokerServer` extends too; this class adds what ZooKeeper mode does.

Without ``zookeeper.connect`` it is a **standalone** broker (``MetadataMode.STANDALONE``, kafkalab's own:
it keeps its topics itself); with it, **ZooKeeper mode** (``MetadataMode.ZOOKEEPER``), which follows
the order of Kafka's ``KafkaServer.startup``:

(in ``BaseBroker``'s hooks: 1-2 are ``_start_metadata_source``, 5 ``_register``, 6 ``_start_controller``;
closing the session, ``_stop_metadata_source``):

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
import logging
import os
import time
import uuid

from kazoo.exceptions import NodeExistsError

from .common.message.codec import build
from .common.message.zk_messages import CONTROLLED_SHUTDOWN_VERSION, ControlledShutdownRequest
from .base_broker import BaseBroker, StartupError, kafka_uuid_string
from .zk_controller.kafka_controller import KafkaController
from .common.errors import ErrorCode
from .coordinator.transaction.producer_id_manager import ProducerIdManager, ZkProducerIdManager
from .log.log import parse_partition_dir
from .network.network_client import NetworkClient
from .server.config import BrokerConfig
from .server.kafka_broker import MetadataMode
from .server.metadata_cache import ConfigChangeListener
from .security.authorizer.acl_store import ZkAclStore
from .zk import zk_data
from .zk.kafka_zk_client import KafkaZkClient

__all__ = ["KafkaServer", "StartupError", "kafka_uuid_string"]

log = logging.getLogger(__name__)


class KafkaServer(BaseBroker):
    def __init__(self, config: BrokerConfig):
        super().__init__(config, MetadataMode.ZOOKEEPER if config["zookeeper.connect"] else MetadataMode.STANDALONE)
        self.config_change_listener: ConfigChangeListener | None = None
        self._session_lost = False

    def make_producer_id_manager(self) -> ProducerIdManager | ZkProducerIdManager:
        """ZooKeeper mode: blocks of ids from ``/latest_producer_id_block``; standalone: a file in log.dirs."""
        if self.in_cluster:
            return ZkProducerIdManager(self)
        return ProducerIdManager(self.log_dir)

    # -- the hooks of BaseBroker: ZooKeeper ----------------------------------------------------------

    async def _start_metadata_source(self) -> None:
        await self._start_zookeeper()

    async def _register(self) -> None:
        await self._register_broker()

    def _stop_metadata_source(self) -> None:
        self._close_zookeeper()

    async def _jobs_stopped(self) -> None:
        if self.config_change_listener is not None:
            self.config_change_listener.stop()

    # -- cluster mode: ZooKeeper --------------------------------------------------

    async def _start_zookeeper(self) -> None:
        """Connect (Kafka's ``initZkClient``), create the top-level paths, get or create the cluster id."""
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
        if self.authorizer is not None:   # Kafka's AclAuthorizer: the ACLs from /kafka-acl, then their changes
            store = ZkAclStore(self.zk_client.zk)
            await asyncio.to_thread(self.authorizer.use_store, store)
            await asyncio.to_thread(store.watch_changes, self.authorizer.replace_resource)
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
        configs: dict[str, dict[str, str]] = {}
        for name in sorted(os.listdir(self.log_dir)):
            parsed = parse_partition_dir(name)
            if not parsed or not os.path.isdir(os.path.join(self.log_dir, name)):
                continue
            topic, index = parsed
            if topic not in configs:
                configs[topic] = self._zk.get_topic_config(topic)
            self.log_manager.get_or_create_log(topic, index, self._topic_log_config(topic, configs[topic]))

    @property
    def _zk(self) -> KafkaZkClient:
        """The ZooKeeper session, in the steps that run only once it is connected."""
        if self.zk_client is None:
            raise RuntimeError(f"broker {self.broker_id} is not connected to ZooKeeper")
        return self.zk_client

    def _broker_info(self) -> zk_data.BrokerInfo:
        protocols = self.listener_configs.protocol_map
        listeners = {name: (host, port, protocols[name]) for name, (host, port) in self.advertised_listeners.items()}
        return zk_data.BrokerInfo(self.broker_id, self.advertised_host, self.advertised_port,
                                  self.config["broker.rack"], listeners=listeners)

    async def _register_broker(self) -> None:
        """Create ``/brokers/ids/<id>`` (ephemeral); its czxid becomes the broker epoch.

        A registration left by this broker's previous process (killed, restarted before its session
        expired) is waited for, up to the session timeout; another live broker with the same id is
        a StartupError."""
        deadline = time.monotonic() + self.config["zookeeper.session.timeout.ms"] / 1000 + 2
        waited = False
        while True:
            try:
                self.broker_epoch = await asyncio.to_thread(self._zk.register_broker, self._broker_info())
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
            self.config_change_listener = ConfigChangeListener(self)
            self.config_change_listener.start()

    async def _start_controller(self) -> None:
        controller = KafkaController(self)
        self.kafka_controller = controller
        await controller.startup()

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
        if self.kafka_controller is not None:
            await self.kafka_controller.on_new_session()

    # -- cluster mode: controlled shutdown -------------------------------------------

    async def controlled_shutdown(self) -> bool:
        """Kafka's ``KafkaServer.controlledShutdown``: ask the controller to move the leadership of this
        broker's partitions to other replicas (and take it out of their ISRs) before stopping, so that
        producers and consumers move on at once instead of waiting for the session timeout.

        Sends ControlledShutdown v3 to the controller; retries ``controlled.shutdown.max.retries`` times,
        ``controlled.shutdown.retry.backoff.ms`` apart, while the controller is unknown, unreachable, or
        answers with partitions remaining. Returns whether it succeeded."""
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
                                               timeout_s=timeout_s,
                                               security=cfg.listener_configs.inter_broker_client_security())
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
