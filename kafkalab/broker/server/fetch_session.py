"""Incremental fetch sessions (KIP-227), the broker's side, as Kafka's ``FetchSession.scala`` (3.9).

A Fetch without a session names every partition it wants, and its response carries every one of them, whether
anything changed or not: a follower of 200 idle partitions sends and gets 200 entries several times a second. With
a session the broker remembers the fetcher's partitions and their last answer, and both sides send only what
changed:

* a **full** fetch (``session_epoch`` 0, INITIAL) names every partition; the broker answers all of them and, when
  the cache has room, a new ``session_id`` (the session's next epoch is then 1). ``session_epoch`` -1 (FINAL) is a
  full fetch that asks for no session (librdkafka's fetches, and closing one: ``session_id`` then names it);
* an **incremental** fetch (``session_id`` and the epoch the broker expects) names only the partitions whose fetch
  position, log start offset, leader epoch or ``partition_max_bytes`` changed, and in ``forgotten_topics_data``
  the ones to drop; the broker reads *every* partition of the session and answers only those with records, a
  new high watermark or log start offset, an error, a diverging epoch or a preferred read replica
  (``CachedPartition.maybeUpdateResponseData``). Partitions that returned records move to the session's end, so
  a ``max_bytes`` limit serves them all in turn;
* errors, answered with no partitions: FETCH_SESSION_ID_NOT_FOUND (no such session, e.g. evicted or the broker
  restarted: the client starts over with a full fetch), INVALID_FETCH_SESSION_EPOCH (the epoch is not the one
  expected, e.g. a duplicate request), FETCH_SESSION_TOPIC_ID_ERROR (a session made with topic ids used by a
  version without them, or the other way round).

:class:`FetchSessionCache` holds at most ``max.incremental.fetch.session.cache.slots`` sessions (Kafka: 1000). A new
session takes a slot from a session unused for 120 s (``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``), else from the
least valuable evictable one: a follower's (privileged) session may evict a consumer's, and a session with more
partitions one with fewer that is older than 120 s. Kafka's metrics ``kafka.server:type=FetchSessionCache``:
``NumIncrementalFetchSessions``, ``NumIncrementalFetchPartitionsCached``, ``IncrementalFetchSessionEvictionsPerSec``.

Simplified: one cache shard (Kafka 3.9 has eight, KAFKA-9401) and one asyncio loop instead of locks; a session's
epoch is checked again when its response is made, as Kafka does, since a request may wait in the purgatory.
"""
from __future__ import annotations

import logging
import random
import time
from typing import Callable, Hashable

from ..common.errors import ErrorCode
from .delayed_fetch import FetchPartitionData

log = logging.getLogger(__name__)

