"""Coordinators: consumer groups (``GroupCoordinator``), producer ids (``ProducerIdManager``) and
transactions (``TransactionCoordinator``)."""
from __future__ import annotations

from .group.group_coordinator import GroupCoordinator
from .transaction.producer_id_manager import ProducerIdManager, ZkProducerIdManager
from .transaction.transaction_coordinator import TransactionCoordinator


def make_coordinators(broker) -> tuple[GroupCoordinator, ProducerIdManager | ZkProducerIdManager]:
    if getattr(broker, "make_producer_id_manager", None) is not None:   # a KRaft broker (kafkalab.kraft)
        return GroupCoordinator(broker), broker.make_producer_id_manager()
    if getattr(broker, "zk_mode", False):
        return GroupCoordinator(broker), ZkProducerIdManager(broker)
    return GroupCoordinator(broker), ProducerIdManager(broker.log_dir)


def make_transaction_coordinator(broker) -> TransactionCoordinator:
    """The transaction coordinator (in cluster mode, of the ``__transaction_state`` partitions the
    broker leads)."""
    return TransactionCoordinator(broker)


def make_share_partition_manager(broker):
    """KIP-932: the share coordinator (``broker.share_coordinator``: the states in the ``__share_group_state``
    partitions this broker leads), and the share-partitions this broker leads with their share sessions."""
    from ..server.share.persister import SharePersister
    from ..server.share.share_partition_manager import SharePartitionManager
    from .share.share_coordinator import ShareCoordinator
    coordinator = broker.share_coordinator = ShareCoordinator(broker)
    coordinator.start()
    manager = SharePartitionManager(broker, persister=SharePersister(broker, coordinator))
    if getattr(broker, "zk_mode", False):
        if getattr(broker, "zk_client", None) is not None:   # a KRaft broker (kafkalab.kraft) has no ZooKeeper
            manager.load_zk_group_configs()
        broker.replica_manager.leadership_listeners.append(manager.on_leadership_change)
    return manager
