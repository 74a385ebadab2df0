"""A Kafka Streams application running in a JVM child process, and what Python can see of it.

:func:`word_count` starts kafkalab's ``WordCount.java`` (see :mod:`kafkalab.streams.jvm`) as a child
process: its stdout and stderr go to ``streams.log`` in the app's directory, beside its config
(``streams.properties``), its topology (``topology.txt``) and, unless given elsewhere, its state
directory (``state/``: the RocksDB stores and their checkpoint files). The child never outlives this
process: it is started as the lab's brokers are (:func:`kafkalab.cluster.processes.spawn`: its own
session, the kernel's ``PDEATHSIG`` on Linux) and a watchdog of its own SIGTERMs, then SIGKILLs it and
removes the temporary directory if this process dies without closing it.

What the application does is read from Kafka itself, as any operator would: its state from the lines
``WordCount`` prints on each state change, its progress from the consumer group named by its
``application.id`` (committed offsets against the topics' end offsets, with confluent-kafka's admin
client).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from pathlib import Path

from ..cluster.processes import Watchdog, spawn
from .jvm import STREAMS_VERSION, fetch_streams, java_command

#: what kafkalab's word count sets, beside bootstrap.servers, application.id and state.dir
DEFAULT_CONFIGS = {
    "processing.guarantee": "at_least_once",
    "commit.interval.ms": 100,                 # commit (and so make the output's progress visible) often
    "statestore.cache.max.bytes": 0,           # no record cache: every update of a count is sent downstream
    "default.key.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
    "default.value.serde": "org.apache.kafka.common.serialization.Serdes$StringSerde",
    "auto.offset.reset": "earliest",
}
#: slf4j-simple: Kafka Streams at INFO (its state changes, assignments, restores), the clients' chatter at WARN
LOG_OPTIONS = [
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients=warn",
    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.common=warn",
]
JVM_OPTIONS = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
_STATE_LINE = re.compile(r"^kafkalab: state (\w+)$", re.M)
#: the applications not closed yet: closed (cleanly, before an embedded broker's own atexit) at interpreter exit
_OPEN: "weakref.WeakSet[StreamsApp]" = weakref.WeakSet()


class StreamsError(RuntimeError):
    """The Kafka Streams application failed or did not get where it was asked to; the message ends with
    the last lines of its log."""


def _properties(configs: dict) -> str:
    def escape(text: str) -> str:
        return (text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")
                .replace("#", "\\#").replace("!", "\\!"))
    return "".join(f"{escape(str(k))}={escape(str(v))}\n" for k, v in configs.items())


class StreamsApp:
    """A running Kafka Streams application (a JVM). ``close()`` stops it; usable as a context manager."""

    def __init__(self, command: list[str], configs: dict, input_topics: list[str], work_dir: Path,
                 temp: bool, grace_s: float = 30.0):
        self.configs = dict(configs)
        self.application_id = str(configs["application.id"])
        self.bootstrap_servers = str(configs["bootstrap.servers"])
        self.input_topics = list(input_topics)
        self.dir = work_dir
        self.state_dir = Path(configs["state.dir"])
        self.log_path = work_dir / "streams.log"
        self.grace_s = grace_s
        self._temp = temp
        self._closed = False
        self._exit_code: int | None = None
        self._admin_client = None
        self._states: list[str] = []     # read from the log as it grows (and kept once the log is removed)
        self._log_read = 0
        self._topology = ""
        (work_dir / "streams.properties").write_text(_properties(self.configs))
        self.watchdog = Watchdog(grace_s=grace_s)
        try:
            if temp:
                self.watchdog.remove_dir_at_exit(str(work_dir))
            self.process = spawn(command, str(self.log_path), watchdog=self.watchdog, cwd=str(work_dir))
        except BaseException:
            self.watchdog.close()
            raise
        self.pid = self.process.pid
        _OPEN.add(self)

    # -- what it is doing ---------------------------------------------------------------------------------

    def log(self, last: int | None = None) -> str:
        """The application's log (its last ``last`` lines)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-last:]) if last else text

    @property
    def states(self) -> list[str]:
        """Every state the application went through, in order (``CREATED`` is not reported)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_read)
                chunk = f.read()
        except OSError:
            return list(self._states)
        complete = chunk.rfind(b"\n") + 1   # whole lines only: the JVM may be writing one
        self._log_read += complete
        self._states += _STATE_LINE.findall(chunk[:complete].decode(errors="replace"))
        return list(self._states)

    @property
    def state(self) -> str:
        """``KafkaStreams.State``: ``REBALANCING``, ``RUNNING``, ..., ``NOT_RUNNING``, ``ERROR``; ``STARTING``
        before the JVM reports one, ``EXITED`` if it ended without saying so (killed)."""
        states = self.states
        if self.process.poll() is not None and (not states or states[-1] not in ("NOT_RUNNING", "ERROR")):
            return "EXITED"
        return states[-1] if states else "STARTING"

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    @property
    def topology(self) -> str:
        """``Topology.describe()``: its sub-topologies, processors and topics."""
        if not self._topology:
            try:
                self._topology = (self.dir / "topology.txt").read_text()
            except OSError:
                pass
        return self._topology

    def _fail(self, what: str) -> StreamsError:
        lines = self.log().splitlines()
        causes = ([line for line in lines if line.startswith("Caused by:")]
                  or [line for line in lines if "Exception" in line and not line.lstrip().startswith("at ")])
        cause = f"\n{causes[-1].strip()}" if causes else ""
        return StreamsError(f"{what}{cause}\nthe last lines of its log ({self.log_path}):\n" + "\n".join(lines[-25:]))

    def wait_until_running(self, timeout: float = 60.0) -> None:
        """Until the application is ``RUNNING`` (its first rebalance done, its tasks restored)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.state
            if state == "RUNNING":
                return
            if not self.running or state in ("ERROR", "PENDING_ERROR", "NOT_RUNNING", "EXITED"):
                raise self._fail(f"Kafka Streams stopped ({state}, exit code {self.process.poll()})")
            if time.monotonic() > deadline:
                raise self._fail(f"Kafka Streams is not RUNNING after {timeout:.0f} s (it is {state})")
            time.sleep(0.1)

    def _admin(self):
        if self._admin_client is None:
            from confluent_kafka.admin import AdminClient
            self._admin_client = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 4})
        return self._admin_client

    def internal_topics(self) -> list[str]:
        """The topics Kafka Streams created for this application: ``<application.id>-...-repartition`` and
        ``-changelog``."""
        admin = self._admin()
        names = admin.list_topics(timeout=15).topics
        return sorted(n for n in names if n.startswith(self.application_id + "-")
                      and n.endswith(("-repartition", "-changelog")))

    def lag(self) -> dict[tuple[str, int], int]:
        """Per partition of the input and repartition topics: end offset minus the group's committed offset
        (the whole partition when nothing is committed yet). All zero: every record read was processed and
        its results written (at-least-once commits only after the output is flushed)."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
        from confluent_kafka.admin import OffsetSpec
        admin = self._admin()
        metadata = admin.list_topics(timeout=15).topics
        topics = [t for t in self.input_topics if t in metadata]
        topics += [t for t in metadata if t.startswith(self.application_id + "-") and t.endswith("-repartition")]
        partitions = [TopicPartition(t, p) for t in topics for p in sorted(metadata[t].partitions)]
        # committed offsets first, end offsets second: an input partition committed up to its end was
        # repartitioned before that commit, so the repartition topic's end offset read after it counts it
        group = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(self.application_id)],
                                                  request_timeout=15)[self.application_id].result()
        committed = {(tp.topic, tp.partition): tp.offset for tp in group.topic_partitions if tp.offset >= 0}
        ends = {} if not partitions else {
            (tp.topic, tp.partition): info.offset
            for tp, info in ((tp, f.result()) for tp, f in admin.list_offsets(
                {tp: OffsetSpec.latest() for tp in partitions}, request_timeout=15).items())}
        return {key: max(0, end - committed.get(key, 0)) for key, end in sorted(ends.items())}

    def wait_until_caught_up(self, timeout: float = 60.0) -> None:
        """Until everything in the input topics so far is processed and committed (:meth:`lag` all zero)."""
        deadline = time.monotonic() + timeout
        self.wait_until_running(timeout)
        behind: dict = {}
        while True:
            if not self.running:
                raise self._fail(f"Kafka Streams stopped ({self.state}, exit code {self.process.poll()})")
            try:
                behind = {k: v for k, v in self.lag().items() if v}
            except Exception as e:   # noqa: BLE001 - the broker is briefly unreachable, the group is rebalancing, ...
                behind = {"error": str(e)}
            if not behind:
                return
            if time.monotonic() > deadline:
                raise self._fail(f"Kafka Streams has not caught up after {timeout:.0f} s (behind: {behind})")
            time.sleep(0.2)

    # -- stopping -----------------------------------------------------------------------------------------

    def kill(self) -> None:
        """Crash the application (SIGKILL: no commit, no LeaveGroup, the state stores left as they were).
        ``close()`` still cleans up afterwards."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self, timeout: float | None = None) -> int | None:
        """Stop the application cleanly (SIGTERM: ``KafkaStreams.close()``, which commits), SIGKILL it if it
        takes longer than ``timeout`` (30 s), and remove its temporary directory. Returns the JVM's exit
        code: 0 after a clean shutdown (``NOT_RUNNING``), 1 after ``ERROR``, -9 if it had to be killed;
        idempotent."""
        if self._closed:
            return self._exit_code
        self._closed = True
        _OPEN.discard(self)
        try:
            if self.process.poll() is None:
                try:
                    self.process.send_signal(signal.SIGTERM)
                    self.process.wait(self.grace_s if timeout is None else timeout)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
            self._exit_code = self.process.returncode
            self._topology = self.topology   # read what is left before the directory goes
            if self._exit_code == 128 + signal.SIGTERM and self.states[-1:] == ["NOT_RUNNING"]:
                self._exit_code = 0   # the JVM's status after a SIGTERM whose shutdown hook closed Kafka Streams
            self.watchdog.forget(self.pid)
        finally:
            self._admin_client = None
            self.watchdog.close()
            if self._temp:
                shutil.rmtree(self.dir, ignore_errors=True)
        return self._exit_code

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "StreamsApp":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<kafkalab.streams app {self.application_id!r}: {self.state}, pid {self.pid}>"


