"""``KafkaBroker``: what the rest of the broker may ask of the broker object.

Kafka has one contract for its two kinds of broker: the trait ``kafka.server.KafkaBroker``, which the
ZooKeeper-mode ``KafkaServer`` and the KRaft ``BrokerServer`` both extend; request handlers, coordinators
and managers are written against it, never against one of the two. So is kafkalab's: the API handlers
(:mod:`kafkalab.broker.apis`, ``RequestContext.broker``), the coordinators (:mod:`kafkalab.broker.coordinator`),
the managers of :mod:`kafkalab.broker.server` and the KRaft metadata publisher use only what
:class:`KafkaBroker` names. Every member is always there: where a mode has no such thing it is ``None``
or empty (a KRaft broker has no ``zk_client``, a ZooKeeper-mode one no ``forwarding_manager``), so no
caller needs to probe with ``getattr``.

Who implements it (all through :class:`kafkalab.broker.base_broker.BaseBroker`, which wires the parts
every mode shares):

* :class:`kafkalab.broker.kafka_server.KafkaServer`: ``MetadataMode.ZOOKEEPER`` (``zookeeper.connect``
  set) and ``MetadataMode.STANDALONE`` (the notebook broker);
* :class:`kafkalab.kraft.broker_server.BrokerServer`: ``MetadataMode.KRAFT`` (``process.roles=broker``,
  and the broker of a combined node).

It is a :class:`typing.Protocol`: the classes above do not inherit from it, they match it, and a type
checker says where they do not.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any, Coroutine, Protocol

# MetadataMode is part of the contract; it is defined in a module of its own, which imports nothing, so that
# the parts this contract names (the metadata cache) can use it without an import cycle.
from .metadata_mode import MetadataMode

if TYPE_CHECKING:
    from ..cluster.partition import Partition
    from ..cluster.partition_state import LeaderAndIsrPartitionState
    from ..common.metrics import MetricsRegistry
    from ..coordinator.group.group_coordinator import GroupCoordinator
    from ..coordinator.share.share_coordinator import ShareCoordinator
    from ..coordinator.transaction.transaction_coordinator import TransactionCoordinator
    from ..log.log_config import LogConfig
    from ..log.log_manager import LogManager
    from ..security.authorizer.acl_authorizer import AclAuthorizer
    from ..zk.kafka_zk_client import KafkaZkClient
    from .admin_manager import AdminManager
    from .client_quota_manager import ClientQuotaManager
    from .credential_provider import CredentialProvider
    from .fetch_session import FetchManager
    from .config import BrokerConfig
    from .metadata_cache import BrokerEndpoint, MetadataCache, TopicMetadata
    from .replica_manager import ReplicaManager
    from .share.share_partition_manager import SharePartitionManager

__all__ = ["FaultsLike", "ForwardingManagerLike", "KafkaBroker", "MetadataMode", "ProducerIdGenerator",
           "SocketServerLike",
           "ZkControllerLike"]


class ZkControllerLike(Protocol):
    """What handlers use of the ZooKeeper-mode controller (``kafkalab.broker.zk_controller.KafkaController``),
    which lives above ``server/``."""

    @property
    def is_active(self) -> bool: ...

    async def startup(self) -> None: ...

    async def shutdown(self) -> None: ...

    async def handle_alter_partition(self, broker_id: int, broker_epoch: int, topics: list) -> dict: ...

    async def handle_controlled_shutdown(self, broker_id: int, broker_epoch: int) -> tuple[int, list]: ...

    async def elect_leaders(self, election_type: int, partitions: list | None) -> dict: ...

    async def on_new_session(self) -> None: ...


class ForwardingManagerLike(Protocol):
    """What the socket server uses of a KRaft broker's ``kafkalab.kraft.forwarding_manager.ForwardingManager``:
    the admin requests it forwards to the active controller, in Envelopes (KIP-590)."""

    forwarded_apis: frozenset[int]

    async def forward(self, frame: bytes, request: Any, client_host: str, api_version: int,
                      correlation_id: int, principal: Any = None) -> bytes: ...


class ProducerIdGenerator(Protocol):
    """A producer-id manager: ``ProducerIdManager`` (standalone), ``ZkProducerIdManager`` (ZooKeeper mode),
    ``kafkalab.kraft.forwarding.RPCProducerIdManager`` (KRaft: blocks from the controller)."""

    def generate_producer_id(self) -> int: ...


class FaultsLike(Protocol):
    """What the replica fetchers use of the broker's ``kafkalab.broker.server.faults.FaultInjector``."""

    active: bool

    def replication_paused_until(self, topic: str, partition: int) -> float | None: ...


