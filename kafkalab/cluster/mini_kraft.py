"""``kafkalab.cluster(brokers=3, mode="kraft")``: the mini KRaft cluster — Python controllers and brokers.

The same :class:`~kafkalab.cluster.kraft.KRaftCluster` as for Apache Kafka 4.x (``backend="kafka"``), with
this backend in place of :class:`~kafkalab.cluster.kraft_config.KRaftBackend`: each node still gets its
``node-<id>.properties`` (the same text) and is formatted first (``meta.properties``, by
``python -m kafkalab.kraft.storage_tool format``); what runs is

* a controller (``process.roles=controller``, ids 3001..): ``python -m kafkalab.controller`` — the Raft
  quorum and the QuorumController (:mod:`kafkalab.controller`);
* a broker (``process.roles=broker``, ids 1..N): ``python -m kafkalab.kraft`` — the mini broker in KRaft
  mode (:mod:`kafkalab.kraft`);
* with ``combined=True``, a combined node (``process.roles=broker,controller``, ids 1..N, each a voter):
  ``python -m kafkalab.kraft --config process.roles=broker,controller`` — one process that is both
  (:class:`~kafkalab.kraft.kafka_raft_server.KafkaRaftServer`), given what both are given.

Each gets the configs that it knows from the cluster's (the lab defaults, docs/cluster.md, and those
given): a controller the quorum's timeouts, ``broker.session.timeout.ms``, ``num.partitions``,
``default.replication.factor``, ``min.insync.replicas``, ``unclean.leader.election.enable``, the auto
leader rebalance's configs and the metadata log's (segments, snapshots, retention); a broker every config
the mini broker has (the controllers also the bounds of a group's configs, ``group.share.min.*`` and the like,
with which they check them, and the authorizer's: ``authorizer.class.name``, ``super.users``,
``allow.everyone.if.no.acl.found``). The KRaft lab defaults the mini broker does not have
(``share.coordinator.state.topic.min.isr``) are left out, and a
broker (not combined) is not given the controllers' own (``controller.quorum.election.*``,
``metadata.max.idle.interval.ms``, ``metadata.log.*``, ``metadata.max.retention.*``).
"""
from __future__ import annotations

import os
import re
import sys

from ..broker.server.config import BOUND_CONFIGS, BROKER_CONFIGS
from ..broker.server.listener_config import is_security_config
from ..kraft.storage_tool import read_properties
from .kraft_config import KRaftBackend

#: what a mini controller takes (python -m kafkalab.controller --config name=value)
CONTROLLER_CONFIGS = ("controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms",
                      "controller.quorum.election.backoff.max.ms", "controller.quorum.request.timeout.ms",
                      "metadata.max.idle.interval.ms", "broker.session.timeout.ms", "num.partitions",
                      "default.replication.factor", "metadata.log.segment.bytes",
                      "metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
                      "metadata.max.retention.bytes", "metadata.max.retention.ms", "min.insync.replicas",
                      "unclean.leader.election.enable", "auto.leader.rebalance.enable",
                      "leader.imbalance.check.interval.seconds", "leader.imbalance.per.broker.percentage",
                      "kafkalab.metrics.enabled", "kafkalab.metrics.port", "authorizer.class.name", "super.users",
                      "allow.everyone.if.no.acl.found", *BOUND_CONFIGS)
#: the ready lines of python -m kafkalab.controller and python -m kafkalab.kraft, with their metrics=URL
_READY = re.compile(r"kafkalab (?:raft node|broker) (\d+) ready on \S+:\d+(?: metrics=(\S+))?")
_CONTROLLER_ONLY = ("controller.quorum.election.timeout.ms", "controller.quorum.election.backoff.max.ms",
                    "metadata.max.idle.interval.ms", "metadata.log.segment.bytes",
                    "metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms",
                    "metadata.max.retention.bytes", "metadata.max.retention.ms")
_PER_NODE = ("process.roles", "node.id", "controller.quorum.voters", "listeners", "advertised.listeners",
             "controller.listener.names", "listener.security.protocol.map", "inter.broker.listener.name", "log.dirs")


def _secured_controller(props: dict) -> bool:
    """Whether the node's properties give the controller listener a protocol other than PLAINTEXT (a lesson's
    ``CONTROLLER:SASL_SSL``): then the nodes are told it, with its configs (else they keep their defaults)."""
    controller = props.get("controller.listener.names", "CONTROLLER").split(",")[0]
    protocols = dict(item.split(":", 1) for item in props.get("listener.security.protocol.map", "").split(",")
                     if ":" in item)
    return protocols.get(controller, "PLAINTEXT") != "PLAINTEXT"


def _host_port(listeners: str, name: str) -> tuple[str, int]:
    for item in listeners.split(","):
        listener, _, address = item.strip().partition("://")
        if listener == name:
            host, _, port = address.rpartition(":")
            return host, int(port)
    raise ValueError(f"no {name} listener in {listeners!r}")


