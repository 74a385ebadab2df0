"""Apache Kafka 4.x in KRaft mode: each node's ``server.properties``, the storage format, the java command.

``kafkalab.cluster(brokers=3, backend="kafka", mode="kraft")`` runs Kafka 4.x
(``$KAFKA_HOME`` if it holds a 4.x, else the newest 4.x that ``kafkalab
fetch-kafka 4`` cached) without ZooKeeper. Each node gets a properties file,
as Kafka's ``config/server.properties`` (combined) or ``config/controller.properties``
and ``config/broker.properties`` describe them::

    # a controller (process.roles=controller; node ids 3001, 3002, 3003)
    process.roles=controller
    node.id=3001
    controller.quorum.voters=3001@127.0.0.1:41001,3002@127.0.0.1:41002,3003@127.0.0.1:41003
    listeners=CONTROLLER://127.0.0.1:41001
    controller.listener.names=CONTROLLER

    # a broker (process.roles=broker; node ids 1..N)
    process.roles=broker
    node.id=1
    controller.quorum.voters=...   (the same)
    listeners=PLAINTEXT://127.0.0.1:40001
    advertised.listeners=PLAINTEXT://127.0.0.1:40001

**Why a static quorum** (``controller.quorum.voters``) rather than the dynamic
one of KIP-853 (``controller.quorum.bootstrap.servers`` with ``kafka-storage
format --standalone`` or ``--initial-controllers id@host:port:directory-id``):
Kafka 4.4 supports both. The lab's voters are fixed before any node starts
(their ids and ports are chosen by the cluster) and never change, so the static
form says everything in one line that every node shares, and each node is
formatted with the same plain command, ``kafka-storage format --cluster-id ID
--config FILE``, with no directory ids to pass around. (A dynamic quorum is
what you want to add or remove controllers later with ``kafka-metadata-quorum
add-controller``; the lab does not.)

Formatting is Kafka's own ``kafka.tools.StorageTool`` (what ``bin/kafka-storage.sh``
runs); a node is started as ``kafka.Kafka <file>`` (what ``kafka-server-start.sh``
runs). Kafka 4 logs with log4j2 (``-Dlog4j2.configurationFile``).
"""
from __future__ import annotations

import base64
import os
import uuid

from .configs import LAB_DEFAULTS, LabDefault
from .jmx_agent import agent_for, javaagent_option
from .kafka_backend import KafkaDistributionError, _escape, config_value, kafka_version

#: node ids of separate controllers: 3001, 3002, ... (brokers are 1..N), so that no id is shared
CONTROLLER_ID_BASE = 3000

#: configs the cluster sets itself, per node
KRAFT_RESERVED = ("node.id", "broker.id", "process.roles", "listeners", "advertised.listeners", "log.dirs",
                  "log.dir", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
                  "controller.listener.names", "listener.security.protocol.map", "inter.broker.listener.name",
                  "zookeeper.connect")

#: LAB_DEFAULTS that only mean something with ZooKeeper (Kafka 4 removed them)
_ZOOKEEPER_ONLY = ("zookeeper.session.timeout.ms", "controlled.shutdown.retry.backoff.ms")

#: The KRaft lab defaults: the mode-independent LAB_DEFAULTS, plus the quorum's and heartbeats' timeouts
#: (Kafka's default beside each). Documented in docs/cluster.md.
KRAFT_LAB_DEFAULTS: dict[str, LabDefault] = {
    **{k: v for k, v in LAB_DEFAULTS.items() if k not in _ZOOKEEPER_ONLY},
    "broker.session.timeout.ms": LabDefault(
        3000, 9000, "a broker that stops heartbeating is fenced after 3 s instead of 9 s"),
    "broker.heartbeat.interval.ms": LabDefault(
        500, 2000, "brokers heartbeat every 0.5 s, well inside the session timeout"),
    "controller.quorum.fetch.timeout.ms": LabDefault(
        1000, 2000, "a controller that hears nothing from the active controller for 1 s starts an election"),
    "controller.quorum.election.timeout.ms": LabDefault(
        500, 1000, "a candidate that wins no majority in 0.5 s tries again"),
    "controller.quorum.election.backoff.max.ms": LabDefault(
        500, 1000, "the random back-off before another election is at most 0.5 s"),
    "metadata.log.max.record.bytes.between.snapshots": LabDefault(
        65536, 20971520, "a KRaft node snapshots the metadata after 64 KiB of committed records, not 20 MiB"),
    "metadata.log.max.snapshot.interval.ms": LabDefault(
        60000, 3600000, "and at the latest a minute after the last snapshot, not an hour"),
    "transaction.state.log.replication.factor": LabDefault(
        lambda n: min(3, n), 3, "transactions work with fewer than 3 brokers"),
    "transaction.state.log.min.isr": LabDefault(lambda n: min(2, n), 2, "(as above)"),
    "share.coordinator.state.topic.replication.factor": LabDefault(
        lambda n: min(3, n), 3, "share groups work with fewer than 3 brokers"),
    "share.coordinator.state.topic.min.isr": LabDefault(lambda n: min(2, n), 2, "(as above)"),
    "group.share.record.lock.duration.ms": LabDefault(
        10000, 30000, "a share consumer that holds records without acknowledging them loses them after 10 s"),
    "group.share.min.record.lock.duration.ms": LabDefault(
        1000, 15000, "lets a lesson set the lock duration down to 1 s"),
}


