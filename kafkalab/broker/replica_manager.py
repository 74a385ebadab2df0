"""``ReplicaManager``: the partitions this broker hosts, appends to them and reads from them.

Kafka's ReplicaManager is the entry point of Produce and Fetch: it finds the
``Partition``, appends or reads, and parks requests that must wait in a
*purgatory*. A Fetch that wants ``min_bytes`` more data than there is waits
(up to ``max_wait_ms``) in the fetch purgatory (``DelayedFetch``), watching
the partitions it asked for: an append to one of them, or the partition
going away, wakes it to read again. With ``acks=all`` a Produce waits in the
same way until the ISR has the records (``DelayedProduce``); a standalone
broker's ISR is itself, so that wait is empty.
"""
from __future__ import annotations

import asyncio
import collections
from typing import Iterable

from .errors import ErrorCode, KafkaError
from .partition import Partition


class ReplicaManager:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: the fetch purgatory: (topic, partition) -> futures of the Fetches watching it
        self._fetch_waiters: dict[tuple[str, int], set[asyncio.Future]] = collections.defaultdict(set)

    def add_partition(self, partition: Partition) -> None:
        self.partitions[(partition.topic, partition.index)] = partition

    def remove_partition(self, topic: str, index: int) -> Partition | None:
        """Stop hosting a partition; a Fetch waiting on it answers at once (Kafka's stopPartitions)."""
        partition = self.partitions.pop((topic, index), None)
        self.notify_data_arrived(topic, index)
        return partition

    def get_partition(self, topic: str, index: int) -> Partition:
        p = self.partitions.get((topic, index))
        if p is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"This server does not host this topic-partition: {topic}-{index}")
        return p

    def append_records(self, topic: str, index: int, records: bytes, required_acks: int):
        info = self.get_partition(topic, index).append_records_to_leader(records, required_acks)
        if not info.duplicate:
            self.notify_data_arrived(topic, index)
        return info

    # -- the fetch purgatory -------------------------------------------------

    def notify_data_arrived(self, topic: str, index: int) -> None:
        """Wake the Fetches watching this partition, so they read again and check for min_bytes."""
        for fut in self._fetch_waiters.pop((topic, index), ()):
            if not fut.done():
                fut.set_result(None)

    async def wait_for_data(self, watched: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Park until one of the ``watched`` (topic, partition)s changes, or ``timeout_s`` passes."""
        watched = list(watched)
        fut = asyncio.get_running_loop().create_future()
        for key in watched:
            self._fetch_waiters[key].add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            for key in watched:
                waiters = self._fetch_waiters.get(key)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self._fetch_waiters[key]
