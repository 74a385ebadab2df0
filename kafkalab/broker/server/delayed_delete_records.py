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

from ..common.errors import ErrorCode, KafkaError
from .delayed_operation import DelayedOperation

Key = tuple[str, int]
INVALID_LOW_WATERMARK = -1


class DelayedDeleteRecords(DelayedOperation):
    """One DeleteRecords (its partitions deleted on this leader) waiting for their low watermarks.

    ``pending`` maps each partition to (the offset it must reach, the low watermark when the records were
    deleted); ``results`` to (error code, low watermark)."""

    def check(self, key: Key, partition, waiting_for: tuple[int, int]) -> tuple[int, int] | None:
        """Kafka's ``DelayedDeleteRecords.tryComplete``, for one partition."""
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
        try:
            low = partition.low_watermark_if_leader()
        except KafkaError as exc:
            return exc.code, INVALID_LOW_WATERMARK
        required, _ = waiting_for
        return (ErrorCode.NONE, low) if low >= required else None

    def expired(self, key: Key, waiting_for: tuple[int, int]) -> tuple[int, int]:
        _, low_at_delete = waiting_for
        return ErrorCode.REQUEST_TIMED_OUT, low_at_delete
