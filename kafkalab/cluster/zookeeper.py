"""A real ZooKeeper server for the lab's clusters.

A ZooKeeper-mode Kafka cluster keeps its metadata in ZooKeeper: which
brokers are alive (``/brokers/ids``), who the controller is
(``/controller``), each partition's leader and ISR. kafkalab runs the real
thing, Apache ZooKeeper, a Java program, as a standalone server (one
server, no quorum; Kafka's own quickstart does the same).

kafkalab does not ship ZooKeeper. It looks for its jars, in this order:

1. ``$ZOOKEEPER_HOME``: an unpacked Apache ZooKeeper release
   (``apache-zookeeper-3.x.y-bin``: the jars are in its ``lib/``);
2. pyspark's wheel, which already carries ``zookeeper-3.9.x.jar`` and the
   few jars it needs (a student who has pyspark and Java 17 has a ZooKeeper);
3. Debian's and Ubuntu's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``,
   whose manifest names the other jars it needs).

It is started with the smallest classpath that runs it and a small heap::

    java -Xmx64m -cp <the ZooKeeper jars> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg

``ZooKeeperServer(data_dir).start()`` writes ``zoo.cfg`` into ``data_dir``
(snapshots and transaction logs go to ``data_dir/data``, the server's own log
to ``data_dir/zookeeper.log``), starts the server on a free port of
127.0.0.1 and waits until the four-letter word ``srvr`` says it serves
requests; ``connect_string`` is what brokers take as ``zookeeper.connect``
and ``start_time_s`` how long the start took. A missing Java or ZooKeeper
raises :class:`ZooKeeperNotFound` with what to install.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time

from .ports import free_port, port_is_free

#: jar name prefixes ZooKeeper's server needs, found in pyspark's jars directory
_ZK_JARS = ["zookeeper-3", "zookeeper-jute-", "slf4j-api-", "audience-annotations-", "netty-handler-4",
            "netty-common-", "netty-transport-4", "netty-buffer-", "netty-resolver-4", "netty-codec-base-",
            "netty-codec-4", "netty-transport-native-unix-common-", "netty-transport-classes-epoll-",
            "metrics-core-4", "commons-io-", "snappy-java-"]
#: log4j 2 behind slf4j, if present: then zookeeper.log says what the server does (sessions expiring, ...)
_LOG_JARS = ["log4j-slf4j2-impl-", "log4j-api-", "log4j-core-"]

DEBIAN_JAR = "/usr/share/java/zookeeper.jar"

INSTALL_JAVA = ("Install Java 17: sudo apt-get install openjdk-17-jre-headless (Debian/Ubuntu), "
                "brew install openjdk@17 (macOS), or conda install -c conda-forge openjdk=17; "
                "or set JAVA_HOME to a Java 17 installation")
INSTALL_ZOOKEEPER = ("kafkalab uses the ZooKeeper jars of the installed pyspark (pip install pyspark), "
                     "or an Apache ZooKeeper release unpacked at $ZOOKEEPER_HOME, "
                     "or Debian's package (sudo apt-get install zookeeper)")


class ZooKeeperNotFound(RuntimeError):
    """No Java or no ZooKeeper jars: the message says what to install."""


def find_java() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if os.access(java, os.X_OK):
            return java
        found = shutil.which("java")
        if found is None:
            raise ZooKeeperNotFound(f"ZooKeeper needs Java: JAVA_HOME={java_home} has no bin/java, and there is "
                                    f"no 'java' on PATH. {INSTALL_JAVA}")
        return found
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperNotFound(f"ZooKeeper needs Java, and no 'java' was found on PATH (and JAVA_HOME is not "
                                f"set). {INSTALL_JAVA}")
    return java


def require_java(what: str, error: type[Exception],
                 install: str = "a Java 17 runtime (Debian: apt-get install openjdk-17-jre-headless)") -> str:
    """:func:`find_java` for ``what`` (Kafka, Kafka Streams, ...): its error as ``error``, saying what to install."""
    try:
        return find_java()
    except ZooKeeperNotFound:
        raise error(f"{what} runs on Java, and no 'java' was found (on PATH or in $JAVA_HOME): install "
                    f"{install}") from None


def _pick(jars_dir: str, prefixes: list[str]) -> list[str]:
    names = os.listdir(jars_dir)
    picked = []
    for prefix in prefixes:
        match = sorted(n for n in names if n.startswith(prefix) and n.endswith(".jar"))
        if match:
            picked.append(os.path.join(jars_dir, match[-1]))
    return picked


def _has_server_jar(paths: list[str]) -> bool:
    return any(os.path.basename(p).startswith("zookeeper-3") for p in paths)


def classpath_from_home(home: str) -> str:
    """The classpath of an Apache ZooKeeper release unpacked at ``home`` (jars in ``lib/`` or at the top)."""
    jars = sorted(glob.glob(os.path.join(home, "lib", "*.jar")) + glob.glob(os.path.join(home, "*.jar")))
    if not _has_server_jar(jars):
        raise ZooKeeperNotFound(f"ZOOKEEPER_HOME={home} is not a ZooKeeper release: it has no "
                                f"zookeeper-3.*.jar in {os.path.join(home, 'lib')}. Point ZOOKEEPER_HOME at an "
                                f"unpacked apache-zookeeper-3.x.y-bin directory, or unset it: {INSTALL_ZOOKEEPER}")
    return os.pathsep.join(jars)


def classpath_from_pyspark() -> str | None:
    """pyspark's ZooKeeper jars (plus log4j, so that the server logs), or None without pyspark."""
    try:
        import pyspark
    except ImportError:
        return None
    jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    if not os.path.isdir(jars_dir):
        return None
    picked = _pick(jars_dir, _ZK_JARS)
    if not _has_server_jar(picked):
        return None
    logging_jars = _pick(jars_dir, _LOG_JARS)
    if len(logging_jars) == len(_LOG_JARS):
        picked += logging_jars
    return os.pathsep.join(picked)


