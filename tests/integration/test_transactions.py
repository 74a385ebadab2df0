"""Transactions and exactly-once (KIP-98) on the standalone mini broker, with confluent-kafka's
transactional producer: commit and abort, read_committed vs read_uncommitted, zombie fencing,
consume-transform-produce with ``send_offsets_to_transaction``, and the markers in ``dump-log``.
"""
from __future__ import annotations

import glob
import os
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkalab.broker.common.records import ABORT, COMMIT, iter_batches, iter_records
from kafkalab.broker.log.transaction_index import ENTRY_SIZE

WAIT_S = 20


def create_topic(broker, name, partitions=2):
    broker.call(lambda: broker.server.admin_manager.create_topic(name, partitions, 1, {}))


def txn_producer(broker, txn_id, **extra):
    conf = {"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(WAIT_S)
    return p


def consume_all(broker, topic, isolation, expected=None, group=None, timeout_s=8.0):
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group or f"g-{topic}-{isolation}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": isolation})
    c.subscribe([topic])
    values, deadline = [], time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and (expected is None or len(values) < expected):
            m = c.poll(0.2)
            if m is not None and not m.error():
                values.append(m.value())
    finally:
        c.close()
    return values


def wait_complete(broker, txn_id, timeout_s=WAIT_S):
    """Wait until the coordinator wrote CompleteCommit / CompleteAbort for ``txn_id``: as in Kafka, EndTxn
    (``commit_transaction()``) is answered once PrepareCommit / PrepareAbort is written, before the markers."""
    coordinator = broker.server.transaction_coordinator
    state = lambda: broker.call(lambda: str(coordinator.state_manager.get(txn_id).state))  # noqa: E731
    deadline = time.monotonic() + timeout_s
    while state() not in ("CompleteCommit", "CompleteAbort"):
        assert time.monotonic() < deadline, f"{txn_id} still {state()}"
        time.sleep(0.05)


def partition_log(broker, topic, index):
    return broker.server.replica_manager.get_partition(topic, index).log


def batches(broker, topic, index):
    def read():
        log = partition_log(broker, topic, index)
        data = log.read(log.log_start_offset, 2**30)
        return [(h, list(iter_records(memoryview(data)[pos:pos + h.size]))) for pos, h in iter_batches(data)]
    return broker.call(read)


def test_commit_and_abort_read_committed(broker):
    topic = "txn-basic"
    create_topic(broker, topic)
    p = txn_producer(broker, "tx-basic")
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, b"committed-%d" % i, partition=i % 2)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(4):
        p.produce(topic, b"aborted-%d" % i, partition=i % 2)
    p.flush(WAIT_S)
    p.abort_transaction(WAIT_S)
    wait_complete(broker, "tx-basic")

    committed = consume_all(broker, topic, "read_committed", expected=4)
    assert sorted(committed) == [b"committed-%d" % i for i in range(4)]
    uncommitted = consume_all(broker, topic, "read_uncommitted", expected=8)
    assert sorted(uncommitted) == sorted([b"committed-%d" % i for i in range(4)]
                                         + [b"aborted-%d" % i for i in range(4)])

    # each partition: data, COMMIT marker, data, ABORT marker; the markers as Kafka writes them
    for index in (0, 1):
        found = batches(broker, topic, index)
        controls = [(h, recs) for h, recs in found if h.is_control]
        assert len(controls) == 2
        types = [struct.unpack(">hh", recs[0].key) for _, recs in controls]
        assert types == [(0, COMMIT), (0, ABORT)]
        assert all(h.is_transactional and h.base_sequence == -1 and h.records_count == 1 for h, _ in controls)
        assert all(struct.unpack(">hi", recs[0].value)[0] == 0 for _, recs in controls)
        assert all(h.is_transactional for h, _ in found)
        log = partition_log(broker, topic, index)
        assert broker.call(lambda: log.last_stable_offset) == broker.call(lambda: log.high_watermark)
        # the aborted transaction is in the segment's .txnindex, in Kafka's 34-byte format
        [txnindex] = glob.glob(os.path.join(log.dir, "*.txnindex"))
        assert os.path.getsize(txnindex) == ENTRY_SIZE
        version, pid, first, last, lso = struct.unpack(">hqqqq", open(txnindex, "rb").read())
        aborted_data = [h for h, _ in found if not h.is_control][1]
        assert (version, first, last) == (0, aborted_data.base_offset, controls[1][0].base_offset)
        assert lso == last + 1 and pid == aborted_data.producer_id


