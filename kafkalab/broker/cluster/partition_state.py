"""What the controller tells a broker about one partition (Kafka's ``LeaderAndIsrPartitionState``).

The LeaderAndIsr handler turns each partition entry of the request into one of
these and hands the list to ``ReplicaManager.become_leader_or_follower``;
UpdateMetadata carries the same facts (plus offline replicas) to the
metadata cache of every broker.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LeaderAndIsrPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int                 # broker id; -1 when the partition has no leader
    leader_epoch: int
    isr: list[int]
    partition_epoch: int        # ZooKeeper mode: the version of the partition's state znode
    replicas: list[int]
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    is_new: bool = False
    leader_recovery_state: int = 0   # 0 RECOVERED, 1 RECOVERING (KIP-704)
    offline_replicas: list[int] = field(default_factory=list)   # UpdateMetadata only

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition
