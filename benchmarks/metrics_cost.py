"""What Kafka's metrics cost the mini broker: produce throughput and per-request cost, metrics on vs off.

Usage (from the repository root)::

    python -m benchmarks.metrics_cost [--records 1000000] [--rounds 3] [--scrape-interval 1]

Two measurements, each alternating metrics on and off so that machine noise hits both alike:

1. **throughput** (``throughput.py``'s producer: 100-byte values, ``acks=1``, ``linger.ms=5``, 1 partition, at the
   client's ceiling): each round starts a broker process (``python -m kafkalab.broker``) with metrics on (the
   default, served at its ``metrics_url``, scraped every ``--scrape-interval`` seconds while the producer runs, as
   a Prometheus would, only more often) and one with ``kafkalab.metrics.enabled=false``, and produces
   ``--records`` records to a fresh topic on each; records/s and the broker's CPU seconds are compared;
2. **hot path** (as ``hotpath.py``: ``KafkaApis.handle`` on Produce v10 frames in this process, no sockets, plus the
   request metrics' update the socket server would trigger), CPU time per request, for batches of 1 record (the
   worst case: the metrics' cost per request is fixed) and of 8,000 records (librdkafka's batches at this rate).

3. **the metrics' own work** per Produce request (``timeit`` of the RequestMetrics update, the BrokerTopicStats marks
   and the request's timestamps), the part of 2. that no noise hides.

The goal: metrics on cost at most 5 % of produce throughput at the client's ceiling.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from contextlib import contextmanager

from benchmarks import hotpath, throughput
from benchmarks.throughput import REPO, process_cpu


@contextmanager
def broker(metrics: bool):
    """A broker process with metrics on or off; yields (bootstrap, metrics url or None, cpu())."""
    tmp = tempfile.mkdtemp(prefix="kafkalab-bench-metrics-")
    cmd = [sys.executable, "-m", "kafkalab.broker", "--port", "0", "--log-dir", tmp]
    if not metrics:
        cmd += ["--config", "kafkalab.metrics.enabled=false"]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        if "ready on" not in line:
            raise SystemExit(f"broker did not start: {line!r}")
        bootstrap = line.split("ready on ")[1].split()[0]
        url = line.split("metrics=")[1].split()[0] if "metrics=" in line else None
        if metrics != (url is not None):
            raise SystemExit(f"metrics {'on' if metrics else 'off'}, but the ready line says {line!r}")
        yield bootstrap, url, process_cpu(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def scraping(url: str | None, interval_s: float):
    """GET ``url`` every ``interval_s`` seconds in a thread until the block ends; yields the scrape counter."""
    done = threading.Event()
    count = [0]

    def scrape():
        while not done.wait(interval_s):
            with urllib.request.urlopen(url, timeout=10) as response:
                response.read()
            count[0] += 1
    thread = threading.Thread(target=scrape, daemon=True) if url else None
    if thread is not None:
        thread.start()
    try:
        yield count
    finally:
        done.set()
        if thread is not None:
            thread.join()


def throughput_rounds(args) -> dict:
    bench = throughput.parser().parse_args(["--records", str(args.records)])
    runs: dict[str, list[dict]] = {"on": [], "off": []}
    for i in range(args.rounds):
        for kind in ("on", "off") if i % 2 == 0 else ("off", "on"):
            with broker(kind == "on") as (bootstrap, url, cpu):
                topic = f"bench-metrics-{kind}-{uuid.uuid4().hex[:8]}"
                throughput.create_topic(bootstrap, topic, 1, {})
                cpu0 = cpu()
                with scraping(url, args.scrape_interval) as scrapes:
                    r = throughput.produce(bootstrap, topic, bench, {})
                used = cpu() - cpu0
                throughput.check_offsets(bootstrap, topic, 1, args.records)
            runs[kind].append({"records_per_s": r.records_per_s, "mb_per_s": r.mb_per_s, "broker_cpu_s": used,
                               "scrapes": scrapes[0]})
            print(f"round {i + 1} metrics {kind:>3}: {r.records_per_s:>10,.0f} rec/s {r.mb_per_s:6.1f} MB/s, "
                  f"broker CPU {used:.2f} s" + (f", {scrapes[0]} scrapes" if kind == "on" else ""), flush=True)
    return runs


async def hotpath_cost(metrics: bool, batch_records: int, requests: int, rounds: int) -> float:
    """CPU microseconds (this thread's) per Produce v10 request through KafkaApis.handle (and the request metrics'
    update)."""
    from kafkalab.broker.common.records import Record, build_batch
    from kafkalab.broker.kafka_server import KafkaServer
    from kafkalab.broker.network.request_channel import Request
    from kafkalab.broker.server.config import BrokerConfig

    log_dir = tempfile.mkdtemp(prefix="kafkalab-hotpath-metrics-")
    try:
        server = KafkaServer(BrokerConfig({"log.dirs": log_dir, "listeners": "PLAINTEXT://127.0.0.1:0",
                                           "kafkalab.metrics.enabled": metrics}))
        server.admin_manager.create_topic(hotpath.TOPIC, 1, 1, {})
        apis = server.kafka_apis
        now = int(time.time() * 1000)
        batch = build_batch([Record(i, now, None, os.urandom(100), []) for i in range(batch_records)])
        frames = [hotpath.produce_frame(batch, i) for i in range(requests)]
        per_round = []
        for _ in range(rounds):
            t = time.thread_time()   # CPU time, not wall time: other processes share the cores
            for frame in frames:
                request = Request.parse(frame, 0, "127.0.0.1")
                await apis.handle(request)
                if request.on_sent is not None:   # what the socket server does once the response is written
                    request.on_sent(request, 0.0)
            per_round.append((time.thread_time() - t) / len(frames) * 1e6)
        server.log_manager.close()
        return statistics.median(per_round)
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def hotpath_rounds(args) -> dict:
    out: dict[str, dict[str, list[float]]] = {}
    for records, requests in ((1, 5000), (8000, 100)):
        cost: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(args.rounds):
            for kind in ("on", "off") if i % 2 == 0 else ("off", "on"):
                cost[kind].append(asyncio.run(hotpath_cost(kind == "on", records, requests, 5)))
        on, off = statistics.median(cost["on"]), statistics.median(cost["off"])
        print(f"hot path, {records}-record Produce: on {on:8.1f} CPU us/request, off {off:8.1f} CPU us/request "
              f"({100 * (on / off - 1):+.1f}%, median of {args.rounds})", flush=True)
        out[f"{records}_records"] = cost
    return out


def metrics_work_us(n: int = 200_000) -> dict[str, float]:
    """CPU microseconds of the metrics' own work for one Produce request of one partition (timeit, no broker):
    the RequestMetrics update, the BrokerTopicStats marks, the request's timestamps and contextvar."""
    import timeit

    from kafkalab.broker.common.metrics import MetricsRegistry
    from kafkalab.broker.network.request_channel import RemoteTime, current_remote_time
    from kafkalab.broker.network.request_metrics import RequestChannelMetrics
    from kafkalab.broker.server.broker_topic_stats import BrokerTopicStats

    registry = MetricsRegistry()
    requests, stats = RequestChannelMetrics(registry), BrokerTopicStats(registry)

    def request_metrics():
        requests.update("Produce", 9, 0.001, 0.0, 0.0001, 0)

    def topic_stats():
        stats.produce_tried("t")
        stats.produce_appended("t", 1, 100)

    def timing():
        token = current_remote_time.set(RemoteTime())
        time.perf_counter()
        current_remote_time.reset(token)
        time.perf_counter()
    out = {name: timeit.timeit(fn, number=n, timer=time.thread_time) / n * 1e6
           for name, fn in (("request_metrics", request_metrics), ("broker_topic_stats", topic_stats),
                            ("timestamps_and_contextvar", timing))}
    print("metrics' own work per Produce request: " + ", ".join(f"{k} {v:.2f} us" for k, v in out.items()) +
          f" (total {sum(out.values()):.2f} CPU us)", flush=True)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=3, help="rounds of on and off, alternating (default 3)")
    p.add_argument("--scrape-interval", type=float, default=1.0, help="seconds between scrapes (default 1)")
    p.add_argument("--skip-throughput", action="store_true")
    p.add_argument("--json", metavar="FILE", help="also write every run and the medians to FILE")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    result: dict = {"params": vars(args), "load_average_at_start": os.getloadavg()}
    if not args.skip_throughput:
        runs = throughput_rounds(args)
        med = {k: statistics.median(r["records_per_s"] for r in v) for k, v in runs.items()}
        cpu = {k: statistics.median(r["broker_cpu_s"] for r in v) for k, v in runs.items()}
        cost = 1 - med["on"] / med["off"]
        print(f"median produce: on {med['on']:,.0f} rec/s, off {med['off']:,.0f} rec/s -> cost {100 * cost:.1f}% "
              f"(goal: at most 5%); broker CPU on {cpu['on']:.2f} s, off {cpu['off']:.2f} s "
              f"({100 * (cpu['on'] / cpu['off'] - 1):+.1f}%)")
        result.update(throughput=runs, median_records_per_s=med, median_broker_cpu_s=cpu, cost=cost)
    result["metrics_work_us"] = metrics_work_us()
    result["hotpath_us_per_request"] = hotpath_rounds(args)
    result["load_average_at_end"] = os.getloadavg()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
