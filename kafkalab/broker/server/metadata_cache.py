"""``MetadataCache``: the topics this broker knows, their ids, partitions and config overrides.

In a ZooKeeper-based Kafka cluster this lives in znodes (``/brokers/topics/<t>``
for the partition assignment, ``/config/topics/<t>`` for overrides) and each
broker keeps a cache of it. A standalone mini broker is its own source of
truth, so it keeps the same facts in ``<log.dirs>/kafkalab-topics.json``
(and, like Kafka since KIP-516, writes each partition directory's
``partition.metadata`` file with the topic id).

In cluster mode (``zookeeper.connect`` set) ZooKeeper is the source of truth
and this is Kafka's ``ZkMetadataCache``: nothing is saved to the JSON file;
the controller's UpdateMetadata requests fill it (:meth:`MetadataCache.update_metadata`)
with the live brokers and their endpoints, the controller id, and every
partition's leader, leader epoch, ISR, replicas and offline replicas. A
broker answers Metadata, FindCoordinator and DescribeCluster from it, so two
brokers may briefly disagree until the controller's update reaches both.
Topic config overrides come from ``/config/topics/<t>`` and are refreshed
when a change notification appears under ``/config/changes``.

Topic names follow Kafka's rules (``org.apache.kafka.common.internals.Topic``: :mod:`kafkalab.broker.common.topic`).
"""
from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field

from ..common.errors import ErrorCode, KafkaError
from ..common.topic import INTERNAL_TOPICS, unify_collision_chars
from ..cluster.partition_state import LeaderAndIsrPartitionState
from .broker_features import FinalizedFeatures
from .metadata_mode import MetadataMode

log = logging.getLogger(__name__)

NULL_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: "no topic id"
METADATA_FILE = "kafkalab-topics.json"
#: UpdateMetadata's leader of a partition whose topic is being deleted (Kafka's LeaderAndIsr.LeaderDuringDelete)
LEADER_DURING_DELETE = -2


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)  # overrides, as strings

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass
class BrokerEndpoint:
    """A live broker as UpdateMetadata describes it (Kafka's ``UpdateMetadataBroker``): ``host``/``port`` are the
    endpoint other brokers use (its inter-broker listener's), ``listeners`` every advertised endpoint by listener
    name (empty: only ``host``/``port`` are known, and they serve every listener)."""
    id: int
    host: str
    port: int
    rack: str | None = None
    listeners: dict[str, tuple[str, int]] = field(default_factory=dict)

    def for_listener(self, listener_name: str) -> "BrokerEndpoint | None":
        """This broker as a client of ``listener_name`` must reach it (Kafka's ``getAliveBrokerNode(id,
        listenerName)``); None if it has no such listener."""
        if not self.listeners:
            return self
        endpoint = self.listeners.get(listener_name)
        if endpoint is None:
            return None
        return BrokerEndpoint(self.id, endpoint[0], endpoint[1], self.rack, self.listeners)


