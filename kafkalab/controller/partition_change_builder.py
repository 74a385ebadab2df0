"""``PartitionChangeBuilder``: one partition's next leader, ISR and eligible leader replicas, as a record.

Kafka's KRaft controller (``org.apache.kafka.controller.PartitionChangeBuilder``) decides every change of a
partition's leadership in one place: a broker fenced, shutting down or unfenced, a leader's AlterPartition,
an ElectLeaders request, the auto leader rebalance. Given the partition as it is, a *target* ISR and an
election type, :meth:`PartitionChangeBuilder.build` returns the PartitionChangeRecord that gets there (naming
only the fields that change), or None when nothing changes. The steps, in Kafka's order:

1. **ELR** (KIP-966, when ``eligible.leader.replicas.version`` >= 1): when the target ISR is smaller than
   the topic's ``min.insync.replicas`` (capped at the replication factor), the replicas leaving the ISR
   join the *eligible leader replicas*: they had every acknowledged record (acks=all needed min ISR of
   them) so they may lead again even though they are out of the ISR. Replicas that shut down uncleanly
   (their log may have lost its tail) are left out. An ISR back at min ISR clears the ELR.
2. **election**: the current leader stays if it still may lead; else the first replica (replica order)
   that is in the target ISR — or, *only when the ISR is empty*, in the ELR — and is acceptable (an
   unfenced broker not shutting down). PREFERRED tries the first replica before the current leader.
   A leader taken from the ELR becomes the whole ISR. With no such replica: the last known leader
   (LastKnownElr) if ISR and ELR are empty and it is acceptable (Kafka calls this balanced recovery);
   then, for UNCLEAN elections only, any acceptable replica, which becomes the whole ISR with the
   leader recovery state RECOVERING (records it never had may be lost).
3. **the ISR**: written when it changes. Without ELR an ISR is never left empty (its last member stays
   in it, the partition leaderless); with ELR it may be empty.
4. **LastKnownElr**: holds the last leader, written when the ISR first becomes empty, cleared once the
   partition has a leader again.

The leader epoch is bumped by the replay of a record that names a leader (metadata.version 3.6+ does not
bump it for a mere ISR shrink); the partition epoch by every record.
"""
from __future__ import annotations

from enum import Enum

from ..metadata.api_message_and_version import ApiMessageAndVersion

NO_LEADER = -1
#: LeaderRecoveryState
RECOVERED, RECOVERING = 0, 1
PARTITION_CHANGE_RECORD_VERSION = 2


class Election(Enum):
    PREFERRED = 0    # the preferred (first) replica if it may lead
    ONLINE = 1       # keep the partition online from the ISR (or the ELR)
    UNCLEAN = 2      # and if nothing else, from any live replica


