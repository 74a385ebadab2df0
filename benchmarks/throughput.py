"""Produce and consume throughput with confluent-kafka, against any Kafka broker.

Usage (from the repository root)::

    # start a mini broker as a separate process (the headline numbers)
    python -m benchmarks.throughput --records 1000000

    # the mini broker inside this Python process (kafkalab.mini())
    python -m benchmarks.throughput --broker inprocess

    # any running Kafka-compatible broker (Apache Kafka, Redpanda, another mini broker...)
    python -m benchmarks.throughput --bootstrap-servers localhost:9092

    # what rolling a segment every 1 MB costs (topic config segment.bytes)
    python -m benchmarks.throughput --topic-config segment.bytes=1048576

The producer sends ``--records`` records of ``--value-size`` random bytes
(no key) to a fresh topic and waits for ``flush()``; then a consumer
``assign()``-s every partition from the beginning and reads until it has seen
them all. Each run uses a new topic; ``--repeat`` runs it several times and
reports every run and the median. MB/s counts value bytes only (what the
application sends), not Kafka's framing.

Client settings are Kafka's (librdkafka's) names; ``--producer-config`` /
``--consumer-config key=value`` pass anything else, exactly as a Kafka user
would tune a client. Nothing here is specific to the mini broker except the
code that starts one when no ``--bootstrap-servers`` is given.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Result:
    phase: str          # "produce" or "consume"
    records: int
    seconds: float
    value_bytes: int
    broker_cpu_s: float | None = None  # CPU the broker process used during the phase (user+system)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6


#: librdkafka's consumer stops fetching a partition for fetch.queue.backoff.ms (default 1000 ms)
#: whenever its local queue holds queued.min.messages (100000) records. A fast broker fills that
#: queue faster than a Python loop drains it, and the consumer then idles ~1 s at a time (about
#: 150-200k records/s whatever the broker). librdkafka's docs say to lower it in that case;
#: ``--consumer-config fetch.queue.backoff.ms=1000`` restores the default.
CONSUMER_DEFAULTS = {"fetch.queue.backoff.ms": "10"}


def process_cpu(pid: int):
    """A function returning the CPU seconds (user+system) process ``pid`` has used."""
    import psutil

    proc = psutil.Process(pid)
    return lambda: sum(proc.cpu_times()[:2])


def thread_cpu(native_id: int):
    """The same for one thread of this process (the in-process broker's loop thread)."""
    import psutil

    proc = psutil.Process()

    def cpu():
        for t in proc.threads():
            if t.id == native_id:
                return t.user_time + t.system_time
        return 0.0
    return cpu


def parse_kv(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


# -- brokers ------------------------------------------------------------------

@contextmanager
def broker_process(broker_configs: dict[str, str], log_dir: str | None = None):
    """``python -m kafkalab.broker`` on a free port; yields (bootstrap, pid); always stopped."""
    tmp = log_dir or tempfile.mkdtemp(prefix="kafkalab-bench-")
    cmd = [sys.executable, "-m", "kafkalab.broker", "--port", "0", "--log-dir", tmp]
    for k, v in broker_configs.items():
        cmd += ["--config", f"{k}={v}"]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        if "ready on" not in line:
            raise SystemExit(f"broker did not start: {line!r}")
        bootstrap = line.split("ready on ")[1].split()[0]
        yield bootstrap, proc.pid, process_cpu(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def broker_inprocess(broker_configs: dict[str, str]):
    import kafkalab

    with kafkalab.mini(**broker_configs) as broker:
        yield broker.bootstrap_servers, os.getpid(), thread_cpu(broker._thread.native_id)


@contextmanager
def external(bootstrap: str):
    yield bootstrap, None, None


# -- topics -------------------------------------------------------------------

def create_topic(bootstrap: str, topic: str, partitions: int, topic_configs: dict[str, str]) -> str:
    """CreateTopics when the broker has it; else rely on auto-creation (num.partitions)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    how = "CreateTopics"
    try:
        fut = admin.create_topics([NewTopic(topic, partitions, 1, config=topic_configs)],
                                  request_timeout=10)[topic]
        fut.result(timeout=15)
    except Exception as exc:  # e.g. a broker without CreateTopics: auto-create on metadata  # noqa: BLE001
        how = f"auto-created ({str(exc).splitlines()[0][:80]})"
        p = Producer({"bootstrap.servers": bootstrap})
        p.list_topics(topic, timeout=10)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and md.partitions:
            n = len(md.partitions)
            if n != partitions:
                raise SystemExit(f"topic {topic} has {n} partitions, wanted {partitions} "
                                 f"(when the broker auto-creates topics, set its num.partitions)")
            return how
        time.sleep(0.1)
    raise SystemExit(f"topic {topic} did not appear")


# -- the two phases -----------------------------------------------------------

def produce(bootstrap: str, topic: str, args, extra: dict[str, str]) -> Result:
    conf = {"bootstrap.servers": bootstrap, "acks": str(args.acks), "linger.ms": args.linger_ms,
            "compression.type": args.compression, "enable.idempotence": args.idempotence}
    conf.update(extra)
    producer = Producer(conf)
    producer.list_topics(topic, timeout=10)  # connect and learn the leaders before the clock starts
    value = os.urandom(args.value_size)
    n = args.records
    send = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                send(topic, value)
                break
            except BufferError:  # queue.buffering.max.messages reached: let the client drain
                poll(0.005)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining:
        raise SystemExit(f"{remaining} records still unsent after flush()")
    return Result("produce", n, elapsed, n * args.value_size)


def check_offsets(bootstrap: str, topic: str, partitions: int, expected: int) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-check-{uuid.uuid4().hex[:6]}"})
    try:
        total = 0
        for p in range(partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += hi - lo
        if total != expected:
            raise SystemExit(f"topic {topic} holds {total} records, produced {expected}")
    finally:
        c.close()


def consume(bootstrap: str, topic: str, args, extra: dict[str, str]) -> Result:
    # confluent-kafka wants a group.id even for assign(); nothing is committed.
    conf = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "enable.partition.eof": False}
    conf.update(extra)
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(args.partitions)])
        n, got, value_bytes = args.records, 0, 0
        start = time.perf_counter()
        deadline = time.monotonic() + args.timeout
        while got < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"consumed {got} of {n} records in {args.timeout} s")
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error() is not None:
                    if msg.error().fatal():
                        raise KafkaException(msg.error())
                    continue
                got += 1
                value_bytes += len(msg.value())
        elapsed = time.perf_counter() - start
        return Result("consume", got, elapsed, value_bytes)
    finally:
        consumer.close()


# -- driver -------------------------------------------------------------------

def cpu_note(r: Result) -> str:
    return "" if r.broker_cpu_s is None else f", broker CPU {r.broker_cpu_s:.2f} s"


def run(args) -> dict:
    producer_extra = parse_kv(args.producer_config)
    consumer_extra = dict(CONSUMER_DEFAULTS, **parse_kv(args.consumer_config))
    topic_configs = parse_kv(args.topic_config)
    broker_configs = {"num.partitions": str(args.partitions)}
    # when we start the broker, topic configs also become its defaults (log.<name>),
    # so they apply even while the broker cannot yet CreateTopics
    broker_configs.update({("log." + k if not k.startswith("log.") else k): v
                           for k, v in topic_configs.items() if k in ("segment.bytes",)})
    broker_configs.update(parse_kv(args.broker_config))
    if args.bootstrap_servers:
        ctx, kind = external(args.bootstrap_servers), "external"
    elif args.broker == "inprocess":
        ctx, kind = broker_inprocess(broker_configs), "kafkalab.mini() in-process"
    else:
        ctx, kind = broker_process(broker_configs), "python -m kafkalab.broker (separate process)"
    runs = []
    with ctx as (bootstrap, pid, broker_cpu):
        print(f"broker: {kind} at {bootstrap}" + (f" (pid {pid})" if pid else ""), flush=True)
        print(f"records={args.records} value.size={args.value_size} acks={args.acks} "
              f"linger.ms={args.linger_ms} partitions={args.partitions} compression={args.compression} "
              f"topic configs={topic_configs or '-'} producer extra={producer_extra or '-'} "
              f"consumer extra={consumer_extra or '-'}", flush=True)
        if args.pause_before:
            input(f"broker pid {pid}: press Enter to start (attach a profiler now) ")
        for i in range(args.repeat):
            topic = f"bench-{uuid.uuid4().hex[:10]}"
            how = create_topic(bootstrap, topic, args.partitions, topic_configs)
            cpu0 = broker_cpu and broker_cpu()
            p = produce(bootstrap, topic, args, producer_extra)
            if broker_cpu:
                p.broker_cpu_s = broker_cpu() - cpu0
            check_offsets(bootstrap, topic, args.partitions, args.records)
            line = (f"run {i + 1}: produce {p.records_per_s:>10,.0f} rec/s {p.mb_per_s:6.1f} MB/s "
                    f"({p.seconds:.2f} s{cpu_note(p)})")
            c = None
            if not args.produce_only:
                cpu0 = broker_cpu and broker_cpu()
                c = consume(bootstrap, topic, args, consumer_extra)
                if broker_cpu:
                    c.broker_cpu_s = broker_cpu() - cpu0
                line += (f" | consume {c.records_per_s:>10,.0f} rec/s {c.mb_per_s:6.1f} MB/s "
                         f"({c.seconds:.2f} s{cpu_note(c)})")
            print(line + ("" if i else f"  [topic {how}]"), flush=True)
            runs.append({"produce": asdict(p) | {"records_per_s": p.records_per_s, "mb_per_s": p.mb_per_s},
                         "consume": None if c is None else
                         asdict(c) | {"records_per_s": c.records_per_s, "mb_per_s": c.mb_per_s}})
    summary = {"broker": kind, "params": {k: v for k, v in vars(args).items()}, "runs": runs,
               "median_produce_records_per_s": statistics.median(r["produce"]["records_per_s"] for r in runs),
               "median_produce_mb_per_s": statistics.median(r["produce"]["mb_per_s"] for r in runs)}
    if not args.produce_only:
        summary["median_consume_records_per_s"] = statistics.median(r["consume"]["records_per_s"] for r in runs)
        summary["median_consume_mb_per_s"] = statistics.median(r["consume"]["mb_per_s"] for r in runs)
    msg = (f"median of {len(runs)}: produce {summary['median_produce_records_per_s']:,.0f} rec/s "
           f"{summary['median_produce_mb_per_s']:.1f} MB/s")
    if not args.produce_only:
        msg += (f" | consume {summary['median_consume_records_per_s']:,.0f} rec/s "
                f"{summary['median_consume_mb_per_s']:.1f} MB/s")
    print(msg, flush=True)
    return summary


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bootstrap-servers", help="measure this broker; without it a mini broker is started")
    p.add_argument("--broker", choices=("process", "inprocess"), default="process",
                   help="how to start the mini broker when no --bootstrap-servers is given (default: process)")
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--value-size", type=int, default=100, help="bytes per value (default 100)")
    p.add_argument("--acks", default="1", choices=("0", "1", "-1", "all"))
    p.add_argument("--linger-ms", type=float, default=5)
    p.add_argument("--partitions", type=int, default=1)
    p.add_argument("--compression", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"))
    p.add_argument("--idempotence", action="store_true", help="enable.idempotence=true (default false)")
    p.add_argument("--repeat", type=int, default=3, help="runs, each on a fresh topic (default 3)")
    p.add_argument("--timeout", type=float, default=300, help="give up consuming after this many seconds")
    p.add_argument("--produce-only", action="store_true")
    p.add_argument("--topic-config", action="append", default=[], metavar="KEY=VALUE",
                   help="topic config for the benchmark topic, e.g. segment.bytes=1048576")
    p.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                   help="config for a mini broker this script starts")
    p.add_argument("--producer-config", action="append", default=[], metavar="KEY=VALUE",
                   help="extra librdkafka producer config, e.g. batch.size=1000000")
    p.add_argument("--consumer-config", action="append", default=[], metavar="KEY=VALUE",
                   help="extra librdkafka consumer config, e.g. fetch.max.bytes=52428800")
    p.add_argument("--json", metavar="FILE", help="also write every run and the medians to FILE")
    p.add_argument("--pause-before", action="store_true",
                   help="wait for Enter once the broker is up (to attach py-spy to its pid)")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    summary = run(args)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
