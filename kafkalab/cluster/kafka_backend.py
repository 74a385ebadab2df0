"""How a cluster starts its brokers: mini brokers, or Apache Kafka's own.

``kafkalab.cluster(backend="mini")`` (the default) runs each broker as
``python -m kafkalab.broker --config zookeeper.connect=...``: the broker this
repository teaches with. ``backend="kafka"`` runs the real thing, Apache
Kafka 3.x in ZooKeeper mode: the distribution ``$KAFKA_HOME`` points at, else
the newest 3.x that ``kafkalab fetch-kafka`` put in its cache (it fetches
nothing by itself: ``kafkalab fetch-kafka 3.9`` first). Everything else
— ZooKeeper, ``kill``/``stop``/``restart``/``pause``, ``describe`` — is the
same, so a lab can be checked against Kafka itself.

For Kafka each broker gets a ``server.properties`` file, as Kafka's own
quickstart writes one per broker::

    broker.id=2
    listeners=PLAINTEXT://127.0.0.1:9093
    advertised.listeners=PLAINTEXT://127.0.0.1:9093
    log.dirs=<dir>/broker-2
    zookeeper.connect=127.0.0.1:2181
    ... the lab defaults and your configs ...

and is started with a release's ``bin/kafka-server-start.sh <file>`` (the
script execs ``java ... kafka.Kafka <file>``), or, for a distribution that
``kafkalab fetch-kafka`` made (jars only, no scripts), with the java command
line the script amounts to. Either way the lab's small heap applies
(``KAFKA_HEAP_OPTS``) and the pid we hold is the JVM's, so our signals reach
it. Kafka 4 removed ZooKeeper mode, so only 3.x distributions are accepted here.
"""
from __future__ import annotations

import glob
import os
import re
import sys

from .jmx_agent import agent_for, javaagent_option

#: configs the cluster sets itself, per broker
RESERVED = ("broker.id", "listeners", "advertised.listeners", "log.dirs", "log.dir", "zookeeper.connect")

#: Kafka's transaction log wants 3 replicas (and an ISR of 2) by default: a smaller lab cluster could not
#: use transactions. (Once the Kafka backend's only; the mini broker has transactions now and gets them too.)
KAFKA_ONLY_DEFAULTS = {
    "transaction.state.log.replication.factor": lambda n: min(3, n),
    "transaction.state.log.min.isr": lambda n: min(2, n),
}

READY_LINE = re.compile(r"kafkalab broker (\d+) ready on (\S+):(\d+)")
#: the ready line's ``metrics=URL``: where the broker serves its Kafka metrics (kafkalab.metrics.port)
READY_METRICS = re.compile(r"kafkalab broker (\d+) ready on \S+:\d+ metrics=(\S+)")


def config_value(value) -> str:
    """A config value as server.properties and ``--config`` want it (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class MiniBackend:
    """Brokers are ``python -m kafkalab.broker`` processes."""

    name = "mini"
    #: a mini broker can bind port 0 and print the port it got
    needs_fixed_port = False

    def __init__(self, log_level: str = "INFO"):
        #: the brokers' log level (their log is broker-<id>.log): INFO tells elections, ISR changes, rebalances
        self.log_level = log_level

    def command(self, broker_id: int, host: str, port: int, log_dir: str, configs: dict[str, str],
                parent_pid: int | None, state_dir: str) -> list[str]:
        cmd = [sys.executable, "-m", "kafkalab.broker", "--port", str(port), "--host", host,
               "--log-dir", log_dir, "--broker-id", str(broker_id), "--log-level", self.log_level]
        if parent_pid:
            cmd += ["--parent-pid", str(parent_pid)]
        for key, value in configs.items():
            cmd += ["--config", f"{key}={config_value(value)}"]
        return cmd

    def env(self, broker_id: int, state_dir: str) -> dict | None:
        from .processes import child_env
        return child_env()

    def ready_port(self, log_text: str, broker_id: int) -> int | None:
        """The port from the broker's ``ready`` line, once it is in its log."""
        for m in READY_LINE.finditer(log_text):
            if int(m.group(1)) == broker_id:
                return int(m.group(3))
        return None

    def ready_metrics_url(self, log_text: str, broker_id: int) -> str | None:
        """The metrics URL of the broker's last ``ready`` line in ``log_text`` (None: it serves none)."""
        url = None
        for m in READY_LINE.finditer(log_text):
            if int(m.group(1)) == broker_id:
                found = READY_METRICS.match(log_text, m.start())
                url = found.group(2) if found else None
        return url


