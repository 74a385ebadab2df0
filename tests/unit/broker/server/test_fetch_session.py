"""Incremental fetch sessions (KIP-227), both sides, without sockets: the broker's FetchManager / FetchSessionCache
(Kafka 3.9's ``FetchSession.scala``) and the fetcher's FetchSessionHandler (Kafka's client class).

What must hold, as in Kafka: a full fetch (epoch 0) makes a session whose next epoch is 1, epoch -1 makes none and
closes a named one; an incremental fetch adds, updates and forgets partitions and is answered only the partitions
that changed; a wrong epoch, an unknown id and a topic-id mismatch are the three session errors; the cache evicts
as Kafka's ``tryEvict`` does and counts it; a throttled answer leaves the session as it was; the fetcher's handler
sends full, then incremental requests, and starts over after each kind of error.
"""
from __future__ import annotations

from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.metrics import MetricsRegistry
from kafkalab.broker.common.metrics.kafka_metrics_group import Meter
from kafkalab.broker.server.delayed_fetch import FetchPartitionData
from kafkalab.broker.server.fetch_session import (FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, MAX_INT,
                                                  FetchManager, FetchSessionCache, FullFetchContext,
                                                  IncrementalFetchContext, SessionErrorContext,
                                                  SessionlessFetchContext, next_epoch)
from kafkalab.broker.server.fetch_session_handler import INITIAL, FetchMetadata, FetchSessionHandler


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def part(index: int, offset: int = 0, topic: str = "t") -> FetchPartitionData:
    return FetchPartitionData(topic, index, offset)


def answer(index: int, hw: int = 0, records: bytes = b"", error: int = 0, start: int = 0) -> dict:
    return {"partition_index": index, "error_code": error, "high_watermark": hw, "last_stable_offset": hw,
            "log_start_offset": start, "aborted_transactions": None, "preferred_read_replica": -1,
            "records": records}


def names(_topic_id):
    return None


def new_session(manager: FetchManager, parts: list[FetchPartitionData], replica_id: int = -1,
                answers: list[dict] | None = None) -> int:
    context = manager.new_context(12, 0, INITIAL_EPOCH, replica_id, parts, [], names)
    assert isinstance(context, FullFetchContext)
    error, session_id, sent = context.response(
        list(zip(parts, answers or [answer(p.partition) for p in parts])), update=True)
    assert error == ErrorCode.NONE and len(sent) == len(parts)
    return session_id


def incremental(manager, session_id, epoch, parts=(), forget=(), version=12):
    return manager.new_context(version, session_id, epoch, -1, list(parts), list(forget), names)


def test_next_epoch_wraps_to_one_and_final_stays_final():
    assert next_epoch(INITIAL_EPOCH) == 1 and next_epoch(41) == 42
    assert next_epoch(MAX_INT) == 1 and next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_a_full_fetch_makes_a_session_whose_next_epoch_is_one():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0), part(1)])
    assert session_id != INVALID_SESSION_ID
    session = manager.cache.get(session_id)
    assert session.epoch == 1 and list(session.partitions) == [("t", 0), ("t", 1)] and not session.privileged
    assert isinstance(incremental(manager, session_id, 1), IncrementalFetchContext)
    assert session.epoch == 2


def test_epoch_minus_one_makes_no_session_and_closes_the_one_it_names():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0)])
    context = manager.new_context(12, session_id, FINAL_EPOCH, -1, [part(0)], [], names)
    assert isinstance(context, SessionlessFetchContext) and not isinstance(context, FullFetchContext)
    assert context.response([(part(0), answer(0))], update=True)[1] == INVALID_SESSION_ID
    assert manager.cache.get(session_id) is None
    # a full fetch naming a session closes it too, and makes a new one
    first = new_session(manager, [part(0)])
    context = manager.new_context(12, first, INITIAL_EPOCH, -1, [part(0)], [], names)
    _, second, _ = context.response([(part(0), answer(0))], update=True)
    assert manager.cache.get(first) is None and manager.cache.get(second) is not None