def kraft_lab_configs(n: int) -> dict[str, object]:
    """The KRaft lab defaults for a cluster of ``n`` brokers."""
    return {name: d.for_brokers(n) for name, d in KRAFT_LAB_DEFAULTS.items()}


#: what a lesson may give to add listeners to the brokers (:mod:`kafkalab.cluster.listeners`), though reserved
LISTENER_CONFIGS = ("listeners", "listener.security.protocol.map", "inter.broker.listener.name")


def effective_configs(n: int, given: dict) -> dict[str, str]:
    """The lab defaults for ``n`` brokers with the configs given (Kafka's names, or Python identifiers), as text.
    The :data:`LISTENER_CONFIGS` are kept only with ``listeners`` (the cluster takes them out: ``listener_spec``)."""
    from ..broker.mini import config_name
    configs = kraft_lab_configs(n)
    names = {config_name(key) for key in given}
    for key, value in given.items():
        name = config_name(key)
        if name in KRAFT_RESERVED and not (name in LISTENER_CONFIGS and "listeners" in names):
            raise ValueError(f"{name} is set by the cluster for each node; it cannot be given"
                             + (" (unless listeners is: kafkalab.cluster.listeners)" if name in LISTENER_CONFIGS
                                else ""))
        configs[name] = value
    return {k: config_value(v) for k, v in configs.items()}


