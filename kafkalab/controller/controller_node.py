"""``ControllerNode``: one KRaft controller (``process.roles=controller``) of the mini cluster: the Raft
replica and its listener (:class:`~kafkalab.raft.raft_node.RaftNode`) plus the :class:`QuorumController`
that turns requests into metadata records and replays the committed ones.

Run one as a process with ``python -m kafkalab.controller`` (see ``__main__.py``), or several in one
event loop for tests.
"""
from __future__ import annotations

import asyncio
import random

from ..broker.common.metrics import MetricsRegistry
from ..broker.common.metrics.prometheus import MetricsHttpServer, loop_reader
from ..broker.coordinator.group.group_config import BOUND_CONFIGS
from ..broker.security.authorizer.acl_authorizer import STANDARD_AUTHORIZER, AclAuthorizer, parse_super_users
from ..broker.security.authorizer.acl_store import kraft_authorizer_error
from ..broker.network.client_security import ClientSecurity
from ..broker.server.config import BrokerConfig
from ..broker.server.listener_config import ServerListenerSecurity
from ..broker.server.broker_features import SUPPORTED_FEATURES, FinalizedFeatures
from ..raft.kafka_raft_client import RaftConfig
from ..raft.raft_node import RaftNode
from .controller_apis import register_controller_apis
from .quorum_controller import QuorumController
from .snapshot_generator import SNAPSHOT_CONFIGS, SnapshotGenerator


#: what the ReplicationControlManager's elections and the leader balancer read (a combined node's too)
LEADERSHIP_CONFIGS = {"min.insync.replicas": "min_insync_replicas",
                      "unclean.leader.election.enable": "unclean_leader_election_enable",
                      "auto.leader.rebalance.enable": "auto_leader_rebalance_enable",
                      "leader.imbalance.check.interval.seconds": "leader_imbalance_check_interval_seconds",
                      "leader.imbalance.per.broker.percentage": "leader_imbalance_per_broker_percentage"}


#: the controller's StandardAuthorizer: config -> keyword argument (strings; the last a boolean)
AUTHORIZER_CONFIGS = {"authorizer.class.name": "authorizer_class_name", "super.users": "super_users",
                      "allow.everyone.if.no.acl.found": "allow_everyone_if_no_acl_found"}


def controller_authorizer(authorizer_class_name: str = "", super_users: str = "",
                          allow_everyone_if_no_acl_found: bool = False) -> AclAuthorizer | None:
    """A KRaft controller's authorizer (None: none configured): Kafka's StandardAuthorizer, loaded with the ACL
    records the controller replays. ValueError for any other class (Kafka 4 has no AclAuthorizer)."""
    if not authorizer_class_name:
        return None
    if authorizer_class_name != STANDARD_AUTHORIZER:
        raise ValueError(kraft_authorizer_error(authorizer_class_name))
    return AclAuthorizer(parse_super_users(super_users), bool(int(allow_everyone_if_no_acl_found)),
                         class_name=STANDARD_AUTHORIZER)


def controller_listener_security(configs: dict[str, str], host: str, port: int
                                 ) -> tuple[ServerListenerSecurity, ClientSecurity]:
    """A controller's listener (the first of ``controller.listener.names``, default CONTROLLER) as it serves it,
    and how the controller connects to the others' (Kafka's ``RaftManager``), from the security configs
    (:func:`~kafkalab.broker.server.listener_config.is_security_config`), read and checked as a broker's
    (ValueError with the config's name)."""
    names = configs.get("controller.listener.names") or "CONTROLLER"
    listener = names.split(",")[0].strip().upper()
    config = BrokerConfig({"process.roles": "controller", "controller.listener.names": names,
                           "listeners": f"{listener}://{host}:{port}", **configs})
    listeners = config.listener_configs
    return listeners.controller_server_security(), listeners.controller_client_security()


#: the bounds of a GROUP resource's configs (group.share.min.session.timeout.ms, ...): config -> keyword argument
GROUP_BOUND_CONFIGS = {name: name.replace(".", "_") for name in BOUND_CONFIGS}


