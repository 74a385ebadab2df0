"""``DelayedFetch``: a Fetch waiting in the fetch purgatory for ``min_bytes``, as Kafka's ``DelayedFetch``.

:meth:`ReplicaManager.fetch_messages <kafkalab.broker.server.replica_manager.ReplicaManager.fetch_messages>`
reads the partitions once; when fewer than ``min_bytes`` came back, no partition failed or diverged,
``max_wait_ms`` has not passed and some partition is watched, the fetch waits: an append to one of
its partitions, a high watermark that moves, or the partition going away wakes it to read them all
again (``ReplicaManager.wait_for_data``). Only the first read records a follower's position, not the
reads after waiting, as Kafka's DelayedFetch completes with ``updateFetchState = false``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class FetchParams:
    """The request-wide parts of a Fetch (Kafka's ``FetchParams``)."""
    replica_id: int          # -1 for a consumer, a broker id for a follower
    max_wait_ms: int
    min_bytes: int
    max_bytes: int           # for the whole response (a consumer's: capped by its quota)
    read_committed: bool     # isolation_level 1

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass
class FetchPartitionData:
    """One partition a Fetch asks for (Kafka's ``FetchRequest.PartitionData``); ``topic`` None: an unknown
    topic id (``topic_id``: the id it was asked by, from Fetch v13, else the id the metadata gives the name)."""
    topic: str | None
    partition: int
    fetch_offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1
    max_bytes: int = 2**31 - 1
    topic_id: object = None


#: an incremental fetch session's test for a partition it need not read: (the partition asked, the Partition)
Unchanged = Callable[[FetchPartitionData, Any], bool]


class DelayedFetch:
    def __init__(self, replica_manager, params: FetchParams, fetch_infos: list[FetchPartitionData],
                 unchanged: Unchanged | None = None):
        self.replica_manager = replica_manager
        self.params = params
        self.fetch_infos = fetch_infos
        self.unchanged = unchanged
        self.watched = [(p.topic, p.partition) for p in fetch_infos if p.topic is not None]

    async def run(self) -> list:
        """The partitions' ``LogReadResult``s (None: unchanged, not read), in the order asked, once there is
        enough or time is up. Every partition asked is watched, read or not."""
        deadline = time.monotonic() + max(self.params.max_wait_ms, 0) / 1000
        first_read = True
        while True:
            results, total, errors = self.replica_manager.read_from_local_log(self.params, self.fetch_infos,
                                                                              first_read, self.unchanged)
            first_read = False
            remaining = deadline - time.monotonic()
            if total >= self.params.min_bytes or errors or remaining <= 0 or not self.watched:
                return results
            await self.replica_manager.wait_for_data(self.watched, remaining)

    async def run_session(self, context, denied: set) -> list:
        """An incremental fetch session's Fetch (``context``: its IncrementalFetchContext): the (partition asked,
        ``LogReadResult``) of each partition read, once there is enough or time is up. Only the session's
        candidates are read (changed, or not idle); parked, the Fetch waits on the session, which any change to
        one of its partitions wakes, and then reads those that changed."""
        rm = self.replica_manager
        deadline = time.monotonic() + max(self.params.max_wait_ms, 0) / 1000
        read: dict = {}
        first = True
        while True:
            again = [k for k, (_, r) in read.items() if r.records]
            infos = context.candidates(first, again, denied)
            results, _, errors = rm.read_from_local_log(self.params, infos, first, context.unchanged)
            first = False
            for info, result in zip(infos, results):
                if result is not None:
                    read[context.key(info)] = (info, result)
            total = sum(len(r.records) for _, r in read.values())
            remaining = deadline - time.monotonic()
            if total >= self.params.min_bytes or errors or remaining <= 0:
                return list(read.values())
            if not context.session.dirty:   # (changed while reading, e.g. the HW this read moved: read again)
                await rm.wait_for_session(context.session, remaining)