def test_open_transaction_holds_back_read_committed_then_reinit_aborts_it(broker):
    topic = "txn-open"
    create_topic(broker, topic, partitions=1)
    old = txn_producer(broker, "tx-open")
    old.begin_transaction()
    old.produce(topic, b"never-committed", partition=0)
    old.flush(WAIT_S)
    log = partition_log(broker, topic, 0)
    assert broker.call(lambda: (log.last_stable_offset, log.high_watermark)) == (0, 1)
    assert consume_all(broker, topic, "read_committed", timeout_s=2) == []
    assert consume_all(broker, topic, "read_uncommitted", expected=1) == [b"never-committed"]

    # the same transactional.id starts again: the open transaction is aborted, the LSO moves on
    new = txn_producer(broker, "tx-open")
    assert broker.call(lambda: log.last_stable_offset) == 2
    new.begin_transaction()
    new.produce(topic, b"after-reinit", partition=0)
    new.commit_transaction(WAIT_S)
    wait_complete(broker, "tx-open")
    assert consume_all(broker, topic, "read_committed", expected=1) == [b"after-reinit"]
    info = broker.call(lambda: broker.server.transaction_coordinator.state_manager.get("tx-open").describe())
    assert info["state"] == "CompleteCommit" and info["producer_epoch"] == 2   # 0, fenced 1, then 2


def test_zombie_producer_is_fenced(broker):
    topic = "txn-zombie"
    create_topic(broker, topic)
    zombie = txn_producer(broker, "tx-zombie")
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    zombie.flush(WAIT_S)
    fresh = txn_producer(broker, "tx-zombie")     # fences the first instance
    with pytest.raises(KafkaException) as exc:
        zombie.produce(topic, b"zombie-2", partition=1)
        zombie.commit_transaction(WAIT_S)
    err = exc.value.args[0]
    assert err.fatal(), err
    assert "fenced" in err.str().lower() or err.name() in ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")
    fresh.begin_transaction()
    fresh.produce(topic, b"fresh", partition=0)
    fresh.commit_transaction(WAIT_S)
    assert consume_all(broker, topic, "read_committed", expected=1) == [b"fresh"]


def test_consume_transform_produce_offsets_visible_after_commit(broker):
    src, dst, group = "txn-src", "txn-dst", "txn-ctp"
    create_topic(broker, src, partitions=1)
    create_topic(broker, dst, partitions=1)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(5):
        plain.produce(src, b"in-%d" % i, partition=0)
    plain.flush(WAIT_S)

    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    consumer.subscribe([src])
    got, deadline = [], time.monotonic() + WAIT_S
    while len(got) < 5 and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            got.append(m)
    assert len(got) == 5
    p = txn_producer(broker, "tx-ctp")

    def committed():
        [tp] = consumer.committed([TopicPartition(src, 0)], timeout=10)
        return tp.offset

    # an aborted transaction's offsets are dropped
    p.begin_transaction()
    p.produce(dst, b"out-aborted", partition=0)
    p.send_offsets_to_transaction([TopicPartition(src, 0, 3)], consumer.consumer_group_metadata(), WAIT_S)
    p.abort_transaction(WAIT_S)
    assert committed() < 0

    p.begin_transaction()
    for m in got:
        p.produce(dst, m.value().replace(b"in", b"out"), partition=0)
    p.send_offsets_to_transaction([TopicPartition(src, 0, 5)], consumer.consumer_group_metadata(), WAIT_S)
    pending = broker.call(lambda: broker.server.group_coordinator.fetch_offsets(group, [(src, 0)]))
    assert pending[(src, 0)] is None          # pending until the COMMIT marker
    p.commit_transaction(WAIT_S)
    assert committed() == 5
    consumer.close()
    assert consume_all(broker, dst, "read_committed", expected=5) == [b"out-%d" % i for i in range(5)]


