"""Partition's replication rules (Kafka's kafka.cluster.Partition): HW, ISR, acks=all, diverging epochs.

A real UnifiedLog in a temp dir; the followers are fake fetch states (``update_follower_fetch_state``
as the leader's Fetch handler calls it), the clock is a number we move, and the test answers the
AlterPartition requests for the controller.
"""
from __future__ import annotations

import asyncio

import pytest

from kafkalab.broker.server.alter_partition_manager import AlterPartitionManager
from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.server.delayed_produce import DelayedProduce, ProducePurgatory
from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.cluster.partition import CommittedPartitionState, Partition, PendingExpandIsr, PendingShrinkIsr
from kafkalab.broker.cluster.partition_state import LeaderAndIsrPartitionState
from kafkalab.broker.common.records import Record, build_batch, iter_batches

LAG_MS = 10_000


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def batch(n: int, epoch: int = 0, base: int = 0) -> bytes:
    return build_batch([Record(base + i, 1000 + i, b"k", b"v%d" % i, []) for i in range(n)],
                       partition_leader_epoch=epoch)


@pytest.fixture
def make(tmp_path):
    made = []

    def make(name="t", min_isr=1, broker_id=1):
        log = UnifiedLog(str(tmp_path / f"{name}-0"), name, 0, LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}),
                                                                         {"min.insync.replicas": min_isr}))
        clock = Clock()
        p = Partition(name, 0, log, broker_id, standalone=False, clock=clock)
        p.replica_lag_time_max_ms = LAG_MS
        p.sent = []                                   # AlterPartition requests, answered by the test
        p.alter_partition = lambda part, pending: part.sent.append(pending)
        made.append(log)
        return p, clock

    yield make
    for log in made:
        log.close()


def state(leader=1, epoch=1, isr=(1, 2, 3), replicas=(1, 2, 3), partition_epoch=0):
    return LeaderAndIsrPartitionState("t", 0, controller_epoch=1, leader=leader, leader_epoch=epoch, isr=list(isr),
                                      partition_epoch=partition_epoch, replicas=list(replicas))


def fetch(p, replica, offset, clock):
    """A follower Fetch at ``offset``, as the leader records it."""
    p.update_follower_fetch_state(replica, offset, 0, clock(), p.log.log_end_offset)


def answer(p, pending, isr=None, error=0, epoch_bump=1):
    """The controller accepts (or refuses) ``pending``."""
    return p.handle_alter_partition_response(pending, error, leader_epoch=p.leader_epoch,
                                             isr=list(pending.sent_isr if isr is None else isr),
                                             partition_epoch=p.partition_epoch + epoch_bump)


def test_make_leader_starts_an_epoch_at_the_log_end_and_takes_the_checkpointed_hw(make):
    p, clock = make()
    p.log.append_as_leader(batch(5), 0)
    assert p.make_leader(state(epoch=3), checkpointed_high_watermark=4) is True
    assert p.is_leader and p.leader_epoch == 3 and p.isr == [1, 2, 3]
    assert p.log.leader_epoch_cache.entries[-1].epoch == 3
    assert p.log.leader_epoch_cache.entries[-1].start_offset == 5
    assert p.log.high_watermark == 4                          # from replication-offset-checkpoint
    assert p.leader_epoch_start_offset == 5
    assert sorted(p.remote_replicas) == [2, 3]
    assert all(r.last_caught_up_time_ms == clock.ms and r.log_end_offset == -1 for r in p.remote_replicas.values())
    # the same epoch again changes nothing; an older partition epoch is ignored
    assert p.make_leader(state(epoch=3)) is False
    p.partition_epoch = 5
    assert p.make_leader(state(epoch=4, partition_epoch=4)) is False and p.leader_epoch == 3


def test_checkpointed_hw_is_clamped_to_the_log(make):
    p, _ = make()
    p.log.append_as_leader(batch(3), 0)
    p.make_leader(state(), checkpointed_high_watermark=99)
    assert p.log.high_watermark == 3


