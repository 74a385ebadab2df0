"""The protocol core: ApiVersions is exactly the handlers, every advertised version really works,
unknown tagged fields are ignored, unknown APIs and versions get Kafka's answer."""
from __future__ import annotations

import struct
import uuid

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.helpers import kafka_wire as wire
from kafkalab.broker.apis import REGISTRY, load_all
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.records import Record, build_batch, iter_batches, iter_records

load_all()

#: the APIs this part of the broker owns, with the versions they must serve
CORE = {"Produce": (3, 11), "Fetch": (4, 17), "ListOffsets": (1, 8), "Metadata": (0, 12),
        "ApiVersions": (0, 4), "InitProducerId": (0, 5)}


def _spec(name):
    return next(s for s in REGISTRY.values() if s.name == name)


def api_versions(bootstrap, version=3):
    req = ApiVersionsRequest(client_software_name="kafkalab-tests", client_software_version="1")
    return wire.call(bootstrap, req, ApiVersionsResponse, version)


# -- ApiVersions ------------------------------------------------------------------

def test_api_versions_is_exactly_the_registry(broker):
    resp = api_versions(broker.bootstrap_servers)
    assert resp.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert advertised == {s.key: (s.min_version, s.max_version) for s in REGISTRY.values()}
    for name, versions in CORE.items():
        assert (_spec(name).min_version, _spec(name).max_version) == versions


@pytest.mark.parametrize("version", range(0, 5))
def test_api_versions_every_version(broker, version):
    resp = api_versions(broker.bootstrap_servers, version)
    assert resp.error_code == 0
    assert {k.api_key for k in resp.api_keys} >= {0, 1, 2, 3, 18, 22}


def test_registry_never_claims_more_than_the_codec_knows():
    for spec in REGISTRY.values():
        assert spec.request.min_version <= spec.min_version <= spec.max_version <= spec.request.max_version
        assert spec.response.max_version >= spec.max_version


def test_unsupported_api_versions_version_gets_v0_answer(broker):
    """KIP-511: a client newer than the broker sends ApiVersions v(N); the broker answers in v0
    with UNSUPPORTED_VERSION and its own list, so the client can retry with a version both know."""
    frame = struct.pack(">hhih", 18, 99, 7, -1) + b"\x00\x00"  # body the broker cannot know
    with wire.connect(broker.bootstrap_servers) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        resp = ApiVersionsResponse.decode(wire.recv_frame(sock), version=0, header=True)
        assert resp.header.correlation_id == 7
        assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert {k.api_key: k.max_version for k in resp.api_keys}[18] == 4
        # the connection stays usable: the client now asks again with a version both know
        resp = wire.roundtrip(sock, ApiVersionsRequest(), ApiVersionsResponse, 3, correlation_id=8)
        assert resp.error_code == 0


@pytest.mark.parametrize("api_key,version", [(0, 2), (0, 12), (1, 3), (1, 18), (3, 13), (2, 0), (2, 9),
                                             (22, 6), (4242, 0), (-1, 0)])
def test_unknown_api_or_version_closes_connection(broker, api_key, version):
    """Kafka closes the connection on an API key or version it does not serve."""
    frame = struct.pack(">hhih", api_key, version, 1, -1) + b"\x00" * 16
    with wire.connect(broker.bootstrap_servers) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        assert wire.is_closed(sock)
    assert api_versions(broker.bootstrap_servers).error_code == 0  # the broker still serves


# -- unknown tagged fields --------------------------------------------------------

def _with_tag(encoded_tags: bytes, tag: int, payload: bytes) -> bytes:
    assert encoded_tags == b"\x00"  # no tagged fields yet: replace with one unknown one
    return bytes([1, tag, len(payload)]) + payload


