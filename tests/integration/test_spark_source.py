"""kafkalab's Kafka data source for Spark (kafkalab.spark) against the mini broker.

One Spark session and one mini broker for the whole module (a Spark JVM takes
seconds to start); every test uses its own topics. The session is stopped at
the end and the test checks that its JVM is gone.
"""
from __future__ import annotations

import json
import os
import time

import psutil
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions

import kafkalab
from kafkalab.spark import NAME, kafka_format, session, stop

T0 = 1735722000000

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    # no retention check while the tests run (records carry 2025 timestamps, and a first check comes
    # log.initial.task.delay.ms after start-up); test_fail_on_data_loss_both_ways_after_retention runs its own
    with kafkalab.connect(log_dir=str(tmp_path_factory.mktemp("broker")),
                          **{"log.retention.check.interval.ms": 86_400_000,
                             "log.initial.task.delay.ms": 86_400_000}) as kafka:
        yield kafka


@pytest.fixture(scope="module")
def spark():
    spark = session(app_name="kafkalab-tests")
    from pyspark import SparkContext
    jvm = psutil.Process(SparkContext._gateway.proc.pid)
    yield spark
    stop(spark)
    assert not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE, "the Spark JVM outlived stop()"
    assert not any("org.apache.spark" in " ".join(c.cmdline()) for c in psutil.Process().children(recursive=True)
                   if c.is_running()), "a Spark process is left"


def produce(kafka, topic, records):
    """records: (partition, key, value, timestamp_ms[, headers])."""
    producer = Producer(kafka.client_config(linger_ms=0))
    for partition, key, value, ts, *headers in records:
        producer.produce(topic, partition=partition, key=key, value=value, timestamp=ts,
                         headers=headers[0] if headers else None)
    assert producer.flush(10) == 0
    producer.close()


def numbered(topic_partitions, count, start=0):
    return [(p, f"k{i}", f"{p}-{i}", T0 + i * 1000) for p in range(topic_partitions) for i in range(start, start + count)]


def reader(spark, kafka, **options):
    r = spark.read.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def stream(spark, kafka, **options):
    r = spark.readStream.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def run_available_now(df, checkpoint):
    """Run a streaming query until it has read what is there now; return its micro-batches' (partition, offset)s."""
    batches = []

    def collect(batch, batch_id):
        batches.append((batch_id, sorted((r.partition, r.offset) for r in batch.select("partition", "offset").collect())))

    query = df.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint)) \
        .trigger(availableNow=True).start()
    query.awaitTermination(60)
    assert query.exception() is None, query.exception()
    return [rows for _, rows in sorted(batches) if rows]


def test_format_is_kafkalabs_own_without_the_connector(spark):
    assert kafka_format(spark) == NAME == "kafkalab-kafka"


def test_batch_read_of_exact_offset_ranges(spark, kafka):
    topic = kafka.create_topic("exact", partitions=2)
    produce(kafka, topic, numbered(2, 10))
    df = reader(spark, kafka, subscribe=topic,
                startingOffsets=json.dumps({topic: {"0": 3, "1": -2}}),
                endingOffsets=json.dumps({topic: {"0": 7, "1": -1}}))
    rows = df.orderBy("partition", "offset").collect()
    assert [(r.partition, r.offset) for r in rows] == [(0, o) for o in range(3, 7)] + [(1, o) for o in range(10)]
    first = rows[0]
    assert (first.key, first.value, first.topic, first.timestampType) == (b"k3", b"0-3", topic, 0)
    assert first.timestamp.timestamp() * 1000 == T0 + 3000
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    # each Kafka partition's range is one Spark input partition, read in parallel
    assert df.rdd.getNumPartitions() == 2


def test_batch_read_of_a_time_range(spark, kafka):
    topic = kafka.create_topic("timed", partitions=2)
    produce(kafka, topic, numbered(2, 10))
    df = reader(spark, kafka, subscribe=topic, startingTimestamp=T0 + 2500, endingTimestamp=T0 + 6000)
    rows = sorted((r.partition, r.offset) for r in df.collect())
    assert rows == [(p, o) for p in (0, 1) for o in (3, 4, 5)]   # timestamps 3000, 4000, 5000 ms after T0
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy"):
        reader(spark, kafka, subscribe=topic, startingTimestamp=T0 + 10**9).collect()