def test_hw_is_the_smallest_leo_of_the_isr_and_never_goes_back(make):
    p, clock = make()
    p.make_leader(state(isr=(1, 2, 3)))
    p.append_records_to_leader(batch(10), -1)
    assert p.log.log_end_offset == 10 and p.log.high_watermark == 0
    fetch(p, 2, 10, clock)
    assert p.log.high_watermark == 0                          # follower 3 has reported nothing yet
    fetch(p, 3, 4, clock)
    assert p.log.high_watermark == 4
    fetch(p, 3, 10, clock)
    assert p.log.high_watermark == 10
    fetch(p, 3, 7, clock)                                     # a LEO that went back never moves the HW back
    assert p.log.high_watermark == 10


def test_a_single_replica_isr_moves_the_hw_with_each_append(make):
    p, _ = make()
    p.make_leader(state(isr=(1,), replicas=(1, 2)))
    p.append_records_to_leader(batch(3), 1)
    assert p.log.high_watermark == 3


def test_caught_up_means_up_to_the_leaders_leo_at_the_previous_fetch(make):
    p, clock = make()
    p.make_leader(state(isr=(1, 2)))
    r = p.remote_replicas[2]
    start = clock.ms
    fetch(p, 2, 0, clock)                                   # fetches at the leader's LEO 0: caught up now
    assert r.last_caught_up_time_ms == start
    p.append_records_to_leader(batch(5), 1)
    clock.ms += 100
    fetch(p, 2, 0, clock)                                   # behind the LEO (5), not past the previous LEO
    assert r.last_caught_up_time_ms == start and r.last_fetch_leader_log_end_offset == 5
    p.append_records_to_leader(batch(5, base=0), 1)         # LEO 10
    clock.ms += 100
    fetch(p, 2, 5, clock)                                   # has what the leader had at the previous fetch
    assert r.last_caught_up_time_ms == start + 100


def test_a_lagging_follower_is_proposed_out_of_the_isr_and_the_hw_moves_once_committed(make):
    p, clock = make()
    p.make_leader(state(isr=(1, 2, 3)))
    p.append_records_to_leader(batch(10), 1)
    fetch(p, 2, 10, clock)
    fetch(p, 3, 2, clock)
    assert p.log.high_watermark == 2
    clock.ms += LAG_MS // 2
    p.maybe_shrink_isr()
    assert p.sent == []                                     # 3 is not behind for long enough yet
    clock.ms += LAG_MS // 2 + 1
    fetch(p, 2, 10, clock)                                  # 2 keeps up
    p.maybe_shrink_isr()
    [pending] = p.sent
    assert isinstance(pending, PendingShrinkIsr) and pending.sent_isr == (1, 2)
    assert p.isr == [1, 2, 3] and p.log.high_watermark == 2  # until the controller agrees, 3 still counts
    p.maybe_shrink_isr()
    assert len(p.sent) == 1                                 # one change in flight at a time
    assert answer(p, pending) is False
    assert p.isr == [1, 2] and p.partition_epoch == 1
    assert p.log.high_watermark == 10                       # 3 no longer holds the HW back


def test_a_follower_that_caught_up_is_proposed_into_the_isr_and_counts_at_once(make):
    p, clock = make()
    p.log.append_as_leader(batch(4), 0)
    p.make_leader(state(epoch=1, isr=(1, 2), replicas=(1, 2, 3)))  # the epoch starts at offset 4
    p.append_records_to_leader(batch(6), 1)
    fetch(p, 2, 10, clock)
    assert p.log.high_watermark == 10
    fetch(p, 3, 3, clock)                                   # below the HW and the epoch start: not in sync
    assert p.sent == []
    p.append_records_to_leader(batch(2), 1)                 # LEO 12
    fetch(p, 2, 12, clock)
    assert p.log.high_watermark == 12                       # 3 is neither in the ISR nor caught up
    fetch(p, 3, 10, clock)                                  # has what the leader had at its last fetch: caught up
    assert p.sent == []                                     # but below the HW (12)
    p.append_records_to_leader(batch(2), 1)                 # LEO 14
    fetch(p, 2, 14, clock)
    assert p.log.high_watermark == 12                       # a caught-up follower about to join holds the HW
    fetch(p, 3, 12, clock)
    [pending] = p.sent
    assert isinstance(pending, PendingExpandIsr) and pending.sent_isr == (1, 2, 3)
    assert p.partition_state.maximal_isr == {1, 2, 3} and p.isr == [1, 2]
    fetch(p, 3, 14, clock)
    assert p.log.high_watermark == 14
    answer(p, pending)
    assert p.isr == [1, 2, 3]


