"""``DelayedOperation`` and ``DelayedOperationPurgatory``: a request that waits for the partitions to move.

Some answers cannot be given when the request arrives: an ``acks=all`` Produce waits for the in-sync
replicas (``DelayedProduce``), a DeleteRecords for the followers' log start offsets
(``DelayedDeleteRecords``). Kafka parks each such request as a ``DelayedOperation`` in a *purgatory*,
watched by the partitions it concerns. Whatever may move a partition (a follower's fetch, an ISR change,
a leader change) calls ``checkAndComplete`` on that partition's watchers, and each operation looks again
(``tryComplete``); the ones still waiting when the request's timeout passes expire (``onExpiration``).

Here one operation is a dict of partitions still *pending*, each with what it waits for; a subclass says
how one partition is checked (:meth:`DelayedOperation.check`) and what a partition gets when time runs
out (:meth:`DelayedOperation.expired`). Kafka's purgatory is a timing wheel shared by thousands of
requests; a set per partition and one ``asyncio`` future per request do the same job at lab scale.
"""
from __future__ import annotations

import asyncio
import collections
import time
from typing import Any

from ..network.request_channel import current_remote_time
from ..utils.async_util import wait_done

Key = tuple[str, int]


class DelayedOperation:
    """One request waiting on several partitions; ``results`` gets one entry per partition as it completes."""

    def __init__(self, purgatory: "DelayedOperationPurgatory", pending: dict[Key, Any]):
        self.purgatory = purgatory
        self.pending = dict(pending)          # partition -> what it waits for
        self.results: dict[Key, Any] = {}     # partition -> its answer, once it has one
        self.future: asyncio.Future | None = None

    def check(self, key: Key, partition, waiting_for) -> Any | None:
        """The answer for one partition (``partition`` is None if it went away), or None to keep waiting."""
        raise NotImplementedError

    def expired(self, key: Key, waiting_for) -> Any:
        """The answer for a partition still waiting when the timeout passed."""
        raise NotImplementedError

    def try_complete(self) -> bool:
        """Check every partition still waiting; True once none is (Kafka's ``tryComplete``)."""
        partitions = self.purgatory.partitions
        for key, waiting_for in list(self.pending.items()):
            result = self.check(key, partitions.get(key), waiting_for)
            if result is not None:
                del self.pending[key]
                self.results[key] = result
        if not self.pending:
            if self.future is not None and not self.future.done():
                self.future.set_result(None)
            return True
        return False

    async def wait(self, timeout_ms: int) -> dict[Key, Any]:
        """Complete now if possible, else watch the partitions until done or ``timeout_ms``."""
        if self.try_complete():
            return self.results
        self.future = asyncio.get_running_loop().create_future()
        keys = list(self.pending)
        self.purgatory.watch(keys, self)
        remote = current_remote_time.get()
        parked = time.perf_counter()
        try:
            # (not asyncio.wait_for: on Python < 3.12 it can lose a cancellation; see async_util)
            if not await wait_done(self.future, max(timeout_ms, 0) / 1000):
                self.try_complete()   # a last look, then the rest timed out (Kafka's onExpiration)
                for key, waiting_for in self.pending.items():
                    self.results[key] = self.expired(key, waiting_for)
                self.pending.clear()
        finally:
            self.purgatory.unwatch(keys, self)
            if remote is not None:   # the request's remote time (RequestMetrics RemoteTimeMs)
                remote.seconds += time.perf_counter() - parked
        return self.results


class DelayedOperationPurgatory:
    """The operations waiting, by the partitions they watch (Kafka's ``DelayedOperationPurgatory``)."""

    def __init__(self, partitions: dict):
        self.partitions = partitions   # the ReplicaManager's hosted partitions
        self._watchers: dict[Key, set[DelayedOperation]] = collections.defaultdict(set)

    def __len__(self) -> int:
        return len({op for ops in self._watchers.values() for op in ops})

    def watched(self) -> int:
        """The watches: one per partition an operation waits on (Kafka's ``PurgatorySize``)."""
        return sum(len(ops) for ops in list(self._watchers.values()))

    def watch(self, keys, op: DelayedOperation) -> None:
        for key in keys:
            self._watchers[key].add(op)

    def unwatch(self, keys, op: DelayedOperation) -> None:
        for key in keys:
            ops = self._watchers.get(key)
            if ops is not None:
                ops.discard(op)
                if not ops:
                    del self._watchers[key]

    def check_and_complete(self, key: Key) -> None:
        """Something that may move ``key`` happened: re-check its watchers (Kafka's ``checkAndComplete``)."""
        ops = self._watchers.get(key)
        if ops:
            for op in list(ops):
                op.try_complete()
