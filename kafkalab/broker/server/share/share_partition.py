"""``SharePartition``: one partition as a share group consumes it (KIP-932), kept by the partition's leader.

Modelled on Kafka 4.x's ``kafka.server.share.SharePartition``. The records of a partition between the
**share-partition start offset** (SPSO) and the **share-partition end offset** (SPEO) are *in flight*; each has
a state and a delivery count::

    AVAILABLE ──acquire (delivery count + 1)──> ACQUIRED ──ACCEPT──> ACKNOWLEDGED
        ^                                           │ ──REJECT──> ARCHIVED
        └──── RELEASE, or the acquisition lock ─────┘
              expires (group.share.record.lock.duration.ms);
              ARCHIVED instead once the delivery count has
              reached group.share.delivery.count.limit

* a ShareFetch **acquires** AVAILABLE records (and new ones past the SPEO, up to the high watermark) for one
  member, at most ``MaxRecords`` of them and at most ``group.share.partition.max.record.locks`` in flight; each
  acquired record carries an **acquisition lock**: if its member has not acknowledged it within
  ``group.share.record.lock.duration.ms`` it is AVAILABLE again, for any member;
* an acknowledgement (in a ShareFetch or a ShareAcknowledge) by the member holding the record:
  ACCEPT (1) -> ACKNOWLEDGED, RELEASE (2) -> AVAILABLE, REJECT (3) -> ARCHIVED, GAP (0) -> ARCHIVED (an offset
  with no record: a transaction marker, or compacted away); RENEW (4, v2 requests with IsRenewAck, KIP-1222)
  keeps it ACQUIRED with a fresh lock. Acknowledging a record that is not ACQUIRED by that
  member is INVALID_RECORD_STATE, and nothing of that request's batches for the partition changes;
* a record that was delivered ``group.share.delivery.count.limit`` times and comes back (released, or its lock
  expired) is ARCHIVED: a "poison" record stops being redelivered;
* the SPSO moves past every leading ACKNOWLEDGED or ARCHIVED record, and those records leave the in-flight set.

Where the SPSO starts, the first time a group reads the partition, is the group config
``share.auto.offset.reset``: ``latest`` (the default: the high watermark) or ``earliest`` (the log start offset).

kafkalab simplifications: the state is kept per offset (Kafka keeps ranges of offsets per fetched batch, split
on demand); a fetch acquires exactly the records it reports, up to ``MaxRecords`` (Kafka may acquire whole
batches beyond it); share groups read uncommitted records (``share.isolation.level`` is not served).
"""
from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from ...common.errors import ErrorCode, KafkaError


class RecordState(enum.IntEnum):
    """Kafka's ``RecordState`` (its ids are what ``__share_group_state`` stores)."""
    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """The acknowledgement types of ShareFetch / ShareAcknowledge (Kafka's ``AcknowledgeType``, 0 is a gap)."""
    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4     # KIP-1222 (ShareFetch / ShareAcknowledge v2 with IsRenewAck): keep the record, a fresh lock


@dataclass
class InFlightRecord:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None
    lock_deadline: float = 0.0   # time.monotonic() when the acquisition lock expires