def test_streaming_query_over_several_micro_batches_with_max_offsets_per_trigger(spark, kafka, tmp_path):
    topic = kafka.create_topic("stream", partitions=3)
    produce(kafka, topic, numbered(3, 10))
    batches = run_available_now(stream(spark, kafka, subscribe=topic, startingOffsets="earliest",
                                       maxOffsetsPerTrigger=6), tmp_path / "cp")
    assert [len(b) for b in batches] == [6, 6, 6, 6, 6]                   # 30 records, 6 per micro-batch
    assert batches[0] == [(p, o) for p in range(3) for o in (0, 1)]      # shared out in proportion
    seen = [x for b in batches for x in b]
    assert sorted(seen) == [(p, o) for p in range(3) for o in range(10)]  # everything once


def test_restart_from_checkpoint_no_gap_no_repeat(spark, kafka, tmp_path):
    topic = kafka.create_topic("restart", partitions=2)
    produce(kafka, topic, numbered(2, 5))
    query = stream(spark, kafka, subscribe=topic, startingOffsets="earliest")
    first = run_available_now(query, tmp_path / "cp")
    produce(kafka, topic, numbered(2, 4, start=5))
    second = run_available_now(query, tmp_path / "cp")
    got = [x for b in first + second for x in b]
    assert sorted(got) == [(p, o) for p in range(2) for o in range(9)] and len(got) == len(set(got))
    assert {x for b in second for x in b} == {(p, o) for p in range(2) for o in range(5, 9)}
    last = sorted(os.listdir(tmp_path / "cp" / "offsets"), key=lambda n: int(n) if n.isdigit() else -1)[-1]
    lines = (tmp_path / "cp" / "offsets" / last).read_text().splitlines()
    assert json.loads(lines[-1]) == {topic: {"0": 9, "1": 9}}          # Spark's checkpoint: Kafka offsets


def test_streaming_default_starts_at_latest(spark, kafka, tmp_path):
    topic = kafka.create_topic("latest", partitions=1)
    produce(kafka, topic, numbered(1, 3))
    query = stream(spark, kafka, subscribe=topic)
    assert run_available_now(query, tmp_path / "cp") == []
    produce(kafka, topic, numbered(1, 2, start=3))
    assert run_available_now(query, tmp_path / "cp") == [[(0, 3), (0, 4)]]


def test_partitions_added_mid_stream_are_read_from_their_start(spark, kafka, tmp_path):
    topic = kafka.create_topic("growing", partitions=1)
    produce(kafka, topic, numbered(1, 3))
    query = stream(spark, kafka, subscribe=topic, startingOffsets="earliest")
    assert run_available_now(query, tmp_path / "cp") == [[(0, 0), (0, 1), (0, 2)]]
    admin = AdminClient(kafka.client_config())
    for future in admin.create_partitions([NewPartitions(topic, 3)]).values():
        future.result(10)
    produce(kafka, topic, [(p, "k", "v", T0) for p in (0, 1, 2, 2)])
    got = run_available_now(query, tmp_path / "cp")
    assert sorted(x for b in got for x in b) == [(0, 3), (1, 0), (2, 0), (2, 1)]


def _watermarks(kafka, topic, partition=0):
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer(kafka.client_config(group_id="watermarks"))
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


def test_fail_on_data_loss_both_ways_after_retention(spark, kafka, tmp_path):
    topic = kafka.create_topic("aging", partitions=1, **{"retention.ms": 60_000, "segment.bytes": 1024})
    produce(kafka, topic, numbered(1, 10))
    query = stream(spark, kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=4)
    # read offsets 0-3 only: stop after the first micro-batch of a processing-time query
    seen = []
    running = query.writeStream.foreachBatch(lambda b, i: seen.extend(r.offset for r in b.collect())) \
        .option("checkpointLocation", str(tmp_path / "cp")).start()
    deadline = time.monotonic() + 60
    while not seen and time.monotonic() < deadline:
        time.sleep(0.2)
    running.stop()
    done = max(seen) + 1
    broker = kafka.broker
    broker.call(broker.server.log_manager.cleanup_logs, T0 + 10 * 86_400_000)   # retention deletes all ten
    produce(kafka, topic, [(0, "k", "new", T0 + 10 * 86_400_000)])              # offset 10, kept
    assert _watermarks(kafka, topic) == (10, 11), f"read up to {done}"
    # failOnDataLoss=true (the default): the restarted query fails, naming the option
    strict = stream(spark, kafka, subscribe=topic, startingOffsets="earliest")
    failed = strict.writeStream.foreachBatch(lambda b, i: b.count()).option("checkpointLocation", str(tmp_path / "cp")) \
        .trigger(availableNow=True).start()
    with pytest.raises(Exception, match="failOnDataLoss"):
        failed.awaitTermination(60)
    assert done < 10
    # failOnDataLoss=false: it skips what is gone and reads on from the log start offset
    lenient = stream(spark, kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss="false")
    assert run_available_now(lenient, tmp_path / "cp") == [[(0, 10)]]
    # a batch read asking for deleted offsets fails the same way
    with pytest.raises(Exception, match="failOnDataLoss"):
        reader(spark, kafka, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0}})).collect()


