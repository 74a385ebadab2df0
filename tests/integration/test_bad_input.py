"""Bad input never takes the broker down.

One broker *process* takes every kind of garbage: random bytes, truncated frames, absurd length
prefixes, corrupt batches, oversize records, illegal topic names, unknown APIs and versions, a
valid header followed by a garbage body. Each gets Kafka's error code or a closed connection,
and after each a normal client still produces and consumes.
"""
from __future__ import annotations

import os
import random
import socket
import struct
import sys
import time

import psutil
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse

from tests.helpers import kafka_wire as wire
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.records import Record, build_batch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from conftest import BrokerProcess  # noqa: E402

WAIT_S = 60
MAX_REQUEST = 10 * 1024 * 1024  # socket.request.max.bytes for this broker
MB = 1024 * 1024


@pytest.fixture(scope="module")
def proc(tmp_path_factory):
    bp = BrokerProcess(str(tmp_path_factory.mktemp("bad-input")),
                       configs={"num.partitions": 1, "socket.request.max.bytes": MAX_REQUEST,
                                "message.max.bytes": 100_000})
    try:
        yield bp.start()
    finally:
        bp.stop()


@pytest.fixture
def healthy(proc):
    """After the test: the broker process is alive and normal clients still produce and consume."""
    yield
    assert proc.proc.poll() is None, "the broker process died"
    check_clients(proc.bootstrap_servers)


_round = iter(range(10**6))


def check_clients(bootstrap):
    topic = f"health-{next(_round)}"
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(topic, key=b"k", value=b"from confluent")
    assert p.flush(WAIT_S) == 0
    kp = KafkaProducer(bootstrap_servers=bootstrap)
    kp.send(topic, key=b"k", value=b"from kafka-python").get(WAIT_S)
    kp.close(WAIT_S)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "health", "enable.auto.commit": False})
    got, deadline = [], time.time() + WAIT_S
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        while len(got) < 2 and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    assert got == [b"from confluent", b"from kafka-python"]
    kc = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        kc.assign([KTopicPartition(topic, 0)])
        kc.seek_to_beginning()
        kgot = []
        while len(kgot) < 2 and time.time() < deadline:
            kgot += [m.value for msgs in kc.poll(500).values() for m in msgs]
    finally:
        kc.close()
    assert kgot == got


def rss(proc) -> int:
    return psutil.Process(proc.proc.pid).memory_info().rss


def send_raw(proc, data: bytes, close_after: bool = False) -> bool:
    """Send ``data``; True if the broker then closes the connection."""
    with wire.connect(proc.bootstrap_servers) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return True
        if close_after:
            return True
        return wire.is_closed(sock)


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def header(api_key, version, correlation_id=1, client_id=b"bad-input"):
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def produce(proc, topic, records, acks=-1, version=9):
    req = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])
    [p] = wire.call(proc.bootstrap_servers, req, ProduceResponse, version).responses[0].partition_responses
    return p.error_code, p.error_message


def log_end_offset(proc, topic):
    req = ListOffsetsRequest(topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    return wire.call(proc.bootstrap_servers, req, ListOffsetsResponse, 8).topics[0].partitions[0].offset


def ensure_topic(proc, topic):
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True)
    [t] = wire.call(proc.bootstrap_servers, req, MetadataResponse, 12).topics
    assert t.error_code == 0


# -- framing ----------------------------------------------------------------------

def test_random_bytes(proc, healthy):
    rng = random.Random(1234)
    for n in (1, 3, 4, 17, 1000, 65536):
        data = bytes(rng.getrandbits(8) for _ in range(n))
        if n >= 4:
            assert send_raw(proc, data), f"{n} random bytes must close the connection"
        else:
            send_raw(proc, data, close_after=True)
    # random bodies behind a plausible length prefix
    for n in (10, 64, 4096):
        body = bytes(rng.getrandbits(8) for _ in range(n))
        assert send_raw(proc, frame(body))


@pytest.mark.parametrize("size", [2**31 - 1, 2**31 - 2**20, MAX_REQUEST + 1, -1, -2**31, 0, 9])
def test_bad_length_prefix_closes_without_allocating(proc, healthy, size):
    before = rss(proc)
    assert send_raw(proc, struct.pack(">i", size) + b"\x00" * 100)
    assert rss(proc) - before < 50 * MB  # nothing like the claimed size was allocated


