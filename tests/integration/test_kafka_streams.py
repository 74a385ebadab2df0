"""Kafka Streams itself against the mini broker, held against Apache Kafka 3.9 and lesson 06's PySpark query.

kafkalab's ``WordCount.java`` (the topology of Kafka's ``WordCountDemo``: split, ``groupBy`` the word
through a repartition topic, ``count()`` into a RocksDB store with a changelog topic, the counts out as
String -> Long) runs on the Kafka Streams 3.9.2 library in a JVM (``kafkalab.streams.word_count``),
once against an embedded mini broker and once against a one-broker Kafka 3.9 cluster, on the three
lines of Kafka's demo. Both must give the same output changelog per word (Kafka Streams emits every
update: without a record cache ``kafka`` goes 1, 2, 3), the same internal topics with the same
configs, and a group whose committed offsets cover the input. Lesson 06's Spark query, run on the
mini broker's copy of the input, must fold into the same table. No JVM may outlive ``close()``, nor
a Python owner killed with SIGKILL.

The jars are fetched (or found in the cache) and ``WordCount.java`` compiled once for the module.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import psutil
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, OffsetSpec

import kafkalab
from tests.helpers.cluster_helpers import wait_until
from kafkalab.checks import read_partition
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.lab import LabKafka
from kafkalab.cluster import maven
from kafkalab.streams import fetch_streams, jvm, word_count
from kafkalab.streams.jvm import compile_source

pytestmark = pytest.mark.timeout(240)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit"]
EXPECTED = dict(Counter(w for line in LINES for w in line.split()))
T0 = 1735722000000   # lesson 06's event times (2025-01-01 09:00 UTC)
APP_ID = "streams-wordcount"


@pytest.fixture(scope="module")
def streams_home():
    home = fetch_streams()
    assert compile_source(home) is not None, "no javac: WordCount.java would be compiled at every start"
    return home


def produce_lines(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, line in enumerate(LINES):   # no key, partitions 0 and 1 in turn, as lesson 06 does
        producer.produce(topic, value=line, partition=i % 2, timestamp=T0 + i * 60_000)
    assert producer.flush(10) == 0


def run_word_count(kafka: LabKafka, work) -> dict:
    """Lesson 06's topics, the demo's lines, the word count until caught up; what it left behind."""
    bootstrap = kafka.bootstrap_servers
    source = kafka.create_topic("streams-plaintext-input", partitions=2, **{"retention.ms": -1})
    sink = kafka.create_topic("streams-wordcount-output", partitions=2, **{"retention.ms": -1})
    produce_lines(bootstrap, source)
    started = time.monotonic()
    app = word_count(bootstrap, source, sink, application_id=APP_ID, work_dir=str(work),
                     repartition_purge_interval_ms=0)   # delete what was read from the repartition topic at once
    with app:
        app.wait_until_caught_up(60)
        caught_up_s = time.monotonic() - started
        internal = app.internal_topics()
        topology = app.topology
        admin = AdminClient({"bootstrap.servers": bootstrap})
        group = admin.describe_consumer_groups([APP_ID])[APP_ID].result(15)
        repartition = next(t for t in internal if t.endswith("-repartition"))
        # Kafka Streams purges the repartition topic after each commit (DeleteRecords up to the committed offsets)
        ends = {p: admin.list_offsets({TopicPartition(repartition, p): OffsetSpec.latest()})[
            TopicPartition(repartition, p)].result().offset for p in (0, 1)}
        wait_until(lambda: all(admin.list_offsets({TopicPartition(repartition, p): OffsetSpec.earliest()})[
            TopicPartition(repartition, p)].result().offset == ends[p] for p in (0, 1)),
            "the repartition topic purged up to the committed offsets", 30)
        pid, states = app.pid, app.states
    exit_code = app.close()
    committed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(APP_ID)])[APP_ID].result(15)
    configs = {}
    for topic in internal:
        resource = ConfigResource("topic", topic)
        entries = admin.describe_configs([resource])[resource].result(15)
        configs[topic] = {name: e.value for name, e in entries.items() if not e.is_default}
    metadata = admin.list_topics(timeout=15).topics
    return {
        "source": source, "sink": sink, "internal": internal, "configs": configs, "topology": topology,
        "partitions": {t: len(metadata[t].partitions) for t in internal},
        "output": [m for p in (0, 1) for m in read_partition(bootstrap, sink, p)],
        "changelog": [m for p in (0, 1) for t in internal if t.endswith("-changelog")
                      for m in read_partition(bootstrap, t, p)],
        "committed": {(tp.topic, tp.partition): tp.offset for tp in committed.topic_partitions},
        "group": (group.is_simple_consumer_group, group.partition_assignor, len(group.members)),
        "repartition_ends": ends, "pid": pid, "states": states, "exit_code": exit_code,
        "caught_up_s": caught_up_s, "log": (work / "streams.log").read_text(),
    }


def table(records) -> dict[str, int]:
    """The changelog folded into a table: the latest value of each key (records of a key share a partition)."""
    latest = {}
    for m in sorted(records, key=lambda m: (m.partition(), m.offset())):
        latest[m.key().decode()] = int.from_bytes(m.value(), "big")
    return dict(sorted(latest.items()))


def updates(records) -> dict[str, list[int]]:
    """Each word's counts, in the order Kafka Streams wrote them."""
    seen: dict[str, list[int]] = {}
    for m in sorted(records, key=lambda m: (m.partition(), m.offset())):
        seen.setdefault(m.key().decode(), []).append(int.from_bytes(m.value(), "big"))
    return dict(sorted(seen.items()))