def test_transaction_timeout_above_max_is_refused(broker):
    with pytest.raises(KafkaException) as exc:
        Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "tx-timeout",
                  "transaction.timeout.ms": 3_600_000}).init_transactions(WAIT_S)
    assert "INVALID_TRANSACTION_TIMEOUT" in exc.value.args[0].name() or "timeout" in exc.value.args[0].str().lower()


def test_timed_out_transaction_is_aborted(broker):
    topic = "txn-timeout"
    create_topic(broker, topic, partitions=1)
    p = txn_producer(broker, "tx-slow", **{"transaction.timeout.ms": 1000})
    p.begin_transaction()
    p.produce(topic, b"slow", partition=0)
    p.flush(WAIT_S)
    time.sleep(1.2)
    coordinator = broker.server.transaction_coordinator
    assert broker.call(coordinator.abort_timed_out_transactions) == 1
    wait_complete(broker, "tx-slow")   # as Kafka's timer, it wrote PrepareAbort; the markers follow
    log = partition_log(broker, topic, 0)
    assert broker.call(lambda: log.last_stable_offset) == 2
    assert [struct.unpack(">hh", r[0].key)[1] for h, r in batches(broker, topic, 0) if h.is_control] == [ABORT]


def test_dump_log_shows_markers(broker):
    import io

    from kafkalab.tools.dump_log import dump_files
    topic = "txn-dump"
    create_topic(broker, topic, partitions=1)
    p = txn_producer(broker, "tx-dump")
    p.begin_transaction()
    p.produce(topic, b"x", partition=0)
    p.commit_transaction(WAIT_S)
    wait_complete(broker, "tx-dump")
    log = partition_log(broker, topic, 0)
    [segment] = glob.glob(os.path.join(log.dir, "*.log"))
    buf = io.StringIO()
    assert dump_files([segment], print_data_log=True, file=buf)
    out = buf.getvalue()
    assert "isTransactional: true isControl: true" in out and "endTxnMarker: COMMIT coordinatorEpoch: 0" in out