def test_length_prefix_under_the_limit_but_never_sent(proc, healthy):
    """A client claims a (legal) 10 MB frame and sends only part of it: the broker waits for that
    connection only, buffers what arrives, allocates nothing up front, and keeps serving others."""
    before = rss(proc)
    socks = []
    try:
        for _ in range(20):  # 20 connections each claiming ~10 MB = 200 MB if allocated up front
            s = wire.connect(proc.bootstrap_servers)
            s.sendall(struct.pack(">i", MAX_REQUEST) + header(3, 12) + b"\x00" * 1000)
            socks.append(s)
        check_clients(proc.bootstrap_servers)
        assert rss(proc) - before < 50 * MB
    finally:
        for s in socks:
            s.close()


def test_truncated_frames(proc, healthy):
    body = wire.encode(MetadataRequest(topics=None), 12)
    for cut in (2, 4, 8, len(body) - 1):
        send_raw(proc, body[:cut], close_after=True)  # the client goes away mid-frame
    # a frame whose size claims more than the request holds, then the client half-closes
    with wire.connect(proc.bootstrap_servers) as sock:
        sock.sendall(struct.pack(">i", len(body) + 50) + body[4:])
        sock.shutdown(socket.SHUT_WR)
        assert wire.is_closed(sock)


@pytest.mark.parametrize("api_key,version", [(999, 0), (-5, 0), (0, 99), (1, 0), (2, 0), (3, 13)])
def test_unknown_api_key_or_version_closes(proc, healthy, api_key, version):
    assert send_raw(proc, frame(header(api_key, version) + b"\x00" * 32))


def test_unsupported_api_versions_version_is_answered(proc, healthy):
    with wire.connect(proc.bootstrap_servers) as sock:
        sock.sendall(frame(header(18, 77, correlation_id=42) + os.urandom(20)))
        resp = ApiVersionsResponse.decode(wire.recv_frame(sock), version=0, header=True)
    assert (resp.header.correlation_id, resp.error_code) == (42, ErrorCode.UNSUPPORTED_VERSION)
    # as Kafka 3.9 answers (ApiVersionsRequest.getErrorResponse): ApiVersions' own range, nothing else
    assert [k.api_key for k in resp.api_keys] == [18] and resp.api_keys[0].max_version >= 3


@pytest.mark.parametrize("api_key,version", [(3, 12), (3, 0), (0, 9), (0, 3), (1, 12), (2, 8), (18, 3), (22, 4)])
def test_garbage_body_behind_a_valid_header(proc, healthy, api_key, version):
    rng = random.Random(api_key * 100 + version)
    flexible_header = b"\x00" if (api_key, version) in {(3, 12), (0, 9), (1, 12), (2, 8), (22, 4)} else b""
    for n in (0, 1, 7, 300):
        garbage = bytes(rng.getrandbits(8) for _ in range(n))
        with wire.connect(proc.bootstrap_servers) as sock:
            sock.sendall(frame(header(api_key, version) + flexible_header + garbage))
            # Kafka closes the connection when a body does not parse; some garbage happens to parse
            # (e.g. an empty topic list) and then gets a normal, well-formed answer
            # (either way within the timeout: a hang raises socket.timeout and fails the test)
            try:
                wire.recv_frame(sock)
            except ConnectionError:
                pass


def test_huge_array_count_in_a_small_frame(proc, healthy):
    """A Metadata v1 body claiming 2**31-1 topics in a few bytes must not make the broker loop or allocate."""
    before = rss(proc)
    assert send_raw(proc, frame(header(3, 1) + struct.pack(">i", 2**31 - 1) + b"\x00\x01a"))
    assert rss(proc) - before < 50 * MB


# -- record batches ---------------------------------------------------------------

def test_crc_mismatch_is_corrupt_message(proc, healthy):
    ensure_topic(proc, "crc")
    good = build_batch([Record(0, 1000, b"k", b"v", [])])
    bad = bytearray(good)
    bad[-2] ^= 0x01
    assert produce(proc, "crc", bytes(bad))[0] == ErrorCode.CORRUPT_MESSAGE
    assert log_end_offset(proc, "crc") == 0  # nothing written
    assert produce(proc, "crc", good)[0] == 0