class ControllerNode:
    def __init__(self, config: RaftConfig, metadata_log_dir: str, idle_interval_ms: int = 500,
                 rng: random.Random | None = None, listen: tuple[str, int] | None = None,
                 session_timeout_ms: int = 9000, default_num_partitions: int = 1,
                 default_replication_factor: int = 1, log_segment_bytes: int | None = None, metrics=None,
                 metrics_enabled: bool = False, metrics_port: int = -1,
                 listener_security: ServerListenerSecurity | None = None, security_configs: dict | None = None,
                 **controller_configs):
        """``listener_security``: the controller listener's (a combined node's, from its configs);
        ``security_configs``: the configs to make it of (:func:`controller_listener_security`; ``python -m
        kafkalab.controller``), which also give ``config.security``, how this controller connects to the others'.
        Neither: a PLAINTEXT CONTROLLER listener."""
        snapshot_settings = {arg: controller_configs.pop(arg) for arg in SNAPSHOT_CONFIGS.values()
                             if arg in controller_configs}
        group_config_bounds = {name: controller_configs.pop(arg) for name, arg in GROUP_BOUND_CONFIGS.items()
                               if arg in controller_configs}
        authorizer = controller_authorizer(**{arg: controller_configs.pop(arg) for arg in AUTHORIZER_CONFIGS.values()
                                              if arg in controller_configs})
        self.config = config
        if listener_security is None:
            host, port = listen or config.voters.get(config.node_id, ("127.0.0.1", 0))
            listener_security, client_security = controller_listener_security(security_configs or {}, host, port)
            config.security = config.security or client_security
        if listener_security.sasl_config is not None:
            scram = [m for m in listener_security.sasl_config.enabled_mechanisms if m.startswith("SCRAM-")]
            if scram:
                raise ValueError(f"listener {listener_security.listener_name}: the mini controller authenticates "
                                 f"PLAIN only (its users: the JAAS entry's user_<name>), not {', '.join(scram)}")
        if log_segment_bytes:
            config.extra["metadata.log.segment.bytes"] = log_segment_bytes
        # the QuorumController writes the NoOps, not the bare Raft node
        self.raft = RaftNode(config, metadata_log_dir, idle_interval_ms=0, rng=rng, listen=listen,
                             security=listener_security)
        self.controller = QuorumController(self.raft.client, config.cluster_id, session_timeout_ms, idle_interval_ms,
                                           default_num_partitions, default_replication_factor,
                                           snapshot_generator=SnapshotGenerator(**snapshot_settings),
                                           group_config_bounds=group_config_bounds, authorizer=authorizer,
                                           **controller_configs)
        register_controller_apis(self.raft.server, self.controller)
        self.raft.server.features = self._features
        #: Kafka's metrics of this controller (a MetricsRegistry: raft-metrics and KafkaController), or None;
        #: ``metrics_enabled`` (kafkalab.metrics.enabled) makes one, served at ``metrics_url`` on ``metrics_port``
        #: (kafkalab.metrics.port; 0: a free one, -1: not served)
        self.metrics: MetricsRegistry | None = None
        if metrics is None and metrics_enabled:
            metrics = MetricsRegistry()
        if metrics is not None:
            self.enable_metrics(metrics)
        if not isinstance(metrics_port, int) or not -1 <= metrics_port <= 65535:
            raise ValueError(f"kafkalab.metrics.port must be -1 (not served), 0 (a free port) to 65535, "
                             f"not {metrics_port!r}")
        self.metrics_port = metrics_port
        self.metrics_server: MetricsHttpServer | None = None

    def _features(self) -> tuple[dict, FinalizedFeatures]:
        """ApiVersions' features: what a mini broker supports, and the levels this controller's metadata finalized
        (the epoch: the offset of the last record it applied)."""
        return SUPPORTED_FEATURES, FinalizedFeatures(dict(self.controller.features.finalized),
                                                     self.controller.applied_offset - 1)

    def enable_metrics(self, registry: MetricsRegistry) -> None:
        """Keep Kafka's raft-metrics and KafkaController metrics in ``registry`` (a combined node: its broker's)."""
        self.metrics = registry
        socket_server = self.raft.server.socket_server   # socket-server-metrics,listener=CONTROLLER
        socket_server.metrics.register(registry, socket_server.connection_count)
        self.raft.client.enable_metrics(registry)
        self.controller.enable_metrics(registry)

    @property
    def metrics_url(self) -> str | None:
        """Where this controller's metrics are served as Prometheus text, once started (None: not served)."""
        return self.metrics_server.url if self.metrics_server is not None else None

    @property
    def client(self):
        return self.raft.client

    @property
    def server(self):
        return self.raft.server

    async def start(self) -> None:
        await self.raft.start()
        await self.controller.start()
        if self.metrics is not None and self.metrics_port != -1:
            server = MetricsHttpServer(self.metrics, self.server.host, self.metrics_port,
                                       read=loop_reader(asyncio.get_running_loop()))
            server.start()
            self.metrics_server = server

    async def stop(self, resign: bool = True) -> None:
        try:
            await self.controller.stop()
            await self.raft.stop(resign=resign)
        finally:
            server, self.metrics_server = self.metrics_server, None
            if server is not None:
                server.stop()