def find_classpath() -> str:
    """The ZooKeeper server's classpath: ``$ZOOKEEPER_HOME``, else pyspark's jars, else Debian's package."""
    home = os.environ.get("ZOOKEEPER_HOME")
    if home:
        return classpath_from_home(home)
    cp = classpath_from_pyspark()
    if cp:
        return cp
    if os.path.exists(DEBIAN_JAR):  # its manifest's Class-Path names netty, slf4j, jute, ... in /usr/share/java
        return DEBIAN_JAR
    raise ZooKeeperNotFound(f"No ZooKeeper found. {INSTALL_ZOOKEEPER}.")


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str:
    """Send one of ZooKeeper's four-letter words (``ruok``, ``srvr``, ``stat``, ``cons``, ``dump``, ``mntr``)."""
    with socket.create_connection((host, port), timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


_LOG4J2 = """\
# written by kafkalab: ZooKeeper's log, one line per event, into zookeeper.log (the process's stdout)
status = error
appender.console.type = Console
appender.console.name = out
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = out
"""


class ZooKeeperServer:
    """One standalone ZooKeeper server process.

    ``log_level`` is the server log's level (``INFO`` shows sessions being
    created and expiring, which is what a lab on broker failures wants to see).
    ``start(preexec_fn=...)`` lets the cluster launcher tie the server's life
    to its own (see :mod:`kafkalab.cluster.processes`).
    """

    def __init__(self, data_dir: str, port: int = 0, host: str = "127.0.0.1", tick_time_ms: int = 500,
                 heap_mb: int = 64, log_level: str = "INFO"):
        self.data_dir = os.path.abspath(data_dir)
        self.host = host
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.heap_mb = heap_mb
        self.log_level = log_level
        self.process: subprocess.Popen | None = None
        self.start_time_s: float | None = None   # how long the last start() took

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def log_path(self) -> str:
        return os.path.join(self.data_dir, "zookeeper.log")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def write_config(self) -> str:
        os.makedirs(os.path.join(self.data_dir, "data"), exist_ok=True)
        path = os.path.join(self.data_dir, "zoo.cfg")
        with open(path, "w") as f:
            f.write(f"tickTime={self.tick_time_ms}\n"
                    f"dataDir={os.path.join(self.data_dir, 'data')}\n"
                    f"clientPort={self.port}\n"
                    f"clientPortAddress={self.host}\n"
                    "admin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,stat,srvr,mntr,cons,dump,conf\n"
                    f"minSessionTimeout={2 * self.tick_time_ms}\n"
                    "maxSessionTimeout=60000\n"
                    "maxClientCnxns=0\n")
        with open(os.path.join(self.data_dir, "log4j2.properties"), "w") as f:
            f.write(_LOG4J2.replace("{level}", self.log_level))
        return path

    def command(self) -> list[str]:
        """The java command line (``start()`` runs it; ``zoo.cfg`` must have been written)."""
        java, classpath = find_java(), find_classpath()
        return [java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dzookeeper.admin.enableServer=false",
                f"-Dlog4j2.configurationFile={os.path.join(self.data_dir, 'log4j2.properties')}",
                "-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                os.path.join(self.data_dir, "zoo.cfg")]

    def start(self, timeout_s: float = 30.0, preexec_fn=None, start_new_session: bool = False) -> "ZooKeeperServer":
        """Start the server and wait until it serves requests (``srvr`` names its mode).

        Raises ZooKeeperNotFound (no Java or no ZooKeeper: what to install),
        RuntimeError naming the log if the server exits or does not answer in time.
        """
        if self.running:
            raise RuntimeError(f"ZooKeeper is already running on {self.connect_string} (pid {self.pid})")
        began = time.monotonic()
        if not self.port:
            self.port = free_port(self.host)
        elif not port_is_free(self.host, self.port):
            raise RuntimeError(f"cannot start ZooKeeper on {self.connect_string}: the port is in use "
                               "(another ZooKeeper?); choose another port, or 0 for a free one")
        self.write_config()
        cmd = self.command()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            preexec_fn=preexec_fn, start_new_session=start_new_session)
        deadline = began + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with status {self.process.returncode} while starting on "
                                   f"{self.connect_string}; its log {self.log_path} ends with:\n"
                                   f"{tail(self.log_path)}")
            try:
                # "ruok" says imok as soon as the port listens; "srvr" names the mode once it serves,
                # and "conf" names the data dir: the server answering is this one
                if ("Mode:" in four_letter_word(self.host, self.port, "srvr", 0.5)
                        and self.data_dir in four_letter_word(self.host, self.port, "conf", 0.5)):
                    self.start_time_s = time.monotonic() - began
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.connect_string} within {timeout_s:.0f} s; "
                           f"its log {self.log_path} ends with:\n{tail(self.log_path)}")

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not exited after ``timeout_s``."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "ZooKeeperServer":
        return self.start() if self.process is None else self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ZooKeeperServer {state} {self.connect_string} data_dir={self.data_dir!r}>"


def tail(path: str, lines: int = 15, max_bytes: int = 16384) -> str:
    """The last ``lines`` lines of a log file ('' if there is none), for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