def word_count(bootstrap_servers: str, input_topic: str, output_topic: str,
               application_id: str = "streams-wordcount", state_dir: str | os.PathLike | None = None,
               work_dir: str | os.PathLike | None = None, group_instance_id: str | None = None,
               version: str = STREAMS_VERSION, wait: bool = True, timeout: float = 120.0,
               **configs) -> StreamsApp:
    """Start kafkalab's Kafka Streams word count (``WordCount.java``) on ``input_topic`` -> ``output_topic``.

    The topology is that of Kafka's ``WordCountDemo``: lines split on non-word characters, grouped by
    word (a repartition topic), counted (a RocksDB state store with a changelog topic), every new count
    written to ``output_topic`` with a String key and a Long value (8 bytes, big-endian). ``configs``
    are more StreamsConfig entries under Kafka's names (``**{"num.stream.threads": 2}``) or Python ones
    (``num_stream_threads=2``). ``group_instance_id`` makes the application's consumers static members
    (KIP-345), which ``close()`` then removes from the group at once.

    ``work_dir`` (a fresh temporary directory, removed on ``close()``, when not given) holds the
    config, the log and, unless ``state_dir`` is given, the state stores. With ``wait`` the call returns
    once the application is ``RUNNING``. The first call fetches Kafka Streams from the Maven repository
    (cached in ``~/.kafkalab/dist``)."""
    home = fetch_streams(version)
    temp = work_dir is None
    work = Path(tempfile.mkdtemp(prefix=f"kafkalab-streams-{application_id}-") if temp else work_dir)
    work.mkdir(parents=True, exist_ok=True)
    merged = {"bootstrap.servers": bootstrap_servers, "application.id": application_id,
              "state.dir": str(Path(state_dir) if state_dir is not None else work / "state"), **DEFAULT_CONFIGS}
    if group_instance_id is not None:
        merged["group.instance.id"] = group_instance_id
    merged.update({(k if "." in k else k.replace("_", ".")): v for k, v in configs.items()})
    try:
        command = java_command(home, [str(work / "streams.properties"), input_topic, output_topic],
                               JVM_OPTIONS + LOG_OPTIONS)
        app = StreamsApp(command, merged, [input_topic], work, temp)
    except BaseException:
        if temp:
            shutil.rmtree(work, ignore_errors=True)
        raise
    if wait:
        try:
            app.wait_until_running(timeout)
        except BaseException:
            app.close()
            raise
    return app


@atexit.register
def _close_all() -> None:
    # registered after kafkalab.broker.mini's (imported first), so it runs before: the apps commit and leave
    # while an embedded broker still answers
    for app in list(_OPEN):
        app.close()
