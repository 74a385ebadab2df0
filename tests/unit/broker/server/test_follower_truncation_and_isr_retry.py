"""Follower truncation (Kafka's ``UnifiedLog.truncateTo``) and a leader's retries of a refused ISR expansion.

* The log end offset always equals the end of what is left on disk, also when the truncation offset
  falls inside a batch (the whole batch goes).
* Truncating at the log end still drops a leader epoch that starts there: a broker that was leader
  for an epoch and wrote nothing in it must not send that epoch as its last fetched one forever.
* A follower the controller refuses to add to the ISR (it is shutting down) is proposed again at
  most every ``ISR_EXPANSION_RETRY_BACKOFF_MS``, and the refusal is logged at INFO once.

Real logs in a temp dir; the leader and follower are two ``Partition`` objects; the clock is a number.
"""
from __future__ import annotations

import logging

import pytest

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.cluster.partition import ISR_EXPANSION_RETRY_BACKOFF_MS, Partition, PendingExpandIsr
from kafkalab.broker.cluster.partition_state import LeaderAndIsrPartitionState
from kafkalab.broker.common.records import Record, build_batch
from kafkalab.broker.server.replica_fetcher_thread import PartitionFetchState, ReplicaFetcherManager, ReplicaFetcherThread
from kafkalab.broker.server.replica_manager import ReplicaManager


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def batch(n: int, epoch: int = 0) -> bytes:
    return build_batch([Record(i, 1000 + i, b"k", b"v%d" % i, []) for i in range(n)], partition_leader_epoch=epoch)


def epochs(log):
    return [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries]


def batch_ranges(log):
    return [(h.base_offset, h.last_offset) for seg in log.segments for _, h in seg.batches_from(0)]


@pytest.fixture
def new_log(tmp_path):
    logs = []

    def new_log(name="t", **configs):
        log = UnifiedLog(str(tmp_path / f"{name}-0"), name, 0,
                         LogConfig(BrokerConfig({"log.dirs": str(tmp_path)}), configs))
        logs.append(log)
        return log
    yield new_log
    for log in logs:
        log.close()


def state(leader, epoch, isr=(1, 2, 3), replicas=(1, 2, 3), partition_epoch=0):
    return LeaderAndIsrPartitionState("t", 0, controller_epoch=1, leader=leader, leader_epoch=epoch, isr=list(isr),
                                      partition_epoch=partition_epoch, replicas=list(replicas))


# -- the log end offset matches the disk --------------------------------------------------------------

def test_truncating_inside_a_batch_cuts_the_whole_batch_and_the_log_ends_where_the_data_ends(new_log):
    log = new_log()
    log.append_as_leader(batch(3), leader_epoch=0)     # 0..2
    log.append_as_leader(batch(5), leader_epoch=1)     # 3..7
    log.high_watermark = 8
    assert log.truncate_to(5) is True
    assert log.log_end_offset == 3 == log.high_watermark
    assert batch_ranges(log) == [(0, 2)]
    assert epochs(log) == [(0, 0)]                    # no record of epoch 1 is left
    log.append_as_leader(batch(2), leader_epoch=2)    # appends go on at the real end
    assert batch_ranges(log) == [(0, 2), (3, 4)]
    # and after a restart (recovery from the files) the log is the same
    directory = log.dir
    log.close()
    reopened = new_log()
    assert reopened.dir == directory and reopened.log_end_offset == 5 and batch_ranges(reopened) == [(0, 2), (3, 4)]


def test_truncating_across_segments_and_below_the_first_one(new_log):
    log = new_log(**{"segment.bytes": 1024})
    for _ in range(40):
        log.append_as_leader(batch(2), leader_epoch=0)
    assert len(log.segments) > 2
    log.truncate_to(51)                                   # inside batch 50..51
    assert log.log_end_offset == 50 and batch_ranges(log)[-1] == (48, 49)
    assert all(seg.base_offset <= 50 for seg in log.segments)
    assert [r for r in batch_ranges(log)] == [(i, i + 1) for i in range(0, 50, 2)]
    log.truncate_fully_and_start_at(100)
    log.append_as_follower(_batch_at(100, 3))
    assert log.log_end_offset == 103
    assert log.truncate_to(40) is True                    # below the first segment: start over there
    assert log.log_start_offset == log.log_end_offset == 40 and batch_ranges(log) == []


def _batch_at(base: int, n: int) -> bytes:
    """A batch whose offsets start at ``base`` (as a leader's Fetch response carries them)."""
    from kafkalab.broker.common.records import assign_offsets
    buf = bytearray(batch(n))
    assign_offsets(memoryview(buf), base, None, 0)
    return bytes(buf)


