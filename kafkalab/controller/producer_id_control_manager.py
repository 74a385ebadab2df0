"""``ProducerIdControlManager``: blocks of producer ids for the brokers' transaction coordinators.

In ZooKeeper mode a broker took a block of producer ids by rewriting the ``/latest_producer_id_block``
znode; in KRaft mode it asks the active controller (AllocateProducerIds, key 67), which writes a
ProducerIdsRecord whose ``nextProducerId`` is the first id not yet handed out. Blocks are
``PRODUCER_ID_BLOCK_SIZE`` ids.
"""
from __future__ import annotations

from ..metadata.api_message_and_version import ApiMessageAndVersion

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdControlManager:
    def __init__(self):
        self.next_producer_id = 0

    def generate_next_producer_id(self, broker_id: int, broker_epoch: int) -> tuple[list[ApiMessageAndVersion], range]:
        """The record for a new block and the block itself (ids [start, start + size))."""
        start = self.next_producer_id
        record = ApiMessageAndVersion("ProducerIdsRecord", 0, {"broker_id": broker_id, "broker_epoch": broker_epoch,
                                                               "next_producer_id": start + PRODUCER_ID_BLOCK_SIZE})
        return [record], range(start, start + PRODUCER_ID_BLOCK_SIZE)

    def replay(self, data: dict) -> None:
        self.next_producer_id = max(self.next_producer_id, data["nextProducerId"])