def test_unknown_tagged_fields_in_header_and_body_are_ignored(broker):
    """librdkafka 2.16 sends Metadata v9 carrying tag 0 when a broker advertises Metadata only up
    to v9; a broker must skip tagged fields it does not know (as kafka-python's decoder does)."""
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="tagged")],
                          allow_auto_topic_creation=True)
    frame = wire.encode(req, 9, correlation_id=11, client_id="x")[4:]
    # header v2: api_key, api_version, correlation_id, client_id (int16 length + "x"), tagged fields
    header_end = 2 + 2 + 4 + 2 + 1
    assert frame[header_end:header_end + 1] == b"\x00" and frame[-1:] == b"\x00"
    body = frame[header_end + 1:-1]
    hacked = (frame[:header_end] + _with_tag(b"\x00", 0, b"\x2a") + body
              + _with_tag(b"\x00", 0, b"\x01\x02\x03"))
    with wire.connect(broker.bootstrap_servers) as sock:
        sock.sendall(struct.pack(">i", len(hacked)) + hacked)
        resp = MetadataResponse.decode(wire.recv_frame(sock), version=9, header=True)
    assert resp.header.correlation_id == 11
    [topic] = resp.topics
    assert topic.name == "tagged" and topic.error_code == 0 and len(topic.partitions) == 3


# -- every advertised version of the core APIs really works -----------------------

def _topic_id(broker, name):
    return broker.call(lambda: broker.server.metadata_cache.get(name).topic_id)


@pytest.mark.parametrize("version", range(0, 13))
def test_metadata_every_version(broker, version):
    name = f"meta-v{version}"
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)],
                          allow_auto_topic_creation=True)
    resp = wire.call(broker.bootstrap_servers, req, MetadataResponse, version)
    [topic] = resp.topics
    assert (topic.name, topic.error_code, len(topic.partitions)) == (name, 0, 3)
    assert resp.brokers[0].port == broker.port
    if version >= 10:
        assert topic.topic_id == _topic_id(broker, name)
    # all topics: v0 with an empty list, v1+ with null
    all_req = MetadataRequest(topics=[] if version == 0 else None, allow_auto_topic_creation=False)
    names = {t.name for t in wire.call(broker.bootstrap_servers, all_req, MetadataResponse, version).topics}
    assert name in names
    if version >= 1:  # v1+: an empty list asks for no topic at all
        none_req = MetadataRequest(topics=[], allow_auto_topic_creation=False)
        assert wire.call(broker.bootstrap_servers, none_req, MetadataResponse, version).topics == []


def test_metadata_v12_by_topic_id(broker):
    wire.call(broker.bootstrap_servers, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="by-id")]),
              MetadataResponse, 12)
    tid = _topic_id(broker, "by-id")
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None, topic_id=tid),
                                  MetadataRequest.MetadataRequestTopic(name=None, topic_id=uuid.uuid4())])
    known, unknown = wire.call(broker.bootstrap_servers, req, MetadataResponse, 12).topics
    assert (known.name, known.error_code) == ("by-id", 0)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


@pytest.mark.parametrize("name,auto", [("bad name", True), ("bad/name", False), ("..", True), ("x" * 250, True),
                                       ("", True), ("ünïcode", False), ("trailing-newline\n", True)])
def test_metadata_invalid_topic_names(broker, name, auto):
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)], allow_auto_topic_creation=auto)
    [topic] = wire.call(broker.bootstrap_servers, req, MetadataResponse, 12).topics
    assert topic.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert broker.call(lambda: name in broker.server.metadata_cache.topics) is False


def test_metadata_no_auto_create(broker):
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="not-created")],
                          allow_auto_topic_creation=False)
    [topic] = wire.call(broker.bootstrap_servers, req, MetadataResponse, 12).topics
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _produce_request(topic, partition, records, acks=-1):
    return ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])


def _create(broker, name, partitions=1, **configs):
    return broker.call(lambda: broker.server.admin_manager.create_topic(
        name, partitions, 1, {k: str(v) for k, v in configs.items()}))


