"""LeaderEpochFileCache: Kafka's endOffsetFor answers and the leader-epoch-checkpoint file."""
from __future__ import annotations

import os

from kafkalab.broker.server.config import BrokerConfig, LogConfig
from kafkalab.broker.log.leader_epoch_cache import (LEADER_EPOCH_CHECKPOINT, EpochEntry, LeaderEpochFileCache,
                                                    read_leader_epoch_checkpoint)
from kafkalab.broker.log.log import UnifiedLog
from kafkalab.broker.common.records import Record, build_batch


def cache_with(tmp_path, *entries) -> LeaderEpochFileCache:
    os.makedirs(tmp_path, exist_ok=True)
    cache = LeaderEpochFileCache(str(tmp_path))
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_end_offset_for_follows_kafka(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 100), (5, 250))
    leo = 300
    assert cache.end_offset_for(5, leo) == (5, 300)     # latest epoch: the log end offset
    assert cache.end_offset_for(2, leo) == (2, 250)     # ends where the next epoch starts
    assert cache.end_offset_for(3, leo) == (2, 250)     # unknown in-between epoch: the one before it
    assert cache.end_offset_for(0, leo) == (0, 100)
    assert cache.end_offset_for(6, leo) == (-1, -1)     # newer than any known
    assert cache.end_offset_for(-1, leo) == (-1, -1)    # UNDEFINED_EPOCH
    older = cache_with(tmp_path / "b", (3, 40), (4, 90))
    assert older.end_offset_for(1, 100) == (1, 40)      # older than all known: the first start offset
    assert LeaderEpochFileCache(str(tmp_path / "c")).end_offset_for(0, 10) == (-1, -1)


def test_assign_ignores_known_and_drops_contradicting_entries(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (1, 10))
    cache.assign(1, 15)                                  # epoch 1 already starts earlier
    cache.assign(0, 20)                                  # an older epoch never comes back
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 10)]
    cache.assign(3, 8)                                   # a new leader whose log diverged at 8
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(3, 8)]


def test_truncation_from_both_ends(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (1, 10), (2, 20))
    cache.truncate_from_end(15)
    assert cache.entries == [EpochEntry(0, 0), EpochEntry(1, 10)]
    cache.truncate_from_start(12)
    assert cache.entries == [EpochEntry(1, 12)]
    cache.truncate_from_start(5)                          # never backwards
    assert cache.entries == [EpochEntry(1, 12)]


def test_checkpoint_file_format_and_reload(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (4, 1234))
    with open(tmp_path / LEADER_EPOCH_CHECKPOINT) as f:
        assert f.read() == "0\n2\n0 0\n4 1234\n"
    assert LeaderEpochFileCache.load(str(tmp_path)).entries == cache.entries
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("garbage\n")
    assert read_leader_epoch_checkpoint(str(tmp_path / LEADER_EPOCH_CHECKPOINT)) is None


def batch(n: int) -> bytes:
    return build_batch([Record(i, 1_700_000_000_000, None, b"v", []) for i in range(n)])


def test_log_keeps_the_cache_and_rebuilds_it_from_batches(tmp_path):
    directory = str(tmp_path / "t-0")
    log = UnifiedLog(directory, "t", 0, LogConfig(BrokerConfig()))
    log.append_as_leader(batch(3), leader_epoch=0)
    log.append_as_leader(batch(2), leader_epoch=3)
    assert log.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(3, 3)]
    assert log.leader_epoch_cache.end_offset_for(0, log.log_end_offset) == (0, 3)
    log.close()
    os.remove(os.path.join(directory, LEADER_EPOCH_CHECKPOINT))
    reopened = UnifiedLog(directory, "t", 0, LogConfig(BrokerConfig()))  # from the batches' partitionLeaderEpoch
    assert reopened.leader_epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(3, 3)]
    reopened.truncate_to(4)   # inside the epoch-3 batch (3..4): the whole batch goes, and epoch 3 with it
    assert reopened.log_end_offset == 3
    reopened.maybe_increment_log_start_offset(2)
    assert read_leader_epoch_checkpoint(os.path.join(directory, LEADER_EPOCH_CHECKPOINT)) == [EpochEntry(0, 2)]
    reopened.close()