@pytest.fixture(scope="module")
def on_mini(streams_home, tmp_path_factory):
    """The word count against an embedded mini broker, which stays up for the module (the Spark test reads it)."""
    broker = kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("mini")), **{"group.initial.rebalance.delay.ms": 0})
    kafka = LabKafka(broker.bootstrap_servers, broker=broker)
    try:
        yield kafka, run_word_count(kafka, tmp_path_factory.mktemp("streams-on-mini"))
    finally:
        kafka.close()


@pytest.fixture(scope="module")
def on_kafka(streams_home, tmp_path_factory):
    """The same against Apache Kafka 3.9 (one broker, ZooKeeper mode, the lab's defaults)."""
    backend = KafkaBackend(str(fetch_kafka("3.9")))
    with kafkalab.cluster(brokers=1, backend=backend, dir=str(tmp_path_factory.mktemp("kafka") / "cluster")) as cl:
        yield run_word_count(LabKafka(cl.bootstrap_servers, cluster=cl), tmp_path_factory.mktemp("streams-on-kafka"))


def test_word_count_on_the_mini_broker(on_mini):
    _, run = on_mini
    assert table(run["output"]) == EXPECTED
    assert table(run["output"])["kafka"] == 3 and table(run["output"])["streams"] == 2
    # every update, in order: no record cache (statestore.cache.max.bytes=0)
    assert updates(run["output"]) == {w: list(range(1, n + 1)) for w, n in sorted(EXPECTED.items())}
    for m in run["output"]:   # StringSerializer keys, LongSerializer values (8 bytes, big-endian)
        assert m.key().decode("utf-8").isalpha() and len(m.value()) == 8
    assert run["states"][:2] == ["REBALANCING", "RUNNING"] and run["exit_code"] == 0
    assert run["group"] == (False, "stream", 1)   # Kafka Streams' own assignor, one stream thread


