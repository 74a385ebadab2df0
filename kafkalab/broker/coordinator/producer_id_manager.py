"""``ProducerIdManager``: hands out producer ids for InitProducerId (KIP-98).

Kafka allocates producer ids in blocks recorded in ZooKeeper
(``/latest_producer_id_block``) so two brokers never hand out the same id.
A standalone broker records the next free id in ``<log.dirs>/producer-id``;
ids therefore never repeat across restarts, which matters because the
partition logs remember the sequence numbers of every id they have seen.
"""
from __future__ import annotations

import os


class ProducerIdManager:
    BLOCK_SIZE = 1000

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, "producer-id")
        start = 0
        if os.path.exists(self.path):
            try:
                with open(self.path) as f:
                    start = int(f.read().strip() or 0)
            except ValueError:
                start = 0
        self._next = start
        self._block_end = start

    def generate_producer_id(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + self.BLOCK_SIZE
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(self._block_end))
            os.replace(tmp, self.path)
        pid = self._next
        self._next += 1
        return pid
