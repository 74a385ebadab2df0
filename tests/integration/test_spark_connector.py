"""Spark's own Kafka connector (``spark-sql-kafka-0-10``, format ``kafka``) against the mini broker, beside
kafkalab's Python data source (format ``kafkalab-kafka``).

The connector is a Java Kafka client (``kafka-clients`` 3.9) inside Spark: its AdminClient plans the
offsets (Metadata, ListOffsets), its consumers read them (Fetch v17 with fetch sessions and topic IDs,
``isolation.level``), its idempotent producer writes (InitProducerId, Produce). Both sources read the
same topics at the same offsets and must give the same rows: key, value, topic, partition, offset,
timestamp, timestampType and headers, in batch queries and in streaming ones (``availableNow``, the
same micro-batches and the same offsets in the checkpoint); what Spark's sink writes both read back.

The connector must be the version of the installed pyspark (:mod:`kafkalab.spark.connector`: resolved
with ``mvn`` into ``~/.kafkalab/dist``, or by Spark's Ivy). When it cannot be had — no such version
published, no network on a first run — these tests fail and say why: they never skip.

One Spark session with the connector and one mini broker for the module; the session is stopped at
the end (a session of another module has no connector: a JVM's classpath is fixed when it starts).
"""
from __future__ import annotations

import json
import os

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.partitioner import crc32_partition, murmur2_partition
from kafkalab.spark import BUILTIN_PROVIDER, NAME, has_builtin_kafka, kafka_format, log_path, session, stop
from kafkalab.spark import connector
from tests.helpers.txn_helpers import wait_stable

T0 = 1735722000000
PARTITIONS = 3
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
FORMATS = ("kafka", NAME)

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def spark():
    stop()   # a session left by another module would lack the connector
    problem = spark = None
    try:
        configs = connector.spark_configs()
    except connector.ConnectorUnavailable as e:
        problem = f"Spark's Kafka connector cannot be loaded: {e}"
    if problem is None:
        try:
            spark = session(app_name="kafkalab-connector-tests", **configs)
        except Exception as e:   # noqa: BLE001 -- e.g. Spark's Ivy could not resolve spark.jars.packages
            problem = f"Spark did not start with {configs}: {e}\n{_log_tail()}"
            stop()
    if problem is not None:   # (outside the except: one message, not a chain of two)
        pytest.fail(problem, pytrace=False)
    if not has_builtin_kafka(spark):
        tail = _log_tail()
        stop()
        pytest.fail(f"Spark started with {configs} but has no {BUILTIN_PROVIDER} (format 'kafka')\n{tail}",
                    pytrace=False)
    yield spark
    stop(spark)


def _log_tail() -> str:
    path = log_path()
    if path and os.path.exists(path):
        with open(path, errors="replace") as f:
            return "--- the end of Spark's log ---\n" + f.read()[-4000:]
    return ""


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    # records carry 2025 timestamps: no retention, or the first check would delete them mid-module
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("broker")), **{"log.retention.ms": -1}) as b:
        yield b


def create_topic(broker, name, partitions=PARTITIONS, **config):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=config)]).values():
        future.result(15)
    return name


def produce(broker, topic, count, start=0, partitions=PARTITIONS, with_timestamps=True):
    """``count`` records per codec: keys (some null), values (one tombstone), headers on every third record
    (one with a null value), CreateTime T0 + i ms, to partition i % partitions; each codec in batches of its own."""
    failed = []
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                             "compression.type": codec})
        for i in range(start, start + count):
            producer.produce(topic, partition=i % partitions, on_delivery=lambda err, _: err and failed.append(err),
                             key=None if i % 7 == 3 else f"k{i}",
                             value=None if i == 5 else f"{codec}-{i}".encode() * (1 + i % 4),
                             timestamp=T0 + i if with_timestamps else 0,
                             headers=[("h", str(i).encode()), ("empty", None)] if i % 3 == 0 else None)
        assert producer.flush(15) == 0
    assert not failed, failed[:3]
    return count * len(CODECS)


@pytest.fixture(scope="module")
def topics(broker):
    """The topics both sources read: CreateTime ('mixed') and LogAppendTime ('appended')."""
    mixed = create_topic(broker, "mixed")
    appended = create_topic(broker, "appended", partitions=2, **{"message.timestamp.type": "LogAppendTime"})
    produce(broker, mixed, 40)
    produce(broker, appended, 10, partitions=2, with_timestamps=False)
    return {"mixed": mixed, "appended": appended}


def load(spark, broker, fmt, streaming=False, **options):
    r = (spark.readStream if streaming else spark.read).format(fmt) \
        .option("kafka.bootstrap.servers", broker.bootstrap_servers)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def rows(df) -> list[dict]:
    return sorted((r.asDict(recursive=True) for r in df.collect()),
                  key=lambda r: (r["topic"], r["partition"], r["offset"]))