def test_internal_topics_on_the_mini_broker(on_mini):
    _, run = on_mini
    # WordCountDemo's names: the count()'s store is the topology's fourth node (source, flatMapValues, groupBy)
    store = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
    repartition, changelog = (f"{APP_ID}-{store}-{kind}" for kind in ("repartition", "changelog"))
    assert run["internal"] == [changelog, repartition]
    assert run["partitions"] == {changelog: 2, repartition: 2}   # as many as the input has
    assert run["configs"][changelog] == {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}
    assert run["configs"][repartition] == {"cleanup.policy": "delete", "retention.ms": "-1",
                                           "segment.bytes": "52428800", "message.timestamp.type": "CreateTime"}
    # the changelog holds what the store holds: the same updates as the output topic
    assert updates(run["changelog"]) == updates(run["output"])
    # Topology.describe() names the repartition topic without the application.id, which prefixes it in Kafka
    assert f"(topic: {store}-repartition)" in run["topology"] and f"(stores: [{store}])" in run["topology"]
    # the group committed the whole input, and the repartition topic up to its end
    assert run["committed"][(run["source"], 0)] == 2 and run["committed"][(run["source"], 1)] == 1
    assert {p: run["committed"][(repartition, p)] for p in (0, 1)} == run["repartition_ends"]
    assert sum(run["repartition_ends"].values()) == sum(EXPECTED.values())   # one record per word


def test_no_jvm_left_after_close(on_mini):
    _, run = on_mini
    assert not psutil.pid_exists(run["pid"]) or psutil.Process(run["pid"]).status() == psutil.STATUS_ZOMBIE
    assert not [p for p in psutil.Process().children(recursive=True)
                if p.is_running() and "WordCount" in " ".join(p.cmdline())]


def test_a_killed_application_resumes_from_its_offsets_and_its_changelog(on_mini, tmp_path):
    """SIGKILL, two more lines, a restart on a fresh state directory: the count store is restored from the
    changelog topic, the input read on from the committed offsets, and each word's counts go on where they
    stopped. A static member (group.instance.id) takes its place in the group back without waiting for the
    dead one's session to expire."""
    kafka, _ = on_mini
    source = kafka.create_topic("resumed-input", partitions=2, **{"retention.ms": -1})
    sink = kafka.create_topic("resumed-output", partitions=2, **{"retention.ms": -1})
    produce_lines(kafka.bootstrap_servers, source)
    options = dict(application_id="resumed-wordcount", group_instance_id="resumed-1", work_dir=None)
    with word_count(kafka.bootstrap_servers, source, sink, state_dir=str(tmp_path / "first"), **options) as first:
        first.wait_until_caught_up(60)
        first.kill()
        assert first.state == "EXITED"
    more = ["kafka streams and spark streams", "hello spark"]
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    for i, line in enumerate(more):
        producer.produce(source, value=line, partition=i % 2)
    assert producer.flush(10) == 0
    with word_count(kafka.bootstrap_servers, source, sink, state_dir=str(tmp_path / "second"), **options) as second:
        second.wait_until_caught_up(60)
        # RocksDB starts empty: the store is rebuilt from the changelog (the first run's 11 updates, uncompacted)
        restored = re.findall(r"Finished restoring changelog resumed-wordcount-\S+-changelog-\d to store \S+ "
                              r"with a total number of (\d+) records", second.log())
        assert len(restored) == 2 and sum(map(int, restored)) == sum(EXPECTED.values())
    output = [m for p in (0, 1) for m in read_partition(kafka.bootstrap_servers, sink, p)]
    assert table(output) == dict(Counter(w for line in LINES + more for w in line.split()))
    assert updates(output)["kafka"] == [1, 2, 3, 4] and updates(output)["streams"] == [1, 2, 3, 4]


@pytest.mark.cluster
def test_kafka_39_gives_the_same_changelogs(on_mini, on_kafka):
    _, mini = on_mini
    real = on_kafka
    assert table(real["output"]) == EXPECTED
    assert updates(real["output"]) == updates(mini["output"])
    assert updates(real["changelog"]) == updates(mini["changelog"])
    assert real["internal"] == mini["internal"] and real["partitions"] == mini["partitions"]
    assert real["configs"] == mini["configs"]
    assert real["group"] == mini["group"] and real["repartition_ends"] == mini["repartition_ends"]
    assert {k: v for k, v in real["committed"].items()} == mini["committed"]
    assert real["topology"] == mini["topology"]
    assert real["exit_code"] == 0, f"states {real['states']}; the log ends with:\n{real['log'][-3000:]}"


