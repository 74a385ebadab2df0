"""``ProducerIdManager``: hands out producer ids for InitProducerId (KIP-98).

Kafka allocates producer ids in blocks recorded in ZooKeeper
(``/latest_producer_id_block``) so two brokers never hand out the same id.
A standalone broker records the end of its current block in
``<log.dirs>/producer-id``; ids therefore never repeat across restarts, which
matters because the partition logs remember the sequence numbers of every id
they have seen.

If that file cannot be read (damaged by hand, say), restarting at id 0 could
hand out an id the logs already know, and its producer's first batches would
be refused as out of order or fenced. So the broker then continues from an id
derived from the clock (milliseconds since 1970 x 1000), which is above any id
a broker handing out 1,000-id blocks can have reached, and says so in its log.

In cluster mode ``ZkProducerIdManager`` is used instead, as Kafka's
``ProducerIdManager.zk``: each broker claims blocks of 1,000 ids from
``/latest_producer_id_block`` with a write conditional on the znode's version,
so no two brokers ever hand out the same id.
"""
from __future__ import annotations

import logging
import os
import time

log = logging.getLogger(__name__)


class ProducerIdManager:
    BLOCK_SIZE = 1000

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, "producer-id")
        start = 0
        if os.path.exists(self.path):
            try:
                with open(self.path) as f:
                    start = int(f.read().strip())
                if start < 0:
                    raise ValueError(f"negative id {start}")
            except (OSError, ValueError) as exc:
                start = int(time.time() * 1000) * 1000
                log.warning("%s is unreadable (%s); continuing with producer id %d, above any id handed out "
                            "before", self.path, exc, start)
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


class ZkProducerIdManager:
    """Producer ids from blocks claimed in ZooKeeper (``KafkaZkClient.allocate_producer_id_block``)."""

    def __init__(self, broker):
        self.broker = broker
        self._next = 0
        self._block_end = -1   # last id of the current block

    def generate_producer_id(self) -> int:
        if self._next > self._block_end:
            start, end = self.broker.zk_client.allocate_producer_id_block(self.broker.broker_id)
            log.info("broker %d: claimed producer id block %d-%d", self.broker.broker_id, start, end)
            self._next, self._block_end = start, end
        pid = self._next
        self._next += 1
        return pid
