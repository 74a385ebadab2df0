"""``DelayedProduce``: an ``acks=all`` Produce waiting for the in-sync replicas (the produce purgatory).

Kafka appends a Produce to the leader's log at once; with ``acks=all``
(``required_acks == -1``) the answer then waits until every in-sync replica
has the records, i.e. until the partition's high watermark passes the last
appended offset. Kafka parks such a request as a ``DelayedProduce`` in the
*produce purgatory*, watched by the partitions it wrote to; whatever may
move a high watermark (a follower's fetch, an ISR change, a leader change)
calls ``checkAndComplete`` on the partition's watchers. Per partition the
answer is:

* NONE once the high watermark reached the required offset,
* NOT_ENOUGH_REPLICAS_AFTER_APPEND if by then the ISR had shrunk below
  ``min.insync.replicas`` (the records are in the log but not as safe as asked),
* NOT_LEADER_OR_FOLLOWER if this broker stopped leading the partition meanwhile,
* REQUEST_TIMED_OUT if the Produce's ``timeout_ms`` passed first (the records
  may still become committed later: the producer retries, and idempotence
  drops the duplicate).

A standalone broker's ISR is itself, so its high watermark is past the batch
as soon as it is appended and nothing ever waits here.
"""
from __future__ import annotations

import asyncio
import collections

from ..utils.async_util import wait_done
from ..common.errors import ErrorCode

Key = tuple[str, int]


class DelayedProduce:
    """One Produce (all its acks=all partitions) waiting for ``required_offsets``."""

    def __init__(self, purgatory: "ProducePurgatory", required_offsets: dict[Key, int]):
        self.purgatory = purgatory
        self.pending = dict(required_offsets)    # partition -> the HW it must reach (last offset + 1)
        self.errors: dict[Key, int] = {}
        self.future: asyncio.Future | None = None

    def try_complete(self) -> bool:
        """Check every partition still waiting; True once none is (Kafka's ``tryComplete``)."""
        partitions = self.purgatory.partitions
        for key, required in list(self.pending.items()):
            partition = partitions.get(key)
            if partition is None:
                done, error = True, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                done, error = partition.check_enough_replicas_reach_offset(required)
            if done:
                del self.pending[key]
                self.errors[key] = error
        if not self.pending:
            if self.future is not None and not self.future.done():
                self.future.set_result(None)
            return True
        return False

    async def wait(self, timeout_ms: int) -> dict[Key, int]:
        """Complete now if possible, else watch the partitions until done or ``timeout_ms``."""
        if self.try_complete():
            return self.errors
        self.future = asyncio.get_running_loop().create_future()
        keys = list(self.pending)
        self.purgatory.watch(keys, self)
        try:
            # (not asyncio.wait_for: on Python < 3.12 it can lose a cancellation; see async_util)
            if not await wait_done(self.future, max(timeout_ms, 0) / 1000):
                self.try_complete()   # a last look, then the rest timed out (Kafka's onExpiration)
                for key in self.pending:
                    self.errors[key] = ErrorCode.REQUEST_TIMED_OUT
                self.pending.clear()
        finally:
            self.purgatory.unwatch(keys, self)
        return self.errors


class ProducePurgatory:
    """The DelayedProduces, by the partitions they watch (Kafka's ``DelayedOperationPurgatory``)."""

    def __init__(self, partitions: dict):
        self.partitions = partitions   # the ReplicaManager's hosted partitions
        self._watchers: dict[Key, set[DelayedProduce]] = collections.defaultdict(set)

    def __len__(self) -> int:
        return len({op for ops in self._watchers.values() for op in ops})

    def watch(self, keys, op: DelayedProduce) -> None:
        for key in keys:
            self._watchers[key].add(op)

    def unwatch(self, keys, op: DelayedProduce) -> None:
        for key in keys:
            ops = self._watchers.get(key)
            if ops is not None:
                ops.discard(op)
                if not ops:
                    del self._watchers[key]

    def check_and_complete(self, key: Key) -> None:
        """Something that may move ``key``'s high watermark happened: re-check its watchers."""
        ops = self._watchers.get(key)
        if ops:
            for op in list(ops):
                op.try_complete()