class MiniKRaftBackend(KRaftBackend):
    name = "mini"
    mode = "kraft"
    needs_fixed_port = True

    def __init__(self, log_level: str = "INFO"):   # no Kafka distribution to find
        self.kafka_home = None
        self.version = ("mini",)
        self.log_level = log_level

    def format_command(self, properties_path: str, cluster_id: str) -> list[str]:
        return [sys.executable, "-m", "kafkalab.kraft.storage_tool", "format", "--cluster-id", cluster_id,
                "--config", properties_path, "--ignore-formatted"]

    def dump_log_command(self, paths, *options):
        raise NotImplementedError("the mini backend has no kafka-dump-log.sh: use kafkalab dump-log")

    def command(self, properties_path: str, roles: str = "broker") -> list[str]:
        props = read_properties(properties_path)
        node_id, log_dir = props["node.id"], props["log.dirs"]
        meta = os.path.join(log_dir, "meta.properties")
        cluster_id = read_properties(meta).get("cluster.id", "") if os.path.exists(meta) else ""
        configs = {k: v for k, v in props.items() if k not in _PER_NODE}
        if roles == "controller":
            cmd = [sys.executable, "-m", "kafkalab.controller", "--node-id", node_id,
                   "--voters", props["controller.quorum.voters"], "--metadata-log-dir", log_dir,
                   "--cluster-id", cluster_id, "--log-level", self.log_level]
            for name in CONTROLLER_CONFIGS:
                if name in configs:
                    cmd += ["--config", f"{name}={configs[name]}"]
            if _secured_controller(props):   # its CONTROLLER listener and its connections to the other controllers
                cmd += ["--config", f"listener.security.protocol.map={props['listener.security.protocol.map']}",
                        "--config", f"controller.listener.names={props['controller.listener.names']}"]
                cmd += [arg for name, value in configs.items() if is_security_config(name)
                        for arg in ("--config", f"{name}={value}")]
            return cmd
        if roles not in ("broker", "broker,controller"):
            raise ValueError(f"the mini KRaft cluster runs controllers, brokers and combined nodes, not "
                             f"process.roles={roles}")
        lab = props["listeners"].split(",")[0].partition("://")[0]   # the lab's listener: written first
        host, port = _host_port(props["listeners"], lab)
        cmd = [sys.executable, "-m", "kafkalab.kraft", "--host", host, "--port", str(port), "--log-dir", log_dir,
               "--broker-id", node_id, "--log-level", self.log_level,
               "--config", f"controller.quorum.voters={props['controller.quorum.voters']}",
               "--config", f"cluster.id={cluster_id}"]
        if roles == "broker,controller":   # a KafkaRaftServer: its CONTROLLER listener is its voter address
            _host_port(props["listeners"], props["controller.listener.names"])
            cmd += ["--config", f"process.roles={roles}",
                    "--config", f"controller.listener.names={props['controller.listener.names']}"]
        added = [item for item in props["listeners"].split(",")
                 if item.partition("://")[0] not in (lab, props["controller.listener.names"])]
        if added:   # listeners a lesson added (kafkalab.cluster.listeners): the broker's, its CONTROLLER one apart
            brokers = ",".join(item for item in props["listeners"].split(",")
                               if item.partition("://")[0] != props["controller.listener.names"])
            cmd += ["--config", f"listeners={brokers}",
                    "--config", f"advertised.listeners={props['advertised.listeners']}",
                    "--config", f"listener.security.protocol.map={props['listener.security.protocol.map']}",
                    "--config", f"inter.broker.listener.name={props['inter.broker.listener.name']}"]
        if roles == "broker" and _secured_controller(props):   # how the broker reaches the controllers' listener
            cmd += ["--config", f"controller.listener.names={props['controller.listener.names']}"]
            if not added:
                cmd += ["--config", f"listener.security.protocol.map={props['listener.security.protocol.map']}"]
        for name, value in configs.items():
            if (name in BROKER_CONFIGS or name.startswith("listener.name.")) and \
                    (roles != "broker" or name not in _CONTROLLER_ONLY):
                cmd += ["--config", f"{name}={value}"]
        return cmd

    def broker_ready(self, node_id: int, log_path: str, log_offset: int) -> bool:
        """Whether the mini broker printed its ready line (``kafkalab broker N ready on``) since ``log_offset``,
        which it does once the controllers have unfenced this incarnation. Its Metadata alone does not say so:
        unlike Kafka's BrokerServer, a mini broker answers requests from its own metadata image before it is
        registered, and a broker restarted after a SIGKILL finds there its previous incarnation, still
        registered and unfenced until its session expires (``broker.session.timeout.ms``)."""
        try:
            with open(log_path, "rb") as f:
                f.seek(log_offset)
                return f"kafkalab broker {node_id} ready on ".encode() in f.read()
        except OSError:
            return False

    def node_ready(self, node_id: int, log_path: str, log_offset: int) -> tuple[bool, str | None]:
        """Whether the node (a controller, a broker or a combined node) printed its ready line since
        ``log_offset``, and the ``metrics=URL`` of the last one (None: it serves no metrics)."""
        try:
            with open(log_path, "rb") as f:
                f.seek(log_offset)
                text = f.read().decode(errors="replace")
        except OSError:
            return False, None
        lines = [m for m in _READY.finditer(text) if int(m.group(1)) == node_id]
        return (True, lines[-1].group(2)) if lines else (False, None)

    def env(self, node_id: int, state_dir: str) -> dict:
        from .processes import child_env
        return child_env()
