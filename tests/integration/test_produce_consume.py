"""Produce and consume with unmodified confluent-kafka and kafka-python clients.

Keys and partitions, per-partition order, every compression codec, headers,
LogAppendTime, seeking by offset and by timestamp, and Fetch's long poll and
size limits, all counted record by record.
"""
from __future__ import annotations

import threading
import time
import zlib

import confluent_kafka
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka.partitioner.default import murmur2
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from kafkalab.broker.apis import REGISTRY
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.records import BatchHeader, Record, build_batch, iter_batches, iter_records

CLIENTS = ["confluent", "kafka-python"]
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
WAIT_S = 60


# -- client helpers ---------------------------------------------------------------

def produce(client, bootstrap, topic, messages, **conf):
    """Send (key, value, headers, timestamp_ms) tuples; return [(partition, offset, timestamp)] in send order."""
    if client == "confluent":
        p = Producer({"bootstrap.servers": bootstrap, "client.id": "test-confluent", "linger.ms": 20, **conf})
        reports = [None] * len(messages)

        def done(i):
            def cb(err, msg):
                assert err is None, err
                reports[i] = (msg.partition(), msg.offset(), msg.timestamp())
            return cb

        for i, (key, value, headers, ts) in enumerate(messages):
            p.produce(topic, key=key, value=value, headers=headers, timestamp=ts or 0, on_delivery=done(i))
            p.poll(0)
        assert p.flush(WAIT_S) == 0
        return reports
    p = KafkaProducer(bootstrap_servers=bootstrap, client_id="test-kafka-python", linger_ms=20, **conf)
    try:
        futures = [p.send(topic, key=key, value=value, headers=headers, timestamp_ms=ts)
                   for key, value, headers, ts in messages]
        p.flush(WAIT_S)
        return [(m.partition, m.offset, m.timestamp) for m in (f.get(WAIT_S) for f in futures)]
    finally:
        p.close(WAIT_S)


class Msg:
    """One consumed record, the same shape for both clients."""

    def __init__(self, partition, offset, key, value, headers, timestamp, timestamp_type):
        self.partition, self.offset, self.key, self.value = partition, offset, key, value
        self.headers, self.timestamp, self.timestamp_type = headers, timestamp, timestamp_type