def test_an_incremental_fetch_answers_only_what_changed():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0), part(1), part(2)], answers=[answer(0, 5), answer(1, 5), answer(2, 5)])
    context = incremental(manager, session_id, 1)
    assert [p.partition for p in context.partitions()] == [0, 1, 2]   # every partition is fetched
    results = [(part(0, 5), answer(0, 5)), (part(1, 5), answer(1, 6)), (part(2, 5), answer(2, 5, start=1)),
               ]
    error, sid, sent = context.response(results, update=True)
    assert error == ErrorCode.NONE and sid == session_id
    assert [a["partition_index"] for _, a in sent] == [1, 2]   # a new high watermark, a new log start offset
    context = incremental(manager, session_id, 2)
    error, _, sent = context.response([(part(0, 5), answer(0, 5)), (part(1, 5), answer(1, 6)),
                                       (part(2, 5), answer(2, 5, start=1))], update=True)
    assert sent == []   # told already: nothing to say
    context = incremental(manager, session_id, 3)
    _, _, sent = context.response([(part(0, 5), answer(0, 5, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)),
                                   (part(1, 5), answer(1, 7, records=b"batch")), (part(2, 5), answer(2, 5, start=1))],
                                  update=True)
    assert [a["partition_index"] for _, a in sent] == [0, 1]   # an error, records
    # the partition that returned records goes to the end of the session: the next fetch serves the others first
    assert list(manager.cache.get(session_id).partitions) == [("t", 0), ("t", 2), ("t", 1)]
    # once its error is gone, the partition is answered again (its high watermark was forgotten)
    context = incremental(manager, session_id, 4)
    _, _, sent = context.response([(part(0, 5), answer(0, 5))], update=True)
    assert [a["partition_index"] for _, a in sent] == [0]


def test_an_incremental_fetch_adds_updates_and_forgets_partitions():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0), part(1)])
    incremental(manager, session_id, 1, parts=[part(2), part(0, offset=7)], forget=[("t", 1)])
    session = manager.cache.get(session_id)
    assert list(session.partitions) == [("t", 0), ("t", 2)]
    assert session.partitions[("t", 0)].request.fetch_offset == 7
    assert manager.cache.num_partitions == 2
    # forgetting the last partitions closes the session: the fetch is answered without one
    context = incremental(manager, session_id, 2, forget=[("t", 0), ("t", 2)])
    assert isinstance(context, SessionlessFetchContext) and manager.cache.get(session_id) is None


def test_the_three_session_errors():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0)])
    for context, code in ((incremental(manager, session_id, 5), ErrorCode.INVALID_FETCH_SESSION_EPOCH),
                          (incremental(manager, 12345, 1), ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
                          (incremental(manager, session_id, 1, version=13), ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)):
        assert isinstance(context, SessionErrorContext) and context.error == code
        assert context.response([], update=True) == (code, INVALID_SESSION_ID, [])
    assert manager.cache.get(session_id).epoch == 1   # none of them used the session


def test_a_duplicate_request_is_refused_when_its_response_is_made():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0)])
    first = incremental(manager, session_id, 1)
    manager.cache.get(session_id).epoch = 3   # another request of the session came meanwhile (it waited)
    error, sid, sent = first.response([(part(0), answer(0, 9))], update=True)
    assert (error, sid, sent) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id, [])


def test_a_throttled_answer_leaves_the_session_as_it_was():
    manager = FetchManager(FetchSessionCache(10))
    session_id = new_session(manager, [part(0)], answers=[answer(0, 5)])
    context = incremental(manager, session_id, 1)
    _, _, sent = context.response([(part(0), answer(0, 8))], update=False)   # what would be sent
    assert len(sent) == 1
    assert context.throttled() == (ErrorCode.NONE, session_id)
    assert manager.cache.get(session_id).partitions[("t", 0)].high_watermark == 5   # not told: told again later
    context = incremental(manager, session_id, 2)
    assert len(context.response([(part(0), answer(0, 8))], update=True)[2]) == 1
    # a full fetch's session is made only when its answer is sent
    full = manager.new_context(12, 0, INITIAL_EPOCH, -1, [part(3)], [], names)
    assert full.response([(part(3), answer(3))], update=False)[1] == INVALID_SESSION_ID
    assert len(manager.cache.sessions) == 1


