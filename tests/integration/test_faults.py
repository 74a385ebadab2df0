"""Lab faults on a live in-process broker, seen by an unmodified client (confluent-kafka)."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


def topic_name() -> str:
    return f"faults-{uuid.uuid4().hex[:8]}"


def stored(broker, topic: str, partition: int = 0) -> int:
    """The partition's log end offset, read on the broker itself."""
    return broker.call(lambda: broker.server.replica_manager.partitions[(topic, partition)].log.log_end_offset)


def produce(broker, topic, n=1, **conf):
    reports = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0, **conf})
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(), partition=0, on_delivery=lambda e, m: reports.append((e, m)))
    p.flush(30)
    return reports


def values(broker, topic):
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": uuid.uuid4().hex,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    break
                continue
            out.append(m.value())
    finally:
        c.close()
    return out


@pytest.fixture
def topic(broker):
    name = topic_name()
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(10)
    return name


def test_failed_produce_is_retried_and_stored_once(broker, topic):
    fault = broker.inject_fault("fail", api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=2, topic=topic)
    assert fault["remaining"] == 2 and broker.faults()[0]["error"] == "NOT_LEADER_OR_FOLLOWER"
    reports = produce(broker, topic, 1, **{"enable.idempotence": False, "retry.backoff.ms": 10})
    assert [e for e, _ in reports] == [None]
    assert stored(broker, topic) == 1          # the two failed attempts wrote nothing
    assert broker.faults() == []                # its count ran out: it ended by itself


def test_failed_produce_without_retries_reaches_the_application(broker, topic):
    broker.inject_fault("fail", api="Produce", error="MESSAGE_TOO_LARGE", count=1)
    reports = produce(broker, topic, 1, **{"retries": 0, "enable.idempotence": False})
    assert reports[0][0] is not None and reports[0][0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert stored(broker, topic) == 0


def test_delayed_responses_are_late_but_applied(broker, topic):
    produce(broker, topic, 1)           # connection and metadata ready
    broker.inject_fault("delay", api="Produce", delay_ms=800, count=1)
    start = time.monotonic()
    assert [e for e, _ in produce(broker, topic, 1)] == [None]
    assert time.monotonic() - start >= 0.8
    start = time.monotonic()
    produce(broker, topic, 1)
    assert time.monotonic() - start < 0.8
    assert stored(broker, topic) == 3


def test_delay_beyond_delivery_timeout_fails_the_client_not_the_write(broker, topic):
    broker.inject_fault("delay", api="Produce", delay_ms=2500, duration_s=10)
    reports = produce(broker, topic, 1, **{"delivery.timeout.ms": 1000, "request.timeout.ms": 900,
                                           "enable.idempotence": False, "retries": 0})
    assert reports[0][0] is not None and reports[0][0].code() == KafkaError._MSG_TIMED_OUT
    assert stored(broker, topic) == 1   # the broker wrote it: the client only gave up waiting
    assert broker.clear_faults() == 1 and broker.faults() == []


@pytest.mark.parametrize("idempotent, copies", [(False, 2), (True, 1)])
def test_dropped_produce_response_duplicates_only_without_idempotence(broker, topic, idempotent, copies):
    produce(broker, topic, 0)
    broker.inject_fault("drop_response", api="Produce", count=1)
    reports = produce(broker, topic, 1, **{"enable.idempotence": idempotent, "acks": "all",
                                           "retry.backoff.ms": 10})
    assert [e for e, _ in reports] == [None]
    assert values(broker, topic) == [b"v0"] * copies


def test_dropped_response_without_closing_waits_for_the_client_timeout(broker, topic):
    """librdkafka times an unanswered request out after socket.timeout.ms (the Java client: request.timeout.ms)."""
    produce(broker, topic, 1)
    broker.inject_fault("drop_response", api="Produce", count=1, close_connection=False)
    start = time.monotonic()
    reports = produce(broker, topic, 1, **{"socket.timeout.ms": 1500, "enable.idempotence": False})
    assert [e for e, _ in reports] == [None]
    assert time.monotonic() - start >= 1.4      # the client waited for the answer that never came
    assert values(broker, topic) == [b"v0", b"v0", b"v0"]