def consume(client, bootstrap, topic, count, partitions=(0, 1, 2), start=None, by_time=None,
            reset="earliest", max_s=WAIT_S):
    """Assign ``partitions``, start at offset ``start`` (default: beginning) or at the offset for
    timestamp ``by_time``, and read exactly ``count`` records (then make sure no more come)."""
    out = []
    deadline = time.time() + max_s
    if client == "confluent":
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "client.id": "test-confluent",
                      "enable.auto.commit": False, "auto.offset.reset": reset})
        try:
            if by_time is not None:
                tps = c.offsets_for_times([TopicPartition(topic, p, by_time) for p in partitions], WAIT_S)
            else:
                tps = [TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING if start is None else start)
                       for p in partitions]
            c.assign(tps)
            while len(out) < count and time.time() < deadline:
                m = c.poll(0.5)
                if m is None:
                    continue
                assert m.error() is None, m.error()
                ts_type, ts = m.timestamp()
                out.append(Msg(m.partition(), m.offset(), m.key(), m.value(), m.headers() or [], ts,
                               "LogAppendTime" if ts_type == confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
                               else "CreateTime"))
            extra = c.poll(0.5)
            assert extra is None or extra.error() is not None, "more records than produced"
        finally:
            c.close()
        return out
    c = KafkaConsumer(bootstrap_servers=bootstrap, client_id="test-kafka-python", enable_auto_commit=False,
                      auto_offset_reset=reset)
    try:
        tps = [KTopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        if by_time is not None:
            for tp, found in c.offsets_for_times({tp: by_time for tp in tps}).items():
                if found is None:
                    c.seek_to_end(tp)
                else:
                    c.seek(tp, found.offset)
        elif start is None:
            c.seek_to_beginning(*tps)
        else:
            for tp in tps:
                c.seek(tp, start)
        while len(out) < count and time.time() < deadline:
            for tp, msgs in c.poll(500).items():
                out += [Msg(m.partition, m.offset, m.key, m.value, list(m.headers or []), m.timestamp,
                            "LogAppendTime" if m.timestamp_type == 1 else "CreateTime") for m in msgs]
        assert not c.poll(500), "more records than produced"
    finally:
        c.close()
    return out


def create_topic(broker, name, partitions=3, **configs):
    broker.call(lambda: broker.server.admin_manager.create_topic(name, partitions, 1,
                                                                 {k: str(v) for k, v in configs.items()}))


def stored_batches(broker, topic, partition=0):
    def read():
        log = broker.server.replica_manager.get_partition(topic, partition).log
        data = log.read(log.log_start_offset, 2**30)
        return [(h, list(iter_records(memoryview(data)[pos:pos + h.size]))) for pos, h in iter_batches(data)]
    return broker.call(read)


def expected_partition(client, key, n):
    if client == "confluent":  # librdkafka's default "consistent_random": CRC32 of the key
        return zlib.crc32(key) % n
    return (murmur2(key) & 0x7FFFFFFF) % n  # the Java client's and kafka-python's murmur2


# -- produce and consume ----------------------------------------------------------

@pytest.mark.parametrize("producer", CLIENTS)
@pytest.mark.parametrize("consumer", CLIENTS)
def test_keyed_and_unkeyed_across_partitions(shared_broker, producer, consumer):
    topic = f"orders-{producer}-{consumer}"
    bs = shared_broker.bootstrap_servers
    keys = [b"customer-%d" % k for k in range(30)]
    messages = [(keys[i % 30], b"%s|%d" % (keys[i % 30], i), None, None) for i in range(300)]
    messages += [(None, b"nokey|%d" % i, None, None) for i in range(300, 400)]
    reports = produce(producer, bs, topic, messages)
    partitions = {}
    for (key, _, _, _), (partition, _, _) in zip(messages, reports):
        if key is not None:
            assert partitions.setdefault(key, partition) == partition, "a key moved partitions"
            assert partition == expected_partition(producer, key, 3)
    assert set(partitions.values()) == {0, 1, 2}
    got = consume(consumer, bs, topic, len(messages))
    assert len(got) == len(messages)
    assert sorted(m.value for m in got) == sorted(v for _, v, _, _ in messages)
    by_partition = {}
    for m in got:
        by_partition.setdefault(m.partition, []).append(m)
    for p, msgs in by_partition.items():
        offsets = [m.offset for m in msgs]
        assert offsets == list(range(len(msgs))), f"partition {p} offsets are not 0..n-1 in order"
        seq = [int(m.value.rsplit(b"|", 1)[1]) for m in msgs]
        assert seq == sorted(seq), f"partition {p} is not in produce order"
    for (key, value, _, _), (partition, offset, _) in zip(messages, reports):
        assert (partition, offset) in {(m.partition, m.offset) for m in got if m.value == value}


def _lz4_usable_by_librdkafka():
    """librdkafka enables LZ4 only if the broker advertises FindCoordinator v0 (rdkafka_feature.c)."""
    fc = REGISTRY.get(10)
    return fc is not None and fc.min_version == 0


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("codec", CODECS)
def test_compression(shared_broker, client, codec):
    if client == "confluent" and codec == "lz4":
        assert _lz4_usable_by_librdkafka(), "librdkafka silently sends lz4 batches uncompressed unless the " \
            "broker advertises FindCoordinator v0"
    topic = f"codec-{codec}-{client}"
    bs = shared_broker.bootstrap_servers
    messages = [(b"k%d" % i, (b"compress me %d " % i) * 30, [("i", b"%d" % i)], None) for i in range(200)]
    produce(client, bs, topic, messages, **{"compression.type" if client == "confluent" else "compression_type":
                                           None if codec == "none" and client != "confluent" else codec})
    stored = [h.compression for p in range(3) for h, _ in stored_batches(shared_broker, topic, p)]
    assert stored and set(stored) == {codec}, f"the broker must store the batches as sent, got {set(stored)}"
    for reader in CLIENTS:
        got = consume(reader, bs, topic, len(messages))
        assert sorted((m.key, m.value, tuple(m.headers)) for m in got) == \
            sorted((k, v, tuple(h)) for k, v, h, _ in messages)


@pytest.mark.parametrize("client", CLIENTS)
def test_headers_round_trip(shared_broker, client):
    topic = f"headers-{client}"
    headers = [("trace-id", b"\x00\x01binary\xff"), ("dup", b"1"), ("dup", b"2"), ("ünï", b"x"), ("empty", b"")]
    if client == "confluent":  # kafka-python's producer refuses a null header value
        headers.append(("null", None))
    produce(client, shared_broker.bootstrap_servers, topic, [(b"k", b"v", headers, None)])
    for reader in CLIENTS:
        [m] = consume(reader, shared_broker.bootstrap_servers, topic, 1)
        assert list(map(tuple, m.headers)) == headers


@pytest.mark.parametrize("client", CLIENTS)
def test_log_append_time_topic(shared_broker, client):
    topic = f"lat-{client}"
    create_topic(shared_broker, topic, 1, **{"message.timestamp.type": "LogAppendTime"})
    old = 1_000_000_000_000  # 2001: the producer's CreateTime, which the broker replaces
    before = int(time.time() * 1000)
    reports = produce(client, shared_broker.bootstrap_servers, topic,
                      [(b"k%d" % i, b"v", None, old) for i in range(20)], **(
                          {"compression.type": "gzip"} if client == "confluent" else {"compression_type": "gzip"}))
    after = int(time.time() * 1000)
    for _, _, ts in reports:  # the produce response carries the broker's log_append_time_ms
        ts = ts[1] if isinstance(ts, tuple) else ts
        assert before <= ts <= after
    for h, records in stored_batches(shared_broker, topic):
        assert h.timestamp_type == "LogAppendTime" and before <= h.max_timestamp <= after
        assert all(r.timestamp == h.max_timestamp for r in records)
    for reader in CLIENTS:
        got = consume(reader, shared_broker.bootstrap_servers, topic, 20, partitions=(0,))
        assert {m.timestamp_type for m in got} == {"LogAppendTime"}
        assert all(before <= m.timestamp <= after for m in got)


def test_log_append_time_broker_default(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"log.message.timestamp.type": "LogAppendTime"}) as b:
        produce("confluent", b.bootstrap_servers, "lat-broker", [(b"k", b"v", None, 1_000_000_000_000)])
        [m] = consume("kafka-python", b.bootstrap_servers, "lat-broker", 1)
        assert m.timestamp_type == "LogAppendTime" and m.timestamp > 1_000_000_000_000
        create_topic(b, "ct-override", 1, **{"message.timestamp.type": "CreateTime"})
        produce("confluent", b.bootstrap_servers, "ct-override", [(b"k", b"v", None, 1_000_000_000_000)])
        [m] = consume("confluent", b.bootstrap_servers, "ct-override", 1, partitions=(0,))
        assert (m.timestamp_type, m.timestamp) == ("CreateTime", 1_000_000_000_000)