def test_produce_to_a_partition_not_in_the_transaction(broker):
    """Kafka 3.9's leader verifies (KIP-890) that the partition was added: INVALID_TXN_STATE otherwise."""
    from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
    from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

    from tests.helpers import kafka_wire as wire
    from kafkalab.broker.common.records import Record, build_batch
    topic = "txn-unadded"
    create_topic(broker, topic, partitions=1)
    init = wire.call(broker.bootstrap_servers, InitProducerIdRequest(
        transactional_id="tx-wire", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
        InitProducerIdResponse, 4)
    assert init.error_code == 0
    records = build_batch([Record(0, 1_700_000_000_000, b"k", b"v", [])], producer_id=init.producer_id,
                          producer_epoch=init.producer_epoch, base_sequence=0, attributes_extra=0x10)
    for txn_id, code in (("tx-wire", 48), (None, 53)):   # INVALID_TXN_STATE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        req = ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])
        [p] = wire.call(broker.bootstrap_servers, req, ProduceResponse, 9).responses[0].partition_responses
        assert p.error_code == code
    assert broker.call(lambda: partition_log(broker, topic, 0).log_end_offset) == 0


def test_reinit_while_ongoing_answers_concurrent_transactions_then_the_bumped_epoch(broker):
    """Kafka's InitProducerId on an Ongoing transaction: fence (epoch + 1, PrepareAbort written),
    CONCURRENT_TRANSACTIONS; the retry, once the ABORT markers are written, gets epoch + 2."""
    from kafka.protocol.producer.transaction import (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
                                                     InitProducerIdRequest, InitProducerIdResponse)

    from tests.helpers import kafka_wire as wire
    topic = "txn-concurrent"
    create_topic(broker, topic, partitions=1)

    def init():
        return wire.call(broker.bootstrap_servers, InitProducerIdRequest(
            transactional_id="tx-conc", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            InitProducerIdResponse, 4)
    first = init()
    assert (first.error_code, first.producer_epoch) == (0, 0)
    add = wire.call(broker.bootstrap_servers, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-conc", v3_and_below_producer_id=first.producer_id,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
        AddPartitionsToTxnResponse, 3)
    assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
    assert init().error_code == 51                                     # CONCURRENT_TRANSACTIONS
    deadline, again = time.monotonic() + 10, None
    while time.monotonic() < deadline:
        again = init()
        if again.error_code != 51:
            break
        time.sleep(0.05)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, first.producer_id, 2)
    [(h, recs)] = [b for b in batches(broker, topic, 0) if b[0].is_control]
    assert struct.unpack(">hh", recs[0].key)[1] == ABORT and h.producer_epoch == 1


def test_describe_and_list_transactions(broker):
    """DescribeTransactions (65) and ListTransactions (66) through kafka-python's admin client, as
    ``kafka-transactions.sh describe`` / ``list`` use them."""
    from kafka import KafkaAdminClient
    from kafka.errors import TransactionalIdNotFoundError
    from kafka.protocol.admin.transactions import ListTransactionsRequest, ListTransactionsResponse

    from tests.helpers import kafka_wire as wire
    topic = "txn-describe"
    create_topic(broker, topic, partitions=2)
    done = txn_producer(broker, "tx-done")
    done.begin_transaction()
    done.produce(topic, b"x", partition=0)
    done.commit_transaction(WAIT_S)
    wait_complete(broker, "tx-done")
    open_ = txn_producer(broker, "tx-open-describe", **{"transaction.timeout.ms": 30000})
    open_.begin_transaction()
    open_.produce(topic, b"y", partition=0)
    open_.produce(topic, b"z", partition=1)
    open_.flush(WAIT_S)

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        described = admin.describe_transactions(["tx-open-describe", "tx-done"])
        d = described["tx-open-describe"]
        assert (d.state.value, d.producer_epoch, d.transaction_timeout_ms) == ("Ongoing", 0, 30000)
        assert sorted((tp.topic, tp.partition) for tp in d.topic_partitions) == [(topic, 0), (topic, 1)]
        assert 0 < time.time() * 1000 - d.transaction_start_time_ms < 60_000
        assert described["tx-done"].state.value == "CompleteCommit" and not described["tx-done"].topic_partitions
        with pytest.raises(TransactionalIdNotFoundError):
            admin.describe_transactions(["tx-never-used"])

        listed = {t.transactional_id: t for t in admin.list_transactions()[0]}
        assert {k: v.state.value for k, v in listed.items()} == {"tx-done": "CompleteCommit",
                                                                "tx-open-describe": "Ongoing"}
        ongoing = admin.list_transactions(state_filters=["Ongoing"])[0]
        assert [t.transactional_id for t in ongoing] == ["tx-open-describe"]
        by_pid = admin.list_transactions(producer_id_filters=[listed["tx-done"].producer_id])[0]
        assert [t.transactional_id for t in by_pid] == ["tx-done"]
        assert admin.list_transactions(duration_filter_ms=3_600_000)[0] == []
    finally:
        admin.close()
    raw = wire.call(broker.bootstrap_servers, ListTransactionsRequest(
        state_filters=["Ongoing", "Sleeping"], producer_id_filters=[], duration_filter=-1),
        ListTransactionsResponse, 1)
    assert (raw.error_code, raw.unknown_state_filters) == (0, ["Sleeping"])
    assert [t.transactional_id for t in raw.transaction_states] == ["tx-open-describe"]
    open_.abort_transaction(WAIT_S)