def both(read) -> list[dict]:
    """``read(fmt)`` with Spark's connector and with kafkalab's source: the same rows, returned."""
    spark_rows, kafkalab_rows = read("kafka"), read(NAME)
    for ours, theirs in zip(kafkalab_rows, spark_rows):
        assert ours == theirs, f"kafkalab-kafka gave {ours}, Spark's kafka source {theirs}"
    assert len(kafkalab_rows) == len(spark_rows)
    return spark_rows


def test_the_connector_is_spark_own_and_matches_pyspark(spark):
    assert kafka_format(spark) == "kafka"
    jvm = spark.sparkContext._jvm
    loader = jvm.Thread.currentThread().getContextClassLoader()
    provider = jvm.java.lang.Class.forName(BUILTIN_PROVIDER, False, loader)
    jar = os.path.basename(str(provider.getProtectionDomain().getCodeSource().getLocation().getPath()))
    scala = connector.scala_version()
    assert jar.endswith(f"spark-sql-kafka-0-10_{scala}-{spark.version}.jar"), jar
    assert spark.version == connector.spark_version()


WHOLE = {"includeHeaders": "true"}


@pytest.mark.parametrize("options", [
    pytest.param(dict(WHOLE), id="whole-topic-with-headers"),
    pytest.param({"startingOffsets": json.dumps({"mixed": {"0": 7, "1": -2, "2": 30}}),
                  "endingOffsets": json.dumps({"mixed": {"0": 50, "1": -1, "2": 31}})}, id="offset-ranges"),
    pytest.param({"startingTimestamp": str(T0 + 10), "endingTimestamp": str(T0 + 25)}, id="time-range"),
    pytest.param({"kafka.isolation.level": "read_committed", "includeHeaders": "true"}, id="read-committed"),
    pytest.param({"assign": json.dumps({"mixed": [2]})}, id="assign"),
])
def test_batch_reads_of_the_same_offsets_give_the_same_rows(spark, broker, topics, options):
    if "assign" not in options:
        options = {"subscribe": topics["mixed"], **options}
    got = both(lambda fmt: rows(load(spark, broker, fmt, **options)))
    assert got, "nothing was read"
    if options.get("includeHeaders"):
        assert {r["topic"] for r in got} == {"mixed"} and len(got) == 200
        assert any(r["headers"] for r in got) and any(r["headers"] is None for r in got)
        assert any(r["key"] is None for r in got) and any(r["value"] is None for r in got)
        assert {r["timestampType"] for r in got} == {0}
    if "startingOffsets" in options:
        assert {(p, min(r["offset"] for r in got if r["partition"] == p),
                 max(r["offset"] for r in got if r["partition"] == p)) for p in range(PARTITIONS)} == \
            {(0, 7, 49), (1, 0, 64), (2, 30, 30)}


def test_log_append_time_and_a_pattern_give_the_same_rows(spark, broker, topics):
    got = both(lambda fmt: rows(load(spark, broker, fmt, subscribePattern="app.*")))
    assert len(got) == 50 and {r["timestampType"] for r in got} == {1}   # 1: LogAppendTime, the broker's clock


def available_now(spark, broker, fmt, checkpoint, **options) -> list[list[dict]]:
    """A streaming query run until it has read what is there now: its micro-batches' rows."""
    batches = []
    query = load(spark, broker, fmt, streaming=True, **options).writeStream \
        .foreachBatch(lambda batch, batch_id: batches.append((batch_id, rows(batch)))) \
        .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    assert query.awaitTermination(120), f"the {fmt} query did not finish within 120 s"
    assert query.exception() is None, query.exception()
    return [b for _, b in sorted(batches, key=lambda x: x[0]) if b]


def last_offsets(checkpoint) -> dict:
    """The Kafka offsets of the last micro-batch in a query's checkpoint (``offsets/<n>``, last line)."""
    offsets = checkpoint / "offsets"
    last = max((n for n in os.listdir(offsets) if n.isdigit()), key=int)
    return json.loads((offsets / last).read_text().splitlines()[-1])


def test_streaming_reads_give_the_same_micro_batches_and_checkpoint_offsets(spark, broker, tmp_path):
    topic = create_topic(broker, "streamed")
    produce(broker, topic, 12)
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": 13, "includeHeaders": "true"}
    runs = {fmt: available_now(spark, broker, fmt, tmp_path / fmt, **options) for fmt in FORMATS}
    assert runs[NAME] == runs["kafka"]
    assert [len(b) for b in runs["kafka"]] == [12, 12, 12, 12, 12]   # 60 records, 13 at most, shared out
    assert sorted((r["partition"], r["offset"]) for b in runs["kafka"] for r in b) == \
        [(p, o) for p in range(PARTITIONS) for o in range(20)]
    assert last_offsets(tmp_path / NAME) == last_offsets(tmp_path / "kafka") == {topic: {"0": 20, "1": 20, "2": 20}}
    # restarted from their checkpoints, both read only what came since
    produce(broker, topic, 2, start=12)   # 5 records each to partitions 0 and 1
    again = {fmt: available_now(spark, broker, fmt, tmp_path / fmt, **options) for fmt in FORMATS}
    assert again[NAME] == again["kafka"]
    assert sorted((r["partition"], r["offset"]) for b in again["kafka"] for r in b) == \
        [(p, o) for p in (0, 1) for o in range(20, 25)]
    assert last_offsets(tmp_path / NAME) == last_offsets(tmp_path / "kafka") == {topic: {"0": 25, "1": 25, "2": 20}}


