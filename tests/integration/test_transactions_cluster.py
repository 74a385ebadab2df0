"""Transactions on a 3-broker mini cluster (#19): the transaction coordinator of a transactional id
is the leader of its ``__transaction_state`` partition (replicated, min ISR 2, as Kafka's
defaults); the markers go to each partition's leader with WriteTxnMarkers; the coordinator's broker
SIGKILLed mid-transaction: the new leader of the partition loads the state and aborts the open
transaction at its timeout, and a read_committed consumer sees every committed record once.
"""
from __future__ import annotations

import functools
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

import cluster_helpers
import kafka_wire as wire
import kafkalab
from cluster_helpers import leader_of, partition_row, restore_brokers
from kafkalab.broker.coordinator.group.offsets_topic import partition_for

pytestmark = pytest.mark.cluster

WAIT_S = 45
LAB = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
       "transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S, interval=0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("txn-cluster")), **LAB) as c:
        yield c


@pytest.fixture(autouse=True)
def all_brokers_up(cluster):
    yield
    restore_brokers(cluster, timeout=WAIT_S)


def create_topic(cluster, prefix: str, partitions: int = 3) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 3)], operation_timeout=30)[name].result(60)
    return name


def producer(cluster, txn_id: str, timeout_ms: int = 60000) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                  "transaction.timeout.ms": timeout_ms, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    return p


def read_committed(cluster, topic: str, expected: int, timeout_s: float = 30) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"rc-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    c.subscribe([topic])
    values, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(values) < expected:
            m = c.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
        end = time.monotonic() + 1.0   # a duplicate or an aborted record would show now
        while time.monotonic() < end:
            m = c.poll(0.1)
            if m is not None and not m.error():
                values.append(m.value())
    finally:
        c.close()
    return values


def coordinator_of(cluster, txn_id: str, not_on: int | None = None) -> int:
    """The coordinator a live broker names (FindCoordinator key type 1), once there is one."""
    def find():
        for b in cluster_helpers.broker_states(cluster):
            if b["alive"] != "running" or b["id"] == not_on:
                continue
            r = wire.call(f"127.0.0.1:{b['port']}", FindCoordinatorRequest(key=txn_id, key_type=1),
                          FindCoordinatorResponse, 1)
            if r.error_code == 0 and r.node_id != not_on:
                return (r.node_id,)
        return None
    return wait_until(find, f"a coordinator for {txn_id}")[0]


def test_commit_and_abort_with_the_coordinator_on_the_partition_leader(cluster):
    topic = create_topic(cluster, "txc")
    p = producer(cluster, "txc-basic")
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"committed-%d" % i, partition=i % 3)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"aborted-%d" % i, partition=i % 3)
    p.flush(WAIT_S)
    p.abort_transaction(WAIT_S)
    assert sorted(read_committed(cluster, topic, expected=6)) == sorted(b"committed-%d" % i for i in range(6))

    # the coordinator is the leader of the id's __transaction_state partition; the others refuse
    coordinator = coordinator_of(cluster, "txc-basic")
    assert leader_of(cluster, "__transaction_state", partition_for("txc-basic", 3)) == coordinator
    assert all(len(partition_row(cluster, "__transaction_state", i)["replicas"]) == 3 for i in range(3))
    ports = {b["id"]: b["port"] for b in cluster_helpers.broker_states(cluster)}
    for broker_id, port in ports.items():
        r = wire.call(f"127.0.0.1:{port}", InitProducerIdRequest(
            transactional_id="txc-basic", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            InitProducerIdResponse, 4)
        if broker_id == coordinator:
            assert r.error_code == 0 and r.producer_epoch == 1     # this fences the producer above
        else:
            assert r.error_code == 16                              # NOT_COORDINATOR


def test_coordinator_sigkilled_mid_transaction(cluster):
    topic = create_topic(cluster, "txc-kill")
    txn_id = "txc-kill"
    p = producer(cluster, txn_id, timeout_ms=5000)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"before-%d" % i, partition=i % 3)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"open-%d" % i, partition=i % 3)
    p.flush(WAIT_S)
    coordinator = coordinator_of(cluster, txn_id)
    cluster.kill(coordinator)                                      # SIGKILL, mid-transaction
    killed_at = time.monotonic()
    del p

    # a new leader of the __transaction_state partition loads the Ongoing transaction and aborts it at
    # its timeout: the read_committed consumer gets past it and sees the committed records once
    assert coordinator_of(cluster, txn_id, not_on=coordinator) != coordinator
    assert sorted(read_committed(cluster, topic, expected=6)) == sorted(b"before-%d" % i for i in range(6))
    assert time.monotonic() - killed_at < WAIT_S

    again = producer(cluster, txn_id, timeout_ms=5000)             # the same id carries on
    again.begin_transaction()
    for i in range(6):
        again.produce(topic, b"after-%d" % i, partition=i % 3)
    again.commit_transaction(WAIT_S)
    got = read_committed(cluster, topic, expected=12)
    assert sorted(got) == sorted([b"before-%d" % i for i in range(6)] + [b"after-%d" % i for i in range(6)])
