"""Mutation fuzzing: mutated client frames over many connections, good clients alongside.

A short seeded run of ``tests/helpers/fuzzing.py`` against one broker process: frames captured from
confluent-kafka and kafka-python (``tests/data/fuzz_corpus.bin``), mutated (bit flips, truncation,
length and count lies, nulls, record areas with and without a matching CRC, codec swaps, zstd
bombs, huge partition counts), sent on 8 threads while an idempotent ``acks=all`` producer and a
consumer work on topic ``fuzz-good``. The broker must answer a ping throughout, keep its memory
and descriptors bounded, log no traceback, and every acknowledged good record must be consumed
exactly once. ``python -m benchmarks.fuzz`` runs the same for longer.
"""
from __future__ import annotations

import os
import sys

import pytest
from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.helpers import fuzz_corpus  # noqa: E402
from tests.helpers import fuzzing  # noqa: E402
from tests.helpers import kafka_wire as wire  # noqa: E402
from conftest import BrokerProcess  # noqa: E402

SEED = 8
FRAMES = 2500
MB = 1024 * 1024
#: keeps the descriptors a fuzzed CreateTopics may open bounded (3 per partition)
BROKER_PARTITIONS = 400


def create_topics(bootstrap, names, partitions=1):
    req = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=n, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]) for n in names],
        timeout_ms=10000, validate_only=False)
    for t in wire.call(bootstrap, req, CreateTopicsResponse, 4).topics:
        assert t.error_code == 0, t


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    bp = BrokerProcess(str(tmp_path_factory.mktemp("fuzz")),
                       configs={"max.broker.partitions": BROKER_PARTITIONS, "num.partitions": 1})
    try:
        bp.start()
        create_topics(bp.bootstrap_servers, fuzz_corpus.TOPICS + ["fuzz-good"])
        yield bp
    finally:
        bp.stop()


def test_seeded_mutation_fuzz(proc):
    report = fuzzing.run(proc.bootstrap_servers, proc.proc.pid, frames=FRAMES, seed=SEED, threads=8,
                         good_records=2000)
    print(report)
    assert proc.proc.poll() is None, "the broker died"
    assert report.frames == FRAMES
    assert report.failed_pings == 0 and report.max_ping_s < 2.0, report
    assert report.rss_peak - report.rss_before < 200 * MB, report
    assert report.rss_after - report.rss_before < 150 * MB, report
    new_partitions = report.partitions_after - report.partitions_before
    assert report.partitions_after <= BROKER_PARTITIONS
    assert report.fds_after - report.fds_before <= 3 * new_partitions + 20, report
    assert report.acked == 2000, report
    assert report.missing == 0 and report.duplicates == 0, report
    log = proc.stderr_text()
    assert "Traceback" not in log, log[log.index("Traceback") - 2000:log.index("Traceback") + 3000]
