"""The idempotent producer (KIP-98): producer ids, epochs and per-partition sequence numbers.

First with hand-built batches (``build_batch`` + kafka-python's ProduceRequest over a socket), so
every rule is visible; then with both clients' idempotent producers while the broker "loses"
Produce responses, which makes the clients retry batches the log already has.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaProducer
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from kafkalab.broker.apis import REGISTRY
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.records import Record, build_batch
from kafkalab.broker.network.socket_server import CloseConnection

WAIT_S = 60


def init_producer_id(bootstrap):
    req = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    resp = wire.call(bootstrap, req, InitProducerIdResponse, 4)
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


def batch(pid, epoch, seq, n=3, tag=b""):
    return build_batch([Record(i, 1_700_000_000_000, b"k", b"%s-%d" % (tag, seq + i), []) for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def send(sock, topic, partition, records, correlation_id=1):
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=partition, records=records)])])
    [p] = wire.roundtrip(sock, req, ProduceResponse, 9, correlation_id).responses[0].partition_responses
    return p.error_code, p.base_offset


def log_values(broker, topic, partition=0):
    from kafkalab.broker.common.records import iter_batches, iter_records

    def read():
        log = broker.server.replica_manager.get_partition(topic, partition).log
        data = log.read(0, 2**30)
        return [r.value for pos, h in iter_batches(data) for r in iter_records(memoryview(data)[pos:pos + h.size])]
    return broker.call(read)


def create_topic(broker, name, partitions=1):
    broker.call(lambda: broker.server.admin_manager.create_topic(name, partitions, 1, {}))


def test_sequence_rules_with_hand_built_batches(broker):
    create_topic(broker, "idem", 2)
    pid, epoch = init_producer_id(broker.bootstrap_servers)
    with wire.connect(broker.bootstrap_servers) as sock:
        assert send(sock, "idem", 0, batch(pid, epoch, 0)) == (0, 0)
        assert send(sock, "idem", 0, batch(pid, epoch, 3)) == (0, 3)
        # a retry of a batch the log already has: not appended again, answered with its first offset
        assert send(sock, "idem", 0, batch(pid, epoch, 0)) == (0, 0)
        assert send(sock, "idem", 0, batch(pid, epoch, 3)) == (0, 3)
        # a gap in the sequence: the broker refuses, nothing is written
        assert send(sock, "idem", 0, batch(pid, epoch, 10))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # sequences are per partition: partition 1 starts at 0 again
        assert send(sock, "idem", 1, batch(pid, epoch, 0)) == (0, 0)
        assert send(sock, "idem", 1, batch(pid, epoch, 3))[0] == 0
        # a producer the partition has no state for may start at any sequence (as in Kafka: its
        # earlier batches may all have been deleted by retention) and must go on from there
        other, _ = init_producer_id(broker.bootstrap_servers)
        assert send(sock, "idem", 0, batch(other, 0, 5)) == (0, 6)
        assert send(sock, "idem", 0, batch(other, 0, 0))[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # a newer epoch starts over at 0 and fences the older epoch (a "zombie")
        assert send(sock, "idem", 0, batch(pid, epoch + 1, 0, tag=b"e1")) == (0, 9)
        assert send(sock, "idem", 0, batch(pid, epoch, 6))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert send(sock, "idem", 0, batch(pid, epoch + 1, 3, tag=b"e1")) == (0, 12)
    values = log_values(broker, "idem")
    # pid/epoch 0 wrote b"-0".."-5", other b"-5".."-7", epoch 1 b"e1-0".."e1-5"
    assert len(values) == 15 and len(set(values)) == 14
    assert log_values(broker, "idem", 1) == [b"-%d" % i for i in range(6)]


def test_duplicate_detection_survives_a_restart(tmp_path):
    log_dir = str(tmp_path / "b")
    with kafkalab.mini(log_dir=log_dir) as b:
        create_topic(b, "idem-restart")
        pid, epoch = init_producer_id(b.bootstrap_servers)
        with wire.connect(b.bootstrap_servers) as sock:
            for seq in range(0, 15, 3):
                assert send(sock, "idem-restart", 0, batch(pid, epoch, seq)) == (0, seq)
    with kafkalab.mini(log_dir=log_dir) as b:
        with wire.connect(b.bootstrap_servers) as sock:
            assert send(sock, "idem-restart", 0, batch(pid, epoch, 12)) == (0, 12)  # rebuilt from the log
            assert send(sock, "idem-restart", 0, batch(pid, epoch, 15)) == (0, 15)
            assert init_producer_id(b.bootstrap_servers)[0] != pid  # ids never repeat across restarts
        assert len(log_values(b, "idem-restart")) == 18


@pytest.fixture
def lossy_produce(monkeypatch):
    """Make the broker drop the response of the first ``n`` successful Produce requests (closing the
    connection after appending), as when a response is lost on the network."""
    spec = REGISTRY[0]
    original = spec.handler
    state = {"drop": 0, "dropped": 0}

    async def handler(ctx, request):
        result = await original(ctx, request)
        ok = result is not None and all(p["error_code"] == 0 for t in result["responses"]
                                        for p in t["partition_responses"])
        if ok and state["drop"] > 0:
            state["drop"] -= 1
            state["dropped"] += 1
            raise CloseConnection("test: Produce response lost")
        return result

    monkeypatch.setattr(spec, "handler", handler)
    return state


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_idempotent_producer_retries_leave_no_duplicates(broker, lossy_produce, client):
    topic = f"exactly-once-{client}"
    create_topic(broker, topic, 1)
    n = 500
    lossy_produce["drop"] = 3
    values = [b"%d" % i for i in range(n)]
    if client == "confluent":
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                      "linger.ms": 5, "batch.num.messages": 50, "retry.backoff.ms": 50})
        errors = []
        for v in values:
            p.produce(topic, value=v, on_delivery=lambda err, msg: err and errors.append(err))
            p.poll(0)
        assert p.flush(WAIT_S) == 0 and errors == []
    else:
        p = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, enable_idempotence=True, linger_ms=5,
                          batch_size=2000, retry_backoff_ms=50)
        futures = [p.send(topic, value=v) for v in values]
        p.flush(WAIT_S)
        assert [f.get(WAIT_S).offset for f in futures] == list(range(n))
        p.close(WAIT_S)
    assert lossy_produce["dropped"] == 3, "the test must really have lost responses"
    stored = log_values(broker, topic)
    assert stored == values, "every record exactly once, in order"
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "x", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got, deadline = [], time.time() + WAIT_S
        while len(got) < n and time.time() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        c.close()
    assert got == values
