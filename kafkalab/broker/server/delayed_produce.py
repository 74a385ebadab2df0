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

from ..common.errors import ErrorCode
from .delayed_operation import DelayedOperation, DelayedOperationPurgatory

Key = tuple[str, int]

#: the produce purgatory is a DelayedOperationPurgatory like the others (the old name, kept importable)
ProducePurgatory = DelayedOperationPurgatory


class DelayedProduce(DelayedOperation):
    """One Produce (all its acks=all partitions) waiting for the high watermark to pass its records.

    ``pending`` maps each partition to the HW it must reach (last appended offset + 1); ``results`` (also
    ``errors``) to its error code."""

    @property
    def errors(self) -> dict[Key, int]:
        return self.results

    def check(self, key: Key, partition, required: int) -> int | None:
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        done, error = partition.check_enough_replicas_reach_offset(required)
        return error if done else None

    def expired(self, key: Key, required: int) -> int:
        return ErrorCode.REQUEST_TIMED_OUT
