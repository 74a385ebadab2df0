"""``KafkaRaftServer``: a combined KRaft node (``process.roles=broker,controller``), Kafka's
``kafka.server.KafkaRaftServer`` with both roles.

One process that is at once

* a **controller**: a voter of the Raft quorum with the QuorumController
  (:class:`~kafkalab.controller.controller_node.ControllerNode`, as ``python -m kafkalab.controller``
  runs it), listening on its ``CONTROLLER`` listener, the address ``controller.quorum.voters`` gives
  for its node id (``controller.listener.names=CONTROLLER``);
* a **broker**: :class:`~kafkalab.kraft.broker_server.BrokerServer` on its ``PLAINTEXT`` listener,
  with the same node id (``node.id`` = ``broker.id``).

As in Kafka (``SharedServer``), both share one :class:`~kafkalab.raft.kafka_raft_client.KafkaRaftClient`
and one ``__cluster_metadata-0`` log (under ``metadata.log.dir``, else ``log.dirs``): the broker does not
fetch the log as an observer, it applies what its own voter has replicated and the quorum has committed
(up to the high watermark). The broker still reaches the *active* controller over the network, even when
that is its own controller (Kafka's brokers do too): registration, heartbeats, AlterPartition, forwarded
CreateTopics and DeleteTopics. DescribeQuorum therefore lists the N nodes as voters and no observers.

Start: the controller first (its listener, the Raft client, the QuorumController), then the broker, which
is ready once the active controller has unfenced it. Stop: the broker first (its controlled shutdown asks
the active controller, maybe this one), then the controller (an active controller resigns:
EndQuorumEpoch), then the shared Raft client. Between the two, a mini simplification: the node stays a voter
while other brokers are still in controlled shutdown (see :meth:`KafkaRaftServer._linger_as_voter`). A SIGKILL
takes both roles at once: the quorum elects another leader and the new active controller fences the broker when
its session times out.

:func:`kraft_server` gives the server ``process.roles`` asks for (``broker``: a
:class:`~kafkalab.kraft.broker_server.BrokerServer`; ``broker,controller``: a :class:`KafkaRaftServer`), what
``python -m kafkalab.kraft`` runs.

Simplified: the broker's and the controller's configs are one :class:`~kafkalab.broker.server.config.BrokerConfig`
(Kafka's ``KafkaConfig`` is one too). The controller listener is served with the security protocol
``listener.security.protocol.map`` gives it and its ``listener.name.<controller>.`` configs, as a broker's listener;
both roles connect to the controllers' listener with ``sasl.mechanism.controller.protocol`` and that listener's
JAAS entry (:meth:`~kafkalab.broker.server.listener_config.ListenerConfigs.controller_client_security`).
"""
from __future__ import annotations

import asyncio
import logging
import random

from ..controller.controller_node import AUTHORIZER_CONFIGS, GROUP_BOUND_CONFIGS, LEADERSHIP_CONFIGS, ControllerNode
from ..controller.snapshot_generator import SNAPSHOT_CONFIGS
from ..raft.kafka_raft_client import RaftConfig
from ..raft.raft_config import parse_voters
from .broker_server import BrokerServer

log = logging.getLogger(__name__)
COMBINED_ROLES = frozenset({"broker", "controller"})


def roles_of(config) -> frozenset[str]:
    """``process.roles`` as a set (Kafka accepts ``broker,controller`` and ``controller,broker``)."""
    return frozenset(r.strip() for r in (config["process.roles"] or "").split(",") if r.strip())


