"""``ReplicaManager``: the partitions this broker hosts, appends to them and reads from them.

Kafka's ReplicaManager is the entry point of Produce and Fetch: it finds the
``Partition``, appends or reads, and parks requests that must wait in a
*purgatory* — a Fetch that wants ``min_bytes`` more data than there is waits
(up to ``max_wait_ms``) until an append wakes it (``DelayedFetch``). With
``acks=all`` a Produce waits in the same way until the ISR has the records
(``DelayedProduce``); a standalone broker's ISR is itself, so that wait is empty.
"""
from __future__ import annotations

import asyncio

from .errors import ErrorCode, KafkaError
from .partition import Partition


class ReplicaManager:
    def __init__(self, broker_id: int):
        self.broker_id = broker_id
        self.partitions: dict[tuple[str, int], Partition] = {}
        self._fetch_waiters: set[asyncio.Future] = set()

    def add_partition(self, partition: Partition) -> None:
        self.partitions[(partition.topic, partition.index)] = partition

    def remove_partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.pop((topic, index), None)

    def get_partition(self, topic: str, index: int) -> Partition:
        p = self.partitions.get((topic, index))
        if p is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"This server does not host this topic-partition: {topic}-{index}")
        return p

    def append_records(self, topic: str, index: int, records: bytes, required_acks: int):
        info = self.get_partition(topic, index).append_records_to_leader(records, required_acks)
        if not info.duplicate:
            self.notify_data_arrived()
        return info

    # -- the fetch purgatory -------------------------------------------------

    def notify_data_arrived(self) -> None:
        """Wake every parked Fetch so it can check whether it now has min_bytes."""
        waiters, self._fetch_waiters = self._fetch_waiters, set()
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait_for_data(self, timeout_s: float) -> None:
        """Park until new data is appended anywhere, or ``timeout_s`` passes."""
        fut = asyncio.get_running_loop().create_future()
        self._fetch_waiters.add(fut)
        try:
            await asyncio.wait_for(fut, timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            self._fetch_waiters.discard(fut)