def test_a_refused_isr_change_waits_for_the_controller_or_goes_back(make):
    p, clock = make()
    p.make_leader(state(isr=(1, 2, 3)))
    clock.ms += LAG_MS + 1
    fetch(p, 2, 0, clock)
    p.maybe_shrink_isr()
    pending = p.sent[-1]
    assert answer(p, pending, error=ErrorCode.FENCED_LEADER_EPOCH) is False
    assert p.partition_state is pending                     # stays pending until LeaderAndIsr comes
    p.maybe_shrink_isr()
    assert len(p.sent) == 1
    p.make_leader(state(epoch=2, isr=(1, 2), partition_epoch=3))  # the controller's word
    assert isinstance(p.partition_state, CommittedPartitionState) and p.isr == [1, 2]
    assert answer(p, pending) is False and p.isr == [1, 2]   # a late answer to an old proposal is ignored
    p.append_records_to_leader(batch(1), 1)                 # 2 is behind now
    clock.ms += LAG_MS + 1
    p.maybe_shrink_isr()
    again = p.sent[-1]
    assert again.sent_isr == (1,)
    assert answer(p, again, error=ErrorCode.OPERATION_NOT_ATTEMPTED) is False
    assert isinstance(p.partition_state, CommittedPartitionState) and p.isr == [1, 2]
    p.maybe_shrink_isr()
    assert p.handle_alter_partition_response(p.sent[-1], ErrorCode.NOT_CONTROLLER) is True   # retried


def test_min_insync_replicas(make):
    p, clock = make(min_isr=2)
    p.make_leader(state(isr=(1,), replicas=(1, 2)))
    with pytest.raises(KafkaError) as exc:
        p.append_records_to_leader(batch(1), -1)
    assert exc.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert p.log.log_end_offset == 0                        # refused before appending
    p.append_records_to_leader(batch(2), 1)                 # acks=1 is written...
    assert p.log.high_watermark == 0                        # ...but under min ISR the HW stands still
    # min.insync.replicas larger than the replicas: the replication factor counts (effectiveMinIsr)
    q, _ = make(name="u", min_isr=3)
    q.make_leader(state(isr=(1, 2), replicas=(1, 2)))
    q.append_records_to_leader(batch(1), -1)