def test_malformed_batches(proc, healthy):
    ensure_topic(proc, "malformed")
    good = build_batch([Record(0, 1000, b"k", b"v", [])])
    assert produce(proc, "malformed", good[:-5])[0] == ErrorCode.INVALID_RECORD       # truncated
    assert produce(proc, "malformed", good + good)[0] == ErrorCode.INVALID_RECORD     # two batches
    assert produce(proc, "malformed", b"")[0] == ErrorCode.INVALID_RECORD
    assert produce(proc, "malformed", os.urandom(200))[0] in (ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE)
    assert log_end_offset(proc, "malformed") == 0


def test_oversize_batches(proc, healthy):
    ensure_topic(proc, "big")
    big = build_batch([Record(0, 1000, b"k", os.urandom(150_000), [])])
    code, message = produce(proc, "big", big)
    assert code == ErrorCode.MESSAGE_TOO_LARGE and "max.message.bytes=100000" in message
    assert log_end_offset(proc, "big") == 0
    # a real client asks for a value larger than message.max.bytes: Kafka's error comes back
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "message.max.bytes": 1_000_000})
    errors = []
    p.produce("big", value=os.urandom(200_000), on_delivery=lambda err, msg: errors.append(err))
    p.flush(WAIT_S)
    assert [e.name() for e in errors] == ["MSG_SIZE_TOO_LARGE"]
    assert log_end_offset(proc, "big") == 0


def test_acks_0_failure_closes_the_connection(proc, healthy):
    """acks=0 gets no response; Kafka closes the connection on failure so the producer notices."""
    ensure_topic(proc, "acks0")
    bad = bytearray(build_batch([Record(0, 1000, b"k", b"v", [])]))
    bad[-1] ^= 1
    req = ProduceRequest(transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="acks0", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(bad))])])
    with wire.connect(proc.bootstrap_servers) as sock:
        sock.sendall(wire.encode(req, 9))
        assert wire.is_closed(sock)
    good = build_batch([Record(0, 1000, b"k", b"v", [])])
    req.topic_data[0].partition_data[0].records = good
    with wire.connect(proc.bootstrap_servers) as sock:
        sock.sendall(wire.encode(req, 9))
        assert not wire.is_closed(sock, timeout=1)  # success: silence, connection stays open
    assert log_end_offset(proc, "acks0") == 1


# -- topic names ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bad name", "a/b", "..", "x" * 250, "", "ünï"])
def test_bad_topic_names(proc, healthy, name):
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=True)
    [t] = wire.call(proc.bootstrap_servers, req, MetadataResponse, 12).topics
    assert t.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    # Produce to a name that cannot exist: as Kafka, the partition is unknown
    assert produce(proc, name, build_batch([Record(0, 0, None, b"v", [])]))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_clients_with_bad_topic_names(proc, healthy):
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "message.timeout.ms": 10000})
    errors = []
    p.produce("bad name!", value=b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(WAIT_S)
    assert len(errors) == 1 and errors[0] is not None and errors[0].name() == "TOPIC_EXCEPTION"
    # Metadata for the name: the broker's INVALID_TOPIC_EXCEPTION reaches the application
    meta = p.list_topics("bad name!", timeout=WAIT_S).topics["bad name!"]
    assert meta.error is not None and meta.error.code() == KafkaError.TOPIC_EXCEPTION


def test_produce_to_internal_topic_is_refused(proc, healthy):
    """Clients may not write to internal topics such as __consumer_offsets (INVALID_TOPIC_EXCEPTION)."""
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="__consumer_offsets")],
                          allow_auto_topic_creation=True)
    [t] = wire.call(proc.bootstrap_servers, req, MetadataResponse, 12).topics
    code = produce(proc, "__consumer_offsets", build_batch([Record(0, 0, b"k", b"v", [])]))[0]
    if t.error_code == 0:
        assert code == ErrorCode.INVALID_TOPIC_EXCEPTION
    else:
        assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_many_bad_connections_at_once(proc, healthy):
    """Bad connections in parallel with good ones: the good ones are served throughout."""
    socks = [wire.connect(proc.bootstrap_servers) for _ in range(50)]
    try:
        for i, s in enumerate(socks):
            s.sendall(struct.pack(">i", 1000) + b"x" * (i % 7))  # all stuck mid-frame
        resp = wire.call(proc.bootstrap_servers, ApiVersionsRequest(), ApiVersionsResponse, 3)
        assert resp.error_code == 0
    finally:
        for s in socks:
            s.close()
