"""The SharePartition state machine (KIP-932) with a fake clock: acquire, ACCEPT / RELEASE / REJECT, acquisition
locks, the delivery count limit, the share-partition start offset, and the state the share coordinator keeps."""
import pytest

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.server.share.share_partition import RecordState, SharePartition

ACCEPT, RELEASE, REJECT, GAP = 1, 2, 3, 0


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def make(clock=None, limit=3, max_in_flight=100, start=0):
    return SharePartition("g", "t", "tid", 0, start_offset=start, lock_duration_ms=1000, delivery_count_limit=limit,
                          max_in_flight=max_in_flight, clock=clock or Clock())


def states(sp):
    return {o: (r.state, r.delivery_count, r.member_id) for o, r in sp.records.items()}


def test_acquire_gives_each_record_to_one_member():
    sp = make()
    assert sp.acquire("a", [0, 1, 2, 3], 4, max_records=2) == [
        {"first_offset": 0, "last_offset": 1, "delivery_count": 1}]
    assert sp.next_fetch_offset() == 2
    assert sp.acquire("b", [0, 1, 2, 3], 4, max_records=10) == [
        {"first_offset": 2, "last_offset": 3, "delivery_count": 1}]
    assert sp.acquire("c", [0, 1, 2, 3], 4, max_records=10) == []
    assert {o: m for o, (_, _, m) in states(sp).items()} == {0: "a", 1: "a", 2: "b", 3: "b"}


def test_accept_release_reject_and_the_start_offset():
    sp = make()
    sp.acquire("a", [0, 1, 2, 3], 4, 10)
    sp.acknowledge("a", [(0, 0, [ACCEPT]), (1, 1, [RELEASE]), (2, 3, [REJECT])])
    assert sp.start_offset == 1                       # 0 is done; 1 is available again
    assert states(sp) == {1: (RecordState.AVAILABLE, 1, None), 2: (RecordState.ARCHIVED, 1, None),
                          3: (RecordState.ARCHIVED, 1, None)}
    assert sp.acquire("b", [1, 2, 3], 4, 10) == [{"first_offset": 1, "last_offset": 1, "delivery_count": 2}]
    sp.acknowledge("b", [(1, 1, [ACCEPT])])
    assert sp.start_offset == 4 and sp.records == {}  # the SPSO moves past acknowledged and archived records


def test_acknowledging_what_another_member_holds_is_invalid_record_state_and_changes_nothing():
    sp = make()
    sp.acquire("a", [0, 1], 2, 10)
    with pytest.raises(KafkaError) as e:
        sp.acknowledge("b", [(0, 1, [ACCEPT])])
    assert e.value.code == ErrorCode.INVALID_RECORD_STATE
    with pytest.raises(KafkaError) as e:    # all or nothing: 0 is not accepted either
        sp.acknowledge("a", [(0, 0, [ACCEPT]), (5, 5, [ACCEPT])])
    assert e.value.code == ErrorCode.INVALID_REQUEST       # past the records in flight (as Kafka)
    assert all(s == RecordState.ACQUIRED for s, _, _ in states(sp).values())
    with pytest.raises(KafkaError) as e:
        sp.acknowledge("a", [(0, 1, [ACCEPT, ACCEPT, ACCEPT])])   # one type per offset, or one for all
    assert e.value.code == ErrorCode.INVALID_REQUEST


def test_an_expired_lock_makes_the_record_available_again():
    clock = Clock()
    sp = make(clock)
    sp.acquire("a", [0], 1, 10)
    clock.now += 0.999
    assert not sp.expire_locks()
    clock.now += 0.002
    assert sp.acquire("b", [0], 1, 10) == [{"first_offset": 0, "last_offset": 0, "delivery_count": 2}]
    with pytest.raises(KafkaError):          # a's lock is gone: its acknowledgement is refused
        sp.acknowledge("a", [(0, 0, [ACCEPT])])


def test_the_delivery_count_limit_archives_a_poison_record():
    clock = Clock()
    sp = make(clock, limit=3)
    for count in (1, 2, 3):
        assert sp.acquire("a", [0, 1], 2, 1) == [{"first_offset": 0, "last_offset": 0, "delivery_count": count}]
        if count < 3:
            sp.acknowledge("a", [(0, 0, [RELEASE])])
        else:
            clock.now += 5               # the third lock expires: archived, not available
    assert sp.acquire("a", [0, 1], 2, 10) == [{"first_offset": 1, "last_offset": 1, "delivery_count": 1}]
    assert sp.start_offset == 1


def test_gaps_and_the_in_flight_limit():
    sp = make(max_in_flight=3)
    # offsets 1 and 2 hold no record (a transaction marker, compaction): archived as gaps
    assert sp.acquire("a", [0, 3, 4, 5], 6, 10) == [{"first_offset": 0, "last_offset": 0, "delivery_count": 1}]
    assert states(sp)[1][0] == RecordState.ARCHIVED
    sp.acknowledge("a", [(0, 0, [ACCEPT])])
    assert sp.start_offset == 3
    assert sp.acquire("a", [3, 4, 5, 6, 7], 8, 10)[0] == {"first_offset": 3, "last_offset": 5, "delivery_count": 1}


def test_member_release_and_the_persisted_state_round_trip():
    sp = make()
    sp.acquire("a", [0, 1, 2, 3], 4, 10)
    sp.acknowledge("a", [(1, 1, [ACCEPT]), (2, 2, [REJECT])])
    assert sp.release_member("a")
    batches = sp.state_batches()
    assert batches == [{"first_offset": 0, "last_offset": 0, "delivery_state": 0, "delivery_count": 1},
                       {"first_offset": 1, "last_offset": 1, "delivery_state": 2, "delivery_count": 1},
                       {"first_offset": 2, "last_offset": 2, "delivery_state": 4, "delivery_count": 1},
                       {"first_offset": 3, "last_offset": 3, "delivery_state": 0, "delivery_count": 1}]
    restored = make()
    restored.load_state(sp.start_offset, sp.state_epoch, batches)
    assert states(restored) == states(sp) and restored.end_offset == 4
    assert restored.acquire("b", [0, 1, 2, 3], 4, 10) == [
        {"first_offset": 0, "last_offset": 0, "delivery_count": 2},
        {"first_offset": 3, "last_offset": 3, "delivery_count": 2}]


def test_a_gap_before_the_first_record_moves_the_start_offset_without_state():
    sp = make()
    # a compacted topic: the first record read is at offset 1_000_000
    assert sp.acquire("a", [1_000_000], 1_000_001, 10) == [
        {"first_offset": 1_000_000, "last_offset": 1_000_000, "delivery_count": 1}]
    assert sp.start_offset == 1_000_000 and len(sp.records) == 1


def test_renew_gives_a_fresh_lock_only_when_allowed():
    clock = Clock()
    sp = make(clock)
    sp.acquire("a", [0], 1, 10)
    with pytest.raises(KafkaError) as e:
        sp.acknowledge("a", [(0, 0, [4])])                 # RENEW needs IsRenewAck (v2)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    clock.now += 0.9
    sp.acknowledge("a", [(0, 0, [4])], allow_renew=True)   # the lock runs 1 s from now again
    clock.now += 0.9
    assert not sp.expire_locks()                           # 1.8 s after acquiring: still held
    sp.acknowledge("a", [(0, 0, [ACCEPT])])
    assert sp.start_offset == 1