OWNER = textwrap.dedent("""
    import sys, time
    from kafkalab.streams import word_count
    app = word_count("127.0.0.1:9", "in", "out", application_id="orphan-check", wait=False)
    print(app.pid, app.dir, flush=True)
    time.sleep(600)
""")


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["pdeathsig", "watchdog-only"])
def test_no_jvm_left_when_its_owner_is_killed(streams_home, pdeathsig):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not pdeathsig:
        env["KAFKALAB_NO_PDEATHSIG"] = "1"   # the watchdog alone must be enough
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid, work = owner.stdout.readline().split()
        jvm = psutil.Process(int(pid))
        wait_until(lambda: "WordCount" in " ".join(jvm.cmdline()), "the JVM started", 15)
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        wait_until(lambda: not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE,
                   "the JVM gone after its owner died", 20)
        wait_until(lambda: not os.path.exists(work), "its temporary directory removed", 20)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_pyspark_word_count_gives_the_same_table(on_mini, tmp_path):
    """Lesson 06's Spark query on the same input topic: its changelog, folded, is the Streams one."""
    pyspark = pytest.importorskip("pyspark")
    from pyspark.sql import functions as F

    from kafkalab.spark import kafka_format, session, stop
    kafka, run = on_mini
    spark_sink = kafka.create_topic("spark-wordcount-output", partitions=2)
    spark = session(app_name="kafka-streams-vs-spark")
    jvm = psutil.Process(pyspark.SparkContext._gateway.proc.pid)
    try:
        fmt = kafka_format(spark)
        lines = (spark.readStream.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                 .option("subscribe", run["source"]).option("startingOffsets", "earliest").load())
        words = lines.select(F.explode(F.split(F.lower(F.col("value").cast("string")), r"\W+")).alias("word"))
        counts = words.where(F.col("word") != "").groupBy("word").count()
        out = counts.select(F.col("word").alias("key"), F.unhex(F.lpad(F.hex("count"), 16, "0")).alias("value"))

        def write(batch, batch_id):
            (batch.write.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
             .option("topic", spark_sink).mode("append").save())

        query = (out.writeStream.foreachBatch(write).outputMode("update")
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        query.awaitTermination(90)
        assert query.exception() is None, query.exception()
    finally:
        stop(spark)
    assert not jvm.is_running() or jvm.status() == psutil.STATUS_ZOMBIE
    spark_output = [m for p in (0, 1) for m in read_partition(kafka.bootstrap_servers, spark_sink, p)]
    assert table(spark_output) == table(run["output"]) == EXPECTED


def test_without_javac_java_runs_the_source_file(streams_home, monkeypatch):
    """A Java runtime without a compiler (the workshop image's openjdk-17-jre-headless): source-file mode."""
    monkeypatch.setattr(jvm, "javac", lambda java_path: None)
    command = jvm.java_command(streams_home, [])
    assert command[-1].endswith("WordCount.java")
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage: WordCount" in done.stderr   # compiled in memory, run, refused no args


def test_without_maven_the_jars_come_through_ivy(streams_home, tmp_path, monkeypatch):
    """The workshop image has no mvn: pyspark's Ivy fetches the same jars, into the same cache layout."""
    pytest.importorskip("pyspark")

    def no_mvn():
        raise maven.FetchError("maven: no 'mvn' on PATH")
    monkeypatch.setattr(maven, "find_mvn", no_mvn)
    home = fetch_streams(root=tmp_path)
    names = sorted(p.name for p in (home / "libs").iterdir())
    assert names == sorted(p.name for p in (streams_home / "libs").iterdir())
    assert fetch_streams(root=tmp_path) == home   # the manifest checks out: a cache hit, without Maven or Ivy