# -- seek and replay --------------------------------------------------------------

@pytest.mark.parametrize("client", CLIENTS)
def test_seek_by_offset_and_by_timestamp(shared_broker, client):
    topic = f"replay-{client}"
    create_topic(shared_broker, topic, 1)
    t0 = 1_700_000_000_000
    produce(client, shared_broker.bootstrap_servers, topic,
            [(b"k", b"%d" % i, None, t0 + 1000 * i) for i in range(100)])
    bs = shared_broker.bootstrap_servers
    for reader in CLIENTS:
        got = consume(reader, bs, topic, 100, partitions=(0,))
        assert [m.value for m in got] == [b"%d" % i for i in range(100)]
        assert [m.timestamp for m in got] == [t0 + 1000 * i for i in range(100)]
        replay = consume(reader, bs, topic, 30, partitions=(0,), start=70)
        assert [m.offset for m in replay] == list(range(70, 100))
        # offsets_for_times: the first record at or after the time, even inside a batch
        by_time = consume(reader, bs, topic, 49, partitions=(0,), by_time=t0 + 50_500)
        assert [m.offset for m in by_time] == list(range(51, 100))
        exact = consume(reader, bs, topic, 50, partitions=(0,), by_time=t0 + 50_000)
        assert exact[0].offset == 50


