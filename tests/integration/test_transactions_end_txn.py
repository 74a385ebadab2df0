"""EndTxn is answered as Kafka's ``TransactionCoordinator.endTransaction`` answers it: once
PrepareCommit / PrepareAbort is written, before the markers. Here the partition leader's marker
write is held back in-process: the client's ``commit_transaction()`` returns, the LSO stays at the
transaction's first offset, AddPartitionsToTxn and EndTxn for the id get CONCURRENT_TRANSACTIONS
(confluent-kafka's next transaction retries and then goes through), and once the marker is written
the LSO moves past it and the transaction is CompleteCommit.
"""
from __future__ import annotations

import asyncio
import threading
import time

from confluent_kafka import Producer

from kafkalab.broker.common.records import COMMIT

from test_transactions import WAIT_S, batches, consume_all, create_topic, partition_log

CONCURRENT_TRANSACTIONS = 51


def wait_until(check, what, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def hold_markers(broker):
    """Hold every marker write of the broker's TransactionMarkerChannelManager (the partition leader's
    write, here the same broker's) until ``release()``; returns (release, restore)."""
    channel = broker.server.transaction_coordinator.marker_channel
    original = channel._to_leader
    gate = broker.call(asyncio.Event)

    async def held(*args, **kwargs):
        await gate.wait()
        return await original(*args, **kwargs)

    broker.call(lambda: setattr(channel, "_to_leader", held))
    return (lambda: broker.call(gate.set)), (lambda: broker.call(lambda: setattr(channel, "_to_leader", original)))


def count_answers(broker, method_name):
    """Wrap a coordinator method to record the error codes it answers."""
    coordinator = broker.server.transaction_coordinator
    original = getattr(coordinator, method_name)
    answers: list[int] = []

    async def recording(*args, **kwargs):
        code = await original(*args, **kwargs)
        answers.append(int(code))
        return code

    broker.call(lambda: setattr(coordinator, method_name, recording))
    return answers


def test_end_txn_answered_before_the_markers_then_concurrent_transactions(broker):
    from kafka.protocol.producer.transaction import (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
                                                     EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
                                                     InitProducerIdResponse)

    from tests.helpers import kafka_wire as wire
    topic, txn_id = "txn-endtxn-order", "tx-endtxn-order"
    create_topic(broker, topic, partitions=1)
    coordinator = broker.server.transaction_coordinator
    state = lambda: broker.call(lambda: str(coordinator.state_manager.get(txn_id).state))  # noqa: E731
    log = partition_log(broker, topic, 0)
    offsets = lambda: broker.call(lambda: (log.last_stable_offset, log.high_watermark))  # noqa: E731

    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    p.produce(topic, b"first-0", partition=0)
    p.produce(topic, b"first-1", partition=0)
    p.flush(WAIT_S)
    assert offsets() == (0, 2)

    release, restore = hold_markers(broker)
    try:
        p.commit_transaction(WAIT_S)            # answered with the marker still held back
        assert state() == "PrepareCommit"
        assert offsets() == (0, 2)              # the LSO still at the transaction's first offset
        assert not [h for h, _ in batches(broker, topic, 0) if h.is_control]

        meta = broker.call(lambda: coordinator.state_manager.get(txn_id))
        pid, epoch = meta.producer_id, meta.producer_epoch
        add = wire.call(broker.bootstrap_servers, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
            AddPartitionsToTxnResponse, 3)
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == \
            CONCURRENT_TRANSACTIONS
        for committed in (True, False):   # a retried EndTxn, and the other one: Kafka's pending CompleteCommit
            end = wire.call(broker.bootstrap_servers, EndTxnRequest(
                transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=committed),
                EndTxnResponse, 3)
            assert end.error_code == CONCURRENT_TRANSACTIONS, (committed, end)
        init = wire.call(broker.bootstrap_servers, InitProducerIdRequest(
            transactional_id=txn_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            InitProducerIdResponse, 4)
        assert init.error_code == CONCURRENT_TRANSACTIONS   # a new instance waits too (and fences nothing yet)
        assert state() == "PrepareCommit" and broker.call(lambda: coordinator.state_manager.get(txn_id)).producer_epoch == epoch

        # the client's next transaction: its AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS, retried
        answers = count_answers(broker, "handle_add_partitions_to_transaction")
        second: dict = {}

        def next_transaction():
            try:
                p.begin_transaction()
                p.produce(topic, b"second", partition=0)
                p.commit_transaction(WAIT_S)
                second["ok"] = True
            except Exception as exc:   # reported by the assert below  # noqa: BLE001
                second["error"] = exc
        worker = threading.Thread(target=next_transaction, daemon=True)
        worker.start()
        wait_until(lambda: CONCURRENT_TRANSACTIONS in answers, "AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS")
        assert state() == "PrepareCommit" and offsets() == (0, 2)
        release()
        worker.join(WAIT_S)
        assert second == {"ok": True}
        assert answers[-1] == 0 and set(answers) <= {0, CONCURRENT_TRANSACTIONS}
    finally:
        release()
        restore()
    wait_until(lambda: state() == "CompleteCommit" and offsets()[0] == offsets()[1], "the second commit's marker")
    controls = [(h, recs) for h, recs in batches(broker, topic, 0) if h.is_control]
    assert [h.base_offset for h, _ in controls] == [2, 4]          # first marker after offsets 0-1, then 3's
    assert all(int.from_bytes(bytes(recs[0].key)[2:4], "big") == COMMIT for _, recs in controls)
    assert offsets() == (5, 5)
    assert consume_all(broker, topic, "read_committed", expected=3) == [b"first-0", b"first-1", b"second"]


def test_a_reloaded_prepared_transaction_completes_while_the_old_marker_task_is_stuck(broker):
    """The coordinator's metadata for an id is replaced (as when its ``__transaction_state`` partition is
    loaded again) while the first marker task is still stuck on its way to the leader. The load finishes
    the PrepareCommit it found, although the old task has not returned, and the old task, once it does,
    writes no CompleteCommit of its own (its metadata is not the coordinator's any more)."""
    from kafkalab.broker.coordinator.transaction.transaction_log import read_key, read_value
    topic, txn_id = "txn-endtxn-reload", "tx-endtxn-reload"
    create_topic(broker, topic, partitions=1)
    coordinator = broker.server.transaction_coordinator
    state = lambda: broker.call(lambda: str(coordinator.state_manager.get(txn_id).state))  # noqa: E731
    channel = coordinator.marker_channel
    original, gate, calls = channel._to_leader, broker.call(asyncio.Event), []

    async def first_held(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            await gate.wait()
        return await original(*args, **kwargs)

    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    p.begin_transaction()
    p.produce(topic, b"only", partition=0)
    p.flush(WAIT_S)
    broker.call(lambda: setattr(channel, "_to_leader", first_held))
    try:
        p.commit_transaction(WAIT_S)
        wait_until(lambda: len(calls) == 1, "the first marker task on its way")
        old = broker.call(lambda: coordinator.state_manager.get(txn_id))
        broker.call(coordinator.load)                   # the id's metadata replaced; PrepareCommit finished
        assert broker.call(lambda: coordinator.state_manager.get(txn_id)) is not old
        assert state() == "CompleteCommit" and len(calls) == 2
        assert str(old.state) == "PrepareCommit"        # the old task still stuck
    finally:
        broker.call(gate.set)
        broker.call(lambda: setattr(channel, "_to_leader", original))
    wait_until(lambda: not broker.call(lambda: [t for t in coordinator._background if not t.done()]),
               "the old marker task done")
    assert str(old.state) == "PrepareCommit" and state() == "CompleteCommit"

    def states():
        out = []
        for key, value in coordinator.state_manager.read_records():
            if read_key(key) == txn_id:
                out.append(read_value(value).state_name)
        return out
    assert broker.call(states) == ["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"]   # one CompleteCommit
    assert consume_all(broker, topic, "read_committed", expected=1) == [b"only"]