def test_acks_all_answer_after_append(make):
    p, clock = make(min_isr=2)
    p.make_leader(state(isr=(1, 2, 3)))
    p.append_records_to_leader(batch(5), -1)
    assert p.check_enough_replicas_reach_offset(5) == (False, 0)
    fetch(p, 2, 5, clock)
    fetch(p, 3, 5, clock)
    assert p.check_enough_replicas_reach_offset(5) == (True, 0)
    p.append_records_to_leader(batch(5), -1)
    fetch(p, 2, 10, clock)
    clock.ms += LAG_MS + 1
    fetch(p, 2, 10, clock)
    p.maybe_shrink_isr()
    answer(p, p.sent[-1])                                   # ISR (1, 2): still enough, HW 10
    assert p.check_enough_replicas_reach_offset(10) == (True, 0)
    p.append_records_to_leader(batch(1), -1)
    clock.ms += LAG_MS + 1
    p.maybe_shrink_isr()
    answer(p, p.sent[-1])                                   # ISR (1): below min.insync.replicas=2
    p.log.high_watermark = 11                               # as if it had got there
    assert p.check_enough_replicas_reach_offset(11) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    p.make_follower(state(leader=2, epoch=5, isr=(2,), partition_epoch=5))
    assert p.check_enough_replicas_reach_offset(11) == (True, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_follower_reads_diverging_epoch_and_unknown_replicas(make):
    p, clock = make()
    p.log.append_as_leader(batch(5), 0)
    p.make_leader(state(epoch=2))                           # epochs: 0 -> 0, 2 -> 5
    p.append_records_to_leader(batch(3), 1)                 # offsets 5..7 in epoch 2
    ok = p.read_for_follower(2, 5, 0, 2, 0, 2**20, True, True)
    assert ok.diverging_epoch is None and ok.records and p.remote_replicas[2].log_end_offset == 5
    # the follower has epoch 1 up to offset 7 (an old leader's writes): the leader's epoch 0 ends at 5
    div = p.read_for_follower(3, 7, 1, 2, 0, 2**20, True, True)
    assert div.diverging_epoch == (0, 5) and div.records == b""
    assert p.remote_replicas[3].log_end_offset == -1        # a diverging read records no position
    with pytest.raises(KafkaError) as exc:
        p.read_for_follower(9, 0, -1, 2, 0, 2**20, True, True)
    assert exc.value.code == ErrorCode.UNKNOWN_LEADER_EPOCH
    with pytest.raises(KafkaError) as exc:
        p.read_for_follower(2, 0, -1, 1, 0, 2**20, True, True)
    assert exc.value.code == ErrorCode.FENCED_LEADER_EPOCH


def test_follower_append_keeps_offsets_and_epochs_and_truncates(make):
    leader, _ = make(name="leader")
    leader.make_leader(state(epoch=0))
    leader.append_records_to_leader(batch(3), 1)
    leader.make_leader(state(epoch=4))
    leader.append_records_to_leader(batch(2), 1)
    data = leader.log.read(0, 2**20)
    f, _ = make(name="follower", broker_id=2)
    f.make_follower(state(leader=1, epoch=4))
    f.append_records_to_follower(data)
    assert f.log.read(0, 2**20) == data                     # byte for byte
    assert [(e.epoch, e.start_offset) for e in f.log.leader_epoch_cache.entries] == [(0, 0), (4, 3)]
    assert f.update_follower_high_watermark(99) and f.log.high_watermark == 5   # capped at its LEO
    with pytest.raises(KafkaError):
        f.append_records_to_follower(data)                  # offsets below the LEO
    f.truncate_to(3)
    assert f.log.log_end_offset == 3 and f.log.leader_epoch_cache.latest_epoch == 0
    assert [h.base_offset for _, h in iter_batches(f.log.read(0, 2**20))] == [0]


def test_delayed_produce_completes_when_the_hw_passes_or_times_out(make):
    p, clock = make()
    p.make_leader(state(isr=(1, 2)))
    partitions = {("t", 0): p}
    purgatory = ProducePurgatory(partitions)
    p.on_delayed_requests = lambda part: purgatory.check_and_complete(("t", 0))

    async def scenario():
        p.append_records_to_leader(batch(4), -1)
        waiting = asyncio.ensure_future(DelayedProduce(purgatory, {("t", 0): 4}).wait(5000))
        await asyncio.sleep(0.01)
        assert not waiting.done() and len(purgatory) == 1
        fetch(p, 2, 4, clock)                               # the follower has it: HW 4
        assert await asyncio.wait_for(waiting, 1) == {("t", 0): 0}
        assert len(purgatory) == 0
        p.append_records_to_leader(batch(1), -1)
        return await DelayedProduce(purgatory, {("t", 0): 5}).wait(50)

    assert asyncio.run(scenario()) == {("t", 0): ErrorCode.REQUEST_TIMED_OUT}


def test_alter_partition_manager_batches_and_retries(make):
    a, clock_a = make(name="a")
    b, clock_b = make(name="b")
    for p, clock in ((a, clock_a), (b, clock_b)):
        p.make_leader(state(isr=(1, 2)))
        clock.ms += LAG_MS + 1
    requests = []

    async def controller(request):
        requests.append(request)
        if len(requests) == 1:
            raise ConnectionError("controller moved")          # retried after a back-off
        return {"error_code": 0, "topics": [
            {"topic_name": t["topic_name"], "partitions": [
                {"partition_index": q["partition_index"], "error_code": 0, "leader_id": 1,
                 "leader_epoch": q["leader_epoch"], "isr": q["new_isr"], "leader_recovery_state": 0,
                 "partition_epoch": q["partition_epoch"] + 1} for q in t["partitions"]]}
            for t in request["topics"]]}

    async def scenario():
        manager = AlterPartitionManager(1, send=controller, broker_epoch=lambda: 77)
        a.alter_partition = b.alter_partition = manager
        a.maybe_shrink_isr()
        b.maybe_shrink_isr()
        for _ in range(100):
            if a.isr == [1] and b.isr == [1]:
                break
            await asyncio.sleep(0.01)
        await manager.shutdown()

    asyncio.run(scenario())
    assert a.isr == b.isr == [1] and a.partition_epoch == b.partition_epoch == 1
    assert requests[0]["broker_id"] == 1 and requests[0]["broker_epoch"] == 77
    assert requests[0]["topics"] == [{"topic_name": "a", "partitions": [
        {"partition_index": 0, "leader_epoch": 1, "new_isr": [1], "leader_recovery_state": 0, "partition_epoch": 0}]}]
    # the retry carries both changes in one request
    assert sorted(t["topic_name"] for t in requests[1]["topics"]) == ["a", "b"]


def test_standalone_partition_is_its_own_isr(tmp_path):
    log = UnifiedLog(str(tmp_path / "s-0"), "s", 0, LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), {}))
    try:
        p = Partition("s", 0, log, 0)
        assert p.standalone and p.is_leader and p.isr == [0] and p.leader_epoch == 0
        p.append_records_to_leader(batch(3), -1)
        assert log.high_watermark == 3 and p.check_enough_replicas_reach_offset(3) == (True, 0)
    finally:
        log.close()