class PartitionChangeBuilder:
    def __init__(self, partition, topic_id, partition_id: int, is_acceptable_leader, min_isr: int,
                 eligible_leader_replicas_enabled: bool = False):
        """``partition``: a :class:`~kafkalab.controller.replication_control_manager.PartitionRegistration`;
        ``is_acceptable_leader(broker_id) -> bool``."""
        self.partition = partition
        self.topic_id = topic_id
        self.partition_id = partition_id
        self.is_acceptable_leader = is_acceptable_leader
        self.min_isr = min_isr
        self.elr_enabled = eligible_leader_replicas_enabled
        self.election = Election.ONLINE
        self.target_isr = list(partition.isr)
        self.target_elr = list(partition.elr)
        self.target_last_known_elr = list(partition.last_known_elr)
        self.target_leader_recovery_state = partition.leader_recovery_state
        self.unclean_shutdown_replicas: list[int] = []
        self.use_last_known_leader_in_balanced_recovery = True

    def set_target_isr(self, isr) -> "PartitionChangeBuilder":
        self.target_isr = list(isr)
        return self

    def set_election(self, election: Election) -> "PartitionChangeBuilder":
        self.election = election
        return self

    def set_unclean_shutdown_replicas(self, replicas) -> "PartitionChangeBuilder":
        self.unclean_shutdown_replicas = list(replicas)
        return self

    def set_target_leader_recovery_state(self, state: int) -> "PartitionChangeBuilder":
        self.target_leader_recovery_state = state
        return self

    # -- the election -------------------------------------------------------------------------------

    def _is_valid_new_leader(self, replica: int) -> bool:
        return (replica in self.target_isr or (not self.target_isr and replica in self.target_elr)) \
            and self.is_acceptable_leader(replica)

    def _can_elect_last_known_leader(self) -> bool:
        if not self.elr_enabled or not self.use_last_known_leader_in_balanced_recovery:
            return False
        if self.target_elr or self.target_isr:
            return False
        last = self.partition.last_known_elr
        return len(last) == 1 and self.is_acceptable_leader(last[0])

    def elect_leader(self) -> tuple[int, bool]:
        """(the new leader or NO_LEADER, whether the election is unclean)."""
        replicas = self.partition.replicas
        candidates = list(replicas)
        if self.election == Election.PREFERRED:
            if self._is_valid_new_leader(replicas[0]):
                return replicas[0], False
            candidates = replicas[1:]
        if self._is_valid_new_leader(self.partition.leader):
            return self.partition.leader, False
        leader = next((r for r in candidates if self._is_valid_new_leader(r)), None)
        if leader is not None:
            return leader, False
        if self._can_elect_last_known_leader():
            return self.partition.last_known_elr[0], True
        if self.election == Election.UNCLEAN:
            leader = next((r for r in replicas if self.is_acceptable_leader(r)), None)
            if leader is not None:
                return leader, True
        return NO_LEADER, False

    def _try_election(self, record: dict) -> None:
        leader, unclean = self.elect_leader()
        if leader == self.partition.leader:
            return
        if leader in self.target_elr:
            self.target_isr = [leader]
            self.target_elr = [r for r in self.target_elr if r != leader]
        record["leader"] = leader
        if unclean:   # forced: the new leader alone is the ISR; records may be lost
            record["isr"] = [leader]
            if self.partition.leader_recovery_state != RECOVERING:
                record["leader_recovery_state"] = RECOVERING

    # -- ELR -------------------------------------------------------------------------------------------

    def _maybe_populate_target_elr(self) -> None:
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr, self.target_last_known_elr = [], []
            return
        isr = set(self.target_isr)
        candidates = set(self.target_elr) | set(self.partition.isr)
        self.target_elr = sorted(r for r in candidates if r not in isr and r not in self.unclean_shutdown_replicas)
        candidates |= set(self.target_last_known_elr)
        self.target_last_known_elr = sorted(r for r in candidates if r not in isr and r not in self.target_elr)

    def _maybe_update_record_elr(self, record: dict) -> None:
        clean = "isr" not in record
        if not clean or not self.elr_enabled:
            self.target_elr, self.target_last_known_elr = [], []
        if self.target_elr != list(self.partition.elr):
            record["eligible_leader_replicas"] = self.target_elr
        if self.use_last_known_leader_in_balanced_recovery:
            return   # LastKnownElr holds the last leader: _maybe_update_last_known_leader
        if self.target_last_known_elr != list(self.partition.last_known_elr):
            record["last_known_elr"] = self.target_last_known_elr

    def _maybe_update_last_known_leader(self, record: dict) -> None:
        if not self.use_last_known_leader_in_balanced_recovery or not self.elr_enabled:
            return
        last, leader = list(self.partition.last_known_elr), self.partition.leader
        new_leader = record.get("leader")
        if record.get("isr") == [] and last != [leader]:
            record["last_known_elr"] = [leader]          # the partition just became leaderless
        elif last and ((new_leader is not None and new_leader >= 0)
                       or (leader != NO_LEADER and new_leader != NO_LEADER)):
            record["last_known_elr"] = []                # it has (or keeps) a leader

    # -- the record --------------------------------------------------------------------------------------

    def build(self) -> ApiMessageAndVersion | None:
        record: dict = {}
        self._maybe_populate_target_elr()
        self._try_election(record)
        self._maybe_update_record_elr(record)
        if "isr" not in record and (self.target_isr or self.elr_enabled) \
                and self.target_isr != list(self.partition.isr):
            record["isr"] = self.target_isr
        self._maybe_update_last_known_leader(record)
        if "leader_recovery_state" not in record and self.target_leader_recovery_state != \
                self.partition.leader_recovery_state:
            record["leader_recovery_state"] = self.target_leader_recovery_state
        if not record:
            return None
        return ApiMessageAndVersion("PartitionChangeRecord", PARTITION_CHANGE_RECORD_VERSION,
                                    {"partition_id": self.partition_id, "topic_id": self.topic_id, **record})