class MetadataCache:
    def __init__(self, log_dir: str, mode: MetadataMode = MetadataMode.STANDALONE):
        self.path = os.path.join(log_dir, METADATA_FILE)
        #: STANDALONE: this cache is the source of truth, kept in ``METADATA_FILE``; else a controller's copy
        self.mode = mode
        self.topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        # -- cluster mode: what the controller's UpdateMetadata said --------------
        #: topic -> partition -> its state (leader, leader epoch, ISR, replicas, offline replicas)
        self.partition_states: dict[str, dict[int, LeaderAndIsrPartitionState]] = {}
        self.alive_brokers: dict[int, BrokerEndpoint] = {}
        self.controller_id: int | None = None
        #: KRaft: the finalized feature levels of the metadata image (Kafka's ``MetadataCache.features``)
        self.features = FinalizedFeatures()
        if mode is MetadataMode.STANDALONE and os.path.exists(self.path):
            with open(self.path) as f:
                for t in json.load(f)["topics"]:
                    self._put(TopicMetadata(t["name"], uuid.UUID(t["topic_id"]), t["num_partitions"],
                                            t.get("replication_factor", 1), t.get("configs", {})))

    def _put(self, t: TopicMetadata) -> None:
        self.topics[t.name] = t
        self._by_id[t.topic_id] = t

    def save(self) -> None:
        if self.mode is not MetadataMode.STANDALONE:
            return  # ZooKeeper (or the KRaft metadata log) is the source of truth; nothing to keep on disk
        data = {"version": 1, "topics": [
            {"name": t.name, "topic_id": str(t.topic_id), "num_partitions": t.num_partitions,
             "replication_factor": t.replication_factor, "configs": t.configs}
            for t in self.topics.values()]}
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, self.path)

    def get(self, name: str) -> TopicMetadata | None:
        return self.topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def check_collision(self, name: str) -> None:
        unified = unify_collision_chars(name)
        for other in self.topics:
            if other != name and unify_collision_chars(other) == unified:
                raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                 f"Topic '{name}' collides with existing topic: {other}")

    def add(self, name: str, num_partitions: int, replication_factor: int = 1,
            configs: dict[str, str] | None = None) -> TopicMetadata:
        t = TopicMetadata(name, uuid.uuid4(), num_partitions, replication_factor, dict(configs or {}))
        self._put(t)
        self.save()
        return t

    def remove(self, name: str) -> TopicMetadata | None:
        t = self.topics.pop(name, None)
        if t is not None:
            self._by_id.pop(t.topic_id, None)
            self.save()
        self.partition_states.pop(name, None)
        return t

    # -- cluster mode (Kafka's ZkMetadataCache) ---------------------------------------

    def ensure_topic(self, name: str, topic_id: uuid.UUID, num_partitions: int = 0,
                     configs: dict[str, str] | None = None) -> TopicMetadata:
        """The cache's entry for ``name``, created (or replaced, if the topic was re-created under a new
        id) as needed; never shrinks the partition count."""
        t = self.topics.get(name)
        if t is not None and t.topic_id != topic_id and topic_id != NULL_UUID:
            self._by_id.pop(t.topic_id, None)
            self.partition_states.pop(name, None)
            t = None
        if t is None:
            t = TopicMetadata(name, topic_id, num_partitions, 1, dict(configs or {}))
            self._put(t)
        t.num_partitions = max(t.num_partitions, num_partitions)
        return t

    def update_metadata(self, controller_id: int,
                        topic_states: list[tuple[str, uuid.UUID, list[LeaderAndIsrPartitionState]]],
                        live_brokers: list[BrokerEndpoint]) -> tuple[list[str], list[tuple[str, int]]]:
        """Apply an UpdateMetadata request (Kafka's ``ZkMetadataCache.updateMetadata``).

        The live brokers are replaced as a whole; partition states are added or replaced one by one,
        and a partition whose leader is -2 (its topic is being deleted) leaves the cache, with its
        topic once no partition is left. Returns the topics new to the cache and the partitions removed.
        """
        self.controller_id = controller_id if controller_id >= 0 else None
        self.alive_brokers = {b.id: b for b in live_brokers}
        new_topics, deleted = [], []
        for name, topic_id, states in topic_states:
            for state in states:
                if state.leader == LEADER_DURING_DELETE:
                    if self.partition_states.get(name, {}).pop(state.partition, None) is not None:
                        deleted.append((name, state.partition))
                    continue
                known = self.topics.get(name)
                if known is None or (topic_id != NULL_UUID and known.topic_id != topic_id):
                    new_topics.append(name)
                topic = self.ensure_topic(name, topic_id, state.partition + 1)
                self.partition_states.setdefault(name, {})[state.partition] = state
                if state.partition == 0:
                    topic.replication_factor = len(state.replicas)
            if name in self.topics and not self.partition_states.get(name) and any(
                    s.leader == LEADER_DURING_DELETE for s in states):
                self.remove(name)
        return list(dict.fromkeys(new_topics)), deleted

    def partition_state(self, topic: str, partition: int) -> LeaderAndIsrPartitionState | None:
        return self.partition_states.get(topic, {}).get(partition)

    def alive_broker(self, broker_id: int) -> BrokerEndpoint | None:
        return self.alive_brokers.get(broker_id)

    def leader_endpoint(self, topic: str, partition: int) -> BrokerEndpoint | None:
        """The live broker leading the partition, or None (no leader, or the leader is not alive)."""
        state = self.partition_state(topic, partition)
        return None if state is None else self.alive_brokers.get(state.leader)


