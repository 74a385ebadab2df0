"""``MetadataMode``: where a broker's metadata comes from (part of the ``KafkaBroker`` contract,
:mod:`kafkalab.broker.server.kafka_broker`, which re-exports it; here in a module that imports nothing,
so that the parts the contract names, the metadata cache among them, can use it)."""
from __future__ import annotations

import enum


class MetadataMode(enum.Enum):
    """Where a broker's metadata (topics, partitions, leaders, live brokers) comes from."""

    #: kafkalab's own: a lone broker is its own source of truth and keeps its topics in
    #: ``<log.dirs>/kafkalab-topics.json`` (the notebook broker, :mod:`kafkalab.broker.mini`).
    #: Not a Kafka mode: every Kafka broker has a controller.
    STANDALONE = "standalone"
    #: ZooKeeper holds the metadata; the controller (one of the brokers) tells the others with
    #: LeaderAndIsr and UpdateMetadata (Kafka's ``KafkaServer``, ``zookeeper.connect``).
    ZOOKEEPER = "zookeeper"
    #: The controller quorum's ``__cluster_metadata`` log; the broker reads it (Kafka's ``BrokerServer``).
    KRAFT = "kraft"
