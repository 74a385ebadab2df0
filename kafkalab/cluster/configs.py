"""The configs a lab cluster gives every broker: :data:`LAB_DEFAULTS` and :func:`lab_configs`.

Kafka's defaults are tuned for production, where a broker is not declared dead
for many seconds; in a lab that is minutes of watching nothing happen. The lab
defaults make failures visible in seconds; each can be overridden
(``kafkalab.cluster(brokers=3, **{"zookeeper.session.timeout.ms": 18000})``),
and ``ExternalCluster.lab_defaults()`` checks them on a cluster kafkalab did not start.
"""
from __future__ import annotations

import os
from typing import Callable, NamedTuple

from .kafka_backend import KafkaBackend, MiniBackend


class LabDefault(NamedTuple):
    """A lab default: its value (or a function of the number of brokers), Kafka's default, and why."""
    value: object | Callable[[int], object]
    kafka_default: object
    why: str

    def for_brokers(self, n: int):
        return self.value(n) if callable(self.value) else self.value


#: The configs a lab cluster sets unless you give them (Kafka's default next to each). Documented in
#: docs/cluster.md; ``min.insync.replicas`` stays Kafka's 1.
LAB_DEFAULTS: dict[str, LabDefault] = {
    "zookeeper.session.timeout.ms": LabDefault(
        6000, 18000, "a killed broker leaves /brokers/ids after 6 s instead of 18 s"),
    "replica.lag.time.max.ms": LabDefault(
        5000, 30000, "a stuck follower leaves the ISR after 5 s instead of 30 s"),
    "leader.imbalance.check.interval.seconds": LabDefault(
        10, 300, "the controller checks the leader balance every 10 s instead of 5 min (leadership moves back "
        "when more than leader.imbalance.per.broker.percentage of a broker's preferred partitions are led elsewhere)"),
    "controlled.shutdown.retry.backoff.ms": LabDefault(
        500, 5000, "a controlled shutdown that has to retry finishes in seconds"),
    "group.initial.rebalance.delay.ms": LabDefault(
        0, 3000, "a consumer group's first rebalance starts at once"),
    "offsets.topic.replication.factor": LabDefault(
        lambda n: min(3, n), 3, "__consumer_offsets is replicated to min(3, N) brokers (3 would fail with N < 3)"),
    "default.replication.factor": LabDefault(
        lambda n: min(3, n), 1, "new topics are replicated (to min(3, N) brokers) unless asked otherwise"),
    "offsets.topic.num.partitions": LabDefault(
        5, 50, "__consumer_offsets has 5 partitions: quicker to create, and describe() fits on a screen"),
}


def lab_configs(n: int, backend: MiniBackend | KafkaBackend | None = None) -> dict[str, object]:
    """The lab defaults for a cluster of ``n`` brokers (as Kafka config name -> value)."""
    configs = {name: d.for_brokers(n) for name, d in LAB_DEFAULTS.items()}
    # both backends now have a transaction coordinator, and so both get its topic's lab defaults
    from .kafka_backend import KAFKA_ONLY_DEFAULTS
    configs.update({name: fn(n) for name, fn in KAFKA_ONLY_DEFAULTS.items()})
    return configs


#: the architecture of the clusters ``kafkalab.connect(brokers=N)`` and ``kafkalab.cluster()`` start when not
#: told: ``zookeeper`` (the default) or ``kraft`` (no ZooKeeper: a quorum of controllers holds the metadata)
MODE_ENV_VAR = "KAFKALAB_MODE"


def mode_from_env() -> str:
    """``$KAFKALAB_MODE``: ``zookeeper`` (the default) or ``kraft``; anything else is refused by name."""
    mode = os.environ.get(MODE_ENV_VAR, "").strip().lower() or "zookeeper"
    if mode not in ("zookeeper", "kraft"):
        raise ValueError(f"{MODE_ENV_VAR}={os.environ[MODE_ENV_VAR]!r}: set it to 'zookeeper' (the default) or 'kraft'")
    return mode