@pytest.mark.parametrize("version", range(3, 12))
def test_produce_fetch_list_offsets_every_version(broker, version):
    name = f"pf-v{version}"
    _create(broker, name)
    batch = build_batch([Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)])
                         for i in range(3)], base_offset=0)
    for round_ in range(2):
        resp = wire.call(broker.bootstrap_servers, _produce_request(name, 0, batch), ProduceResponse, version)
        [part] = resp.responses[0].partition_responses
        assert (part.error_code, part.base_offset) == (0, 3 * round_)
    tid = _topic_id(broker, name)
    fetch_version = min(17, version + 6)  # walk Fetch's range too: v9..v17
    for fv in {4, 5, 7, 11, 12, 13, 15, 16, fetch_version}:
        req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=2**20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                               topic=name, topic_id=tid, partitions=[FetchRequest.FetchTopic.FetchPartition(
                                   partition=0, current_leader_epoch=0 if fv >= 9 else -1, fetch_offset=3,
                                   log_start_offset=-1, partition_max_bytes=2**20)])],
                           forgotten_topics_data=[], rack_id="")
        resp = wire.call(broker.bootstrap_servers, req, FetchResponse, fv)
        [topic] = resp.responses
        assert topic.topic_id == tid if fv >= 13 else topic.topic == name
        [p] = topic.partitions
        assert (p.error_code, p.high_watermark) == (0, 6)
        recs = [r for pos, h in iter_batches(p.records) for r in iter_records(memoryview(p.records)[pos:pos + h.size])]
        assert [(r.offset, r.key, r.headers) for r in recs] == [(3 + i, b"k%d" % i, [("h", b"%d" % i)])
                                                                for i in range(3)]
    for lv in range(1, 9):
        found = []
        for ts in (-2, -1, 1_700_000_000_001):
            req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
                name=name, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=0 if lv >= 4 else -1, timestamp=ts)])])
            [p] = wire.call(broker.bootstrap_servers, req, ListOffsetsResponse, lv).topics[0].partitions
            found.append((p.error_code, p.offset))
        assert found == [(0, 0), (0, 6), (0, 1)]  # earliest, latest, first record at/after the time


def test_fetch_unknown_topic_id_and_stale_leader_epoch(broker):
    _create(broker, "epochs")
    tid = _topic_id(broker, "epochs")

    def fetch(topic_id, epoch):
        req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=2**20, topics=[FetchRequest.FetchTopic(
            topic_id=topic_id, partitions=[FetchRequest.FetchTopic.FetchPartition(
                partition=0, current_leader_epoch=epoch, fetch_offset=0, partition_max_bytes=2**20)])])
        return wire.call(broker.bootstrap_servers, req, FetchResponse, 16).responses[0].partitions[0].error_code

    assert fetch(tid, 0) == 0
    assert fetch(tid, -1) == 0
    assert fetch(uuid.uuid4(), 0) == ErrorCode.UNKNOWN_TOPIC_ID
    assert fetch(tid, 5) == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_fetch_and_list_offsets_need_the_leader(broker):
    _create(broker, "led-elsewhere")
    partition = broker.call(broker.server.replica_manager.get_partition, "led-elsewhere", 0)

    def fetch(replica_id):
        req = FetchRequest(replica_id=replica_id, max_wait_ms=0, min_bytes=0, max_bytes=2**20, topics=[
            FetchRequest.FetchTopic(topic="led-elsewhere", partitions=[FetchRequest.FetchTopic.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, partition_max_bytes=2**20)])])
        return wire.call(broker.bootstrap_servers, req, FetchResponse, 12).responses[0].partitions[0].error_code

    def list_offsets(replica_id, epoch=-1):
        req = ListOffsetsRequest(replica_id=replica_id, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="led-elsewhere", partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=epoch, timestamp=-1)])])
        return wire.call(broker.bootstrap_servers, req, ListOffsetsResponse, 8).topics[0].partitions[0].error_code

    broker.call(setattr, partition, "leader_id", 7)  # as if broker 7 had become the leader
    try:
        assert fetch(-1) == list_offsets(-1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert fetch(3) == 0  # a standalone broker lets a follower's Fetch read from a non-leader
        # Kafka's ReplicaManager.fetchOffset: a follower's ListOffsets goes to the leader; only the
        # debugging replica id -2 may read any replica (its log end offset)
        assert list_offsets(3) == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert list_offsets(-2) == 0
        assert list_offsets(-1, epoch=5) == ErrorCode.UNKNOWN_LEADER_EPOCH  # the epoch is checked first, as in Kafka
    finally:
        broker.call(setattr, partition, "leader_id", broker.server.broker_id)


def test_a_new_leader_with_a_lagging_high_watermark_answers_offset_not_available(broker):
    """Kafka's Partition.fetchOffsetForTimestamp: while a new leader's high watermark is behind the offset its
    epoch began at (it learned the old leader's high watermark a fetch late), a consumer's LATEST gets the
    retriable OFFSET_NOT_AVAILABLE, not a high watermark that makes acknowledged records look gone; EARLIEST,
    a follower's and the debugging replica id's lookups are answered."""
    _create(broker, "lagging-hw")
    wire.call(broker.bootstrap_servers, _produce_request("lagging-hw", 0, build_batch(
        [Record(i, 5000 + i, None, b"x", []) for i in range(3)])), ProduceResponse, 9)
    partition = broker.call(broker.server.replica_manager.get_partition, "lagging-hw", 0)

    def lookup(ts, replica_id=-1):
        req = ListOffsetsRequest(replica_id=replica_id, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="lagging-hw", partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=ts)])])
        p = wire.call(broker.bootstrap_servers, req, ListOffsetsResponse, 8).topics[0].partitions[0]
        return p.error_code, p.offset

    assert lookup(-1) == (0, 3)
    start = broker.call(getattr, partition, "leader_epoch_start_offset")
    broker.call(setattr, partition, "leader_epoch_start_offset", 4)   # as if the epoch had begun past the HW
    try:
        assert lookup(-1) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
        assert lookup(5002)[0] == 0                                     # found below the high watermark
        assert lookup(-2) == (0, 0)                                     # EARLIEST
        assert lookup(-1, replica_id=-2) == (0, 3)                      # not a client: no check
    finally:
        broker.call(setattr, partition, "leader_epoch_start_offset", start)
    assert lookup(-1) == (0, 3)