def test_spark_sink_writes_what_both_sources_read_back(spark, broker):
    by_spark = create_topic(broker, "written-by-spark")
    by_kafkalab = create_topic(broker, "written-by-kafkalab")
    # (key, value, partition, headers): null keys only with a partition; the other rows are placed by the producer
    data = [(f"key-{i}" if i % 5 else None, f"value-{i}".encode(),
             (i % PARTITIONS) if i % 2 == 0 or i % 5 == 0 else None,
             [("n", str(i).encode()), ("null", None)] if i % 4 == 0 else None) for i in range(60)]
    df = spark.createDataFrame(data, "key string, value binary, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    for fmt, topic in (("kafka", by_spark), (NAME, by_kafkalab)):
        df.write.format(fmt).option("kafka.bootstrap.servers", broker.bootstrap_servers) \
            .option("topic", topic).mode("append").save()

    def pick(r):
        return (r["key"].decode() if r["key"] is not None else None, r["value"], r["headers"] and
                [(h["key"], h["value"]) for h in r["headers"]])

    written = sorted(((k, v, h) for k, v, _, h in data), key=repr)
    for topic, place in ((by_spark, murmur2_partition), (by_kafkalab, crc32_partition)):
        got = both(lambda fmt: rows(load(spark, broker, fmt, subscribe=topic, includeHeaders="true")))
        assert sorted((pick(r) for r in got), key=repr) == written
        where = {r["value"]: r["partition"] for r in got}
        for key, value, partition, _ in data:
            if partition is not None:
                assert where[value] == partition
            elif key is not None:   # Spark's Java producer hashes keys with murmur2, librdkafka with CRC32
                assert where[value] == place(key.encode(), PARTITIONS), (topic, key)


def test_spark_streaming_sink_copies_a_topic_offset_for_offset(spark, broker, topics, tmp_path):
    target = create_topic(broker, "copied")
    query = load(spark, broker, "kafka", streaming=True, subscribe=topics["mixed"], startingOffsets="earliest",
                 includeHeaders="true") \
        .selectExpr("key", "value", "partition", "headers") \
        .writeStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers) \
        .option("topic", target).option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    assert query.awaitTermination(120), "the copy did not finish within 120 s"
    assert query.exception() is None, query.exception()
    source = rows(load(spark, broker, "kafka", subscribe=topics["mixed"], includeHeaders="true"))
    copy = both(lambda fmt: rows(load(spark, broker, fmt, subscribe=target, includeHeaders="true")))

    def content(r):
        return (r["partition"], r["offset"], r["key"], r["value"], r["headers"])

    assert [content(r) for r in copy] == [content(r) for r in source]


def test_isolation_levels_with_committed_aborted_and_open_transactions(spark, broker):
    """``kafka.isolation.level``: read_committed stops at the last stable offset and skips aborted records,
    read_uncommitted reads them all; both sources agree, before and after the open transaction commits.
    (Needs the mini broker's transactions: InitProducerId with a transactional id, AddPartitionsToTxn,
    EndTxn, markers, the LSO and aborted transactions in Fetch and ListOffsets.)"""
    topic = create_topic(broker, "transactional", partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "connector-tests"})
    producer.init_transactions(30)
    for outcome in ("commit", "abort", "commit", "open"):
        producer.begin_transaction()
        for i in range(6 if outcome != "open" else 4):
            producer.produce(topic, partition=i % 2, value=f"{outcome}-{i}".encode())
        producer.flush(15)   # (abort_transaction() would drop what was not sent yet: these reach the log)
        if outcome == "commit":
            producer.commit_transaction(30)
        elif outcome == "abort":
            producer.abort_transaction(30)

    def read(level):
        return both(lambda fmt: rows(load(spark, broker, fmt, subscribe=topic, **{"kafka.isolation.level": level})))

    committed, everything = read("read_committed"), read("read_uncommitted")
    assert [r["value"].decode().split("-")[0] for r in committed] == ["commit"] * 12
    assert sorted({r["value"].decode().split("-")[0] for r in everything}) == ["abort", "commit", "open"]
    assert len(everything) == 22
    # partition 0: commit 0-2, marker 3, aborted 4-6, marker 7, commit 8-10, marker 11, open 12-13
    assert [r["offset"] for r in committed if r["partition"] == 0] == [0, 1, 2, 8, 9, 10]
    producer.commit_transaction(30)
    wait_stable(broker.bootstrap_servers, topic)     # as on Kafka, the COMMIT markers follow EndTxn's answer
    assert len(read("read_committed")) == 16
    assert len(read("read_uncommitted")) == 22
