"""Clusters: a real ZooKeeper and several broker processes behind one ``Cluster`` API.

``kafkalab.cluster(brokers=3, dir=None, backend="mini", **broker_configs)`` starts
one and returns a :class:`Cluster` (see :mod:`kafkalab.cluster.cluster`)::

    with kafkalab.cluster(brokers=3) as c:
        c.kill(c.controller)

``kafkalab.cluster`` is this package *and* that function: the package's
module object is callable, so ``kafkalab.cluster(...)`` starts a cluster while
``kafkalab.cluster.zookeeper`` and the other modules stay reachable.

Modules: ``cluster`` (Cluster: start, attach, close, ``cluster.json``), and
what it is made of: ``configs`` (LAB_DEFAULTS), ``inspection`` (brokers,
controller, describe, zk), ``lifecycle`` (start, kill, stop, restart, pause,
resume a broker), ``fault_controls`` (lab faults), ``resources`` (the
processes a cluster owns, and how they are stopped); ``zookeeper``
(ZooKeeperServer), ``kafka_backend`` (mini brokers or Apache Kafka's),
``distribution`` (``kafkalab fetch-kafka``: Apache Kafka's jars, fetched into a cache),
``kraft``, ``kraft_config`` and ``quorum`` (``mode="kraft"``: Kafka 4.x without ZooKeeper, read with
DescribeQuorum), ``mini_kraft`` (the same with Python controllers and mini brokers), ``raft_quorum``
(mini KRaft controllers alone), ``offsets`` (ListOffsets for ``describe``), ``processes`` and ``watchdog`` (no
child outlives its owner), ``supervisor`` (the cluster ``kafkalab up`` leaves
running), ``external``, ``external_controls``, ``kafka_requests`` and
``docker_api`` (a cluster kafkalab did not start, e.g. the workshop's compose one).
"""
import sys
import types

from .cluster import Cluster, cluster
from .configs import LAB_DEFAULTS, LabDefault, lab_configs
from .inspection import ZooKeeperUnavailable
from .kafka_backend import KafkaBackend, KafkaDistributionError, MiniBackend
from .zookeeper import ZooKeeperNotFound, ZooKeeperServer

__all__ = ["cluster", "Cluster", "LAB_DEFAULTS", "LabDefault", "lab_configs", "ZooKeeperServer",
           "ZooKeeperNotFound", "ZooKeeperUnavailable", "KafkaBackend", "MiniBackend", "KafkaDistributionError"]


class _CallableModule(types.ModuleType):
    """``kafkalab.cluster(brokers=3)`` calls :func:`cluster`."""

    def __call__(self, *args, **kwargs) -> Cluster:
        return cluster(*args, **kwargs)

    __call__.__doc__ = cluster.__doc__


sys.modules[__name__].__class__ = _CallableModule