def new_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` makes one: 16 random bytes, base64url without padding
    (Kafka's ``Uuid.randomUuid`` never returns one that starts with '-', which a command line would misread)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


class KRaftBackend:
    """Nodes are Apache Kafka 4.x processes in KRaft mode (``$KAFKA_HOME``, or ``kafkalab fetch-kafka 4``'s)."""

    name = "kafka"
    mode = "kraft"
    needs_fixed_port = True

    def __init__(self, kafka_home: str | None = None, heap_opts: str = "-Xms64m -Xmx256m",
                 controller_heap_opts: str = "-Xms32m -Xmx192m", metrics: bool | None = None):
        if kafka_home is None:   # $KAFKA_HOME if it is a 4.x (a 3.x there is for the ZooKeeper mode), else the cache
            env_home = os.environ.get("KAFKA_HOME")
            if env_home and os.path.isdir(env_home) and _major(env_home) >= 4:
                kafka_home = env_home
        if not kafka_home:
            from .distribution import cached
            found = cached((4,))
            if found is None:
                raise KafkaDistributionError(
                    "mode='kraft' runs Apache Kafka 4.x in KRaft mode, and no Kafka 4.x is here: run "
                    "'kafkalab fetch-kafka 4' once (or set KAFKA_HOME to an unpacked kafka_2.13-4.x release)")
            kafka_home = str(found)
        if not os.path.isdir(kafka_home):
            raise KafkaDistributionError(f"KAFKA_HOME={kafka_home} is not a directory")
        self.kafka_home = os.path.abspath(kafka_home)
        self.version = kafka_version(self.kafka_home)
        if self.version[0] < 4:
            raise KafkaDistributionError(
                f"{self.kafka_home} holds Kafka {'.'.join(map(str, self.version))}; mode='kraft' needs Kafka 4.x "
                "(run 'kafkalab fetch-kafka 4'). Kafka 3.x runs in the lab's ZooKeeper mode (mode='zookeeper')")
        self.heap_opts = heap_opts
        self.controller_heap_opts = controller_heap_opts
        #: the Prometheus JMX exporter's agent jar, in every node (None: no metrics), chosen as ``KafkaBackend``'s
        self.agent_jar = agent_for(metrics)

    def javaagent(self, host: str, port: int) -> str | None:
        """The JVM option that serves the node's metrics at ``http://host:port/metrics`` (None: no agent)."""
        return None if self.agent_jar is None else javaagent_option(self.agent_jar, host, port)

    # -- server.properties ---------------------------------------------------------------

    def server_properties(self, node_id: int, roles: str, host: str, port: int | None, controller_port: int | None,
                          log_dir: str, voters: str, configs: dict, spec=None,
                          listener_ports: dict[str, int] | None = None) -> str:
        """The text of one node's properties file. ``roles``: "broker", "controller" or "broker,controller";
        ``port`` is its PLAINTEXT port (brokers), ``controller_port`` its CONTROLLER port (controllers);
        ``voters``: the ``controller.quorum.voters`` string; ``spec``: the listeners a lesson added
        (:class:`~kafkalab.cluster.listeners.ListenerSpec`, on the brokers' ``listener_ports``)."""
        listeners, advertised = [], []
        protocols, inter = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT", "PLAINTEXT"
        if "broker" in roles:
            brokers = (spec.listeners(host, port, listener_ports or {}) if spec is not None
                       else f"PLAINTEXT://{host}:{port}")
            listeners.append(brokers)
            advertised.append(brokers)
        if spec is not None:
            protocols = ",".join([f"CONTROLLER:{spec.controller}"] + [f"{n}:{p}" for n, p in spec.protocols.items()])
            inter = spec.inter_broker
        if "controller" in roles:
            listeners.append(f"CONTROLLER://{host}:{controller_port}")
        lines = [f"# written by kafkalab for node {node_id}: Kafka {'.'.join(map(str, self.version))}, KRaft mode",
                 f"process.roles={roles}",
                 f"node.id={node_id}",
                 f"controller.quorum.voters={voters}",
                 f"listeners={','.join(listeners)}",
                 "controller.listener.names=CONTROLLER",
                 f"listener.security.protocol.map={protocols}"]
        if "broker" in roles:
            lines += [f"advertised.listeners={','.join(advertised)}", f"inter.broker.listener.name={inter}"]
        lines += [f"log.dirs={log_dir}", "# the lab's defaults and the cluster's configs"]
        for key, value in configs.items():
            if key in KRAFT_RESERVED:
                raise ValueError(f"{key} is set by the cluster for each node")
            lines.append(f"{key}={_escape(config_value(value))}")
        return "\n".join(lines) + "\n"

    def properties_path(self, state_dir: str, node_id: int) -> str:
        return os.path.join(state_dir, f"node-{node_id}.properties")

    # -- commands ---------------------------------------------------------------------------

    def _java(self, heap_opts: str, logs_dir: str) -> list[str]:
        from .zookeeper import find_java
        config = os.path.join(self.kafka_home, "config")
        log4j2 = os.path.join(config, "kafkalab-log4j2.yaml")     # written by kafkalab fetch-kafka
        if not os.path.exists(log4j2):
            log4j2 = os.path.join(config, "log4j2.yaml")          # a release's own
        # kafka-run-class.sh's defaults, with the lab's heap and one GC thread pair (six JVMs share two cores)
        return [find_java(), *heap_opts.split(), "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                "-XX:ParallelGCThreads=1", "-XX:ConcGCThreads=1", "-XX:TieredStopAtLevel=1",
                "-Xss512k", "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j2}",
                f"-Dkafka.logs.dir={logs_dir}", "-cp", os.path.join(self.kafka_home, "libs", "*")]

    def format_command(self, properties_path: str, cluster_id: str) -> list[str]:
        """``kafka-storage.sh format --cluster-id ID --config FILE --ignore-formatted``, as a java command line
        (static quorum: neither --standalone nor --initial-controllers; see the module docstring)."""
        return [*self._java("-Xms32m -Xmx128m", os.path.dirname(properties_path)), "kafka.tools.StorageTool",
                "format", "--cluster-id", cluster_id, "--config", properties_path, "--ignore-formatted"]

    def dump_log_command(self, paths: list[str], *options: str) -> list[str]:
        """``kafka-dump-log.sh --files A,B [options]`` (Kafka's ``org.apache.kafka.tools.DumpLogSegments``), as a
        java command line: e.g. ``options=("--cluster-metadata-decoder",)`` for ``__cluster_metadata``."""
        logs_dir = os.path.dirname(os.path.abspath(paths[0])) if paths else "."
        return [*self._java("-Xms32m -Xmx128m", logs_dir), "org.apache.kafka.tools.DumpLogSegments",
                "--files", ",".join(paths), *options]

    def command(self, properties_path: str, roles: str = "broker", javaagent: str | None = None) -> list[str]:
        """``kafka-server-start.sh <file>``, as the java command line it amounts to (with ``javaagent``, the
        exporter's :meth:`javaagent` option, if given)."""
        heap = self.controller_heap_opts if roles == "controller" else self.heap_opts
        agent = [javaagent] if javaagent else []
        return [*self._java(heap, os.path.dirname(properties_path)), *agent, "kafka.Kafka", properties_path]

    def broker_ready(self, node_id: int, log_path: str, log_offset: int) -> bool:
        """Whether a broker that answers Metadata listing itself is ready. Kafka's BrokerServer enables request
        processing only once the controllers have unfenced it, so yes."""
        return True

    def env(self, node_id: int, state_dir: str) -> dict:
        env = dict(os.environ)
        env["KAFKA_HEAP_OPTS"] = self.heap_opts
        env["LOG_DIR"] = os.path.join(state_dir, f"node-{node_id}-kafka-logs")
        return env


def _major(home: str) -> int:
    try:
        return kafka_version(home)[0]
    except KafkaDistributionError:
        return 0


def voters_string(voters: dict[int, tuple[str, int]]) -> str:
    """``controller.quorum.voters``: ``id@host:port`` of each voter, comma-separated, by id."""
    return ",".join(f"{i}@{h}:{p}" for i, (h, p) in sorted(voters.items()))
