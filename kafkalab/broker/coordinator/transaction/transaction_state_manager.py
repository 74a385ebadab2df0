"""``TransactionStateManager``: the coordinator's table of transactional ids.

Kafka's ``TransactionStateManager`` keeps ``TransactionMetadata`` per transactional id in memory
and persists every transition to the compacted internal topic ``__transaction_state``
(``transaction.state.log.num.partitions`` partitions, 50 by default); the coordinator of a
transactional id is the leader of partition ``abs(hash(transactionalId)) % 50``, and a new
leader reloads its partitions from the topic.

kafkalab (first slice of transactions, standalone broker): the table is in memory only, nothing
is written to ``__transaction_state`` (docs/differences.md). After a restart the coordinator has
forgotten every transactional id: a producer's next InitProducerId gets a new producer id, and a
transaction that was open when the broker stopped stays open in the partition logs.
"""
from __future__ import annotations

from ..group.offsets_topic import partition_for
from .transaction_metadata import TransactionMetadata, TransactionState, now_ms

TRANSACTION_STATE_TOPIC = "__transaction_state"


class TransactionStateManager:
    def __init__(self, config):
        self.config = config
        self.transactions: dict[str, TransactionMetadata] = {}

    def partition_for(self, transactional_id: str) -> int:
        """``abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`` (as Kafka)."""
        return partition_for(transactional_id, self.config["transaction.state.log.num.partitions"])

    def validate_transaction_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config["transaction.max.timeout.ms"]

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self.transactions.get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> TransactionMetadata:
        return self.transactions.setdefault(metadata.transactional_id, metadata)

    def timed_out_transactions(self, now: int | None = None) -> list[TransactionMetadata]:
        """Ongoing transactions older than their timeout (Kafka's ``timedOutTransactions``)."""
        now = now_ms() if now is None else now
        return [m for m in self.transactions.values()
                if m.state == TransactionState.ONGOING and m.txn_start_timestamp + m.txn_timeout_ms < now]
