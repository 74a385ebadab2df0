"""``DelayedDeleteRecords``: a DeleteRecords waiting for the followers (the delete-records purgatory).

DeleteRecords moves the leader's log start offset at once (``Partition.delete_records_on_leader``); Kafka
then answers only when the partition's *low watermark* has reached the requested offset: the smallest log
start offset of the leader and of its followers on live brokers (``Partition.low_watermark_if_leader``),
i.e. once every live replica has dropped the records too. A follower learns the leader's new log start
offset from its next Fetch response and reports its own in the Fetch after that; the leader's
``update_follower_fetch_state`` then re-checks the waiting requests (Kafka's ``tryCompleteDelayedRequests``).
Per partition the answer is:

* NONE with the low watermark, once it reached the requested offset;
* NOT_LEADER_OR_FOLLOWER (low watermark -1) if this broker stopped leading the partition meanwhile;
* UNKNOWN_TOPIC_OR_PARTITION (-1) if the partition went away;
* REQUEST_TIMED_OUT, with the low watermark of the moment the records were deleted, if the request's
  ``timeout_ms`` passed first (a follower alive but not fetching: paused, stuck). The leader's records
  are deleted all the same.

A standalone broker has no followers: its low watermark is its log start offset and nothing waits.
Kafka Streams is the main user: it purges what it has read from its repartition topics after each commit.
"""
from __future__ import annotations

import asyncio

from ..common.errors import ErrorCode, KafkaError
from ..utils.async_util import wait_done
from .delayed_produce import ProducePurgatory

Key = tuple[str, int]
INVALID_LOW_WATERMARK = -1


class DelayedDeleteRecords:
    """One DeleteRecords (its partitions deleted on this leader) waiting for their low watermarks."""

    def __init__(self, purgatory: ProducePurgatory, deleted: dict[Key, tuple[int, int]]):
        self.purgatory = purgatory
        #: partition -> (the offset it must reach, the low watermark when the records were deleted)
        self.pending = dict(deleted)
        self.results: dict[Key, tuple[int, int]] = {}   # partition -> (error code, low watermark)
        self.future: asyncio.Future | None = None

    def try_complete(self) -> bool:
        """Kafka's ``DelayedDeleteRecords.tryComplete``: True once no partition is still waiting."""
        partitions = self.purgatory.partitions
        for key, (required, _) in list(self.pending.items()):
            partition = partitions.get(key)
            if partition is None:
                result = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK)
            else:
                try:
                    low = partition.low_watermark_if_leader()
                except KafkaError as exc:
                    result = (exc.code, INVALID_LOW_WATERMARK)
                else:
                    if low < required:
                        continue
                    result = (ErrorCode.NONE, low)
            del self.pending[key]
            self.results[key] = result
        if not self.pending:
            if self.future is not None and not self.future.done():
                self.future.set_result(None)
            return True
        return False

    async def wait(self, timeout_ms: int) -> dict[Key, tuple[int, int]]:
        """Complete now if possible, else watch the partitions until done or ``timeout_ms``."""
        if self.try_complete():
            return self.results
        self.future = asyncio.get_running_loop().create_future()
        keys = list(self.pending)
        self.purgatory.watch(keys, self)
        try:
            if not await wait_done(self.future, max(timeout_ms, 0) / 1000):
                self.try_complete()   # a last look, then the rest timed out (Kafka's onExpiration)
                for key, (_, low_at_delete) in self.pending.items():
                    self.results[key] = (ErrorCode.REQUEST_TIMED_OUT, low_at_delete)
                self.pending.clear()
        finally:
            self.purgatory.unwatch(keys, self)
        return self.results
