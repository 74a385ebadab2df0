"""The broker's own cost per Produce and per Fetch request, without sockets or clients.

Usage (from the repository root)::

    python -m benchmarks.hotpath [--batch-records 8000] [--value-size 100] [--requests 300]

``throughput.py`` measures what a client sees, which on a shared 2-core
machine is noisy and often limited by the client itself. This script calls
the broker's request path directly — ``KafkaApis.handle(request)`` on a read frame: decode
the request with kafka-python's codec, run the handler (validate the batch,
CRC-32C, assign offsets, write the segment; or read the segment), build and
encode the response — on frames shaped like librdkafka's (Produce v10 with
one batch of ``--batch-records`` records; Fetch v16 for 1 MB from the
partition). It reports microseconds per request and per record, the median of
``--rounds`` rounds, so an optimisation of the hot path shows up clearly.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time


from kafka.protocol.consumer.fetch import FetchRequest  # noqa: E402
from kafka.protocol.producer.produce import ProduceRequest  # noqa: E402

from kafkalab.broker.common.message.codec import build  # noqa: E402
from kafkalab.broker.network.request_channel import Request  # noqa: E402
from kafkalab.broker.server.config import BrokerConfig  # noqa: E402
from kafkalab.broker.kafka_server import KafkaServer  # noqa: E402
from kafkalab.broker.common.records import Record, build_batch  # noqa: E402

TOPIC = "hotpath"


def produce_frame(batch: bytes, correlation_id: int) -> bytes:
    req = build(ProduceRequest, 10, {"transactional_id": None, "acks": 1, "timeout_ms": 30000, "topic_data": [
        {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}]})
    req.with_header(correlation_id=correlation_id, client_id="rdkafka")
    return bytes(req.encode(header=True))


def fetch_frame(offset: int, correlation_id: int, topic_id) -> bytes:
    req = build(FetchRequest, 16, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic_id": topic_id, "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset, "last_fetched_epoch": -1,
             "log_start_offset": -1, "partition_max_bytes": 1048576}]}]})
    req.with_header(correlation_id=correlation_id, client_id="rdkafka")
    return bytes(req.encode(header=True))


async def run(args) -> None:
    log_dir = tempfile.mkdtemp(prefix="kafkalab-hotpath-")
    try:
        server = KafkaServer(BrokerConfig({"log.dirs": log_dir, "listeners": "PLAINTEXT://127.0.0.1:0"}))
        topic = server.admin_manager.create_topic(TOPIC, 1, 1, {})
        apis = server.kafka_apis

        async def handle(frame, client_host, conn_id):
            return await apis.handle(Request.parse(frame, conn_id, client_host))
        value = os.urandom(args.value_size)
        now = int(time.time() * 1000)
        batch = build_batch([Record(i, now, None, value, []) for i in range(args.batch_records)])
        frames = [produce_frame(batch, i) for i in range(args.requests)]
        produce_us, fetch_us = [], []
        offset = 0
        for _ in range(args.rounds):
            t = time.perf_counter()
            for frame in frames:
                await handle(frame, "127.0.0.1", 0)
            produce_us.append((time.perf_counter() - t) / len(frames) * 1e6)
            fetches = []
            end = offset + len(frames) * args.batch_records
            while offset < end:
                fetches.append(fetch_frame(offset, 0, topic.topic_id))
                offset += args.batch_records  # one batch (~1 MB) per fetch, like librdkafka's 1 MB partition limit
            t = time.perf_counter()
            for frame in fetches:
                out = await handle(frame, "127.0.0.1", 0)
                assert len(out) > len(batch), "fetch returned no batch"
            fetch_us.append((time.perf_counter() - t) / len(fetches) * 1e6)
        p, f = statistics.median(produce_us), statistics.median(fetch_us)
        n = args.batch_records
        print(f"batch: {n} records x {args.value_size} B = {len(batch):,} bytes; {args.requests} requests x "
              f"{args.rounds} rounds (median)")
        print(f"Produce v10: {p:8.0f} us/request  {p / n * 1000:6.0f} ns/record  ({n / p * 1e6:,.0f} records/s)")
        print(f"Fetch v16:   {f:8.0f} us/request  {f / n * 1000:6.0f} ns/record  ({n / f * 1e6:,.0f} records/s)")
        server.log_manager.close()
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch-records", type=int, default=8000, help="records per batch (librdkafka: ~9000 at 100 B)")
    p.add_argument("--value-size", type=int, default=100)
    p.add_argument("--requests", type=int, default=100, help="Produce requests per round")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