def test_eviction_as_kafkas_try_evict():
    registry = MetricsRegistry()
    clock = Clock()
    cache = FetchSessionCache(2, eviction_ms=120_000, clock=clock, metrics=registry)
    manager = FetchManager(cache)
    consumer = new_session(manager, [part(0)])
    small_follower = new_session(manager, [part(0)], replica_id=2)
    # full: a consumer's new session may not evict sessions newer than the eviction time
    assert new_session_or_none(manager, [part(0), part(1)]) is None
    # a follower's (privileged) session evicts a consumer's at once
    follower = new_session(manager, [part(0), part(1), part(2)], replica_id=3)
    assert cache.get(consumer) is None and cache.get(follower) is not None and cache.get(small_follower) is not None
    # a session unused for longer than the eviction time is stale: anything may take its slot
    clock.ms += 60_000
    incremental(manager, follower, 1)        # used: not stale
    clock.ms += 61_000                       # small_follower unused for 121 s
    late = new_session(manager, [part(5)])
    assert cache.get(small_follower) is None and cache.get(late) is not None
    assert value(registry, "NumIncrementalFetchSessions") == 2
    assert value(registry, "NumIncrementalFetchPartitionsCached") == 4
    assert value(registry, "IncrementalFetchSessionEvictionsPerSec") == 2


def new_session_or_none(manager, parts):
    context = manager.new_context(12, 0, INITIAL_EPOCH, -1, parts, [], names)
    session_id = context.response([(p, answer(p.partition)) for p in parts], update=True)[1]
    return None if session_id == INVALID_SESSION_ID else session_id


def value(registry: MetricsRegistry, name: str) -> float:
    for metric_name, metric in registry.items():
        if metric_name.type == "FetchSessionCache" and metric_name.name == name:
            return metric.count if isinstance(metric, Meter) else metric.value
    raise AssertionError(f"{name} not registered")


# -- the fetcher's side -------------------------------------------------------------------------------------------

def data(offset: int) -> tuple:
    return (offset, 0, 1, 0, 1_048_576)


def test_the_handler_sends_full_then_incremental_requests():
    handler = FetchSessionHandler("test", 1)
    first = handler.build({("t", 0): data(0), ("t", 1): data(0)})
    assert first.metadata == INITIAL and list(first.to_send) == [("t", 0), ("t", 1)] and first.to_forget == []
    assert handler.handle_response(ErrorCode.NONE, 77, [("t", 0), ("t", 1)])
    assert handler.next_metadata == FetchMetadata(77, 1)
    # unchanged partitions are not named; a new one and a changed one are (added first), a missing one forgotten
    second = handler.build({("t", 1): data(5), ("t", 2): data(0)})
    assert second.metadata == FetchMetadata(77, 1)
    assert list(second.to_send) == [("t", 2), ("t", 1)] and second.to_forget == [("t", 0)]
    assert handler.handle_response(ErrorCode.NONE, 77, [("t", 1)])
    third = handler.build({("t", 1): data(5), ("t", 2): data(0)})
    assert third.metadata == FetchMetadata(77, 2) and third.to_send == {} and third.to_forget == []


def test_the_handler_starts_over_after_errors():
    handler = FetchSessionHandler("test", 1)
    handler.build({("t", 0): data(0)})
    handler.handle_response(ErrorCode.NONE, 77, [("t", 0)])
    handler.build({("t", 0): data(0)})
    assert not handler.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    assert handler.next_metadata == FetchMetadata(77, INITIAL_EPOCH)   # close it, make a new one
    assert list(handler.build({("t", 0): data(0)}).to_send) == [("t", 0)]   # full again
    assert handler.handle_response(ErrorCode.NONE, 78, [("t", 0)])
    handler.build({("t", 0): data(0)})
    assert not handler.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert handler.next_metadata == INITIAL
    handler.build({("t", 0): data(0)})
    assert handler.handle_response(ErrorCode.NONE, 79, [("t", 0)])
    handler.build({("t", 0): data(0)})
    assert not handler.handle_response(ErrorCode.NONE, 79, [("t", 9)])   # a partition nobody asked for
    assert handler.next_metadata == FetchMetadata(79, INITIAL_EPOCH)
    handler.build({("t", 0): data(0)})
    handler.handle_error(ConnectionError("reset"))
    assert handler.next_metadata == FetchMetadata(79, INITIAL_EPOCH)


def test_a_throttled_empty_full_response_is_not_used_and_changes_nothing():
    handler = FetchSessionHandler("test", 1)
    handler.build({("t", 0): data(0)})
    assert not handler.handle_response(ErrorCode.NONE, 0, [], throttle_ms=100)
    assert handler.next_metadata == INITIAL
    # a broker whose cache is full answers session id 0: the fetcher keeps sending full fetches
    handler.build({("t", 0): data(0)})
    assert handler.handle_response(ErrorCode.NONE, INVALID_SESSION_ID, [("t", 0)])
    assert handler.next_metadata == INITIAL