class SharePartition:
    """The in-flight records of one (group, topic, partition); see the module docstring."""

    def __init__(self, group_id: str, topic: str, topic_id, partition: int, *, start_offset: int,
                 lock_duration_ms: int, delivery_count_limit: int, max_in_flight: int, clock=time.monotonic):
        self.group_id, self.topic, self.topic_id, self.partition = group_id, topic, topic_id, partition
        self.start_offset = start_offset          # SPSO
        self.end_offset = start_offset            # SPEO: the next offset never acquired yet
        self.records: dict[int, InFlightRecord] = {}
        self.lock_duration_ms = lock_duration_ms
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.state_epoch = 0
        self.clock = clock
        #: called with the number of records whose acquisition lock expired (SharePartitionMetrics'
        #: AcquisitionLockTimeoutPerSec), if set
        self.on_lock_timeout = None

    # -- the lock timer ---------------------------------------------------------------------

    def expire_locks(self) -> bool:
        """Release the acquired records whose lock has expired; True if any did."""
        now = self.clock()
        expired = [o for o, r in self.records.items() if r.state == RecordState.ACQUIRED and r.lock_deadline <= now]
        for offset in expired:
            self._release(self.records[offset])
        if expired:
            self._advance_start()
            if self.on_lock_timeout is not None:
                self.on_lock_timeout(len(expired))
        return bool(expired)

    def in_flight_batch_count(self) -> int:
        """The in-flight records as runs of consecutive offsets in one state held by one member (Kafka keeps
        acquired fetch batches in its cache and splits one only when its offsets' states differ)."""
        runs, previous = 0, None
        for offset in sorted(self.records):
            record = self.records[offset]
            key = (offset - 1, record.state, record.member_id)
            if previous != key:
                runs += 1
            previous = (offset, record.state, record.member_id)
        return runs

    def next_lock_deadline(self) -> float | None:
        deadlines = [r.lock_deadline for r in self.records.values() if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def _release(self, record: InFlightRecord) -> None:
        record.member_id = None
        record.state = (RecordState.ARCHIVED if record.delivery_count >= self.delivery_count_limit
                        else RecordState.AVAILABLE)

    # -- acquiring --------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where a read for this partition starts: the first AVAILABLE in-flight record, else the SPEO."""
        for offset in range(self.start_offset, self.end_offset):
            record = self.records.get(offset)
            if record is not None and record.state == RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def acquire(self, member_id: str, offsets: list[int], covered_to: int, max_records: int) -> list[dict]:
        """Acquire for ``member_id`` the AVAILABLE (or new) records among ``offsets`` (the records a read
        returned, ascending); offsets below ``covered_to`` that hold no record (markers, compacted) are
        archived as gaps. Returns Kafka's AcquiredRecords: ranges with one delivery count each."""
        self.expire_locks()
        present = set(offsets)
        if not self.records:   # nothing in flight: offsets before the first record read hold none (compacted,
            skip_to = min(offsets[0] if offsets else covered_to, covered_to)   # deleted): the SPSO moves past them
            if skip_to > self.end_offset:
                self.start_offset = self.end_offset = skip_to
        for offset in range(self.end_offset, covered_to):   # offsets of the read that hold no record
            if offset not in present:
                self.records[offset] = InFlightRecord(RecordState.ARCHIVED)
        deadline = self.clock() + self.lock_duration_ms / 1000
        acquired: list[tuple[int, int]] = []
        for offset in offsets:
            if len(acquired) >= max_records:
                break
            record = self.records.get(offset)
            if record is None:
                if offset < self.end_offset or offset < self.start_offset:
                    continue   # below the SPSO: already done with
                if offset - self.start_offset >= self.max_in_flight:
                    break      # group.share.partition.max.record.locks
                record = self.records[offset] = InFlightRecord()
            if record.state != RecordState.AVAILABLE:
                continue
            record.state, record.member_id, record.lock_deadline = RecordState.ACQUIRED, member_id, deadline
            record.delivery_count += 1
            acquired.append((offset, record.delivery_count))
        if self.records:
            self.end_offset = max(self.end_offset, max(self.records) + 1)
        self._advance_start()
        ranges: list[dict] = []
        for offset, count in acquired:
            last = ranges[-1] if ranges else None
            if last is not None and last["last_offset"] == offset - 1 and last["delivery_count"] == count:
                last["last_offset"] = offset
            else:
                ranges.append({"first_offset": offset, "last_offset": offset, "delivery_count": count})
        return ranges

    # -- acknowledging ----------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches, allow_renew: bool = False) -> None:
        """Apply acknowledgement batches ``(first_offset, last_offset, [types])`` of ``member_id``: all of them,
        or (KafkaError INVALID_RECORD_STATE / INVALID_REQUEST) none. RENEW only with ``allow_renew``."""
        self.expire_locks()
        changes: list[tuple[int, int]] = []
        for first, last, types in batches:
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"bad acknowledgement batch {first}-{last} {list(types)}")
            if any(kind not in AcknowledgeType._value2member_map_ or (kind == AcknowledgeType.RENEW and not allow_renew)
                   for kind in types):
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Invalid acknowledge type: {list(types)}")
            self._check_in_flight(first, last)
            for i, offset in enumerate(range(first, last + 1)):
                kind = types[0] if len(types) == 1 else types[i]
                record = self.records.get(offset)
                if record is None or record.state != RecordState.ACQUIRED or record.member_id != member_id:
                    if kind == AcknowledgeType.GAP and (record is None or record.state == RecordState.ARCHIVED):
                        continue
                    raise KafkaError(ErrorCode.INVALID_RECORD_STATE,
                                     f"offset {offset} of {self.topic}-{self.partition} is not acquired by member "
                                     f"{member_id} (its lock may have expired)")
                changes.append((offset, kind))
        for offset, kind in changes:
            record = self.records[offset]
            if kind == AcknowledgeType.ACCEPT:
                record.state, record.member_id = RecordState.ACKNOWLEDGED, None
            elif kind == AcknowledgeType.RELEASE:
                self._release(record)
            elif kind == AcknowledgeType.RENEW:
                record.lock_deadline = self.clock() + self.lock_duration_ms / 1000
            else:   # REJECT, GAP
                record.state, record.member_id = RecordState.ARCHIVED, None
        self._advance_start()

    def _check_in_flight(self, first: int, last: int) -> None:
        """Kafka's checks of an acknowledgement batch against the in-flight records: nothing in flight at or
        below its first offset (and the SPSO not inside it) is INVALID_RECORD_STATE; offsets past the last
        in-flight record are INVALID_REQUEST."""
        if not self.records or (first < min(self.records) and not first <= self.start_offset <= last):
            raise KafkaError(ErrorCode.INVALID_RECORD_STATE,
                             "Batch record not found. The request batch offsets are not found in the cache.")
        end = max(self.records)
        if first > end:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The first offset in request is past acquired records.")
        if last > end:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "Batch record not found. The last offset in request is past acquired records.")

    def release_member(self, member_id: str) -> bool:
        """The member left (or closed its share session): its acquired records are released now."""
        mine = [r for r in self.records.values() if r.state == RecordState.ACQUIRED and r.member_id == member_id]
        for record in mine:
            self._release(record)
        self._advance_start()
        return bool(mine)

    def _advance_start(self) -> None:
        while True:
            record = self.records.get(self.start_offset)
            if record is None or record.state not in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                break
            del self.records[self.start_offset]
            self.start_offset += 1
        self.end_offset = max(self.end_offset, self.start_offset)

    def reset_start(self, offset: int) -> None:
        """AlterShareGroupOffsets (the group has no members): start afresh at ``offset``."""
        self.records.clear()
        self.start_offset = self.end_offset = offset
        self.state_epoch += 1

    # -- what the share coordinator keeps ----------------------------------------------------

    def state_batches(self) -> list[dict]:
        """The in-flight state as Kafka's PersisterStateBatch list: ranges of (state, delivery count).
        An ACQUIRED record is stored as AVAILABLE with its delivery count (after a restart no lock holds)."""
        out: list[dict] = []
        for offset in sorted(self.records):
            record = self.records[offset]
            state = RecordState.AVAILABLE if record.state == RecordState.ACQUIRED else record.state
            last = out[-1] if out else None
            if (last is not None and last["last_offset"] == offset - 1 and last["delivery_state"] == state
                    and last["delivery_count"] == record.delivery_count):
                last["last_offset"] = offset
            else:
                out.append({"first_offset": offset, "last_offset": offset, "delivery_state": int(state),
                            "delivery_count": record.delivery_count})
        return out

    def load_state(self, start_offset: int, state_epoch: int, batches: list[dict]) -> None:
        self.start_offset = self.end_offset = start_offset
        self.state_epoch = state_epoch
        self.records.clear()
        for b in batches:
            for offset in range(max(b["first_offset"], start_offset), b["last_offset"] + 1):
                self.records[offset] = InFlightRecord(RecordState(b["delivery_state"]), b["delivery_count"])
        if self.records:
            self.end_offset = max(self.records) + 1
        self._advance_start()

    def summary(self) -> dict:
        counts = {s.name: 0 for s in RecordState}
        for r in self.records.values():
            counts[r.state.name] += 1
        return {"start_offset": self.start_offset, "end_offset": self.end_offset, **counts}
