"""``ControllerContext``: the active controller's picture of the cluster (Kafka's ``ControllerContext``).

Filled from ZooKeeper when a broker becomes controller and kept up to date
by the controller's own writes and by the ZooKeeper watches it handles, so
that decisions (who leads, who is in the ISR) never wait on ZooKeeper reads.

As in Kafka, a broker that asked for a controlled shutdown is still *registered*
(it gets UpdateMetadata) but no longer counts as *live* for leadership or ISR
membership: ``live_broker_ids`` leaves it out, ``live_or_shutting_down_broker_ids``
keeps it.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ..zk.zk_data import BrokerInfo, LeaderIsrAndControllerEpoch

TopicPartition = tuple  # (topic, partition)


@dataclass
class ControllerContext:
    epoch: int = 0                     # this controller's epoch (/controller_epoch)
    epoch_zk_version: int = 0          # version of /controller_epoch: fences this controller's writes
    live_brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    broker_epochs: dict[int, int] = field(default_factory=dict)      # broker id -> czxid of its registration
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    all_topics: set[str] = field(default_factory=set)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    assignments: dict[str, dict[int, list[int]]] = field(default_factory=dict)   # topic -> partition -> replicas
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    #: topic being deleted -> replicas (topic, partition, broker) whose StopReplica(delete) is not confirmed yet
    deletion_pending: dict[str, set[tuple[str, int, int]]] = field(default_factory=dict)
    #: replicas of topics being deleted to which StopReplica(delete) was sent and not answered yet
    deletion_in_flight: set[tuple[str, int, int]] = field(default_factory=set)

    # -- brokers -------------------------------------------------------------------

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down_broker_ids

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    def is_replica_online(self, broker_id: int, include_shutting_down: bool = False) -> bool:
        if include_shutting_down:
            return broker_id in self.live_brokers
        return broker_id in self.live_brokers and broker_id not in self.shutting_down_broker_ids

    def add_live_broker(self, info: BrokerInfo, broker_epoch: int) -> None:
        self.live_brokers[info.id] = info
        self.broker_epochs[info.id] = broker_epoch

    def remove_live_broker(self, broker_id: int) -> None:
        self.live_brokers.pop(broker_id, None)
        self.broker_epochs.pop(broker_id, None)

    # -- partitions ----------------------------------------------------------------

    def replicas(self, tp: TopicPartition) -> list[int]:
        return self.assignments.get(tp[0], {}).get(tp[1], [])

    def all_partitions(self) -> list[TopicPartition]:
        return [(t, p) for t in sorted(self.assignments) for p in sorted(self.assignments[t])]

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return [(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if broker_id in self.replicas(tp)]

    def partition_leaders_on_broker(self, broker_id: int) -> list[TopicPartition]:
        """Partitions with more than one replica that ``broker_id`` leads (a controlled shutdown's "remaining").

        A partition with a single replica is left out, as in Kafka: nobody could take over its leadership.
        """
        return [tp for tp, s in sorted(self.leadership.items())
                if s.leader == broker_id and tp[0] not in self.topics_to_be_deleted and len(self.replicas(tp)) > 1]

    def partitions_with_leaders(self) -> list[TopicPartition]:
        return [tp for tp in self.all_partitions() if tp in self.leadership]

    def online_replicas(self, tp: TopicPartition, include_shutting_down: bool = False) -> list[int]:
        return [r for r in self.replicas(tp) if self.is_replica_online(r, include_shutting_down)]

    def offline_replicas(self, tp: TopicPartition) -> list[int]:
        return [r for r in self.replicas(tp) if not self.is_replica_online(r, include_shutting_down=True)]

    def has_live_leader(self, tp: TopicPartition) -> bool:
        state = self.leadership.get(tp)
        return state is not None and state.leader >= 0 and self.is_replica_online(state.leader, True)

    def remove_topic(self, topic: str) -> None:
        self.all_topics.discard(topic)
        self.topic_ids.pop(topic, None)
        for p in self.assignments.pop(topic, {}):
            self.leadership.pop((topic, p), None)
        self.topics_to_be_deleted.discard(topic)
        self.deletion_pending.pop(topic, None)
        self.deletion_in_flight = {r for r in self.deletion_in_flight if r[0] != topic}

    def reset(self) -> None:
        self.__init__()


class ControllerComponent:
    """A part of the active controller that works on its :class:`ControllerContext` and ZooKeeper client:
    ``PartitionStateMachine``, ``ReplicaStateMachine``, ``TopicDeletionManager``.

    In Kafka each gets ``controllerContext``, ``zkClient`` and the config as constructor arguments;
    here it keeps the ``KafkaController`` and reads them through it.
    """

    def __init__(self, controller):
        self.controller = controller

    @property
    def context(self) -> ControllerContext:
        return self.controller.context

    @property
    def zk_client(self):
        return self.controller.zk_client

    @property
    def controller_id(self) -> int:
        return self.controller.broker_id
