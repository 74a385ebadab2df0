"""Spark's own Kafka source (``spark-sql-kafka-0-10``, format ``kafka``) vs kafkalab's Python data source
(``kafkalab-kafka``): batch read throughput of the same records, in the same Spark session.

    python -m benchmarks.spark_connector                                   # 500,000 records, 2 partitions
    python -m benchmarks.spark_connector --records 500000 --json benchmarks/results/spark-connector.json
    python -m benchmarks.spark_connector --broker kafka      # the same against one Apache Kafka 3.9 broker

``--records`` records (``--value-size``-byte values, no key, ``--partitions``
partitions) are produced with confluent-kafka to a mini broker in this process
(``kafkalab.mini()``). One Spark session (``kafkalab.spark.session()``,
``local[2]``) gets Spark's connector for the installed pyspark
(``kafkalab.spark.connector.spark_configs()``), so both formats run on the same
JVM, against the same broker and topic. A read is
``spark.read.format(fmt)...load()`` of the whole topic, then
``agg(count(*), sum(length(value)))`` (every record's value crosses into
Spark), timed from the action's start to its result and checked (count and
bytes). Each format is read once to warm up (Spark's Python workers, the JVM's
JIT, the connector's consumer pool), then ``--repeat`` times, the two formats
alternating, and the median is reported. Beside wall time, each read's CPU
seconds (user + system) are recorded, as they vary less than wall time on a
shared machine: Spark's (the JVM and every process under it, so kafkalab's
Python workers too) and the broker's (the mini broker's thread; Kafka's JVM).

``--broker kafka`` reads from one Apache Kafka 3.9 broker instead
(``kafkalab.cluster(brokers=1, backend=KafkaBackend())``, from ``kafkalab
fetch-kafka 3.9``): what the two sources do when the broker is not the
mini broker, which serves Fetch in Python on one event loop.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time


import psutil  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import kafkalab  # noqa: E402
from kafkalab.spark import NAME, connector, has_builtin_kafka, session, stop  # noqa: E402

FORMATS = ("kafka", NAME)


def produce(bootstrap, topic, records, value_size, partitions):
    payload = (os.urandom(value_size // 2 + 1).hex().encode())[:value_size]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=payload, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    producer.close()


@contextlib.contextmanager
def bootstrap_of(broker: str):
    """A mini broker in this process, or one Apache Kafka broker (with its ZooKeeper): (bootstrap servers,
    a function giving the broker's CPU seconds so far: its thread's, or its JVM's)."""
    if broker == "mini":
        with kafkalab.mini(**{"log.retention.ms": -1}) as b:
            yield b.bootstrap_servers, lambda: thread_cpu_s(b._thread.native_id)
        return
    from kafkalab.cluster import KafkaBackend
    c = kafkalab.cluster(brokers=1, backend=KafkaBackend())
    try:
        process = psutil.Process(int(c.brokers["pid"].iloc[0]))   # c.brokers: a pandas table
        yield c.bootstrap_servers, lambda: sum(process.cpu_times()[:2])
    finally:
        c.close()


def spark_cpu_s() -> float:
    """CPU seconds of this session's JVM and every process under it (the Python daemon and workers)."""
    from pyspark import SparkContext
    jvm = psutil.Process(SparkContext._gateway.proc.pid)
    total = 0.0
    for p in [jvm] + jvm.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def thread_cpu_s(native_id) -> float:
    for t in psutil.Process().threads():
        if t.id == native_id:
            return t.user_time + t.system_time
    raise RuntimeError(f"no thread {native_id} in this process")


def create_topic(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})   # (kept: a collected client cancels its futures)
    deadline = time.monotonic() + 60
    while admin.list_topics(timeout=10).controller_id < 0 and time.monotonic() < deadline:
        time.sleep(0.5)   # a broker just started may not know its controller yet
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=60).values():
        future.result(90)