class SocketServerLike(Protocol):
    """What the broker's parts use of its ``kafkalab.broker.network.socket_server.SocketServer``."""

    @property
    def port(self) -> int: ...


class KafkaBroker(Protocol):
    """The broker as its parts see it (Kafka's ``kafka.server.KafkaBroker`` trait)."""

    # -- identity and configs ---------------------------------------------------------------------
    config: BrokerConfig
    broker_id: int
    log_dir: str
    host: str
    cluster_id: str
    #: the asyncio loop the broker runs on, once started
    loop: asyncio.AbstractEventLoop | None
    #: Kafka's metrics of this broker (its Yammer registry); None if ``kafkalab.metrics.enabled`` is false
    metrics: MetricsRegistry | None

    @property
    def metadata_mode(self) -> MetadataMode: ...

    @property
    def in_cluster(self) -> bool:
        """The metadata comes from a controller (ZooKeeper or KRaft mode), not from this broker itself."""
        ...

    # -- the parts ---------------------------------------------------------------------------------
    log_manager: LogManager
    metadata_cache: MetadataCache
    replica_manager: ReplicaManager
    admin_manager: AdminManager
    #: the incremental fetch sessions (KIP-227) Fetch uses
    fetch_manager: FetchManager

    @property
    def socket_server(self) -> SocketServerLike: ...

    #: client quotas (KIP-13/219): the request handling records against them, Fetch caps its bytes by them
    quotas: ClientQuotaManager
    #: the authorizer ``authorizer.class.name`` configures (None: none, every request allowed)
    authorizer: AclAuthorizer | None
    #: the SCRAM users (AlterUserScramCredentials) and the credential cache the SASL listeners read
    credential_provider: CredentialProvider
    @property
    def faults(self) -> FaultsLike:
        """The lab's fault injection (not in Kafka), applied by ``KafkaApis`` and the replica fetchers."""
        ...

    #: topic -> its one live LogConfig (shared by the topic's logs)
    topic_configs: dict[str, LogConfig]
    # set in start(), None before
    group_coordinator: GroupCoordinator | None
    transaction_coordinator: TransactionCoordinator | None
    producer_id_manager: ProducerIdGenerator | None
    share_coordinator: ShareCoordinator | None
    share_partition_manager: SharePartitionManager | None
    # -- one mode's parts: None in the others -------------------------------------------------------
    #: ZooKeeper mode: the ZooKeeper session (None before start and in the other modes)
    zk_client: KafkaZkClient | None
    #: ZooKeeper mode: the controller (every broker runs one; one of them is active)
    kafka_controller: ZkControllerLike | None
    #: KRaft: forwards the clients' admin requests to the active controller
    forwarding_manager: ForwardingManagerLike | None

    @property
    def broker_epoch(self) -> int:
        """ZooKeeper: the czxid of ``/brokers/ids/<id>``; KRaft: given at registration; -1 until then
        (and always, standalone)."""
        ...

    @property
    def fenced_broker_nodes(self) -> list[BrokerEndpoint]:
        """KRaft: the registered brokers the controller keeps fenced; empty in the other modes."""
        ...

    def make_producer_id_manager(self) -> ProducerIdGenerator:
        """The producer-id manager of this mode (the coordinators' wiring calls it once, at start)."""
        ...

    # -- what the APIs read -------------------------------------------------------------------------
    @property
    def port(self) -> int: ...

    @property
    def advertised_host(self) -> str: ...

    @property
    def advertised_port(self) -> int: ...

    @property
    def live_brokers(self) -> list[tuple[int, str, int]]: ...

    @property
    def live_broker_nodes(self) -> list[BrokerEndpoint]: ...

    def live_broker_nodes_for(self, listener_name: str) -> list[BrokerEndpoint]:
        """The live brokers as a client of ``listener_name`` reaches them (Kafka's ``getAliveBrokerNodes``)."""
        ...

    @property
    def live_broker_count(self) -> int: ...

    @property
    def controller_id(self) -> int: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task: ...

    # -- partitions and the metadata a controller sends ----------------------------------------------
    def log_config_for(self, topic: TopicMetadata) -> LogConfig: ...

    def make_partition(self, topic: TopicMetadata, index: int) -> Partition: ...

    def get_or_create_partition(self, topic: str, index: int, topic_id: uuid.UUID) -> Partition: ...

    async def apply_update_metadata(self, controller_id: int,
                                    topic_states: list[tuple[str, uuid.UUID, list[LeaderAndIsrPartitionState]]],
                                    live_brokers: list[BrokerEndpoint]) -> None: ...

    def apply_topic_config_change(self, topic: str, configs: dict[str, str]) -> None: ...

    def apply_topic_configs(self, topic: str, configs: dict) -> None: ...
