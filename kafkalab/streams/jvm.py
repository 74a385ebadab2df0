"""The Kafka Streams library on this machine: its jars from the Maven repository, and kafkalab's own
``WordCount.java`` compiled against them.

``fetch_streams("3.9.2")`` resolves ``org.apache.kafka:kafka-streams`` with its runtime dependencies
(``kafka-clients``, RocksDB's JNI jar, ...) and ``slf4j-simple`` (the library logs through slf4j; without
a binding it would log nothing) into ``~/.kafkalab/dist/kafka-streams-3.9.2/libs``, through
:func:`kafkalab.cluster.maven.fetch_jars` (checked against the repository's SHA-1, cached, nothing
half-written). Apache Kafka's own examples (``kafka-streams-examples``, with ``WordCountDemo``) are not
published to the Maven repository, so the lab ships its word count as source (``WordCount.java`` beside
this module) and compiles it with the JDK's ``javac`` into the same cache, once per source and version.
With a Java runtime but no ``javac``, ``java WordCount.java`` (Java 11's source-file mode) runs it instead.
Without ``mvn`` (the workshop's image) the jars come through Apache Ivy, which pyspark ships, as
``kafkalab fetch-kafka`` does: the same directory and manifest, Ivy checking each download's checksum.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..cluster import maven
from ..cluster.distribution import dist_root
from ..cluster.maven import FetchError, fetch_jars
from ..cluster.zookeeper import require_java

#: the Kafka Streams the lessons run (the same release as the lab's real broker, ``fetch_kafka("3.9")``)
STREAMS_VERSION = "3.9.2"
#: the slf4j binding: Kafka 3.9 and 4.x both log through slf4j-api 1.7.36
SLF4J_SIMPLE = "org.slf4j:slf4j-simple:1.7.36"
SOURCE = Path(__file__).with_name("WordCount.java")
MAIN_CLASS = "WordCount"


class StreamsJvmError(RuntimeError):
    """Java, javac or the Kafka Streams jars are missing or failed; the message says what to do."""


def fetch_streams(version: str = STREAMS_VERSION, root: Path | None = None) -> Path:
    """The directory whose ``libs/`` holds Kafka Streams ``version`` and its runtime dependencies (fetched once)."""
    name, root = f"kafka-streams-{version}", root or dist_root()
    return fetch_jars_or_ivy(name, [f"org.apache.kafka:kafka-streams:{version}", SLF4J_SIMPLE], root,
                             f"Kafka Streams {version}", StreamsJvmError)


def fetch_jars_or_ivy(name: str, coordinates: list[str], root: Path, what: str, error: type[Exception]) -> Path:
    """``root/name/libs`` with ``coordinates`` and their runtime dependencies: through Maven
    (:func:`kafkalab.cluster.maven.fetch_jars`), or through Ivy where Maven is unavailable. Any failure is
    one ``error`` line saying that ``what`` could not be fetched, and why."""
    try:
        return fetch_jars(name, coordinates, root)
    except FetchError as e:
        if e.kind != "unavailable":
            raise error(f"{what} could not be fetched: {e}") from None
        try:
            return fetch_with_ivy(name, coordinates, root)
        except (FetchError, StreamsJvmError) as e2:   # StreamsJvmError: no Java to run Ivy
            raise error(f"{what} could not be fetched: {e}; {e2}") from None


def fetch_with_ivy(name: str, coordinates: list[str], root: Path, timeout: float = 900) -> Path:
    """What :func:`kafkalab.cluster.maven.fetch_jars` does, through Apache Ivy (pyspark's ``jars/ivy-*.jar``):
    ``root/name/libs`` and the same manifest, staged and renamed into place."""
    ivy = maven.ivy_jar()
    if ivy is None:
        raise FetchError("ivy: pyspark's ivy jar is not installed")
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".partial-{name}-", suffix=f"-{os.getpid()}", dir=root))
    try:
        missing = f"the repository does not have {', '.join(coordinates)}"
        maven.ivy_retrieve(java(), ivy, [tuple(c.split(":")) for c in coordinates], staging / ".ivy",
                           staging / "libs", missing, timeout)
        if not any((staging / "libs").glob("*.jar")):
            raise FetchError(f"ivy: {missing}", kind="version")
        shutil.rmtree(staging / ".ivy")
        maven.install_staged(staging, root / name, coordinates)
        return root / name
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def java() -> str:
    return require_java("Kafka Streams", StreamsJvmError,
                        install="a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)")


def javac(java_path: str) -> str | None:
    """The ``javac`` beside ``java_path`` (symlinks followed), in ``$JAVA_HOME/bin`` or on PATH; None if none."""
    candidates = [Path(os.path.realpath(java_path)).parent / "javac"]
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "javac")
    for c in candidates:
        if os.access(c, os.X_OK):
            return str(c)
    return shutil.which("javac")


def classpath(*entries: Path | str) -> str:
    return os.pathsep.join(str(e) for e in entries)


def compile_source(home: Path, source: Path = SOURCE, java_path: str | None = None) -> Path | None:
    """Compile ``source`` against ``home/libs`` into ``home/classes-<digest>`` (once); None without a ``javac``.

    The digest covers the source and the jars' names, so an edited ``WordCount.java`` is compiled again.
    Compiled into a temporary directory and renamed into place, so two processes never see half a class."""
    compiler = javac(java_path or java())
    if compiler is None:
        return None
    libs = home / "libs"
    digest = hashlib.sha256(source.read_bytes() + "\n".join(sorted(p.name for p in libs.glob("*.jar"))).encode())
    final = home / f"classes-{digest.hexdigest()[:16]}"
    if (final / f"{source.stem}.class").is_file():
        return final
    staging = Path(tempfile.mkdtemp(prefix=".partial-classes-", dir=home))
    try:
        done = subprocess.run([compiler, "-nowarn", "-encoding", "UTF-8", "-d", str(staging),
                               "-cp", classpath(libs / "*"), str(source)],
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise StreamsJvmError(f"javac could not compile {source.name}: "
                                  f"{(done.stderr or done.stdout).strip()[:2000]}")
        try:
            os.rename(staging, final)
        except OSError:   # another process compiled it first
            pass
        return final
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def java_command(home: Path, main_args: list[str], jvm_options: list[str] | None = None,
                 source: Path = SOURCE) -> list[str]:
    """The command that runs ``source``'s main class with Kafka Streams ``home`` on the class path: the
    compiled class when there is a ``javac``, else Java's source-file mode (``java ... WordCount.java``)."""
    java_path = java()
    options = list(jvm_options or [])
    classes = compile_source(home, source, java_path)
    if classes is None:
        return [java_path, *options, "-cp", classpath(home / "libs" / "*"), str(source), *main_args]
    return [java_path, *options, "-cp", classpath(classes, home / "libs" / "*"), source.stem, *main_args]
