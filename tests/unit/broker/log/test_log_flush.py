"""The flusher job: rolled segments fsynced in a worker thread, while the loop deletes segments and logs."""
from __future__ import annotations

import asyncio
import os
import threading

from tests.helpers.kafka_spec import batch

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.log import log_manager as log_manager_module
from kafkalab.broker.log.log_manager import LogManager

T0 = 1_700_000_000_000
HOUR = 3_600_000


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def filled_log(manager, topic, n=20):
    log = manager.get_or_create_log(topic, 0, LogConfig(manager.config, {"segment.bytes": 300,
                                                                         "retention.ms": HOUR}))
    for i in range(n):
        log.append_as_leader(batch(0, [(T0 + i, b"k", b"v" * 50)]))
    log.high_watermark = log.log_end_offset
    return log


def test_background_flush_survives_segment_and_log_deletion_meanwhile(tmp_path, monkeypatch):
    manager = LogManager(str(tmp_path), BrokerConfig({"log.dirs": str(tmp_path)}))
    kept, doomed = filled_log(manager, "kept"), filled_log(manager, "doomed")
    target, rolled = kept.rolled_segments_to_flush()
    assert target == kept.active_segment.base_offset and len(rolled) > 3 and kept.recovery_point == 0
    dups = 3 * (len(rolled) + len(doomed.rolled_segments_to_flush()[1]))
    in_thread, release = threading.Event(), threading.Event()
    real_fsync_and_close = log_manager_module._fsync_and_close

    def slow_disk(fds):
        in_thread.set()
        assert release.wait(30)
        real_fsync_and_close(fds)
    monkeypatch.setattr(log_manager_module, "_fsync_and_close", slow_disk)

    async def scenario():
        flusher = asyncio.get_running_loop().create_task(manager.flush_dirty_logs_in_background())
        try:
            fds_while_flushing = await deletions_meanwhile()
        finally:
            release.set()
            await flusher
        return fds_while_flushing, open_fds()

    async def deletions_meanwhile():
        assert await asyncio.to_thread(in_thread.wait, 30)
        # while the fsyncs wait for the "disk": retention deletes most rolled segments, a topic is deleted
        inactive = len(kept.segments) - 1
        kept.high_watermark = kept.log_end_offset - 1   # the active segment is not wholly below the HW: it stays
        assert kept.delete_old_segments(now_ms=T0 + 10 * HOUR) == inactive
        manager.delete_log("doomed", 0)
        return open_fds()
    fds_while_flushing, fds_after = asyncio.run(scenario())
    assert fds_after == fds_while_flushing - dups        # every duplicated descriptor was closed
    assert not os.path.exists(doomed.dir)
    assert kept.recovery_point == target                 # the segments below it were fsynced
    assert kept.rolled_segments_to_flush() == (target, [])
    manager.close()


def test_flush_scheduler_interval_of_zero_does_not_spin(tmp_path, monkeypatch):
    manager = LogManager(str(tmp_path), BrokerConfig({"log.dirs": str(tmp_path),
                                                      "log.flush.scheduler.interval.ms": 0}))
    intervals = {}

    async def every(name, interval_ms, job, first_after_ms=None):
        intervals[name] = interval_ms
    monkeypatch.setattr(LogManager, "_every", staticmethod(every))

    class Broker:
        def spawn(self, coro):
            asyncio.run(coro)
    manager.start(Broker())
    assert intervals["kafka-log-flusher"] >= 100
    manager.close()
