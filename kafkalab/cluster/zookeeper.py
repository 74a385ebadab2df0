"""A real ZooKeeper server for the lab's clusters.

ZooKeeper is a Java program. kafkalab does not ship it: pyspark's wheel
already carries ``zookeeper-3.9.x.jar`` and the few jars it needs, so a
student who has pyspark and Java 17 has a ZooKeeper. It is started with the
smallest classpath that runs it and a small heap::

    java -Xmx64m -cp <the ZooKeeper jars> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg

``ZooKeeperServer(data_dir).start()`` writes ``zoo.cfg``, starts the server
on a free port of 127.0.0.1 and waits until ``srvr`` says it serves
requests; ``connect_string`` is what brokers take as ``zookeeper.connect``.
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time

#: jar name prefixes ZooKeeper's server needs, found in pyspark's jars directory
_ZK_JARS = ["zookeeper-3", "zookeeper-jute-", "slf4j-api-", "audience-annotations-", "netty-handler-4",
            "netty-common-", "netty-transport-4", "netty-buffer-", "netty-resolver-4", "netty-codec-base-",
            "netty-codec-4", "netty-transport-native-unix-common-", "netty-transport-classes-epoll-",
            "metrics-core-4", "commons-io-", "snappy-java-"]


class ZooKeeperNotFound(RuntimeError):
    """No Java or no ZooKeeper jars: the message says what to install."""


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return os.path.join(java_home, "bin", "java")
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperNotFound(
            "ZooKeeper needs Java 17, and no 'java' was found on PATH (nor in $JAVA_HOME). Install it: "
            "sudo apt-get install openjdk-17-jre-headless, brew install openjdk@17, or "
            "conda install -c conda-forge openjdk=17")
    return java


def find_classpath() -> str:
    """The ZooKeeper server's classpath: pyspark's jars, else $ZOOKEEPER_HOME, else Debian's package."""
    try:
        import pyspark
        jars_dir = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        names = os.listdir(jars_dir)
        picked = []
        for prefix in _ZK_JARS:
            match = sorted(n for n in names if n.startswith(prefix) and n.endswith(".jar"))
            if match:
                picked.append(os.path.join(jars_dir, match[-1]))
        if any(os.path.basename(p).startswith("zookeeper-3") for p in picked):
            return os.pathsep.join(picked)
    except ImportError:
        pass
    for home in (os.environ.get("ZOOKEEPER_HOME"), "/usr/share/zookeeper"):
        if home and glob.glob(os.path.join(home, "**", "zookeeper-3*.jar"), recursive=True):
            return os.pathsep.join(glob.glob(os.path.join(home, "**", "*.jar"), recursive=True))
    raise ZooKeeperNotFound(
        "No ZooKeeper found: kafkalab uses the ZooKeeper jars of the installed pyspark "
        "(pip install pyspark), or $ZOOKEEPER_HOME, or Debian's package (sudo apt-get install zookeeper)")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str:
    with socket.create_connection((host, port), timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    """One standalone ZooKeeper server process."""

    def __init__(self, data_dir: str, port: int = 0, host: str = "127.0.0.1", tick_time_ms: int = 500,
                 heap_mb: int = 64):
        self.data_dir = os.path.abspath(data_dir)
        self.host = host
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.heap_mb = heap_mb
        self.process: subprocess.Popen | None = None

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def write_config(self) -> str:
        os.makedirs(os.path.join(self.data_dir, "data"), exist_ok=True)
        path = os.path.join(self.data_dir, "zoo.cfg")
        with open(path, "w") as f:
            f.write(f"tickTime={self.tick_time_ms}\n"
                    f"dataDir={os.path.join(self.data_dir, 'data')}\n"
                    f"clientPort={self.port}\n"
                    f"clientPortAddress={self.host}\n"
                    "admin.enableServer=false\n"
                    "4lw.commands.whitelist=ruok,stat,srvr,mntr,cons,dump\n"
                    f"minSessionTimeout={2 * self.tick_time_ms}\n"
                    "maxSessionTimeout=60000\n"
                    "maxClientCnxns=0\n")
        return path

    def start(self, timeout_s: float = 30.0, preexec_fn=None) -> "ZooKeeperServer":
        java, classpath = find_java(), find_classpath()
        if not self.port:
            self.port = free_port(self.host)
        cfg = self.write_config()
        log = open(os.path.join(self.data_dir, "zookeeper.log"), "ab")
        cmd = [java, f"-Xmx{self.heap_mb}m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Dzookeeper.admin.enableServer=false", "-cp", classpath,
               "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg]
        self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        preexec_fn=preexec_fn)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with status {self.process.returncode}; see "
                                   f"{os.path.join(self.data_dir, 'zookeeper.log')}")
            try:
                # "ruok" says imok as soon as the port listens; "srvr" names the mode once it serves
                if "Mode:" in four_letter_word(self.host, self.port, "srvr", 0.5):
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not answer on {self.connect_string} within {timeout_s:.0f} s")

    def stop(self, timeout_s: float = 10.0) -> None:
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
