"""``ProducerStateManager``: what makes the idempotent producer idempotent (KIP-98).

An idempotent producer gets a *producer id* (PID) and *epoch* from
InitProducerId and numbers the batches it sends to each partition with a
*sequence number*. For every PID the partition leader remembers the last
five batches (``max.in.flight.requests.per.connection`` may be at most 5):

* a batch whose sequence range equals a remembered one is a **duplicate**
  (a retry after a lost response): it is not appended again, and the
  producer is told the offset it got the first time;
* a batch whose first sequence is not last sequence + 1 is a **gap**:
  ``OUT_OF_ORDER_SEQUENCE_NUMBER``, and the producer retries or fails;
* an older epoch is a fenced ("zombie") producer: ``INVALID_PRODUCER_EPOCH``.

The state is rebuilt from the log's batch headers when the log is loaded,
so it survives a broker restart, as Kafka's does via ``.snapshot`` files.

Transactions (KIP-98): the first transactional batch of a producer opens a
transaction in this partition (``ongoing_txns``: producer id -> its first
offset); the producer's next control batch (a COMMIT or ABORT marker written
by the transaction coordinator) closes it. The earliest open transaction's
first offset is the *first unstable offset*: the last stable offset (LSO)
cannot pass it, so ``read_committed`` consumers stop there.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..common.errors import ErrorCode, KafkaError
from ..common.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5


@dataclass
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerStateEntry:
    producer_id: int
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        for b in self.batches:
            if b.first_seq == header.base_sequence and b.last_seq == header.last_sequence:
                return b
        return None


@dataclass
class CompletedTxn:
    """A transaction closed by a marker (Kafka's ``CompletedTxn``): its first offset and the marker's."""
    producer_id: int
    first_offset: int
    last_offset: int


class ProducerStateManager:
    def __init__(self):
        self.producers: dict[int, ProducerStateEntry] = {}
        #: open transactions in this partition: producer id -> first offset (Kafka's ``ongoingTxns``)
        self.ongoing_txns: dict[int, int] = {}

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, None if none is open."""
        return min(self.ongoing_txns.values()) if self.ongoing_txns else None

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a batch before it is appended; return the original if it is a duplicate."""
        pid = header.producer_id
        if pid < 0 or header.base_sequence < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            # No state for this producer: its earlier batches may all be gone (retention,
            # DeleteRecords), so Kafka accepts any sequence (ProducerAppendInfo.checkSequence).
            return None
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {pid}: a new epoch {header.producer_epoch} must start at sequence 0, "
                                 f"got {header.base_sequence}")
            return None
        if header.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {pid} epoch {header.producer_epoch} is older than {entry.epoch}: fenced")
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        expected = (entry.last_seq + 1) % (2**31)
        if header.base_sequence != expected:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {pid}: expected sequence {expected}, got {header.base_sequence}")
        return None

    def check_marker(self, header: BatchHeader) -> None:
        """A COMMIT/ABORT marker from an older epoch than the producer's is refused (Kafka's
        ``ProducerAppendInfo.checkProducerEpoch`` for control batches)."""
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"marker for producer {header.producer_id} with epoch {header.producer_epoch}, "
                             f"older than {entry.epoch}")

    def update(self, header: BatchHeader) -> CompletedTxn | None:
        """Record an appended batch (also used when rebuilding state from the log); a marker returns
        the transaction it closed."""
        pid = header.producer_id
        if pid < 0:
            return None
        if header.is_control:
            entry = self.producers.get(pid)
            if entry is None or header.producer_epoch > entry.epoch:
                self.producers[pid] = ProducerStateEntry(pid, header.producer_epoch)
            first = self.ongoing_txns.pop(pid, None)
            return CompletedTxn(pid, first, header.last_offset) if first is not None else None
        if header.is_transactional and pid not in self.ongoing_txns:
            self.ongoing_txns[pid] = header.base_offset
        entry = self.producers.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            entry = self.producers[pid] = ProducerStateEntry(pid, header.producer_epoch)
        if header.base_sequence >= 0:
            entry.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset,
                                               header.last_offset, header.max_timestamp))
        entry.last_timestamp = header.max_timestamp
        return None

    def truncate(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
