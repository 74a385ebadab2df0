"""The flusher job fsyncs rolled segments off the event loop and moves the recovery point."""
import time

from confluent_kafka import Producer

import kafkalab


def test_rolled_segments_are_flushed_in_the_background(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path), **{"log.segment.bytes": 2048}) as b:
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0})
        for i in range(200):
            p.produce("flushed", value=b"x" * 100, partition=0)
            p.flush(10)
        log = b.call(lambda: b.server.log_manager.logs[("flushed", 0)])
        segments = b.call(lambda: len(log.segments))
        assert segments > 3
        active_base = b.call(lambda: log.active_segment.base_offset)
        deadline = time.time() + 20
        while b.call(lambda: log.recovery_point) < active_base and time.time() < deadline:
            time.sleep(0.2)
        # every rolled segment is known flushed; the active one is not (flush.messages is unlimited)
        assert b.call(lambda: log.recovery_point) == active_base
