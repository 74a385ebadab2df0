"""``AdminManager``: creating and deleting topics and partitions, changing topic configs.

In ZooKeeper-based Kafka this is ``ZkAdminManager``, which validates the
request and writes the new assignment to ZooKeeper for the controller to act
on. The standalone broker validates the same way and acts at once. It is
used by CreateTopics, DeleteTopics, CreatePartitions and the config APIs, and
by Metadata/Produce when ``auto.create.topics.enable`` creates a topic.
"""
from __future__ import annotations

from .config import LogConfig
from .errors import ErrorCode, KafkaError
from .metadata import TopicMetadata, validate_topic_name
from .partition import Partition


class AdminManager:
    def __init__(self, broker):
        self.broker = broker

    @property
    def cache(self):
        return self.broker.metadata_cache

    def validate_configs(self, configs: dict[str, str | None]) -> dict[str, str]:
        out = {}
        for name, value in configs.items():
            try:
                LogConfig.validate(name, value)
            except ValueError as exc:
                raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            out[name] = value
        return out

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, validate_only: bool = False) -> TopicMetadata | None:
        validate_topic_name(name)
        if self.cache.get(name) is not None:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        self.cache.check_collision(name)
        cfg = self.broker.config
        partitions = cfg["num.partitions"] if num_partitions in (None, -1) else num_partitions
        rf = cfg["default.replication.factor"] if replication_factor in (None, -1) else replication_factor
        if partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if rf <= 0:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if rf > self.broker.live_broker_count:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"Replication factor: {rf} larger than available brokers: {self.broker.live_broker_count}.")
        overrides = self.validate_configs(configs or {})
        if validate_only:
            return None
        topic = self.cache.add(name, partitions, rf, overrides)
        for index in range(partitions):
            self.broker.make_partition(topic, index)
        return topic

    def maybe_auto_create(self, name: str) -> TopicMetadata | None:
        """Metadata for an unknown topic creates it when ``auto.create.topics.enable`` is on."""
        topic = self.cache.get(name)
        if topic is None and self.broker.config["auto.create.topics.enable"]:
            topic = self.create_topic(name)
        return topic

    def delete_topic(self, name: str) -> TopicMetadata:
        if not self.broker.config["delete.topic.enable"]:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        for index in range(topic.num_partitions):
            self.broker.replica_manager.remove_partition(name, index)
            self.broker.log_manager.delete_log(name, index)
        self.cache.remove(name)
        self.broker.topic_configs.pop(name, None)
        return topic

    def create_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if count <= topic.num_partitions:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {topic.num_partitions} partitions, which is higher than or "
                             f"equal to the requested {count}.")
        if validate_only:
            return
        old = topic.num_partitions
        topic.num_partitions = count
        self.cache.save()
        for index in range(old, count):
            self.broker.make_partition(topic, index)

    def log_config(self, topic: TopicMetadata) -> LogConfig:
        return self.broker.log_config_for(topic)

    def make_partition(self, topic: TopicMetadata, index: int) -> Partition:
        return self.broker.make_partition(topic, index)