def test_truncating_at_the_log_end_drops_an_epoch_that_starts_there(new_log):
    log = new_log()
    log.append_as_leader(batch(3), leader_epoch=0)
    log.leader_epoch_cache.assign(1, 3)                   # made leader at epoch 1, wrote nothing
    assert log.truncate_to(3) is False and log.log_end_offset == 3
    assert epochs(log) == [(0, 0)]
    assert log.truncate_to(10) is False and epochs(log) == [(0, 0)]


# -- the fetcher: a diverging epoch at our log end is resolved in one round -----------------------------

def test_a_former_leader_that_wrote_nothing_in_its_epoch_stops_diverging_after_one_truncation(tmp_path, new_log):
    leader = Partition("t", 0, new_log("leader"), 2, standalone=False)
    former = Partition("t", 0, new_log("former"), 1, standalone=False)
    # broker 1 led epoch 0 and wrote 0..2; broker 2 copied them
    former.make_leader(state(1, 0))
    former.append_records_to_leader(batch(3), 1)
    leader.make_follower(state(1, 0))
    leader.append_records_to_follower(former.log.read(0, 1 << 20))
    # broker 1 is made leader again at epoch 1 but loses it before writing anything (controlled shutdown)
    former.make_leader(state(1, 1))
    assert epochs(former.log) == [(0, 0), (1, 3)]
    leader.make_leader(state(2, 2, isr=(2, 3)))
    leader.append_records_to_leader(batch(2), 1)          # 3..4 at epoch 2
    former.make_follower(state(2, 2, isr=(2, 3)))

    rm = ReplicaManager(1)
    rm.add_partition(former)
    manager = ReplicaFetcherManager(rm, BrokerConfig({"log.dirs": str(tmp_path)}))
    fetcher = ReplicaFetcherThread(manager, 2, "127.0.0.1", 1)
    fetch_state = PartitionFetchState(former.log.log_end_offset, 2, former.log.leader_epoch_cache.latest_epoch)
    rounds = 0
    while True:
        rounds += 1
        assert rounds <= 3, "the follower keeps diverging at the same offset"
        answer = leader.read_for_follower(1, fetch_state.fetch_offset, fetch_state.last_fetched_epoch, 2, 0,
                                          1 << 20, True, True)
        if answer.diverging_epoch is None:
            break
        epoch, end = answer.diverging_epoch
        fetcher._truncate_on_diverging_epoch(former, fetch_state, epoch, end)
    assert rounds == 2
    assert fetch_state.fetch_offset == 3 and fetch_state.last_fetched_epoch == 0
    former.append_records_to_follower(answer.records)
    assert former.log.log_end_offset == 5 and epochs(former.log) == [(0, 0), (2, 3)]


# -- a refused ISR expansion -----------------------------------------------------------------------------

def test_a_refused_follower_is_proposed_again_only_after_the_back_off_and_logged_once(tmp_path, new_log, caplog):
    clock = Clock()
    p = Partition("t", 0, new_log(), 1, standalone=False, clock=clock)
    sent = []
    p.alter_partition = lambda part, pending: sent.append(pending)
    p.make_leader(state(1, 1, isr=(1, 2)))
    p.append_records_to_leader(batch(4), 1)

    def fetch(replica, offset):
        p.update_follower_fetch_state(replica, offset, 0, clock(), p.log.log_end_offset)

    fetch(2, 4)
    caplog.set_level(logging.INFO, logger="kafkalab.broker.cluster.partition")
    for _ in range(50):                                   # broker 3 shuts down but still fetches, every 2 ms
        fetch(3, 4)
        if sent and p.partition_state is sent[-1]:
            p.handle_alter_partition_response(sent[-1], ErrorCode.OPERATION_NOT_ATTEMPTED)
        clock.ms += 2
    assert ISR_EXPANSION_RETRY_BACKOFF_MS > 100
    assert len(sent) == 1                                 # not 50
    assert all(isinstance(s, PendingExpandIsr) and s.sent_isr == (1, 2, 3) for s in sent)
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert sum("expanding ISR" in m for m in info) == 1
    assert sum("not applied" in m for m in info) == 1
    assert p.isr == [1, 2]
    # broker 3 restarted: after the back-off its next fetch proposes it again, and it joins
    clock.ms += ISR_EXPANSION_RETRY_BACKOFF_MS
    fetch(3, 4)
    pending = sent[-1]
    p.handle_alter_partition_response(pending, ErrorCode.NONE, leader_epoch=1, isr=[1, 2, 3], partition_epoch=1)
    assert p.isr == [1, 2, 3] and p.isr_expansion_refused == {}
