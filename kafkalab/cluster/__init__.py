"""Clusters: a real ZooKeeper and several broker processes behind one ``Cluster`` API.

``kafkalab.cluster(brokers=3, dir=None, backend="mini", **broker_configs)`` starts
one and returns a :class:`Cluster` (see :mod:`kafkalab.cluster.cluster`)::

    with kafkalab.cluster(brokers=3) as c:
        c.kill(c.controller)

``kafkalab.cluster`` is this package *and* that function: the package's
module object is callable, so ``kafkalab.cluster(...)`` starts a cluster while
``kafkalab.cluster.zookeeper`` and the other modules stay reachable.

Modules: ``cluster`` (Cluster, LAB_DEFAULTS), ``zookeeper`` (ZooKeeperServer),
``kafka_backend`` (mini brokers or Apache Kafka's), ``offsets`` (ListOffsets
for ``describe``), ``processes`` and ``watchdog`` (no child outlives its owner).
"""
import sys
import types

from .cluster import LAB_DEFAULTS, Cluster, LabDefault, ZooKeeperUnavailable, cluster, lab_configs
from .kafka_backend import KafkaBackend, KafkaDistributionError, MiniBackend
from .zookeeper import ZooKeeperNotFound, ZooKeeperServer

__all__ = ["cluster", "Cluster", "LAB_DEFAULTS", "LabDefault", "lab_configs", "ZooKeeperServer",
           "ZooKeeperNotFound", "ZooKeeperUnavailable", "KafkaBackend", "MiniBackend", "KafkaDistributionError"]


class _CallableModule(types.ModuleType):
    """``kafkalab.cluster(brokers=3)`` calls :func:`cluster`."""

    def __call__(self, brokers: int = 3, dir: str | None = None, backend: str = "mini", **broker_configs) -> Cluster:
        return cluster(brokers, dir, backend, **broker_configs)


sys.modules[__name__].__class__ = _CallableModule