INVALID_SESSION_ID = 0
#: FetchMetadata's epochs: INITIAL creates a session, FINAL asks for none
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
#: Kafka's KafkaBroker.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
EVICTION_MS = 120_000
#: how often a session looks at its idle partitions again (the mini broker's, see IncrementalFetchContext): Kafka's
#: default replica.fetch.wait.max.ms, the longest a follower's fetch waits anyway
IDLE_REFRESH_MS = 500
MAX_INT = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """FetchMetadata.nextEpoch: after FINAL stays FINAL, after the largest int comes 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_INT else epoch + 1


class CachedPartition:
    """A partition of a session: what the fetcher last asked for, and what it was last told. ``idle``: the
    partition's signature (``Partition.fetch_signature``) when it read nothing new for the fetcher, None after any
    other answer or a new request for it."""
    __slots__ = ("request", "high_watermark", "local_log_start_offset", "idle")

    def __init__(self, request: FetchPartitionData, response: dict | None = None):
        self.request = request
        self.high_watermark = response["high_watermark"] if response is not None else -1
        self.local_log_start_offset = response["log_start_offset"] if response is not None else -1
        self.idle: tuple | None = None

    def maybe_update_response_data(self, response: dict, update: bool) -> bool:
        """Kafka's ``maybeUpdateResponseData``: whether the fetcher must hear of this partition; ``update``: the
        answer is being sent, so remember what it says."""
        must_respond = bool(response["records"])
        if self.high_watermark != response["high_watermark"]:
            must_respond = True
            if update:
                self.high_watermark = response["high_watermark"]
        if self.local_log_start_offset != response["log_start_offset"]:
            must_respond = True
            if update:
                self.local_log_start_offset = response["log_start_offset"]
        if response.get("preferred_read_replica", -1) >= 0:
            must_respond = True
        if response["error_code"] != ErrorCode.NONE:
            if update:   # an invalid high watermark: once the error is gone the partition is sent again
                self.high_watermark = -1
            must_respond = True
        if response.get("diverging_epoch") is not None:
            must_respond = True
        return must_respond


def session_key(request: FetchPartitionData, uses_topic_ids: bool) -> Hashable:
    """How a session knows a partition: by topic id from Fetch v13, by name before."""
    return (request.topic_id if uses_topic_ids else request.topic, request.partition)


class FetchSession:
    """One fetcher's session: its partitions in order, its epoch (the one the next request must carry).

    With ``changes`` (the ReplicaManager) the session is told of every change to its partitions
    (``partition_changed``): ``dirty`` holds those changed since they were last read, ``active`` those whose last
    answer was not empty (records, an error) or whose request changed, so an incremental Fetch reads only these,
    and a Fetch parked in the purgatory waits on the session (``waiter``) instead of on each partition."""

    def __init__(self, session_id: int, privileged: bool, partitions: dict, uses_topic_ids: bool, now_ms: int,
                 changes=None):
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[Hashable, CachedPartition] = partitions
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = self.last_used_ms = self.last_refresh_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1                  # the size the cache last counted; -1: not in the cache
        self.evictable_by_all = self.evictable_by_privileged = False
        self.dirty: set[Hashable] = set()
        self.active: set[Hashable] = set(partitions)
        self.waiter = None                     # the future of a Fetch of this session parked in the purgatory
        self.changes = changes
        self._watched: dict[tuple[str, int], Hashable] = {}   # (topic, partition) -> session key
        self.unresolved: set[Hashable] = set()   # asked by a topic id the metadata did not know
        for key, cached in partitions.items():
            self._watch(key, cached)

    def _watch(self, key: Hashable, cached: "CachedPartition") -> None:
        topic = cached.request.topic
        if topic is None:
            self.unresolved.add(key)
            return
        self.unresolved.discard(key)
        if self.changes is not None and (topic, cached.request.partition) not in self._watched:
            self._watched[(topic, cached.request.partition)] = key
            self.changes.watch_changes((topic, cached.request.partition), self)

    def _unwatch(self, cached: "CachedPartition") -> None:
        name_key = (cached.request.topic, cached.request.partition)
        if self._watched.pop(name_key, None) is not None:
            self.changes.unwatch_changes(name_key, self)

    def partition_changed(self, name_key: tuple[str, int]) -> None:
        key = self._watched.get(name_key)
        if key is not None:
            self.dirty.add(key)
            waiter = self.waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

    def set_idle(self, key: Hashable, cached: "CachedPartition", idle: tuple | None) -> None:
        cached.idle = idle
        if idle is None:
            self.active.add(key)
        else:
            self.active.discard(key)

    def update(self, fetch_data: list[FetchPartitionData], to_forget: list[Hashable]) -> None:
        """An incremental request's changes: the partitions it names added or updated, the forgotten removed."""
        for request in fetch_data:
            key = session_key(request, self.uses_topic_ids)
            cached = self.partitions.get(key)
            if cached is None:
                cached = self.partitions[key] = CachedPartition(request)
                self._watch(key, cached)
            else:
                if request.topic is None and cached.request.topic is not None:
                    request.topic = cached.request.topic
                cached.request = request
                self._watch(key, cached)
            self.set_idle(key, cached, None)
        for key in to_forget:
            cached = self.partitions.pop(key, None)
            if cached is not None:
                self._unwatch(cached)
                self.active.discard(key)
                self.dirty.discard(key)
                self.unresolved.discard(key)

    def resolve(self, key: Hashable, cached: "CachedPartition", name: str | None) -> None:
        """A partition asked by a topic id the metadata did not know yet, now named."""
        if name is not None:
            cached.request.topic = name
            self._watch(key, cached)

    def close(self) -> None:
        """Out of the cache: no more change notifications."""
        for cached in self.partitions.values():
            self._unwatch(cached)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, privileged={self.privileged}, partitions={len(self.partitions)}, "
                f"uses_topic_ids={self.uses_topic_ids}, epoch={self.epoch})")