class KafkaRaftServer:
    @staticmethod
    def check_config(config) -> None:
        """ValueError naming what is wrong with a combined node's configs."""
        if roles_of(config) != COMBINED_ROLES:
            raise ValueError(f"a KafkaRaftServer runs with process.roles=broker,controller, not "
                             f"{config['process.roles']!r}")
        BrokerServer.check_config(config, combined=True)
        node_id = config["broker.id"]
        voters = parse_voters(config["controller.quorum.voters"])
        if node_id not in voters:
            raise ValueError(f"process.roles=broker,controller: node id {node_id} must be a voter of "
                             f"controller.quorum.voters ({config['controller.quorum.voters']})")
        if not config["controller.listener.names"]:
            raise ValueError("process.roles=broker,controller needs controller.listener.names (e.g. CONTROLLER)")
        if "PLAINTEXT" in config["controller.listener.names"].split(","):
            raise ValueError("controller.listener.names must not name the broker's PLAINTEXT listener")
        config.listener_configs.controller_server_security()   # its controller listener: ValueError if it cannot

    def __init__(self, config):
        self.check_config(config)
        self.config = config
        self.node_id = config["broker.id"]
        voters = parse_voters(config["controller.quorum.voters"])
        raft_config = RaftConfig(
            self.node_id, voters, election_timeout_ms=config["controller.quorum.election.timeout.ms"],
            fetch_timeout_ms=config["controller.quorum.fetch.timeout.ms"],
            election_backoff_max_ms=config["controller.quorum.election.backoff.max.ms"],
            request_timeout_ms=config["controller.quorum.request.timeout.ms"], cluster_id=config["cluster.id"],
            security=config.listener_configs.controller_client_security())
        metadata_log_dir = config["metadata.log.dir"] or config["log.dirs"]
        self.controller = ControllerNode(
            raft_config, metadata_log_dir, idle_interval_ms=config["metadata.max.idle.interval.ms"],
            rng=random.Random(), session_timeout_ms=config["broker.session.timeout.ms"],
            default_num_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"],
            log_segment_bytes=config["metadata.log.segment.bytes"],
            listener_security=config.listener_configs.controller_server_security(),
            **{arg: config[name] for name, arg in {**SNAPSHOT_CONFIGS, **LEADERSHIP_CONFIGS,
                                                    **GROUP_BOUND_CONFIGS, **AUTHORIZER_CONFIGS}.items()})
        self.broker = BrokerServer(config, raft_client=self.controller.client)
        if self.broker.metrics is not None:   # one registry, served at the broker's metrics_url (as Kafka's one JMX)
            self.controller.enable_metrics(self.broker.metrics)

    # what python -m kafkalab.kraft prints and the tests look at: the broker's
    @property
    def broker_id(self) -> int:
        return self.node_id

    @property
    def advertised_host(self) -> str:
        return self.broker.advertised_host

    @property
    def advertised_port(self) -> int:
        return self.broker.advertised_port

    @property
    def log_dir(self) -> str:
        return self.broker.log_dir

    @property
    def metrics_url(self) -> str | None:
        """The broker's: a combined node serves its broker's and its controller's metrics at one URL."""
        return self.broker.metrics_url

    @property
    def controller_address(self) -> tuple[str, int]:
        return self.controller.server.host, self.controller.server.port

    async def start(self) -> None:
        await self.controller.start()
        try:
            await self.broker.start()
        except BaseException:
            await self.controller.stop(resign=True)
            raise
        log.info("node %d (broker,controller): broker on %s:%d, controller on %s:%d", self.node_id,
                 self.advertised_host, self.advertised_port, *self.controller_address)

    def brokers_shutting_down(self) -> list[int]:
        """The other brokers the committed metadata shows in controlled shutdown and not yet fenced: those still
        waiting for the quorum to approve their shutdown."""
        registrations = self.controller.controller.cluster.registrations
        return sorted(b for b, r in registrations.items()
                      if b != self.node_id and r.in_controlled_shutdown and not r.fenced)

    async def _linger_as_voter(self) -> None:
        """Simplification (not in Kafka): stay a voter while other brokers are in controlled shutdown, at most
        ``broker.session.timeout.ms``. When every combined node stops at once, a node that leaves the quorum
        as soon as its own broker is done can take away the majority the last broker needs for its fencing
        record, which then waits out its whole controlled-shutdown timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config["broker.session.timeout.ms"] / 1000
        while self.brokers_shutting_down() and loop.time() < deadline:
            await self.controller.client.wait_for_change(0.05)

    async def stop(self, controlled: bool = True) -> None:
        try:
            await self.broker.stop(controlled)
            if controlled:
                await self._linger_as_voter()
        finally:
            await self.controller.stop(resign=controlled)


class _KRaftServerFor:
    """The server ``process.roles`` asks for: a broker, or a combined node; ``python -m kafkalab.broker``'s
    ``server_class`` (called with the configs, and asked to ``check_config`` them first)."""

    @staticmethod
    def _class(config):
        return KafkaRaftServer if roles_of(config) == COMBINED_ROLES else BrokerServer

    def __call__(self, config):
        return self._class(config)(config)

    def check_config(self, config) -> None:
        self._class(config).check_config(config)


kraft_server = _KRaftServerFor()