@pytest.mark.parametrize("client", CLIENTS)
def test_offset_out_of_range_and_auto_offset_reset(shared_broker, client):
    topic = f"reset-{client}"
    create_topic(shared_broker, topic, 1)
    bs = shared_broker.bootstrap_servers
    produce(client, bs, topic, [(None, b"%d" % i, None, None) for i in range(10)])
    got = consume(client, bs, topic, 10, partitions=(0,), start=1000, reset="earliest")
    assert [m.offset for m in got] == list(range(10))

    # "latest": the consumer jumps to the end and sees only what comes next. The late record is
    # sent once the broker has answered the consumer's ListOffsets (its reset to the end).
    counts = shared_broker.server.kafka_apis.request_counts

    def resets():
        return sum(n for (cid, api, _), n in list(counts.items()) if cid == f"test-{client}" and api == "ListOffsets")

    before = resets()

    def late_producer():
        deadline = time.time() + WAIT_S
        while resets() == before and time.time() < deadline:
            time.sleep(0.05)
        produce(client, bs, topic, [(None, b"late", None, None)])
    t = threading.Thread(target=late_producer)
    t.start()
    try:
        got = consume(client, bs, topic, 1, partitions=(0,), start=1000, reset="latest")
    finally:
        t.join()
    assert [(m.offset, m.value) for m in got] == [(10, b"late")]


# -- Fetch's long poll and limits (raw protocol) ----------------------------------

def _fetch(broker, topic, offsets, max_wait_ms=0, min_bytes=0, max_bytes=2**20, partition_max_bytes=2**20,
           isolation_level=0):
    req = FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                       isolation_level=isolation_level, session_id=0, session_epoch=-1, topics=[
                           FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                               partition=p, current_leader_epoch=-1, fetch_offset=o, log_start_offset=-1,
                               partition_max_bytes=partition_max_bytes) for p, o in offsets.items()])],
                       forgotten_topics_data=[], rack_id="")
    parts = wire.call(broker.bootstrap_servers, req, FetchResponse, 12).responses[0].partitions
    return {p.partition_index: p for p in parts}


def _produce_one(broker, topic, partition, value):
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(
                index=partition, records=build_batch([Record(0, 1000, None, value, [])]))])])
    resp = wire.call(broker.bootstrap_servers, req, ProduceResponse, 9)
    assert resp.responses[0].partition_responses[0].error_code == 0


class ParkedFetch:
    """A long-poll Fetch in a thread; ``wait_parked()`` returns once it waits in the fetch purgatory."""

    def __init__(self, broker, topic, offsets, **kwargs):
        self.broker, self.watched = broker, [(topic, p) for p in offsets]
        self.result, self.elapsed = None, None

        def run():
            start = time.monotonic()
            try:
                self.result = _fetch(broker, topic, offsets, **kwargs)
            except Exception as exc:  # noqa: BLE001
                self.result = exc
            self.elapsed = time.monotonic() - start

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def parked(self) -> bool:
        waiters = self.broker.server.replica_manager._fetch_waiters
        return self.broker.call(lambda: all(waiters.get(key) for key in self.watched))

    def wait_parked(self):
        deadline = time.monotonic() + WAIT_S
        while not self.parked():
            assert self.thread.is_alive(), f"the fetch answered without waiting: {self.result}"
            assert time.monotonic() < deadline, "the fetch never reached the purgatory"
            time.sleep(0.05)

    def join(self):
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "the fetch is still waiting"
        return self.result


