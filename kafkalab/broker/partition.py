"""``Partition``: one topic-partition on this broker — its log and its replica state.

Kafka's ``kafka.cluster.Partition`` holds the leader epoch, the assigned
replicas, the in-sync replica set (ISR) and the local ``UnifiedLog``. On the
leader, ``append_records_to_leader`` enforces ``min.insync.replicas`` for
``acks=all`` (NOT_ENOUGH_REPLICAS) before writing.

A standalone mini broker is the only replica of every partition, so its ISR
is itself and its high watermark follows its log end offset; the cluster
mode adds followers and moves the high watermark as they catch up.
"""
from __future__ import annotations

from .errors import ErrorCode, KafkaError
from .log.log import LogAppendInfo, UnifiedLog


class Partition:
    def __init__(self, topic: str, index: int, log: UnifiedLog, broker_id: int):
        self.topic = topic
        self.index = index
        self.log = log
        self.local_broker_id = broker_id
        self.leader_id = broker_id
        self.leader_epoch = 0
        self.replicas = [broker_id]
        self.isr = [broker_id]
        # becoming leader: the new epoch starts at the log end offset (Kafka's makeLeader)
        log.leader_epoch_cache.assign(self.leader_epoch, log.log_end_offset)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.index}"

    def check_current_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's ``checkCurrentLeaderEpoch`` (KIP-320): the epoch a client believes current (-1: don't check).

        An older one gets FENCED_LEADER_EPOCH (the client's metadata is stale),
        a newer one UNKNOWN_LEADER_EPOCH (this broker's is).
        """
        if current_leader_epoch == -1:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH,
                             f"{self.name}: leader epoch {current_leader_epoch} is older than {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                             f"{self.name}: leader epoch {current_leader_epoch} is newer than {self.leader_epoch}")

    def local_log_with_epoch(self, current_leader_epoch: int, require_leader: bool) -> UnifiedLog:
        """Kafka's ``localLogWithEpochOrThrow``, checked by Fetch, ListOffsets and OffsetForLeaderEpoch:
        the leader epoch, then (for consumers, not followers) that this broker leads the partition."""
        self.check_current_leader_epoch(current_leader_epoch)
        if require_leader and self.leader_id != self.local_broker_id:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"broker {self.local_broker_id} is not the leader of {self.name}")
        return self.log

    def append_records_to_leader(self, records: bytes, required_acks: int) -> LogAppendInfo:
        min_isr = self.log.config["min.insync.replicas"]
        if required_acks == -1 and len(self.isr) < min_isr:
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                             f"{self.name}: ISR {self.isr} is smaller than min.insync.replicas={min_isr}")
        info = self.log.append_as_leader(records, self.leader_epoch)
        if self.isr == [self.leader_id]:
            self.log.high_watermark = self.log.log_end_offset
        return info