class ConfigChangeListener:
    """Topic config changes reaching every broker (Kafka's ``ZkNodeChangeNotificationListener`` driving
    the ``DynamicConfigManager``, for topics and client quotas).

    Whoever changes a topic's overrides writes ``/config/topics/<t>`` and then a sequential
    ``/config/changes/config_change_<seq>`` saying ``{"entity_path": "topics/<t>"}``. Every broker
    watches the children of ``/config/changes``; for each notification newer than the last it handled,
    it reads ``/config/topics/<t>`` again and swaps the overrides into the topic's live ``LogConfig``
    (``KafkaBroker.apply_topic_config_change``). At start it handles the notifications already there,
    which only re-reads configs. Notifications older than 15 minutes are deleted (Kafka's
    ``changeExpirationMs``), so the list does not grow forever.
    """

    CHANGE_EXPIRATION_MS = 15 * 60 * 1000

    def __init__(self, broker):
        self.broker = broker
        self.last_executed = ""   # sequential names sort in creation order (10-digit, zero-padded)
        self._stopped = False
        self._scheduled = False

    def start(self) -> None:
        self.broker.zk_client.watch_config_changes(self._on_children)

    def stop(self) -> None:
        self._stopped = True

    def _on_children(self, children) -> bool | None:
        """kazoo's ChildrenWatch callback, on kazoo's thread: process on the broker's loop."""
        if self._stopped:
            return False  # kazoo: stop watching
        loop = self.broker.loop
        if loop is not None and not loop.is_closed() and not self._scheduled:
            self._scheduled = True
            loop.call_soon_threadsafe(self.process_notifications)
        return None

    def process_notifications(self) -> None:
        self._scheduled = False
        zk = self.broker.zk_client
        if self._stopped or zk is None:
            return
        try:
            names = zk.get_config_change_notifications()
            now_ms = int(time.time() * 1000)
            changed: list[str] = []
            quotas_changed = False
            for name in names:
                if name <= self.last_executed:
                    continue
                entity, ctime = zk.get_config_change(name)
                if entity and entity.startswith("topics/"):
                    topic = entity[len("topics/"):]
                    if topic not in changed:
                        changed.append(topic)
                elif entity and entity.startswith(("clients/", "users/")):   # client quotas: reload them
                    quotas_changed = True
                elif entity and entity.startswith("groups/"):   # KIP-932 group configs (share.auto.offset.reset)
                    shares = self.broker.share_partition_manager
                    if shares is not None:
                        shares.load_zk_group_configs(entity[len("groups/"):])
                self.last_executed = name
                if ctime and now_ms - ctime > self.CHANGE_EXPIRATION_MS:
                    zk.delete_config_change_notification(name)
            for topic in changed:
                self.broker.apply_topic_config_change(topic, zk.get_topic_config(topic))
            if quotas_changed:
                self.broker.quotas.load_zk()
                self.broker.credential_provider.load_zk()   # SCRAM credentials live in /config/users/<user> too
        except Exception:  # ZooKeeper unreachable for a moment: the next notification retries
            log.exception("broker %d: processing config change notifications failed", self.broker.broker_id)
