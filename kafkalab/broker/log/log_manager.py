"""``LogManager``: every partition log under ``log.dirs``, their checkpoints and background jobs.

Kafka's LogManager loads the partition directories at start-up, creates and
deletes logs, and keeps these files in the log dir::

    .lock                              held (flock) while a broker uses the directory
    recovery-point-offset-checkpoint   up to where each log is known flushed
    log-start-offset-checkpoint        each log's log start offset
    cleaner-offset-checkpoint          each compacted log's first dirty offset
    .kafka_cleanshutdown               written last by a clean shutdown

Before it reads anything, a broker's LogManager locks the directory, as
Kafka's ``LogManager.lockLogDirs`` does: an exclusive ``flock`` on
``<log.dirs>/.lock``, held until ``close()`` (or until the process dies:
the kernel drops the lock with it, so a killed broker never leaves its
directory locked). A second broker pointed at a directory in use, in
another process or in this one, fails with :class:`LogDirLockedError`
instead of "recovering" the logs a live broker is writing. (``LogManager``
built without ``lock_dir=True``, as the unit tests do to reopen a directory
after a simulated crash, takes no lock.)

The checkpoints use Kafka's text format: a version line (0), a count line,
then one ``<topic> <partition> <offset>`` line per log. They are written
every ``log.flush.offset.checkpoint.interval.ms`` and at clean shutdown.

At start-up the clean shutdown marker is read and removed: if it was there,
the logs are trusted as they are; if not (the broker crashed or was killed),
every log is recovered from its recovery point (see ``recovery.py``).

Background jobs on the broker's loop (``start(broker)``), as Kafka's scheduler:

* ``kafka-log-retention``    every ``log.retention.check.interval.ms``: ``cleanup_logs()``, the first
  time ``log.initial.task.delay.ms`` (30 s) after start-up, as Kafka's ``LogManager.startup``
* ``kafka-log-cleaner``      every ``log.cleaner.backoff.ms`` if ``log.cleaner.enable``: ``run_cleaner()``
* ``kafka-recovery-point-checkpoint`` every ``log.flush.offset.checkpoint.interval.ms``
* ``kafka-log-flusher``      fsyncs rolled segments (moving the recovery point) and applies ``flush.ms``

``cleanup_logs(now_ms)`` and ``run_cleaner(now_ms)`` can also be called
directly with a clock of your choosing (tests and notebooks use
``broker.call(broker.server.log_manager.cleanup_logs, now_ms)``).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import time

try:
    import fcntl
except ImportError:  # Windows: no flock, the directory is not locked
    fcntl = None

from ..common.metrics import KafkaMetricsGroup, MetricsRegistry
from .log_config import ConfigValues, LogConfig
from .log import UnifiedLog, parse_partition_dir
from .log_cleaner import CleanerStats, LogCleaner
from .offset_checkpoint import read_checkpoint, write_checkpoint

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

LOCK_FILE = ".lock"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"


class LogDirLockedError(RuntimeError):
    """Another broker (process or thread) holds ``.lock`` in this log directory."""


class LogDirLock:
    """Kafka's ``FileLock`` on ``<dir>/.lock``: an exclusive, non-blocking ``flock``.

    ``flock`` locks belong to the open file, so a second lock attempt fails
    in the same process too (a second ``kafkalab.mini()`` on the directory).
    """

    def __init__(self, directory: str):
        self.path = os.path.join(directory, LOCK_FILE)
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if fcntl is None:
            return
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            self._fd = None
            raise LogDirLockedError(f"Failed to acquire lock on file {LOCK_FILE} in {os.path.abspath(directory)}. "
                                    "A Kafka instance in another process or thread is using this directory.")
        except BaseException:
            os.close(self._fd)
            self._fd = None
            raise

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor drops the flock


def read_clean_shutdown_epoch(path: str) -> int:
    """The broker epoch in a ``.kafka_cleanshutdown`` marker; -1 when it holds none (or is empty: older kafkalab)."""
    try:
        with open(path) as f:
            return int(json.load(f)["brokerEpoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


class LogManager:
    def __init__(self, log_dir: str, config: ConfigValues, lock_dir: bool = False):
        self.log_dir = log_dir
        self.config = config
        self.logs: dict[tuple[str, int], UnifiedLog] = {}
        os.makedirs(log_dir, exist_ok=True)
        #: the directory's .lock, held while the broker runs (``lock_dir=True``, what KafkaServer asks for)
        self.dir_lock: LogDirLock | None = LogDirLock(log_dir) if lock_dir else None
        marker = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE)
        #: whether the previous broker on this log dir shut down cleanly (then no recovery is needed)
        self.had_clean_shutdown = os.path.exists(marker)
        #: the broker epoch a KRaft broker wrote in the marker (Kafka's CleanShutdownFileHandler), else -1
        self.previous_broker_epoch = read_clean_shutdown_epoch(marker) if self.had_clean_shutdown else -1
        if self.had_clean_shutdown:
            os.remove(marker)  # from now on, a crash must lead to recovery
        elif any(parse_partition_dir(n) for n in os.listdir(log_dir)):
            log.warning("%s: no clean shutdown marker; logs will be recovered from their recovery points", log_dir)
        self._recovery_points = read_checkpoint(os.path.join(log_dir, RECOVERY_POINT_CHECKPOINT))
        self._log_start_offsets = read_checkpoint(os.path.join(log_dir, LOG_START_OFFSET_CHECKPOINT))
        self.cleaner = LogCleaner(log_dir)
        #: the broker's metrics registry (set by the broker; None: no metrics): each log's kafka.log:type=Log gauges
        self.metrics: MetricsRegistry | None = None

    def get_or_create_log(self, topic: str, partition: int, log_config: LogConfig) -> UnifiedLog:
        key = (topic, partition)
        log_ = self.logs.get(key)
        if log_ is None:
            log_ = UnifiedLog(os.path.join(self.log_dir, f"{topic}-{partition}"), topic, partition, log_config,
                              log_start_offset=self._log_start_offsets.get(key, 0),
                              recovery_point=self._recovery_points.get(key, 0),
                              had_clean_shutdown=self.had_clean_shutdown)
            self.logs[key] = log_
            if self.metrics is not None:
                _new_log_metrics(self.metrics, log_)
        return log_

    def get_log(self, topic: str, partition: int) -> UnifiedLog | None:
        return self.logs.get((topic, partition))

    def delete_log(self, topic: str, partition: int) -> None:
        log_ = self.logs.pop((topic, partition), None)
        self._recovery_points.pop((topic, partition), None)
        self._log_start_offsets.pop((topic, partition), None)
        self.cleaner.forget(topic, partition)
        if log_ is not None:
            if self.metrics is not None:   # Kafka's removeLogMetrics: a deleted log's series go
                KafkaMetricsGroup(self.metrics, "kafka.log", "Log").remove_metrics(
                    LOG_METRIC_NAMES, {"topic": topic, "partition": partition})
            log_.delete()

    # -- retention, compaction, flushing ---------------------------------------------

    def cleanup_logs(self, now_ms: int | None = None) -> int:
        """Retention for every log (Kafka's LogManager.cleanupLogs); returns the segments deleted."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return sum(log_.delete_old_segments(now_ms) for log_ in list(self.logs.values()))

    def run_cleaner(self, now_ms: int | None = None, force: bool = False) -> list[CleanerStats]:
        """Compact every cleanable log now (``force``: also below min.cleanable.dirty.ratio)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        return self.cleaner.clean_logs(list(self.logs.values()), now_ms, force=force)

    async def flush_dirty_logs_in_background(self) -> None:
        """The flusher job: fsync the segments that rolled (``UnifiedLog.flush_rolled_segments``,
        but in a worker thread, as Kafka's flusher is a scheduler thread too, so a slow disk never
        stalls the connections served by the event loop), then the logs due by ``flush.ms``.

        The thread fsyncs *duplicates* of the files' descriptors: retention, the cleaner or a
        topic deletion may close and remove those segments meanwhile; their data was written
        before the fsync began, and a log deleted meanwhile is left alone."""
        work, fds = [], []
        try:
            for log_ in list(self.logs.values()):
                target, segments = log_.rolled_segments_to_flush()
                for seg in segments:
                    fds += seg.dup_fds()
                if segments:
                    work.append((log_, target))
        except BaseException:
            _close_all(fds)
            raise
        if fds:
            await asyncio.to_thread(_fsync_and_close, fds)
            for log_, target in work:
                if self.logs.get((log_.topic, log_.partition)) is log_:  # not deleted meanwhile
                    log_.mark_flushed(target)
        now_ms = int(time.time() * 1000)
        for log_ in list(self.logs.values()):
            log_.maybe_flush_by_time(now_ms)

    def checkpoint(self) -> None:
        """Write the checkpoint files (Kafka does it every log.flush.offset.checkpoint.interval.ms)."""
        self._recovery_points = {k: log_.recovery_point for k, log_ in self.logs.items()}
        self._log_start_offsets = {k: log_.log_start_offset for k, log_ in self.logs.items()}
        write_checkpoint(os.path.join(self.log_dir, RECOVERY_POINT_CHECKPOINT), self._recovery_points)
        write_checkpoint(os.path.join(self.log_dir, LOG_START_OFFSET_CHECKPOINT), self._log_start_offsets)
        self.cleaner.checkpoint()

    # -- background jobs -------------------------------------------------------------

    def start(self, broker) -> None:
        """Schedule the background jobs on the broker's loop (``broker.spawn``)."""
        cfg = self.config
        broker.spawn(self._every("kafka-log-retention", cfg["log.retention.check.interval.ms"], self.cleanup_logs,
                                 first_after_ms=cfg["log.initial.task.delay.ms"]))
        if cfg["log.cleaner.enable"]:
            broker.spawn(self._every("kafka-log-cleaner", max(cfg["log.cleaner.backoff.ms"], 100), self.run_cleaner))
        interval = cfg["log.flush.offset.checkpoint.interval.ms"]
        if interval > 0:
            broker.spawn(self._every("kafka-recovery-point-checkpoint", interval, self.checkpoint))
        flush_interval = min(1000, max(cfg["log.flush.scheduler.interval.ms"], 100))  # 0 would spin
        broker.spawn(self._every("kafka-log-flusher", flush_interval, self.flush_dirty_logs_in_background))

    @staticmethod
    async def _every(name: str, interval_ms: int, job, first_after_ms: int | None = None) -> None:
        wait_ms = interval_ms if first_after_ms is None else first_after_ms
        while True:
            await asyncio.sleep(wait_ms / 1000)
            wait_ms = interval_ms
            try:
                result = job()
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # a failing job is logged and retried, it never stops the broker
                log.exception("background job %s failed", name)

    def close(self, broker_epoch: int = -1) -> None:
        """Clean shutdown: flush every log, checkpoint, close, then write ``.kafka_cleanshutdown``:
        ``{"version":0,"brokerEpoch":N}`` as Kafka's, N a KRaft broker's epoch (-1 in ZooKeeper mode), which it
        sends as ``PreviousBrokerEpoch`` when it registers again: a clean shutdown)."""
        for log_ in self.logs.values():
            log_.flush()
        self.checkpoint()
        for log_ in self.logs.values():
            log_.close()
        with open(os.path.join(self.log_dir, CLEAN_SHUTDOWN_FILE), "w") as f:
            f.write(json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")))
            f.flush()
            os.fsync(f.fileno())
        self.release_lock()

    def release_lock(self) -> None:
        """Let another broker use the directory (``close()`` does it last; a failed start too)."""
        if self.dir_lock is not None:
            self.dir_lock.release()


#: Kafka's ``UnifiedLog.newMetrics``: kafka.log:type=Log,name=N,topic=T,partition=P
LOG_METRIC_NAMES = ("NumLogSegments", "LogStartOffset", "LogEndOffset", "Size")


def _new_log_metrics(registry: MetricsRegistry, log_: UnifiedLog) -> None:
    group = KafkaMetricsGroup(registry, "kafka.log", "Log")
    tags = {"topic": log_.topic, "partition": log_.partition}
    group.new_gauge("NumLogSegments", lambda: len(log_.segments), tags)
    group.new_gauge("LogStartOffset", lambda: log_.log_start_offset, tags)
    group.new_gauge("LogEndOffset", lambda: log_.log_end_offset, tags)
    group.new_gauge("Size", lambda: log_.size, tags)


def _fsync_and_close(fds: list[int]) -> None:
    try:
        for fd in fds:
            os.fsync(fd)
    finally:
        _close_all(fds)


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)