@pytest.fixture
def fetch_reads(monkeypatch):
    """Counts how often the Fetch handler reads its partitions (once, plus once per wake-up)."""
    from kafkalab.broker.server.replica_manager import ReplicaManager
    calls = []
    real = ReplicaManager.read_from_local_log

    def counting(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(ReplicaManager, "read_from_local_log", counting)
    return calls


def test_fetch_long_poll_returns_when_data_arrives(shared_broker):
    create_topic(shared_broker, "long-poll", 1)
    fetch = ParkedFetch(shared_broker, "long-poll", {0: 0}, max_wait_ms=120_000, min_bytes=1)
    fetch.wait_parked()
    produce("confluent", shared_broker.bootstrap_servers, "long-poll", [(b"k", b"wake up", None, None)])
    p = fetch.join()[0]
    # answered when the record arrived, long before max_wait_ms (a generous bound, not a timing test)
    assert fetch.elapsed < 60
    assert p.error_code == 0 and [r.value for _, h in iter_batches(p.records)
                                  for r in iter_records(p.records)] == [b"wake up"]


def test_fetch_purgatory_wakes_only_for_the_partitions_asked_for(shared_broker, fetch_reads):
    create_topic(shared_broker, "watched", 2)
    create_topic(shared_broker, "elsewhere", 1)
    fetch = ParkedFetch(shared_broker, "watched", {0: 0, 1: 0}, max_wait_ms=120_000, min_bytes=1)
    fetch.wait_parked()
    for i in range(5):  # appends elsewhere do not wake the fetch (no re-reads, no busy loop)
        _produce_one(shared_broker, "elsewhere", 0, b"not for you %d" % i)
    assert fetch.thread.is_alive() and fetch.parked()
    assert len(fetch_reads) == 1
    _produce_one(shared_broker, "watched", 1, b"second partition")  # any partition it asked for wakes it
    parts = fetch.join()
    assert fetch.elapsed < 60
    assert len(fetch_reads) == 2
    assert [r.value for r in iter_records(parts[1].records)] == [b"second partition"]
    assert shared_broker.call(lambda: dict(shared_broker.server.replica_manager._fetch_waiters)) == {}


def test_fetch_waiting_out_max_wait_reads_twice_not_in_a_loop(shared_broker, fetch_reads):
    create_topic(shared_broker, "idle", 1)
    parts = _fetch(shared_broker, "idle", {0: 0}, max_wait_ms=1500, min_bytes=1)
    assert parts[0].error_code == 0 and not parts[0].records
    assert len(fetch_reads) <= 3  # once at first, once when max_wait_ms is over (+1 if the timer fired early)


def test_deleting_a_topic_answers_the_fetches_waiting_on_it(shared_broker):
    create_topic(shared_broker, "doomed", 1)
    fetch = ParkedFetch(shared_broker, "doomed", {0: 0}, max_wait_ms=120_000, min_bytes=1)
    fetch.wait_parked()
    shared_broker.call(shared_broker.server.admin_manager.delete_topic, "doomed")
    assert fetch.join()[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert fetch.elapsed < 60


def test_fetch_min_bytes_waits_for_max_wait(shared_broker):
    create_topic(shared_broker, "min-bytes", 1)
    produce("confluent", shared_broker.bootstrap_servers, "min-bytes", [(b"k", b"small", None, None)])
    start = time.monotonic()
    parts = _fetch(shared_broker, "min-bytes", {0: 0}, max_wait_ms=500, min_bytes=10**6)
    assert time.monotonic() - start >= 0.45  # not enough bytes: waited out max_wait_ms, then answered
    assert parts[0].error_code == 0 and len(parts[0].records) > 0


def test_a_partition_named_twice_in_one_produce_keeps_the_last_entry(shared_broker):
    """Kafka reads a Produce request into a map by topic-partition: the last entry wins."""
    create_topic(shared_broker, "twice", 1)
    entries = [ProduceRequest.TopicProduceData.PartitionProduceData(
        index=0, records=build_batch([Record(0, 1000, None, value, [])])) for value in (b"first", b"last")]
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name="twice", partition_data=entries)])
    resp = wire.call(shared_broker.bootstrap_servers, req, ProduceResponse, 9)
    [topic] = resp.responses
    assert [(p.index, p.error_code, p.base_offset) for p in topic.partition_responses] == [(0, 0, 0)]
    assert [r.value for _, records in stored_batches(shared_broker, "twice") for r in records] == [b"last"]