def test_incremental_fetch_session_is_refused(broker):
    req = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=2**20, session_id=123, session_epoch=4, topics=[])
    resp = wire.call(broker.bootstrap_servers, req, FetchResponse, 12)
    assert resp.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_list_offsets_special_timestamps_by_version(broker):
    _create(broker, "special")
    wire.call(broker.bootstrap_servers,
              _produce_request("special", 0, build_batch([Record(0, 5000, None, b"x", [])])), ProduceResponse, 9)

    def lookup(version, ts, dup=False):
        parts = [ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, timestamp=ts)]
        req = ListOffsetsRequest(topics=[ListOffsetsRequest.ListOffsetsTopic(name="special",
                                                                             partitions=parts * (2 if dup else 1))])
        p = wire.call(broker.bootstrap_servers, req, ListOffsetsResponse, version).topics[0].partitions[0]
        return p.error_code, p.offset, p.timestamp

    assert lookup(7, -3) == (0, 0, 5000)       # MAX_TIMESTAMP (KIP-734)
    assert lookup(6, -3)[0] == ErrorCode.UNSUPPORTED_VERSION
    assert lookup(8, -4)[:2] == (0, 0)         # EARLIEST_LOCAL
    assert lookup(8, 6000) == (0, -1, -1)      # nothing that late
    assert lookup(8, -2, dup=True)[0] == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id_every_version(broker, version):
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                                producer_epoch=-1)
    first = wire.call(broker.bootstrap_servers, req, InitProducerIdResponse, version)
    second = wire.call(broker.bootstrap_servers, req, InitProducerIdResponse, version)
    assert (first.error_code, first.producer_epoch) == (0, 0)
    assert second.producer_id > first.producer_id >= 0
    if version >= 3:  # KIP-360 epoch bump request: without a transactional id Kafka hands out a new id
        bump = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000,
                                     producer_id=first.producer_id, producer_epoch=0)
        resp = wire.call(broker.bootstrap_servers, bump, InitProducerIdResponse, version)
        assert (resp.error_code, resp.producer_epoch) == (0, 0) and resp.producer_id > second.producer_id
        half = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000,
                                     producer_id=first.producer_id, producer_epoch=-1)
        assert wire.call(broker.bootstrap_servers, half, InitProducerIdResponse, version).error_code == \
            ErrorCode.INVALID_REQUEST
    # a transactional id keeps its producer id, and every InitProducerId bumps the epoch
    txn = InitProducerIdRequest(transactional_id=f"tx-{version}", transaction_timeout_ms=60000)
    t1 = wire.call(broker.bootstrap_servers, txn, InitProducerIdResponse, version)
    t2 = wire.call(broker.bootstrap_servers, txn, InitProducerIdResponse, version)
    assert (t1.error_code, t2.error_code) == (0, 0)
    assert t2.producer_id == t1.producer_id and t2.producer_epoch == t1.producer_epoch + 1
