"""Client quotas on a live broker: set and read over the wire, a producer and a consumer slowed to them."""
from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.tools.client_quotas import alter_client_quotas, describe_client_quotas

QUOTA = 200_000          # bytes per second
TOLERANCE = 0.25         # the measured average rate is within 25 % of the quota


def flat_out_producer(bootstrap, topic, client_id, seconds, value_size=1000):
    """Produce as fast as the client allows; returns [(time, delivered bytes so far)] and the throttle times."""
    delivered, throttles, lock = [], [], threading.Lock()
    total = [0]

    def on_delivery(err, msg):
        if err is None:
            with lock:
                total[0] += len(msg.value())
                delivered.append((time.monotonic(), total[0]))

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                  "queue.buffering.max.kbytes": 256, "batch.size": 16384, "enable.idempotence": False,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    start = time.monotonic()
    value = b"x" * value_size
    while time.monotonic() - start < seconds:
        try:
            p.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(30)
    return [(t - start, b) for t, b in delivered], throttles


def rate_between(points, t0, t1):
    inside = [(t, b) for t, b in points if t0 <= t <= t1]
    (ta, ba), (tb, bb) = inside[0], inside[-1]
    return (bb - ba) / (tb - ta)


def test_quotas_set_and_read_with_the_kafka_apis(broker):
    bs = broker.bootstrap_servers
    alter_client_quotas(bs, {"client-id": "app"}, {"producer_byte_rate": 1024, "consumer_byte_rate": 2048})
    alter_client_quotas(bs, {"user": None, "client-id": None}, {"request_percentage": 25.5})
    assert describe_client_quotas(bs) == {
        (("client-id", "app"),): {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0},
        (("client-id", None), ("user", None)): {"request_percentage": 25.5}}
    assert list(describe_client_quotas(bs, [("client-id", 0, "app")], strict=True)) == [(("client-id", "app"),)]
    alter_client_quotas(bs, {"client-id": "app"}, {"consumer_byte_rate": None})
    alter_client_quotas(bs, {"client-id": "app"}, {"producer_byte_rate": 5}, validate_only=True)
    assert describe_client_quotas(bs)[(("client-id", "app"),)] == {"producer_byte_rate": 1024.0}
    with pytest.raises(ValueError, match="INVALID_REQUEST.*Invalid configuration key"):
        alter_client_quotas(bs, {"client-id": "app"}, {"bytes_per_fortnight": 1})
    with pytest.raises(ValueError, match="INVALID_REQUEST"):
        alter_client_quotas(bs, {"ip": "127.0.0.1"}, {"producer_byte_rate": 1})


def test_quotas_survive_a_restart(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path)) as b:
        alter_client_quotas(b.bootstrap_servers, {"client-id": "app"}, {"producer_byte_rate": 1024})
    with kafkalab.mini(log_dir=str(tmp_path)) as b:
        assert describe_client_quotas(b.bootstrap_servers) == {(("client-id", "app"),): {"producer_byte_rate": 1024.0}}


@pytest.fixture
def quota_broker(tmp_path):
    """Quotas measured over 3 windows of 1 s (Kafka's default is 11): a flat-out client reaches its
    steady state within a quick test instead of first bursting ten seconds' worth of its quota."""
    with kafkalab.mini(log_dir=str(tmp_path / "q"), **{"quota.window.num": 3, "quota.window.size.seconds": 1}) as b:
        yield b


def test_producer_over_its_quota_is_slowed_to_it_and_told(quota_broker):
    broker = quota_broker
    topic = f"q-{uuid.uuid4().hex[:8]}"
    alter_client_quotas(broker.bootstrap_servers, {"client-id": "slow"}, {"producer_byte_rate": QUOTA})
    points, throttles = flat_out_producer(broker.bootstrap_servers, topic, "slow", seconds=8)
    average = points[-1][1] / points[-1][0]
    assert abs(average - QUOTA) / QUOTA < TOLERANCE, average
    assert throttles and max(throttles) > 0          # the client saw throttle_time_ms (librdkafka's throttle_cb)
    history = broker.call(lambda: dict(broker.server.quotas.throttles))
    assert sum(len(h) for h in history.values()) >= len([t for t in throttles if t > 0])
    # a client id without a quota is not slowed on the same broker
    free, free_throttles = flat_out_producer(broker.bootstrap_servers, topic, "fast", seconds=2)
    assert free[-1][1] / free[-1][0] > 3 * QUOTA and free_throttles == []


def test_consumer_over_its_quota_is_slowed(quota_broker):
    broker = quota_broker
    topic = f"qc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20, "batch.size": 16384})
    for _ in range(4000):
        p.produce(topic, b"y" * 1000)
        p.poll(0)
    p.flush(30)
    alter_client_quotas(broker.bootstrap_servers, {"client-id": None}, {"consumer_byte_rate": QUOTA})
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": uuid.uuid4().hex,
                  "client.id": "reader", "fetch.max.bytes": 100_000, "max.partition.fetch.bytes": 100_000,
                  "message.max.bytes": 100_000})
    c.assign([TopicPartition(topic, 0, 0)])
    got, start = 0, time.monotonic()
    points = []
    try:
        while time.monotonic() - start < 8:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got += len(m.value())
                points.append((time.monotonic() - start, got))
    finally:
        c.close()
    assert got < 4_000_000                           # unthrottled it would have read all 4 MB at once
    average = points[-1][1] / points[-1][0]
    assert abs(average - QUOTA) / QUOTA < TOLERANCE, average


def test_a_consumer_fetch_is_capped_and_a_throttled_one_answered_empty(quota_broker):
    # Kafka's KafkaApis.handleFetchRequest: a consumer's Fetch asks for at most quota x (quota.window.num - 1)
    # windows (getMaxValueInQuotaWindow); one that would put it over its quota is answered empty, with the
    # throttle time, and its bytes are not counted (unrecordQuotaSensor)
    from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
    from tests.helpers import kafka_wire as wire
    broker = quota_broker
    topic = f"qf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20, "batch.num.messages": 10})
    for _ in range(300):
        p.produce(topic, b"z" * 1000)
        p.poll(0)
    p.flush(30)
    quota = 50_000                                  # allowance at once: 50 kB/s x 2 windows of 1 s = 100 kB
    alter_client_quotas(broker.bootstrap_servers, {"client-id": "raw"}, {"consumer_byte_rate": quota})
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=2**20, isolation_level=0, session_id=0,
                       session_epoch=-1, topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
                           FetchRequest.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                                                  log_start_offset=-1, partition_max_bytes=2**20)])],
                       forgotten_topics_data=[], rack_id="")
    with wire.connect(broker.bootstrap_servers) as sock:
        answers = []
        for n in (1, 2):
            sock.sendall(wire.encode(req, 12, correlation_id=n, client_id="raw"))
            answers.append(FetchResponse.decode(wire.recv_frame(sock), version=12, header=True))
    first, second = answers
    size = len(first.responses[0].partitions[0].records)
    assert first.throttle_time_ms == 0 and 2 * quota - 20_000 < size <= 2 * quota   # capped at the allowance
    assert second.throttle_time_ms > 0 and second.responses == []                    # over it: empty
    rate = broker.call(lambda: broker.server.quotas.sensors[("consumer_byte_rate", "", "raw")])
    assert sum(s[1] for s in rate.samples) < 2 * quota + 1000    # the emptied response's bytes were taken back