def read_once(spark, bootstrap, topic, fmt, records, value_size) -> float:
    df = (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    start = time.perf_counter()
    row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
    elapsed = time.perf_counter() - start
    assert row.n == records and row.bytes == records * value_size, (fmt, row)
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--broker", default="mini", choices=("mini", "kafka"),
                        help="kafkalab.mini() in this process, or one Apache Kafka 3.9 broker")
    parser.add_argument("--via", default="auto", choices=("auto", "maven", "packages"),
                        help="how Spark's connector gets on the classpath (kafkalab.spark.connector)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import pyspark
    results = {"args": vars(args), "cpus": os.cpu_count(), "load_before": os.getloadavg(),
               "python": platform.python_version(),
               "pyspark": pyspark.__version__, "connector": connector.coordinate()}
    started = time.perf_counter()
    configs = connector.spark_configs(args.via)
    results["connector_configs"] = configs
    results["connector_fetch_s"] = time.perf_counter() - started
    with bootstrap_of(args.broker) as (bootstrap, broker_cpu_s):
        topic = "bench-connector"
        create_topic(bootstrap, topic, args.partitions)
        start = time.perf_counter()
        produce(bootstrap, topic, args.records, args.value_size, args.partitions)
        print(f"produced {args.records:,} records x {args.value_size} B to {args.partitions} partitions in "
              f"{time.perf_counter() - start:.1f} s", flush=True)
        start = time.perf_counter()
        spark = session(app_name="kafkalab-bench-connector", **configs)
        results["session_start_s"] = time.perf_counter() - start
        try:
            if not has_builtin_kafka(spark):
                raise SystemExit(f"Spark's Kafka connector is not on the classpath with {configs}")
            runs = {fmt: [] for fmt in FORMATS}
            cpu = {fmt: {"spark": [], "broker": []} for fmt in FORMATS}
            warmup = {}
            for fmt in FORMATS:
                warmup[fmt] = read_once(spark, bootstrap, topic, fmt, args.records, args.value_size)
                print(f"  {fmt:15} warm-up: {args.records / warmup[fmt]:>10,.0f} records/s "
                      f"({warmup[fmt]:.2f} s)", flush=True)
            for i in range(args.repeat):
                for fmt in (FORMATS if i % 2 == 0 else FORMATS[::-1]):
                    spark0, broker0 = spark_cpu_s(), broker_cpu_s()
                    elapsed = read_once(spark, bootstrap, topic, fmt, args.records, args.value_size)
                    cpu[fmt]["spark"].append(spark_cpu_s() - spark0)
                    cpu[fmt]["broker"].append(broker_cpu_s() - broker0)
                    runs[fmt].append(elapsed)
                    print(f"  {fmt:15} run {i + 1}: {args.records / elapsed:>10,.0f} records/s ({elapsed:.2f} s); "
                          f"CPU s: Spark {cpu[fmt]['spark'][-1]:.2f}, broker {cpu[fmt]['broker'][-1]:.2f}",
                          flush=True)
        finally:
            stop(spark)
    results["formats"] = {}
    for fmt in FORMATS:
        rates = [args.records / s for s in runs[fmt]]
        results["formats"][fmt] = {"seconds": runs[fmt], "records_per_s": rates,
                                   "median_records_per_s": statistics.median(rates),
                                   "median_mb_per_s": statistics.median(rates) * args.value_size / 1e6,
                                   "warmup_s": warmup[fmt], "spark_cpu_s": cpu[fmt]["spark"],
                                   "broker_cpu_s": cpu[fmt]["broker"],
                                   "median_spark_cpu_s": statistics.median(cpu[fmt]["spark"]),
                                   "median_broker_cpu_s": statistics.median(cpu[fmt]["broker"])}
        print(f"{fmt:15} median {statistics.median(rates):>10,.0f} records/s "
              f"({statistics.median(rates) * args.value_size / 1e6:.1f} MB/s of values); median CPU s: Spark "
              f"{statistics.median(cpu[fmt]['spark']):.2f}, broker {statistics.median(cpu[fmt]['broker']):.2f}")
    ratio = results["formats"]["kafka"]["median_records_per_s"] / results["formats"][NAME]["median_records_per_s"]
    results["kafka_over_kafkalab"] = ratio
    results["load_after"] = os.getloadavg()
    print(f"Spark's connector / kafkalab's source: {ratio:.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
