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

The state survives a broker restart through ``.snapshot`` files
(:mod:`kafkalab.broker.log.producer_snapshot`), written at each segment roll and at
a clean shutdown; at start-up the latest one is loaded and only the batches after
it are replayed from the log.

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
from .producer_snapshot import SnapshotEntry

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
    #: the epoch of the transaction coordinator that wrote this producer's last marker
    coordinator_epoch: int = -1

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new producer epoch forgets the batches of the old one (Kafka's ``maybeUpdateProducerEpoch``)."""
        if epoch != self.epoch:
            self.batches.clear()
            self.epoch = epoch

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

    def check_marker(self, header: BatchHeader, coordinator_epoch: int = -1) -> None:
        """A COMMIT/ABORT marker from an older epoch than the producer's is refused (Kafka's
        ``ProducerAppendInfo.checkProducerEpoch`` for control batches), and so is one written by an
        older transaction coordinator than the last marker's (``appendEndTxnMarker``: a zombie
        coordinator, e.g. one that lost the leadership of ``__transaction_state`` while its markers
        were on their way, is TRANSACTION_COORDINATOR_FENCED)."""
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"marker for producer {header.producer_id} with epoch {header.producer_epoch}, "
                             f"older than {entry.epoch}")
        if entry is not None and entry.coordinator_epoch > coordinator_epoch:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"marker for producer {header.producer_id} from coordinator epoch {coordinator_epoch} "
                             f"(zombie), {entry.coordinator_epoch} (current)")

    def update(self, header: BatchHeader, coordinator_epoch: int = -1) -> CompletedTxn | None:
        """Record an appended batch (also used when rebuilding state from the log); a marker (with
        the coordinator epoch written in it) returns the transaction it closed."""
        pid = header.producer_id
        if pid < 0:
            return None
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid, header.producer_epoch)
        elif header.producer_epoch > entry.epoch:
            entry.maybe_update_epoch(header.producer_epoch)
        if header.is_control:
            entry.coordinator_epoch = coordinator_epoch
            entry.last_timestamp = header.max_timestamp
            first = self.ongoing_txns.pop(pid, None)
            return CompletedTxn(pid, first, header.last_offset) if first is not None else None
        if header.is_transactional and pid not in self.ongoing_txns:
            self.ongoing_txns[pid] = header.base_offset
        if header.base_sequence >= 0:
            entry.batches.append(BatchMetadata(header.base_sequence, header.last_sequence, header.base_offset,
                                               header.last_offset, header.max_timestamp))
        entry.last_timestamp = header.max_timestamp
        return None

    def truncate(self) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()

    # -- snapshots (producer_snapshot.py has the file format) ------------------

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """One entry per producer, as Kafka's ``writeSnapshot`` fills them: the last batch only."""
        entries = []
        for pid in sorted(self.producers):
            e = self.producers[pid]
            last = e.batches[-1] if e.batches else None
            entries.append(SnapshotEntry(
                pid, e.epoch, last.last_seq if last else -1, last.last_offset if last else -1,
                last.last_offset - last.first_offset if last else 0, e.last_timestamp, e.coordinator_epoch,
                self.ongoing_txns.get(pid, -1)))
        return entries

    def load_snapshot_entries(self, entries: list[SnapshotEntry]) -> None:
        """Start from a snapshot's entries (Kafka's ``loadProducerEntry``)."""
        self.truncate()
        for s in entries:
            entry = ProducerStateEntry(s.producer_id, s.epoch, last_timestamp=s.timestamp,
                                       coordinator_epoch=s.coordinator_epoch)
            if s.has_batch:
                entry.batches.append(BatchMetadata(s.first_sequence, s.last_sequence, s.last_offset - s.offset_delta,
                                                   s.last_offset, s.timestamp))
            self.producers[s.producer_id] = entry
            if s.current_txn_first_offset >= 0:
                self.ongoing_txns[s.producer_id] = s.current_txn_first_offset