def test_writer_round_trip_with_headers_partitions_and_the_topic_option(spark, kafka):
    topic = kafka.create_topic("written", partitions=2)
    other = kafka.create_topic("ignored", partitions=1)
    rows = [(f"k{i}", f"v{i}".encode(), i % 2, [(f"h{i}", b"x")], other) for i in range(20)]
    df = spark.createDataFrame(rows, "key string, value binary, partition int, "
                                     "headers array<struct<key: string, value: binary>>, topic string")
    df.write.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers) \
        .option("topic", topic).mode("append").save()                    # the option beats the topic column
    back = reader(spark, kafka, subscribe=topic, includeHeaders="true").collect()
    got = sorted((r.key.decode(), r.value, r.partition, [(h.key, h.value) for h in r.headers]) for r in back)
    assert got == sorted((k, v, p, h) for k, v, p, h, _ in rows)
    assert reader(spark, kafka, subscribe=other).count() == 0


def test_streaming_writer_appends(spark, kafka, tmp_path):
    source = kafka.create_topic("copy-from", partitions=1)
    target = kafka.create_topic("copy-to", partitions=1)
    produce(kafka, source, numbered(1, 5))
    query = stream(spark, kafka, subscribe=source, startingOffsets="earliest").select("key", "value") \
        .writeStream.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers) \
        .option("topic", target).option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    query.awaitTermination(60)
    assert query.exception() is None
    assert [r.value for r in reader(spark, kafka, subscribe=target).orderBy("offset").collect()] == \
        [f"0-{i}".encode() for i in range(5)]


@pytest.mark.parametrize("options, named", [
    ({}, "subscribe"),
    ({"subscribe": "x", "assign": '{"x": [0]}'}, "exactly one of"),
    ({"subscribe": "x", "startingOffsets": "soonest"}, "startingOffsets"),
    ({"subscribe": "x", "startingOffsets": "latest"}, "cannot be 'latest' for a batch query"),
    ({"subscribe": "x", "kafka.auto.offset.reset": "earliest"}, "startingOffsets instead"),
    ({"subscribe": "x", "failOnDataLos": "false"}, "(?i)unknown option 'failOnDataLos'"),
    ({"subscribe": "x", "maxOffsetsPerTrigger": "many"}, "maxOffsetsPerTrigger"),
])
def test_a_bad_option_gets_an_error_naming_it(spark, kafka, options, named):
    with pytest.raises(Exception, match=named):
        reader(spark, kafka, **options).collect()


def test_writer_refuses_a_dataframe_without_value_or_topic(spark, kafka):
    df = spark.createDataFrame([("a", "b")], "key string, text string")
    with pytest.raises(Exception, match="needs a 'value' column"):
        df.write.format(kafka_format(spark)).option("kafka.bootstrap.servers", kafka.bootstrap_servers) \
            .option("topic", "t").mode("append").save()
    with pytest.raises(Exception, match="set the option 'topic'"):
        df.withColumnRenamed("text", "value").write.format(kafka_format(spark)) \
            .option("kafka.bootstrap.servers", kafka.bootstrap_servers).mode("append").save()


def test_an_unreachable_broker_gets_an_error_naming_it(spark):
    start = time.monotonic()
    with pytest.raises(Exception, match=r"could not reach Kafka at kafka.bootstrap.servers='127.0.0.1:9'"):
        spark.read.format(kafka_format(spark)).option("kafka.bootstrap.servers", "127.0.0.1:9") \
            .option("subscribe", "t").option("kafkaConsumer.pollTimeoutMs", 2000).load().collect()
    assert time.monotonic() - start < 30
