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

In cluster mode (``zookeeper.connect`` set) this is Kafka's ``ZkAdminManager``:
the same validation, then the change is written to ZooKeeper through
``AdminZkClient`` (:mod:`kafkalab.broker.zk.admin_zk_client`) and the
controller acts on it. A new topic's replicas are spread over the
*registered* brokers; a replication factor larger than their number is
INVALID_REPLICATION_FACTOR. The CreateTopics, CreatePartitions and
DeleteTopics handlers then wait (up to the request's timeout) until this
broker's metadata cache shows the outcome (:meth:`AdminManager.wait_for_metadata`,
Kafka's ``DelayedCreatePartitions`` / ``DelayedDeleteTopics``).

Limits (docs/differences.md, "Partition limits"): one request may add at most ``max.partitions.per.request``
partitions (Kafka's KRaft controller refuses more than 10,000 records per operation with
POLICY_VIOLATION), and a standalone broker hosts at most ``max.broker.partitions`` (KIP-578's name;
never more than its open-file limit allows: each partition keeps ~3 files open). Both are checked
with everything else, before anything is written. The standalone broker then creates the
partitions' files a few at a time, yielding to the event loop in between
(``create_topic_async`` / ``create_partitions_async``), and saves the topic's metadata only once
every partition exists: a creation that fails is rolled back, one that is interrupted leaves
directories no metadata names, which the next creation of that name deletes first.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import os
import resource
import shutil
import uuid
from typing import Any, Iterable

from ..utils.async_util import wait_done
from .config import ALL_TOPIC_CONFIGS, LogConfig, to_string
from ..common.errors import ErrorCode, KafkaError
from ..common.topic import validate_topic_name
from .metadata_cache import NULL_UUID, TopicMetadata
from ..zk.admin_zk_client import AdminZkClient

log = logging.getLogger(__name__)

#: partitions created between two yields to the event loop
PARTITIONS_PER_SLICE = 8
#: descriptors kept free for connections and everything else when the open-file limit caps partitions
RESERVED_FDS = 256
FILES_PER_PARTITION = 3



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
        self._metadata_waiters: set[asyncio.Future] = set()
        #: standalone: topics whose partitions are being created (name -> partitions on the way)
        self._creating: dict[str, int] = {}

    @property
    def cache(self):
        return self.broker.metadata_cache

    @property
    def in_cluster(self) -> bool:
        return self.broker.in_cluster

    @property
    def admin_zk(self):
        return AdminZkClient(self.broker.zk_client)

    # -- cluster mode: waiting for the controller's outcome (Kafka's delayed topic operations) -------

    def metadata_updated(self) -> None:
        """UpdateMetadata changed the cache: wake the requests waiting for it."""
        for fut in self._metadata_waiters:
            if not fut.done():
                fut.set_result(None)
        self._metadata_waiters.clear()

    async def wait_for_metadata(self, done, timeout_ms: int) -> bool:
        """Wait until ``done()`` is true, checked after each UpdateMetadata, for up to ``timeout_ms``;
        return whether it became true."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(timeout_ms, 0) / 1000
        while not done():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            fut = loop.create_future()
            self._metadata_waiters.add(fut)
            try:   # (not asyncio.wait_for: it can lose a cancellation, see async_util)
                await wait_done(fut, remaining)
            finally:
                self._metadata_waiters.discard(fut)
        return True

    def partitions_have_leaders(self, name: str, count: int | None = None) -> bool:
        """Kafka's DelayedCreatePartitions condition: the cache knows the topic and every partition
        (of the first ``count``) has a leader."""
        topic = self.cache.get(name)
        if topic is None:
            return False
        n = topic.num_partitions if count is None else count
        if topic.num_partitions < n:
            return False
        return all((st := self.cache.partition_state(name, p)) is not None and st.leader >= 0 for p in range(n))

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
        live = (set(self.admin_zk.registered_broker_ids()) if self.in_cluster
                else {b[0] for b in self.broker.live_brokers})
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

    # -- limits ---------------------------------------------------------------------

    def broker_partition_limit(self) -> int:
        """``max.broker.partitions``, lowered to what the process's open-file limit can hold."""
        cap = self.broker.config["max.broker.partitions"]
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY:
            cap = min(cap, max(0, (soft - RESERVED_FDS) // FILES_PER_PARTITION))
        return cap

    def check_partition_limits(self, new: int, request_state: dict | None = None) -> None:
        """POLICY_VIOLATION if ``new`` more partitions (plus those the same request already added,
        kept in ``request_state``) pass ``max.partitions.per.request`` or ``max.broker.partitions``."""
        per_request = self.broker.config["max.partitions.per.request"]
        in_request = new + (request_state or {}).get("partitions", 0)
        if in_request > per_request:
            raise KafkaError(ErrorCode.POLICY_VIOLATION,
                             f"Excessively large number of partitions per request: {in_request} > "
                             f"max.partitions.per.request={per_request}.")
        if not self.in_cluster:   # in a cluster the partitions are spread; the controller places them
            hosted = sum(t.num_partitions for t in self.cache.topics.values()) + sum(self._creating.values())
            cap = self.broker_partition_limit()
            if hosted + new > cap:
                raise KafkaError(ErrorCode.POLICY_VIOLATION,
                                 f"Adding {new} partitions would make {hosted + new} on this broker, over "
                                 f"max.broker.partitions={cap} (lowered to fit the open-file limit, if smaller).")
        if request_state is not None:
            request_state["partitions"] = in_request

    async def create_topic_async(self, *args, request_state: dict | None = None, **kwargs) -> TopicMetadata:
        """``create_topic`` for request handlers: the files of a standalone broker's new partitions are
        created a slice at a time, so other clients are served meanwhile."""
        return await self._sliced(self.create_topic, args, dict(kwargs, request_state=request_state))

    async def create_partitions_async(self, *args, request_state: dict | None = None, **kwargs) -> None:
        await self._sliced(self.create_partitions, args, dict(kwargs, request_state=request_state))

    async def _sliced(self, method, args, kwargs):
        plan = method(*args, **kwargs, _plan_only=True)
        if not isinstance(plan, _Plan):
            return plan   # validate_only, cluster mode: nothing to create here
        made = []
        try:
            for index in plan.indexes:
                made.append(self._make_partition_afresh(plan.topic, index))
                if len(made) % PARTITIONS_PER_SLICE == 0:
                    await asyncio.sleep(0)
        except BaseException as exc:
            self._undo(plan.topic.name, made)
            self._creating.pop(plan.topic.name, None)
            if isinstance(exc, OSError):
                log.warning("creating partitions of %s failed and was rolled back: %s", plan.topic.name, exc)
                raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"Creating the partitions of {plan.topic.name} failed: {exc}") from None
            raise
        self._creating.pop(plan.topic.name, None)
        return plan.commit()

    def _carry_out(self, plan: _Plan):
        """Make every partition of ``plan`` in one go, then commit it; roll back if one fails."""
        made = []
        try:
            for index in plan.indexes:
                made.append(self._make_partition_afresh(plan.topic, index))
        except BaseException:
            self._undo(plan.topic.name, made)
            raise
        return plan.commit()

    def _make_partition_afresh(self, topic: TopicMetadata, index: int):
        """A new partition; a directory left by an interrupted creation (no metadata names it) goes first."""
        leftover = os.path.join(self.broker.log_dir, f"{topic.name}-{index}")
        if (topic.name, index) not in self.broker.replica_manager.partitions and os.path.isdir(leftover):
            self.broker.log_manager.delete_log(topic.name, index)
            shutil.rmtree(leftover, ignore_errors=True)
        return self.broker.make_partition(topic, index)

    def _undo(self, name: str, made) -> None:
        """Roll back a failed creation: the partitions made so far and their directories go."""
        for partition in made:
            self.broker.replica_manager.remove_partition(name, partition.index)
            self.broker.log_manager.delete_log(name, partition.index)

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict[str, str] | None = None, validate_only: bool = False,
                     assignments: dict[int, list[int]] | None = None, request_state: dict | None = None,
                     _plan_only: bool = False) -> TopicMetadata:
        """Create a topic (Kafka's checks, in Kafka's order); with ``validate_only`` only check.

        ``num_partitions``/``replication_factor`` of None or -1 take the broker's
        ``num.partitions`` / ``default.replication.factor`` (KIP-464). Explicit
        ``assignments`` (partition -> broker ids) replace both. Returns the topic (with
        ``validate_only``: what it would be, not registered, topic id all zeros).
        """
        validate_topic_name(name)
        if self.in_cluster:
            self.admin_zk.validate_topic_create(name)   # ZooKeeper knows the topics, not the cache
        else:
            if self.cache.get(name) is not None or name in self._creating:
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
            brokers = (len(self.admin_zk.registered_broker_ids()) if self.in_cluster
                       else self.broker.live_broker_count)
            if rf > brokers:
                raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                                 f"Unable to replicate the partition {rf} time(s): The target replication factor "
                                 f"of {rf} cannot be reached because only {brokers} "
                                 f"broker(s) are registered.")
        overrides = self.validate_configs(configs or {})
        self.check_partition_limits(partitions, request_state)
        if validate_only:
            return TopicMetadata(name, NULL_UUID, partitions, rf, overrides)
        if self.in_cluster:
            if not assignments:
                assignments = self.admin_zk.assign_replicas(partitions, rf)
            topic_id = self.admin_zk.create_topic_with_assignment(name, overrides, assignments)
            return TopicMetadata(name, topic_id, partitions, rf, overrides)
        # the partitions first, the metadata once they all exist (a restart never finds a topic half made)
        topic = TopicMetadata(name, uuid.uuid4(), partitions, rf, dict(overrides))
        self.broker.topic_configs.pop(name, None)   # nothing left from an earlier topic of this name

        def commit():
            self.cache._put(topic)
            self.cache.save()
            return topic
        plan = _Plan(topic, range(partitions), commit)
        if _plan_only:
            self._creating[name] = partitions
            return plan
        return self._carry_out(plan)

    def maybe_auto_create(self, name: str) -> TopicMetadata | None:
        """Metadata for an unknown topic creates it when ``auto.create.topics.enable`` is on."""
        topic = self.cache.get(name)
        if topic is None and name not in self._creating and self.broker.config["auto.create.topics.enable"]:
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
        if self.in_cluster:  # the controller deletes the replicas; every broker hears it by UpdateMetadata
            self.admin_zk.delete_topic(name)
            return topic
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
                          assignments: list[list[int]] | None = None, request_state: dict | None = None,
                          _plan_only: bool = False):
        """Add partitions to a topic (never remove: INVALID_PARTITIONS; never to ``__consumer_offsets``).

        Keys hash to partitions modulo the partition count, so adding partitions moves
        keys: the reason Kafka never does it on its own.
        """
        topic = self.cache.get(name)
        if topic is None and self.in_cluster and self.broker.zk_client.topic_exists(name):
            assignment = self.broker.zk_client.get_topic_assignment(name)
            topic = TopicMetadata(name, assignment.topic_id or NULL_UUID, len(assignment.partitions))
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if name in self._creating:
            raise KafkaError(ErrorCode.REASSIGNMENT_IN_PROGRESS, f"Partitions of '{name}' are being created.")
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
        self.check_partition_limits(count - old, request_state)
        if self.in_cluster:
            self.admin_zk.add_partitions(name, count, assignments, validate_only)
            return
        if validate_only:
            return

        def commit():   # the new count is saved only once its partitions exist
            topic.num_partitions = count
            self.cache.save()
        plan = _Plan(topic, range(old, count), commit)
        if _plan_only:
            self._creating[name] = count - old
            return plan
        self._carry_out(plan)

    # -- topic configs -----------------------------------------------------------

    def topic_for_configs(self, name: str) -> TopicMetadata:
        validate_topic_name(name)
        topic = self.cache.get(name)
        if self.in_cluster:  # ZooKeeper holds the topic and its current overrides
            if not self.broker.zk_client.topic_exists(name):
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
            current = self.admin_zk.fetch_topic_config(name)
            if topic is None:
                return TopicMetadata(name, NULL_UUID, 0, 1, current)
            topic.configs = current
            return topic
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
        if self.in_cluster:
            # /config/topics/<t>, then a notification every broker (this one too) acts on; applied here
            # at once as well, so that a DescribeConfigs right after sees it
            strings = {name: to_string(value) for name, value in parsed.items()}
            self.admin_zk.change_topic_config(topic.name, strings)
            self.broker.apply_topic_config_change(topic.name, strings)
            return
        topic.configs = {name: to_string(value) for name, value in parsed.items()}
        self.cache.save()
        self.log_config(topic).replace(parsed)

    def alter_topic_configs(self, name: str, configs: dict[str, str | None], validate_only: bool = False) -> None:
        """AlterConfigs (the legacy API): ``configs`` becomes the topic's *whole* override set;
        an override left out goes back to its default. A null value means "no override"."""
        topic = self.topic_for_configs(name)
        for key in configs:
            if key not in ALL_TOPIC_CONFIGS:
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
            defn = ALL_TOPIC_CONFIGS.get(key)
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


class _Plan:
    """Partitions to create for ``topic``, and what to save once they all exist."""

    def __init__(self, topic: TopicMetadata, indexes: range, commit):
        self.topic = topic
        self.indexes = indexes
        self.commit = commit