def test_fetch_limits_kip74(shared_broker):
    create_topic(shared_broker, "kip74", 2)
    big_p, other = 0, 1
    for partition, values in ((big_p, [b"x" * 20_000, b"small"]), (other, [b"small"])):
        for value in values:  # one batch each, to exactly these partitions
            _produce_one(shared_broker, "kip74", partition, value)
    # the first batch is returned whole although it is larger than max_bytes and partition_max_bytes
    parts = _fetch(shared_broker, "kip74", {big_p: 0, other: 0}, max_bytes=100, partition_max_bytes=100)
    first = list(iter_batches(parts[big_p].records))
    assert len(first) == 1 and BatchHeader.parse(parts[big_p].records).size > 20_000
    assert parts[other].records in (b"", None)  # the response budget is used up
    # partition_max_bytes bounds each partition: only whole batches that fit, after the first
    first_size = stored_batches(shared_broker, "kip74", big_p)[0][0].size
    parts = _fetch(shared_broker, "kip74", {big_p: 0, other: 0}, max_bytes=2**20,
                   partition_max_bytes=first_size + 10)
    assert [h.size for _, h in iter_batches(parts[big_p].records)] == [first_size]
    assert len(list(iter_batches(parts[other].records))) >= 1
    # max_bytes bounds the whole response: nothing is left for the second partition
    parts = _fetch(shared_broker, "kip74", {big_p: 0, other: 0}, max_bytes=first_size + 10,
                   partition_max_bytes=2**20)
    assert [h.size for _, h in iter_batches(parts[big_p].records)] == [first_size]
    assert parts[other].records in (b"", None)


def test_fetch_at_and_beyond_log_end(shared_broker):
    create_topic(shared_broker, "leo", 1)
    produce("kafka-python", shared_broker.bootstrap_servers, "leo", [(None, b"%d" % i, None, None) for i in range(5)])
    at_end = _fetch(shared_broker, "leo", {0: 5})[0]
    assert (at_end.error_code, at_end.high_watermark, bytes(at_end.records or b"")) == (0, 5, b"")
    # Kafka lists aborted transactions for READ_COMMITTED only (none here: no transactions), else null
    assert at_end.aborted_transactions is None and _fetch(shared_broker, "leo", {0: 0})[0].aborted_transactions is None
    assert _fetch(shared_broker, "leo", {0: 5}, isolation_level=1)[0].aborted_transactions == []
    beyond = _fetch(shared_broker, "leo", {0: 6})[0]
    assert beyond.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    unknown = _fetch(shared_broker, "no-such-topic", {0: 0})[0]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- which protocol versions the clients really use ------------------------------

#: what each client sends against this broker (recorded in docs/differences.md)
EXPECTED_VERSIONS = {
    "confluent": {"ApiVersions": {3}, "Metadata": {12}, "Produce": {10}, "Fetch": {16}, "ListOffsets": {7},
                  "InitProducerId": {4}},
    "kafka-python": {"ApiVersions": {4}, "Metadata": {12}, "Produce": {9}, "Fetch": {12}, "ListOffsets": {8},
                     "InitProducerId": {4}},
}


def test_client_protocol_versions(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"num.partitions": 1}) as b:
        for client in CLIENTS:
            conf = {"enable.idempotence": True} if client == "confluent" else {}  # kafka-python: on by default
            produce(client, b.bootstrap_servers, f"v-{client}", [(b"k", b"v", None, None)], **conf)
            consume(client, b.bootstrap_servers, f"v-{client}", 1, partitions=(0,), by_time=0)
        used = {}
        for (client_id, api, version), n in b.server.kafka_apis.request_counts.items():
            client = "confluent" if client_id in ("test-confluent", "rdkafka") else "kafka-python"
            used.setdefault(client, {}).setdefault(api, set()).add(version)
        for client, apis in used.items():
            for api, versions in apis.items():
                spec = next(s for s in REGISTRY.values() if s.name == api)
                assert all(spec.min_version <= v <= spec.max_version for v in versions)
        assert {c: {a: v for a, v in apis.items() if a in EXPECTED_VERSIONS[c]} for c, apis in used.items()} == \
            EXPECTED_VERSIONS
