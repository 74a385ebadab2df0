"""Share groups (KIP-932, Kafka 4): a group that starts at the earliest offset, and a consumer that acknowledges.

Lesson 09 and lab 09 create many share groups and consumers the same way:

* :func:`share_group` sets the group config ``share.auto.offset.reset=earliest`` (IncrementalAlterConfigs
  on the GROUP resource) before the group first reads — a new share group otherwise starts at the
  *latest* offset, and would see none of the records produced before it;
* :func:`share_consumer` is confluent-kafka's ``ShareConsumer`` with ``share.acknowledgement.mode=explicit``
  (every record is acknowledged with ``consumer.acknowledge(message, AcknowledgeType...)``), subscribed
  to one topic, logging errors only (librdkafka warns at every start that its share consumer is a
  "Preview").
"""
from __future__ import annotations

from .reading import client_config


def share_group(admin, name: str) -> str:
    """Make share group ``name`` start at the earliest offset (``share.auto.offset.reset``); return ``name``.

    ``admin``: a confluent-kafka ``AdminClient``.
    """
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.GROUP, name, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    return name


def share_consumer(kafka, group: str, topic: str, **config):
    """A ``ShareConsumer`` in ``group``, acknowledging explicitly, subscribed to ``topic``; ``config``: more configs."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({**client_config(kafka, group_id=group, share_acknowledgement_mode="explicit", **config),
                              "log_level": 3})
    consumer.subscribe([topic])
    return consumer
