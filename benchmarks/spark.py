"""kafkalab's Kafka data source for Spark: batch read throughput and the streaming word count.

    python -m benchmarks.spark                      # 1,000,000-record batch read + word count
    python -m benchmarks.spark --records 200000 --lines 20000 --json benchmarks/results/spark.json

1. **Batch read**: ``--records`` records (100-byte values, ``--partitions``
   partitions) are produced to a mini broker (in this process); then
   ``spark.read.format(kafka_format(spark))...load()`` reads them all and sums
   the value lengths (so every record crosses into Spark). Timed from the
   action's start to its result; the first run warms Spark's Python workers
   and is not counted; median of ``--repeat`` runs.
2. **Streaming word count** (lesson 06's query): ``--lines`` lines of 8 words
   are produced to the input topic; the query (split, group, count, running
   counts to the output topic via foreachBatch in update mode, as in the
   lesson) runs with ``trigger(availableNow=True)`` and ``maxOffsetsPerTrigger``
   = ``--batch-lines``; lines/s = lines / wall time of the run, and each
   micro-batch's duration (``triggerExecution`` in the query progress).
3. **End-to-end latency**: with the query running (processing-time trigger
   0), one line is produced and the time until its word's new count is on
   the output topic is measured, ``--probes`` times.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time


from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import kafkalab  # noqa: E402
from kafkalab.spark import kafka_format, session, stop  # noqa: E402

WORDS = [f"w{i}" for i in range(1000)]


def produce(kafka, topic, values, partitions):
    producer = Producer(kafka.client_config(linger_ms=5))
    for i, value in enumerate(values):
        while True:
            try:
                producer.produce(topic, value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    producer.close()


def batch_read(spark, kafka, args):
    topic = kafka.create_topic("bench-read", partitions=args.partitions)
    payload = os.urandom(50).hex().encode()[:100]
    produce(kafka, topic, (payload for _ in range(args.records)), args.partitions)
    df = (spark.read.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
          .option("subscribe", topic).load())
    runs = []
    for i in range(args.repeat + 1):
        start = time.perf_counter()
        row = df.agg(F.count("*").alias("n"), F.sum(F.length("value")).alias("bytes")).collect()[0]
        elapsed = time.perf_counter() - start
        assert row.n == args.records and row.bytes == args.records * 100, row
        if i:   # run 0 warms the Python workers
            runs.append(args.records / elapsed)
        print(f"  batch read {'(warm-up) ' if not i else ''}{args.records:,} records in {elapsed:.2f} s: "
              f"{args.records / elapsed:,.0f} records/s", flush=True)
    return {"records": args.records, "partitions": args.partitions, "records_per_s": runs,
            "median_records_per_s": statistics.median(runs)}


def word_count_query(spark, kafka, source, target, checkpoint, trigger, max_lines=None):
    fmt = kafka_format(spark)
    reader = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
              .option("subscribe", source).option("startingOffsets", "earliest"))
    if max_lines:
        reader = reader.option("maxOffsetsPerTrigger", max_lines)
    words = reader.load().select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\W+")).alias("word"))
    counts = words.where(F.col("word") != "").groupBy("word").count()
    out = counts.select(F.col("word").alias("key"), F.unhex(F.lpad(F.hex("count"), 16, "0")).alias("value"))

    def to_kafka(batch, batch_id):
        (batch.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
         .option("topic", target).mode("append").save())

    return (out.writeStream.foreachBatch(to_kafka).outputMode("update")
            .option("checkpointLocation", checkpoint).trigger(**trigger).start())


def word_count(spark, kafka, args):
    source = kafka.create_topic("bench-lines", partitions=2)
    target = kafka.create_topic("bench-counts", partitions=2)
    rng = random.Random(42)
    lines = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(args.lines)]
    produce(kafka, source, lines, 2)
    checkpoint = tempfile.mkdtemp(prefix="kafkalab-bench-")
    start = time.perf_counter()
    query = word_count_query(spark, kafka, source, target, checkpoint, {"availableNow": True}, args.batch_lines)
    query.awaitTermination()
    elapsed = time.perf_counter() - start
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    durations = [p["durationMs"]["triggerExecution"] / 1000 for p in batches]
    assert sum(p["numInputRows"] for p in batches) == args.lines
    print(f"  word count: {args.lines:,} lines ({8 * args.lines:,} words) in {elapsed:.2f} s: "
          f"{args.lines / elapsed:,.0f} lines/s; {len(batches)} micro-batches of up to {args.batch_lines:,} lines, "
          f"median {statistics.median(durations):.2f} s each (first {durations[0]:.2f} s)", flush=True)

    # end-to-end latency: one line in, its new count out
    query = word_count_query(spark, kafka, source, target, checkpoint, {"processingTime": "0 seconds"})
    consumer = Consumer(kafka.client_config(group_id="bench", enable_auto_commit=False))
    consumer.assign([TopicPartition(target, p, -1) for p in range(2)])   # from the end
    time.sleep(3)
    producer = Producer(kafka.client_config(linger_ms=0))
    latencies = []
    for i in range(args.probes):
        word = f"probe{i}"
        sent = time.perf_counter()
        producer.produce(source, value=f"{word} {word}")
        producer.flush(10)
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no count came out within 10 s"
            if msg.error() is None and msg.key() == word.encode():
                assert int.from_bytes(msg.value(), "big") == 2
                latencies.append(time.perf_counter() - sent)
                break
    producer.close()
    consumer.close()
    query.stop()
    print(f"  end-to-end latency (line produced -> count on the output topic): median "
          f"{statistics.median(latencies):.2f} s, max {max(latencies):.2f} s over {args.probes} lines", flush=True)
    return {"lines": args.lines, "words_per_line": 8, "batch_lines": args.batch_lines, "seconds": elapsed,
            "lines_per_s": args.lines / elapsed, "micro_batches": len(batches), "batch_seconds": durations,
            "median_batch_s": statistics.median(durations), "latencies_s": latencies,
            "median_latency_s": statistics.median(latencies)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--batch-lines", type=int, default=20_000)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    results = {"args": vars(args), "cpus": os.cpu_count()}
    with kafkalab.connect() as kafka:
        spark = session(app_name="kafkalab-bench")
        try:
            print("batch read:", flush=True)
            results["batch_read"] = batch_read(spark, kafka, args)
            print("streaming word count:", flush=True)
            results["word_count"] = word_count(spark, kafka, args)
        finally:
            stop(spark)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
