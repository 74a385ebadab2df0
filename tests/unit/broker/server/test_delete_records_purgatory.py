"""DeleteRecords on a replicated partition (Kafka's ``Partition.deleteRecordsOnLeader``, ``lowWatermarkIfLeader``
and ``DelayedDeleteRecords``): only the leader deletes, and the answer waits until every follower on a live
broker has moved its log start offset too, or times out.

Kafka Streams purges its repartition topics this way after each commit. A real UnifiedLog in a temp dir; the
followers are fake fetch states (``update_follower_fetch_state``, as the leader's Fetch handler calls it with
the follower's reported log start offset); the test decides which brokers are alive.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkalab.broker.cluster.partition import Partition
from kafkalab.broker.cluster.partition_state import LeaderAndIsrPartitionState
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.common.records import Record, build_batch
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.server.delayed_delete_records import DelayedDeleteRecords
from kafkalab.broker.server.delayed_operation import DelayedOperationPurgatory

KEY = ("t", 0)


class Clock:
    ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
def leader(tmp_path):
    """Broker 1 leading t-0 with followers 2 and 3, ten records replicated; a purgatory wired as the
    ReplicaManager wires it."""
    log = UnifiedLog(str(tmp_path / "t-0"), "t", 0, LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), {}))
    clock = Clock()
    p = Partition("t", 0, log, 1, standalone=False, clock=clock)
    p.alter_partition = lambda part, pending: None
    p.make_leader(LeaderAndIsrPartitionState("t", 0, controller_epoch=1, leader=1, leader_epoch=1, isr=[1, 2, 3],
                                             partition_epoch=0, replicas=[1, 2, 3]))
    p.append_records_to_leader(build_batch([Record(i, 1000 + i, b"k", b"v", []) for i in range(10)]), -1)
    p.clock = clock
    purgatory = DelayedOperationPurgatory({KEY: p})
    p.on_delayed_requests = lambda part: purgatory.check_and_complete(KEY)
    alive = {1, 2, 3}
    p.is_broker_alive = lambda broker_id: broker_id in alive
    for follower in (2, 3):
        fetch(p, follower, start=0)
    assert p.log.high_watermark == 10
    yield p, purgatory, alive
    log.close()


def fetch(p: Partition, follower: int, start: int, offset: int = 10) -> None:
    """A follower's Fetch at ``offset``, reporting its log start offset ``start``."""
    p.update_follower_fetch_state(follower, offset, start, p.clock(), p.log.log_end_offset)


def test_the_answer_waits_until_every_live_follower_dropped_the_records(leader):
    p, purgatory, _ = leader

    async def scenario():
        requested, low = p.delete_records_on_leader(6)
        assert (requested, low, p.log.log_start_offset) == (6, 0, 6)   # the leader's own records go at once
        waiting = asyncio.ensure_future(DelayedDeleteRecords(purgatory, {KEY: (requested, low)}).wait(5000))
        await asyncio.sleep(0.01)
        assert not waiting.done() and len(purgatory) == 1
        fetch(p, 2, start=6)
        await asyncio.sleep(0.01)
        assert not waiting.done() and p.low_watermark_if_leader() == 0   # follower 3 still has them
        fetch(p, 3, start=6)
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(scenario()) == {KEY: (ErrorCode.NONE, 6)}
    assert len(purgatory) == 0


def test_a_follower_that_does_not_fetch_times_the_request_out(leader):
    p, purgatory, _ = leader
    fetch(p, 2, start=0)

    async def scenario():
        deleted = {KEY: p.delete_records_on_leader(-1)}   # -1: up to the high watermark
        fetch(p, 2, start=10)
        return await DelayedDeleteRecords(purgatory, deleted).wait(50)

    # REQUEST_TIMED_OUT with the low watermark of the moment the records were deleted; they are gone on the leader
    assert asyncio.run(scenario()) == {KEY: (ErrorCode.REQUEST_TIMED_OUT, 0)}
    assert p.log.log_start_offset == 10 and len(purgatory) == 0


def test_followers_on_dead_brokers_do_not_count(leader):
    p, purgatory, alive = leader
    alive.discard(3)
    fetch(p, 2, start=4)
    deleted = {KEY: p.delete_records_on_leader(4)}
    assert deleted == {KEY: (4, 4)}
    assert asyncio.run(DelayedDeleteRecords(purgatory, deleted).wait(5000)) == {KEY: (ErrorCode.NONE, 4)}


def test_only_the_leader_deletes(leader):
    p, purgatory, _ = leader

    async def scenario():
        deleted = {KEY: p.delete_records_on_leader(5)}
        waiting = asyncio.ensure_future(DelayedDeleteRecords(purgatory, deleted).wait(5000))
        await asyncio.sleep(0.01)
        p.make_follower(LeaderAndIsrPartitionState("t", 0, controller_epoch=1, leader=2, leader_epoch=2,
                                                   isr=[1, 2, 3], partition_epoch=1, replicas=[1, 2, 3]))
        return await asyncio.wait_for(waiting, 1)

    # a waiting request learns that this broker no longer leads; a new one is refused before deleting anything
    assert asyncio.run(scenario()) == {KEY: (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)}
    with pytest.raises(KafkaError) as refused:
        p.delete_records_on_leader(8)
    assert refused.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and p.log.log_start_offset == 5


def test_a_standalone_partition_answers_at_once(tmp_path):
    log = UnifiedLog(str(tmp_path / "s-0"), "s", 0, LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), {}))
    try:
        p = Partition("s", 0, log, 0)
        p.append_records_to_leader(build_batch([Record(i, 1000 + i, b"k", b"v", []) for i in range(4)]), 1)
        purgatory = DelayedOperationPurgatory({("s", 0): p})
        deleted = {("s", 0): p.delete_records_on_leader(3)}
        assert asyncio.run(DelayedDeleteRecords(purgatory, deleted).wait(0)) == {("s", 0): (ErrorCode.NONE, 3)}
        with pytest.raises(KafkaError) as beyond:
            p.delete_records_on_leader(5)                 # past the high watermark
        assert beyond.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    finally:
        log.close()
