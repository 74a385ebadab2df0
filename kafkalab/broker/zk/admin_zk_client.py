"""``AdminZkClient``: topic administration as ZooKeeper writes (Kafka's ``kafka.zk.AdminZkClient``).

In ZooKeeper mode no broker creates or deletes a topic by itself. The broker
that receives CreateTopics, CreatePartitions, DeleteTopics or a config change
validates it and *writes ZooKeeper*; the controller, watching those znodes,
does the rest (creates the partitions and elects their leaders, or deletes
the replicas), and every broker learns the outcome from the controller's
UpdateMetadata. The writes, in Kafka's order:

* **create a topic**: first its config overrides ``/config/topics/<t>``, then
  its assignment ``/brokers/topics/<t>`` with a new topic id (KIP-516) and the
  replicas of each partition (``assign_replicas_to_brokers``: the first
  replica is the preferred leader). Writing the configs first means that a
  broker creating the topic's logs always finds them.
* **add partitions**: ``/brokers/topics/<t>`` again with the old partitions
  unchanged and the new ones appended; the new replicas continue the round
  robin where partition 0's first replica started. The write is conditional
  on the znode's version, so two concurrent additions cannot lose one.
* **delete a topic**: the marker ``/admin/delete_topics/<t>``; the controller
  stops and deletes the replicas, then removes the topic's znodes and the marker.
* **change a topic's configs**: ``/config/topics/<t>``, then a sequential
  notification ``/config/changes/config_change_<seq>`` with
  ``{"entity_path":"topics/<t>"}`` that every broker watches.

Validation of names, counts and config values is the caller's
(``AdminManager``), as in Kafka's ``ZkAdminManager``; this module checks
what only ZooKeeper knows (the topic exists, is queued for deletion, or
collides with another name).
"""
from __future__ import annotations

import uuid

from kazoo.exceptions import BadVersionError, NodeExistsError

from ..common.errors import ErrorCode, KafkaError
from ..common.admin_utils import assign_replicas_to_brokers
from ..common.topic import unify_collision_chars
from .zk_data import TopicAssignment


def _assign(n_partitions: int, replication_factor: int, broker_ids, fixed_start_index: int = -1,
            start_partition_id: int = -1) -> dict[int, list[int]]:
    return assign_replicas_to_brokers(n_partitions, replication_factor, broker_ids,
                                      fixed_start_index=fixed_start_index, start_partition_id=start_partition_id)


class AdminZkClient:
    def __init__(self, zk_client):
        self.zk_client = zk_client   # KafkaZkClient

    # -- topics ------------------------------------------------------------------

    def registered_broker_ids(self) -> list[int]:
        return self.zk_client.get_sorted_broker_list()

    def assign_replicas(self, n_partitions: int, replication_factor: int) -> dict[int, list[int]]:
        """The rack-unaware assignment of a new topic over the registered brokers
        (INVALID_REPLICATION_FACTOR if there are fewer brokers than replicas)."""
        return _assign(n_partitions, replication_factor, self.registered_broker_ids())

    def validate_topic_create(self, topic: str) -> None:
        """What only ZooKeeper knows (Kafka's ``validateTopicCreate``): the topic is queued for deletion,
        exists, or its name collides with another once '.' and '_' are treated alike."""
        if self.zk_client.is_topic_marked_for_deletion(topic):
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic \"{topic}\" is queued for deletion.")
        if self.zk_client.topic_exists(topic):
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.")
        unified = unify_collision_chars(topic)
        colliding = sorted(t for t in self.zk_client.get_all_topics_in_cluster()
                           if t != topic and unify_collision_chars(t) == unified)
        if colliding:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                             f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}")

    def create_topic_with_assignment(self, topic: str, configs: dict[str, str],
                                     assignment: dict[int, list[int]]) -> uuid.UUID:
        """Write the configs, then the assignment with a new topic id; return the id."""
        self.validate_topic_create(topic)
        topic_id = uuid.uuid4()
        self.zk_client.set_or_create_topic_config(topic, configs)
        try:
            self.zk_client.create_topic_assignment(topic, TopicAssignment(topic_id, dict(assignment)))
        except NodeExistsError:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic}' already exists.") from None
        return topic_id

    def add_partitions(self, topic: str, count: int, replica_assignment: list[list[int]] | None = None,
                       validate_only: bool = False) -> dict[int, list[int]]:
        """Grow the topic to ``count`` partitions; return the new partitions' replicas."""
        current, version = self.zk_client.get_topic_assignment_with_version(topic)
        if current is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")
        existing = len(current.partitions)
        if count < existing:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {existing} partitions, which is higher than the requested "
                             f"{count}.")
        if count == existing:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {existing} partitions.")
        rf = len(current.partitions.get(0, []))
        brokers = self.registered_broker_ids()
        if replica_assignment is not None:
            new = {existing + i: list(r) for i, r in enumerate(replica_assignment)}
            for p, replicas in new.items():
                if len(replicas) != rf:
                    raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                     f"Inconsistent replication factor between partitions, partition 0 has {rf} "
                                     f"while partition {p} has replication factor {len(replicas)}")
        else:
            first = current.partitions.get(0, [brokers[0] if brokers else 0])[0]
            start = brokers.index(first) if first in brokers else -1
            new = _assign(count - existing, rf, brokers, fixed_start_index=start, start_partition_id=existing)
        if validate_only:
            return new
        updated = TopicAssignment(current.topic_id, {**current.partitions, **new}, current.adding_replicas,
                                  current.removing_replicas)
        try:
            self.zk_client.set_topic_assignment_if_version(topic, updated, version)
        except BadVersionError:
            raise KafkaError(ErrorCode.REASSIGNMENT_IN_PROGRESS if current.adding_replicas else
                             ErrorCode.INVALID_PARTITIONS,
                             f"Topic {topic}'s assignment changed while adding partitions; try again.") from None
        return new

    def delete_topic(self, topic: str) -> None:
        """Mark the topic for deletion. Marking it twice is not an error (Kafka keeps waiting for it)."""
        if not self.zk_client.topic_exists(topic):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")
        try:
            self.zk_client.create_delete_topic_path(topic)
        except NodeExistsError:
            pass   # Kafka's TopicAlreadyMarkedForDeletionException, swallowed by ZkAdminManager

    # -- configs -----------------------------------------------------------------

    def fetch_topic_config(self, topic: str) -> dict[str, str]:
        return self.zk_client.get_topic_config(topic)

    def change_topic_config(self, topic: str, configs: dict[str, str]) -> None:
        """Write the topic's whole override set, then notify every broker."""
        if not self.zk_client.topic_exists(topic):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{topic}' does not exist.")
        self.zk_client.set_or_create_topic_config(topic, configs)
        self.zk_client.create_config_change_notification(f"topics/{topic}")