class FetchSessionCache:
    """The broker's sessions, at most ``max_entries`` of them (``max.incremental.fetch.session.cache.slots``)."""

    def __init__(self, max_entries: int, eviction_ms: int = EVICTION_MS, clock: Callable[[], int] | None = None,
                 metrics=None, changes=None):
        self.max_entries = max_entries
        #: the ReplicaManager, whose partitions' changes the sessions are told of (None: they read every partition)
        self.changes = changes
        self.eviction_ms = eviction_ms
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.sessions: dict[int, FetchSession] = {}
        self.num_partitions = 0
        self._evictions = None
        if metrics is not None:
            from ..common.metrics import KafkaMetricsGroup
            group = KafkaMetricsGroup(metrics, "kafka.server", "FetchSessionCache")
            group.new_gauge("NumIncrementalFetchSessions", lambda: len(self.sessions))
            group.new_gauge("NumIncrementalFetchPartitionsCached", lambda: self.num_partitions)
            self._evictions = group.new_meter("IncrementalFetchSessionEvictionsPerSec")

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def new_session_id(self) -> int:
        while True:
            session_id = random.randint(1, MAX_INT - 1)
            if session_id not in self.sessions:
                return session_id

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool,
                             create_partitions: Callable[[], dict]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache is full and nothing may be evicted."""
        if len(self.sessions) < self.max_entries or self._try_evict(privileged, size, now_ms):
            session = FetchSession(self.new_session_id(), privileged, create_partitions(), uses_topic_ids, now_ms,
                                   self.changes)
            self.sessions[session.id] = session
            self.touch(session, now_ms)
            log.debug("created %r", session)
            return session.id
        log.debug("no fetch session created for privileged=%s, size=%d", privileged, size)
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict``: a session unused for ``eviction_ms``, else the least valuable evictable one if it
        is worth less than the new one (privileged first, then more partitions, then the id)."""
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            log.debug("evicting stale %r", stale)
            return self._evict(stale)
        candidates = [s for s in self.sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        cheapest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (cheapest.privileged, cheapest.cached_size, cheapest.id):
            return False
        log.debug("evicting %r for a new session of %d partitions", cheapest, size)
        return self._evict(cheapest)

    def _evict(self, session: FetchSession) -> bool:
        self.remove(session.id)
        if self._evictions is not None:
            self._evictions.mark()
        return True

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.num_partitions -= max(session.cached_size, 0)
            session.cached_size = -1
            session.close()
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used: its last use, size and evictability as of now."""
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.num_partitions += session.cached_size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = not session.privileged or old
        session.evictable_by_all = old


class FetchContext:
    """What one Fetch reads and answers (Kafka's ``FetchContext``)."""
    error = ErrorCode.NONE

    def partitions(self) -> list[FetchPartitionData]:
        """The partitions to read, in order."""
        return []

    #: the test for partitions a read may skip (ReplicaManager.read_from_local_log's ``unchanged``), if any
    unchanged = None

    def response(self, results: list[tuple[FetchPartitionData, dict]], update: bool,
                 signatures: list | None = None) -> tuple[int, int, list]:
        """(error code, session id, the (partition, answer) pairs to send). ``update`` False: only what would be
        sent (a throttled response must leave the session as it was). ``signatures``: each read's
        ``LogReadResult.signature``, for an incremental context."""
        return ErrorCode.NONE, INVALID_SESSION_ID, results

    def throttled(self) -> tuple[int, int]:
        """(error code, session id) of the empty response a throttled fetcher gets."""
        return ErrorCode.NONE, INVALID_SESSION_ID


class SessionErrorContext(FetchContext):
    """A Fetch whose session cannot be used: answered with the error and no partitions."""

    def __init__(self, error: int):
        self.error = error

    def response(self, results, update, signatures=None):
        return self.error, INVALID_SESSION_ID, []

    def throttled(self):
        return self.error, INVALID_SESSION_ID


class SessionlessFetchContext(FetchContext):
    """A full Fetch that asked for no session (epoch FINAL): every partition asked is answered."""

    def __init__(self, fetch_data: list[FetchPartitionData]):
        self.fetch_data = fetch_data

    def partitions(self):
        return self.fetch_data


class FullFetchContext(SessionlessFetchContext):
    """A full Fetch (epoch INITIAL): every partition is answered, and a new session made of them if there is room."""

    def __init__(self, cache: FetchSessionCache, fetch_data: list[FetchPartitionData], uses_topic_ids: bool,
                 is_from_follower: bool):
        super().__init__(fetch_data)
        self.cache = cache
        self.uses_topic_ids = uses_topic_ids
        self.is_from_follower = is_from_follower

    def response(self, results, update, signatures=None):
        if not update:
            return ErrorCode.NONE, INVALID_SESSION_ID, results

        def create_partitions() -> dict:
            return {session_key(request, self.uses_topic_ids): CachedPartition(request, answer)
                    for request, answer in results}
        session_id = self.cache.maybe_create_session(self.cache.clock(), self.is_from_follower, len(results),
                                                     self.uses_topic_ids, create_partitions)
        return ErrorCode.NONE, session_id, results


class IncrementalFetchContext(FetchContext):
    """An incremental Fetch: the session's partitions are read, those that changed are answered.

    Where the mini broker saves work Kafka does: Kafka reads every partition of the session at every Fetch (cheaply,
    in Java) and leaves the unchanged ones out of the response. Here a partition whose last answer held nothing
    new (no records, no error) is not read again until the ReplicaManager reports a change to it (an append, a
    new high watermark, log start, ISR or leader) or the fetcher's request for it changes (:meth:`candidates`);
    its answer would be the same, left out. Every ``IDLE_REFRESH_MS`` every partition of the session is looked at
    again (:meth:`unchanged`), so that no change goes unanswered longer than that: an idle partition whose state did
    not change is not read, and for a follower in the ISR its fetch is recorded on its replica, as Kafka's read
    records it, so that it stays caught up (``replica.lag.time.max.ms``). Not marked for a partition not read: its
    TotalFetchRequestsPerSec."""

    def __init__(self, request_epoch: int, session: FetchSession, topic_names: Callable[[object], str | None],
                 replica_id: int = -1, clock: Callable[[], int] | None = None):
        self.request_epoch = request_epoch
        self.session = session
        self.topic_names = topic_names
        self.replica_id = replica_id
        self.clock = clock or (lambda: int(time.time() * 1000))

    def key(self, request: FetchPartitionData) -> Hashable:
        return session_key(request, self.session.uses_topic_ids)

    def unchanged(self, request: FetchPartitionData, partition) -> bool:
        cached = self.session.partitions.get(session_key(request, self.session.uses_topic_ids))
        idle = cached.idle if cached is not None else None
        if idle is None or idle[0] is not partition:
            return False
        if self.replica_id < 0:
            return idle[1:] == partition.fetch_signature()
        if self.replica_id not in partition.partition_state.isr:
            return False   # a follower out of the ISR: every fetch may bring it back in
        if idle[1:] != partition.fetch_signature():
            return False
        replica = partition.remote_replicas.get(self.replica_id)
        if replica is not None:   # still caught up as of now, as Kafka's read would record
            replica.update_fetch_state(request.fetch_offset, request.log_start_offset, partition.clock(),
                                       partition.log.log_end_offset)
        return True

    def candidates(self, first: bool, again: list[Hashable], denied: set) -> list[FetchPartitionData]:
        """The partitions to read now: at the first read, those ``active`` or changed (every one once per
        ``IDLE_REFRESH_MS``, and always for a session told of no changes); after waiting, those changed meanwhile
        and ``again`` (those that read records before). Never those of a ``denied`` topic."""
        session = self.session
        if first:
            for key in list(session.unresolved):   # names for topic ids the metadata now knows
                cached = session.partitions[key]
                session.resolve(key, cached, self.topic_names(cached.request.topic_id))
            now = self.clock()
            if session.changes is None or now - session.last_refresh_ms >= IDLE_REFRESH_MS:
                session.last_refresh_ms = now
                session.dirty.clear()
                return [c.request for c in session.partitions.values() if c.request.topic not in denied]
            keys = session.dirty | session.active
        else:
            keys = session.dirty.union(again)
        session.dirty = set()
        parts = session.partitions
        if len(keys) * 4 >= len(parts):   # most of them: in the session's order
            chosen = [c.request for k, c in parts.items() if k in keys]
        else:
            chosen = [parts[k].request for k in sorted(keys, key=str) if k in parts]
        return [r for r in chosen if r.topic not in denied] if denied else chosen

    def partitions(self):
        out = []
        session = self.session
        for key, cached in session.partitions.items():
            request = cached.request
            if request.topic is None and session.uses_topic_ids:   # maybeResolveUnknownName
                session.resolve(key, cached, self.topic_names(request.topic_id))
            out.append(request)
        return out

    def response(self, results, update, signatures=None):
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            log.info("incremental fetch session %d expected epoch %d, but got %d: possible duplicate request",
                     session.id, next_epoch(self.request_epoch), session.epoch)
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        sent = []
        for i, (request, answer) in enumerate(results):
            if answer is None:   # not read: unchanged since its last, empty, answer
                continue
            key = session_key(request, session.uses_topic_ids)
            cached = session.partitions.get(key)
            if cached is None:
                continue
            must_respond = cached.maybe_update_response_data(answer, update)
            if update:
                empty = not answer["records"] and answer["error_code"] == ErrorCode.NONE and \
                    answer.get("diverging_epoch") is None
                session.set_idle(key, cached, signatures[i] if empty and signatures is not None else None)
            if not must_respond:
                continue
            sent.append((request, answer))
            if update and answer["records"]:   # to the end: the next fetch serves the others first
                session.partitions[key] = session.partitions.pop(key)
        return ErrorCode.NONE, session.id, sent

    def throttled(self):
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id
        return ErrorCode.NONE, session.id


class FetchManager:
    """Makes each Fetch's context from its session id and epoch (Kafka's ``FetchManager.newContext``)."""

    def __init__(self, cache: FetchSessionCache):
        self.cache = cache

    def new_context(self, version: int, session_id: int, epoch: int, replica_id: int,
                    fetch_data: list[FetchPartitionData], to_forget: list[Hashable],
                    topic_names: Callable[[object], str | None]) -> FetchContext:
        """``replica_id``: the follower's broker id, -1 for a consumer."""
        cache = self.cache
        is_follower = replica_id >= 0
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):   # full: any session named is closed
            if session_id != INVALID_SESSION_ID and cache.remove(session_id) is not None:
                log.debug("full fetch: removed fetch session %d", session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(cache, fetch_data, version >= 13, is_follower)
        session = cache.get(session_id)
        if session is None:
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            log.debug("fetch session %d: expected epoch %d, got %d", session_id, session.epoch, epoch)
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        session.update(fetch_data, to_forget)
        if not session.partitions:   # nothing left: the session is closed, the fetch answered without one
            cache.remove(session.id)
            return SessionlessFetchContext(fetch_data)
        cache.touch(session, cache.clock())
        session.epoch = next_epoch(session.epoch)
        return IncrementalFetchContext(epoch, session, topic_names, replica_id, cache.clock)