class KafkaDistributionError(RuntimeError):
    """``$KAFKA_HOME`` is unset, or not an Apache Kafka 3.x distribution."""


_KAFKA_JAR = re.compile(r"^kafka_(\d+\.\d+)-(\d+)\.(\d+)\.(\d+)(?:-[A-Za-z0-9.]+)?\.jar$")


def kafka_version(kafka_home: str) -> tuple[int, int, int]:
    """The version of the distribution at ``kafka_home``, from its ``libs/kafka_<scala>-<version>.jar``."""
    for path in sorted(glob.glob(os.path.join(kafka_home, "libs", "kafka_*.jar"))):
        m = _KAFKA_JAR.match(os.path.basename(path))
        if m and not path.endswith(("-sources.jar", "-javadoc.jar", "-test.jar", "-test-sources.jar")):
            return int(m.group(2)), int(m.group(3)), int(m.group(4))
    raise KafkaDistributionError(
        f"KAFKA_HOME={kafka_home} is not an Apache Kafka distribution: it has no libs/kafka_<scala>-<version>.jar. "
        "Download a Kafka 3.x binary release (e.g. kafka_2.13-3.9.0.tgz), unpack it and point KAFKA_HOME at the "
        "unpacked directory")


class KafkaBackend:
    """Brokers are Apache Kafka 3.x (``$KAFKA_HOME``) in ZooKeeper mode."""

    name = "kafka"
    #: listeners and advertised.listeners name the port: it is chosen before the broker starts
    needs_fixed_port = True

    def __init__(self, kafka_home: str | None = None, heap_opts: str = "-Xms64m -Xmx256m",
                 use_script: bool | None = None, metrics: bool | None = None):
        kafka_home = kafka_home or os.environ.get("KAFKA_HOME")
        if not kafka_home:
            from .distribution import cached
            found = cached((3,))
            if found is None:
                raise KafkaDistributionError(
                    "backend='kafka' runs Apache Kafka's own brokers, and no Kafka 3.x is here: run "
                    "'kafkalab fetch-kafka 3.9' once (or set KAFKA_HOME to an unpacked kafka_2.13-3.9.x release). "
                    "Without it, use backend='mini'.")
            kafka_home = str(found)
        if not os.path.isdir(kafka_home):
            raise KafkaDistributionError(f"KAFKA_HOME={kafka_home} is not a directory")
        self.kafka_home = os.path.abspath(kafka_home)
        self.version = kafka_version(self.kafka_home)
        if self.version[0] != 3:
            why = ("Kafka 4 removed ZooKeeper mode" if self.version[0] >= 4
                   else "kafkalab's clusters need a Kafka 3.x")
            raise KafkaDistributionError(
                f"KAFKA_HOME={kafka_home} holds Kafka {'.'.join(map(str, self.version))}; {why}. "
                "Use a Kafka 3.x distribution (e.g. kafka_2.13-3.9.0)")
        self.start_script = os.path.join(self.kafka_home, "bin", "kafka-server-start.sh")
        if use_script is None:   # a release's bin/ script; a fetched distribution has none: the java command
            use_script = os.name == "posix" and os.path.exists(self.start_script)
        self.use_script = use_script
        self.heap_opts = heap_opts
        #: the Prometheus JMX exporter's agent jar (None: the brokers serve no metrics): ``metrics=None`` (the
        #: default) runs it when it is fetched (``kafkalab fetch-jmx-exporter``), ``True`` also warns once when it is
        #: not, ``False`` never runs it
        self.agent_jar = agent_for(metrics)

    def javaagent(self, host: str, port: int) -> str | None:
        """The JVM option that serves the broker's metrics at ``http://host:port/metrics`` (None: no agent)."""
        return None if self.agent_jar is None else javaagent_option(self.agent_jar, host, port)

    def server_properties(self, broker_id: int, host: str, port: int, log_dir: str, zookeeper_connect: str,
                          configs: dict, listeners: str | None = None) -> str:
        """The text of the broker's ``server.properties``; ``listeners``: its listeners when a lesson added some
        (:mod:`kafkalab.cluster.listeners`), else the lab's PLAINTEXT one on ``port``."""
        listeners = listeners or f"PLAINTEXT://{host}:{port}"
        lines = [f"# written by kafkalab for broker {broker_id}: Kafka {'.'.join(map(str, self.version))}, "
                 "ZooKeeper mode",
                 f"broker.id={broker_id}",
                 f"listeners={listeners}",
                 f"advertised.listeners={listeners}",
                 f"log.dirs={log_dir}",
                 f"zookeeper.connect={zookeeper_connect}",
                 "# the lab's defaults and the cluster's configs"]
        for key, value in configs.items():
            if key in RESERVED:
                raise ValueError(f"{key} is set by the cluster for each broker")
            lines.append(f"{key}={_escape(config_value(value))}")
        return "\n".join(lines) + "\n"

    def properties_path(self, state_dir: str, broker_id: int) -> str:
        return os.path.join(state_dir, f"broker-{broker_id}.properties")

    def write_properties(self, state_dir: str, broker_id: int, host: str, port: int, log_dir: str,
                         zookeeper_connect: str, configs: dict, listeners: str | None = None) -> str:
        path = self.properties_path(state_dir, broker_id)
        with open(path, "w") as f:
            f.write(self.server_properties(broker_id, host, port, log_dir, zookeeper_connect, configs, listeners))
        return path

    def command(self, properties_path: str, javaagent: str | None = None) -> list[str]:
        """``kafka-server-start.sh <props>``, or the java command line it amounts to; ``javaagent`` (the
        exporter's :meth:`javaagent` option) goes on the java command line, or into ``KAFKA_OPTS`` (:meth:`env`)
        for the script."""
        if self.use_script:
            return [self.start_script, properties_path]
        from .zookeeper import find_java
        config = os.path.join(self.kafka_home, "config")
        log4j = os.path.join(config, "kafkalab-log4j.properties")   # written by kafkalab fetch-kafka
        if not os.path.exists(log4j):
            log4j = os.path.join(config, "log4j.properties")          # a release's own
        # kafka-run-class.sh's defaults (KAFKA_JVM_PERFORMANCE_OPTS), with the lab's heap and one GC thread
        # pair: three brokers and ZooKeeper share two cores
        agent = [javaagent] if javaagent else []
        return [find_java(), *self.heap_opts.split(), *agent, "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                "-XX:ParallelGCThreads=1", "-XX:ConcGCThreads=1", "-XX:TieredStopAtLevel=1",
                "-Xss512k", "-Djava.awt.headless=true", f"-Dlog4j.configuration=file:{log4j}",
                f"-Dkafka.logs.dir={os.path.dirname(properties_path)}",
                "-cp", os.path.join(self.kafka_home, "libs", "*"), "kafka.Kafka", properties_path]

    def env(self, broker_id: int, state_dir: str, javaagent: str | None = None) -> dict:
        """Kafka's scripts read KAFKA_HEAP_OPTS (default 1 GB each), LOG_DIR (its own log4j files) and KAFKA_OPTS
        (where the script gets ``javaagent``)."""
        env = dict(os.environ)
        env["KAFKA_HEAP_OPTS"] = self.heap_opts
        env["LOG_DIR"] = os.path.join(state_dir, f"broker-{broker_id}-kafka-logs")
        if javaagent and self.use_script:
            env["KAFKA_OPTS"] = f"{env.get('KAFKA_OPTS', '')} {javaagent}".strip()
        return env

    def ready_port(self, log_text: str, broker_id: int) -> int | None:
        return None   # the port is known beforehand; readiness is the ZooKeeper registration

    def ready_metrics_url(self, log_text: str, broker_id: int) -> str | None:
        return None   # the exporter's port is chosen before the broker starts (lifecycle.py sets metrics_url)


def _escape(value: str) -> str:
    """Java properties: backslashes and leading blanks need escaping; the rest is taken as is."""
    value = value.replace("\\", "\\\\")
    return "\\" + value if value[:1].isspace() else value


def make_backend(backend) -> MiniBackend | KafkaBackend:
    if isinstance(backend, (MiniBackend, KafkaBackend)):
        return backend
    if backend == "mini":
        return MiniBackend()
    if backend == "kafka":
        return KafkaBackend()
    raise ValueError(f"backend must be 'mini' or 'kafka', not {backend!r}")
