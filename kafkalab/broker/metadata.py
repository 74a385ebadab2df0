"""``MetadataCache``: the topics this broker knows, their ids, partitions and config overrides.

In a ZooKeeper-based Kafka cluster this lives in znodes (``/brokers/topics/<t>``
for the partition assignment, ``/config/topics/<t>`` for overrides) and each
broker keeps a cache of it. A standalone mini broker is its own source of
truth, so it keeps the same facts in ``<log.dirs>/kafkalab-topics.json``
(and, like Kafka since KIP-516, writes each partition directory's
``partition.metadata`` file with the topic id).

Topic names follow Kafka's rules (``org.apache.kafka.common.internals.Topic``).
"""
from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass, field

from .errors import ErrorCode, KafkaError

NULL_UUID = uuid.UUID(int=0)  # Kafka's Uuid.ZERO_UUID: "no topic id"
MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: "$" would let a trailing newline through
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
METADATA_FILE = "kafkalab-topics.json"


def validate_topic_name(name: str | None) -> None:
    """Raise INVALID_TOPIC_EXCEPTION with Kafka's reason if ``name`` is not a legal topic name."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic name \"{name}\" is illegal, it contains a character other than "
                         "ASCII alphanumerics, '.', '_' and '-'")


def unify_collision_chars(name: str) -> str:
    """Kafka treats '.' and '_' alike in metric names, so 'a.b' and 'a_b' collide."""
    return name.replace(".", "_")


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


class MetadataCache:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, METADATA_FILE)
        self.topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        if os.path.exists(self.path):
            with open(self.path) as f:
                for t in json.load(f)["topics"]:
                    self._put(TopicMetadata(t["name"], uuid.UUID(t["topic_id"]), t["num_partitions"],
                                            t.get("replication_factor", 1), t.get("configs", {})))

    def _put(self, t: TopicMetadata) -> None:
        self.topics[t.name] = t
        self._by_id[t.topic_id] = t

    def save(self) -> None:
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
        return t
