"""``AdminManager``: creating and deleting topics and partitions, changing topic configs.

In ZooKeeper-based Kafka this is ``ZkAdminManager`` (plus ``ConfigAdminManager``
for configs), which validates the request and writes the new assignment or the
new config overrides to ZooKeeper for the controller and the brokers to act on.
The standalone broker validates the same way and acts at once. It is used by
CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs (KIP-339), and by Metadata/Produce when
``auto.create.topics.enable`` creates a topic.

Topic config changes take effect without a restart: every ``UnifiedLog`` of a
topic holds the topic's one ``LogConfig`` object and reads
``config["segment.bytes"]`` at the moment it needs it, so the overrides are
swapped *inside* that object.
"""
from __future__ import annotations

import enum
import os
import shutil
import uuid
from typing import Any, Iterable

from .config import TOPIC_CONFIGS, LogConfig, to_string
from .errors import ErrorCode, KafkaError
from .metadata import NULL_UUID, TopicMetadata, validate_topic_name



class ConfigResourceType(enum.IntEnum):
    """Kafka's ``ConfigResource.Type`` (DescribeConfigs / AlterConfigs resource_type)."""
    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs operations (KIP-339)."""
    SET = 0
    DELETE = 1
    APPEND = 2     # list configs only: add values not already there
    SUBTRACT = 3   # list configs only: remove values


def _invalid_config(exc: ValueError) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, str(exc))


class AdminManager:
    def __init__(self, broker):
        self.broker = broker

    @property
    def cache(self):
        return self.broker.metadata_cache

    # -- topics ------------------------------------------------------------------

    def validate_configs(self, configs: dict[str, str | None]) -> dict[str, str]:
        """Check a CreateTopics config set; return it normalised (as Kafka prints the values).

        INVALID_CONFIG names the config: an unknown name, a null value, a value that does
        not parse or is out of range, or a set that contradicts itself.
        """
        for name, value in configs.items():
            if value is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {name}")
        try:
            parsed = LogConfig.validate_overrides(configs)
        except ValueError as exc:
            raise _invalid_config(exc) from None
        return {name: to_string(value) for name, value in parsed.items()}

    def _check_assignments(self, assignments: dict[int, list[int]], first_partition: int = 0) -> int:
        """Validate explicit replica assignments (partition -> broker ids); return the replication factor."""
        live = {b[0] for b in self.broker.live_brokers}
        expected = list(range(first_partition, first_partition + len(assignments)))
        if sorted(assignments) != expected:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"Partitions should be a consecutive 0-based integer sequence, got "
                             f"{sorted(assignments)}" if first_partition == 0 else
                             f"Assignments must cover the new partitions {expected}, got {sorted(assignments)}")
        rfs = set()
        for index, replicas in sorted(assignments.items()):
            if not replicas:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Replica assignment of partition {index} is empty.")
            if len(set(replicas)) != len(replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Duplicate brokers not allowed in replica assignment: "
                                 f"{', '.join(map(str, replicas))} for partition id {index}.")
            unknown = sorted(set(replicas) - live)
            if unknown:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Unknown broker(s) in replica assignment of partition {index}: "
                                 f"{', '.join(map(str, unknown))}. Live brokers: {sorted(live)}.")
            rfs.add(len(replicas))
        if len(rfs) > 1:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "All partitions should have the same number of replicas.")
        return rfs.pop() if rfs else 0

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, validate_only: bool = False,
                     assignments: dict[int, list[int]] | None = None) -> TopicMetadata:
        """Create a topic (Kafka's checks, in Kafka's order); with ``validate_only`` only check.

        ``num_partitions``/``replication_factor`` of None or -1 take the broker's
        ``num.partitions`` / ``default.replication.factor`` (KIP-464). Explicit
        ``assignments`` (partition -> broker ids) replace both. Returns the topic (with
        ``validate_only``: what it would be, not registered, topic id all zeros).
        """
        validate_topic_name(name)
        if self.cache.get(name) is not None:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        self.cache.check_collision(name)
        cfg = self.broker.config
        if assignments:
            if num_partitions not in (None, -1) or replication_factor not in (None, -1):
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "Both numPartitions or replicationFactor and replicasAssignments were set. "
                                 "Both cannot be used at the same time.")
            rf = self._check_assignments(assignments)
            partitions = len(assignments)
        else:
            partitions = cfg["num.partitions"] if num_partitions in (None, -1) else num_partitions
            rf = cfg["default.replication.factor"] if replication_factor in (None, -1) else replication_factor
            if partitions <= 0:
                raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                                 "Number of partitions was set to an invalid non-positive value.")
            if rf <= 0:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 "Replication factor must be larger than 0, or -1 to use the default value.")
            if rf > self.broker.live_broker_count:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {rf} time(s): The target replication factor "
                                 f"of {rf} cannot be reached because only {self.broker.live_broker_count} "
                                 f"broker(s) are registered.")
        overrides = self.validate_configs(configs or {})
        if validate_only:
            return TopicMetadata(name, NULL_UUID, partitions, rf, overrides)
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

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata:
        topic = self.cache.by_id(topic_id)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, f"Topic id {topic_id} does not exist.")
        return topic

    def delete_topic(self, name: str) -> TopicMetadata:
        """Delete a topic: its partitions leave the ReplicaManager and their directories leave the disk.

        Kafka renames a deleted partition's directory to ``<topic>-<p>.<id>-delete`` and removes it
        ``file.delete.delay.ms`` later; the mini broker removes it at once.
        """
        if not self.broker.config["delete.topic.enable"]:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED,
                             "Topic deletion is disabled (delete.topic.enable=false).")
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if topic.is_internal:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Topic '{name}' is an internal topic; the mini broker does not delete it "
                             f"(its coordinator keeps state in it).")
        for index in range(topic.num_partitions):
            self.broker.replica_manager.remove_partition(name, index)
            self.broker.log_manager.delete_log(name, index)
            leftover = os.path.join(self.broker.log_dir, f"{name}-{index}")
            if os.path.isdir(leftover):  # a directory no log was opened for
                shutil.rmtree(leftover, ignore_errors=True)
        self.cache.remove(name)
        self.broker.topic_configs.pop(name, None)
        # Kafka's GroupCoordinator.handleDeletedPartitions: committed offsets of the topic go too
        self.broker.group_coordinator.delete_offsets_of_topic(name)
        return topic

    def create_partitions(self, name: str, count: int, validate_only: bool = False,
                          assignments: list[list[int]] | None = None) -> None:
        """Add partitions to a topic (never remove: INVALID_PARTITIONS; never to ``__consumer_offsets``).

        Keys hash to partitions modulo the partition count, so adding partitions moves
        keys: the reason Kafka never does it on its own.
        """
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if topic.is_internal:
            # a group's partition is its hash modulo the partition count: more partitions would move
            # groups away from the records that hold their offsets
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Topic '{name}' is an internal topic; the mini broker does not add partitions "
                             f"to it (its coordinator finds each group's records by the partition count).")
        old = topic.num_partitions
        if count < old:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {old} partitions, which is higher than the requested {count}.")
        if count == old:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
        if assignments is not None:
            if len(assignments) != count - old:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Increasing the number of partitions by {count - old} but {len(assignments)} "
                                 f"assignments provided.")
            self._check_assignments({old + i: a for i, a in enumerate(assignments)}, first_partition=old)
        if validate_only:
            return
        topic.num_partitions = count
        self.cache.save()
        for index in range(old, count):
            self.broker.make_partition(topic, index)

    # -- topic configs -----------------------------------------------------------

    def topic_for_configs(self, name: str) -> TopicMetadata:
        validate_topic_name(name)
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        return topic

    def _apply_topic_overrides(self, topic: TopicMetadata, overrides: dict[str, Any], validate_only: bool) -> None:
        """Validate the new complete override set; unless ``validate_only``, persist it and swap it
        into the live ``LogConfig`` (in place, so the topic's logs see it at their next read)."""
        try:
            parsed = LogConfig.validate_overrides(overrides)
        except ValueError as exc:
            raise _invalid_config(exc) from None
        if validate_only:
            return
        topic.configs = {name: to_string(value) for name, value in parsed.items()}
        self.cache.save()
        self.log_config(topic).replace(parsed)

    def alter_topic_configs(self, name: str, configs: dict[str, str | None], validate_only: bool = False) -> None:
        """AlterConfigs (the legacy API): ``configs`` becomes the topic's *whole* override set;
        an override left out goes back to its default. A null value means "no override"."""
        topic = self.topic_for_configs(name)
        for key in configs:
            if key not in TOPIC_CONFIGS:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
        self._apply_topic_overrides(topic, {k: v for k, v in configs.items() if v is not None}, validate_only)

    def incremental_alter_topic_configs(self, name: str, ops: Iterable[tuple[str, int, str | None]],
                                        validate_only: bool = False) -> None:
        """IncrementalAlterConfigs (KIP-339): apply SET / DELETE / APPEND / SUBTRACT to the current
        overrides, then validate the result as a whole (all or nothing)."""
        topic = self.topic_for_configs(name)
        log_config = self.log_config(topic)
        overrides: dict[str, Any] = dict(topic.configs)
        for key, op, value in ops:
            defn = TOPIC_CONFIGS.get(key)
            if defn is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {key}")
            try:
                op = AlterConfigOp(op)
            except ValueError:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation {op} for {key}") from None
            if op != AlterConfigOp.DELETE and value is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {key}")
            if op == AlterConfigOp.SET:
                overrides[key] = value
            elif op == AlterConfigOp.DELETE:
                overrides.pop(key, None)
            else:
                if defn.type != "list":
                    verb = "append" if op == AlterConfigOp.APPEND else "subtract"
                    raise KafkaError(ErrorCode.INVALID_CONFIG,
                                     f"Config value {verb} is not allowed for config key: {key}")
                current = overrides[key] if key in overrides else to_string(log_config[key])
                items = [v for v in str(current).split(",") if v]
                given = [v.strip() for v in value.split(",") if v.strip()]
                if op == AlterConfigOp.APPEND:
                    items += [v for v in given if v not in items]
                else:
                    items = [v for v in items if v not in given]
                overrides[key] = ",".join(items)
        self._apply_topic_overrides(topic, overrides, validate_only)

    def log_config(self, topic: TopicMetadata) -> LogConfig:
        return self.broker.log_config_for(topic)
