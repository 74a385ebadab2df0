"""Apache Kafka Connect on this machine: its jars from the Maven repository, and the command that runs a worker.

``fetch_connect("3.9.2")`` resolves ``org.apache.kafka:connect-runtime`` (the worker, its REST server:
Jetty and Jersey), ``connect-file`` (``FileStreamSourceConnector`` / ``FileStreamSinkConnector``),
``connect-json`` (``JsonConverter``) and ``connect-transforms`` (the single message transforms:
``InsertField``, ``HoistField``, ``RegexRouter``, ...) with their runtime dependencies, plus
``slf4j-reload4j`` (Connect 3.9 logs through slf4j into log4j 1 (reload4j), as Kafka's own
``bin/connect-distributed.sh`` does), into ``~/.kafkalab/dist/kafka-connect-3.9.2/libs``. It goes through
:func:`kafkalab.cluster.maven.fetch_jars` (every jar checked against the repository's SHA-1, cached,
nothing half-written) and, without ``mvn``, through Apache Ivy as Kafka Streams does
(:func:`kafkalab.streams.jvm.fetch_with_ivy`).

A worker is ``java -cp 'libs/*' org.apache.kafka.connect.cli.ConnectDistributed worker.properties``: the
file connector is on the class path (Kafka's ``bin/kafka-run-class.sh`` leaves ``connect-file`` off it and the
quickstart puts it in ``plugin.path``; on the class path Connect finds it all the same, through its
``ServiceLoader`` manifest).
"""
from __future__ import annotations

from pathlib import Path

from ..cluster.distribution import dist_root
from ..cluster.maven import FetchError, fetch_jars
from ..cluster.zookeeper import require_java
from ..streams.jvm import classpath, fetch_with_ivy

#: the Kafka Connect the lab runs (the same release as the lab's real broker, ``fetch_kafka("3.9")``)
CONNECT_VERSION = "3.9.2"
#: Kafka 3.9 logs through slf4j-api 1.7.36; its distribution binds it to reload4j (log4j 1.2)
SLF4J_RELOAD4J = "org.slf4j:slf4j-reload4j:1.7.36"
ARTIFACTS = ("connect-runtime", "connect-file", "connect-json", "connect-transforms")
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
#: a small worker: the lessons move a few lines of text
JVM_OPTIONS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
#: log4j 1 for a worker: everything to stdout (which kafkalab sends to the worker's log file), in the layout
#: of Kafka's config/connect-log4j.properties (%X{connector.context} names the connector or task)
LOG4J_PROPERTIES = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %X{connector.context}%m (%c:%L)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.org.apache.kafka.common=WARN
log4j.logger.org.reflections=ERROR
log4j.logger.org.eclipse.jetty=WARN
"""


class ConnectJvmError(RuntimeError):
    """Java or the Kafka Connect jars are missing, or could not be fetched; the message says what to do."""


def coordinates(version: str = CONNECT_VERSION) -> list[str]:
    return [f"org.apache.kafka:{a}:{version}" for a in ARTIFACTS] + [SLF4J_RELOAD4J]


def fetch_connect(version: str = CONNECT_VERSION, root: Path | None = None) -> Path:
    """The directory whose ``libs/`` holds Kafka Connect ``version`` and its runtime dependencies (fetched once).

    Raises :class:`ConnectJvmError` with one line saying why (no network, no such version, a corrupt
    download) and leaves nothing half-written in the cache."""
    name, root = f"kafka-connect-{version}", root or dist_root()
    wanted = coordinates(version)
    try:
        return fetch_jars(name, wanted, root)
    except FetchError as e:
        if e.kind != "unavailable":
            raise ConnectJvmError(f"Kafka Connect {version} could not be fetched: {e}") from None
        try:
            return fetch_with_ivy(name, wanted, root)
        except FetchError as e2:
            raise ConnectJvmError(f"Kafka Connect {version} could not be fetched: {e}; {e2}") from None
        except Exception as e2:   # no Java for Ivy: StreamsJvmError
            raise ConnectJvmError(f"Kafka Connect {version} could not be fetched: {e}; {e2}") from None


def java() -> str:
    return require_java("Kafka Connect", ConnectJvmError)


def worker_command(home: Path, worker_properties: Path, log4j_properties: Path,
                   jvm_options: list[str] | None = None) -> list[str]:
    """The command that runs one distributed worker with Kafka Connect ``home`` on the class path."""
    return [java(), *(JVM_OPTIONS if jvm_options is None else jvm_options),
            f"-Dlog4j.configuration={log4j_properties.resolve().as_uri()}",
            "-cp", classpath(home / "libs" / "*"), MAIN_CLASS, str(worker_properties)]