def test_a_partition_made_standalone_takes_the_controllers_first_epoch_zero(tmp_path):
    """KafkaServer.make_partition builds a standalone-style Partition (its own leader at epoch 0); the
    controller's first LeaderAndIsr (leader epoch 0 for a new topic) must still be applied in full."""
    cfg = LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), {})
    logs = [UnifiedLog(str(tmp_path / f"z{i}-0"), f"z{i}", 0, cfg) for i in range(2)]
    try:
        clock = Clock()
        leader, follower = Partition("z0", 0, logs[0], 1, clock=clock), Partition("z1", 0, logs[1], 2)
        assert leader.make_leader(state(epoch=0, isr=(1, 2))) is True    # its standalone self-leadership is forgotten
        assert not leader.standalone and leader.leader_epoch_start_offset == 0
        assert leader.remote_replicas[2].last_caught_up_time_ms == clock.ms   # reset: in sync from now
        assert follower.make_follower(state(leader=1, epoch=0, isr=(1, 2))) is True   # the fetcher starts
        assert follower.leader_id == 1 and not follower.is_leader
    finally:
        for log in logs:
            log.close()


def test_a_caught_up_follower_out_of_the_isr_holds_the_hw_back_only_while_its_broker_is_alive(make):
    """Kafka's isReplicaIsrEligible in maybeIncrementLeaderHW: a follower that left the ISR but fetched recently
    would join again, so the HW waits for it; not if its broker is dead (ZooKeeper) or fenced (KRaft)."""
    p, clock = make()
    alive = {1, 2, 3}
    p.is_broker_alive = lambda b: b in alive
    p.make_leader(state(epoch=1))
    p.log.append_as_leader(batch(3), 1)
    for r in (2, 3):
        fetch(p, r, 3, clock)                       # all caught up: HW 3
    assert p.log.high_watermark == 3
    alive.discard(3)                                # broker 3 is fenced; the controller takes it out of the ISR
    p.make_leader(state(epoch=1, isr=(1, 2), partition_epoch=1))
    p.log.append_as_leader(batch(2, epoch=1, base=3), 1)
    clock.ms += 100                                 # well inside replica.lag.time.max.ms of 3's last catch-up
    fetch(p, 2, 5, clock)
    assert p.log.high_watermark == 5                # not held back by the fenced broker 3
    alive.add(3)                                    # (were it alive, it would be waited for, as it may rejoin)
    p.log.append_as_leader(batch(1, epoch=1, base=5), 1)
    fetch(p, 2, 6, clock)
    assert p.log.high_watermark == 5
