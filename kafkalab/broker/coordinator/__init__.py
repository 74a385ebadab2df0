"""Coordinators: consumer groups (``GroupCoordinator``), producer ids (``ProducerIdManager``) and
transactions (``TransactionCoordinator``)."""
from __future__ import annotations

from .group.group_coordinator import GroupCoordinator
from .transaction.producer_id_manager import ProducerIdManager, ZkProducerIdManager
from .transaction.transaction_coordinator import TransactionCoordinator


def make_coordinators(broker) -> tuple[GroupCoordinator, ProducerIdManager | ZkProducerIdManager]:
    if getattr(broker, "zk_mode", False):
        return GroupCoordinator(broker), ZkProducerIdManager(broker)
    return GroupCoordinator(broker), ProducerIdManager(broker.log_dir)


def make_transaction_coordinator(broker) -> TransactionCoordinator:
    """The transaction coordinator (in cluster mode, of the ``__transaction_state`` partitions the
    broker leads)."""
    return TransactionCoordinator(broker)


def make_share_partition_manager(broker):
    """KIP-932: the share-partitions this broker leads, their share sessions (and, standalone, the share
    coordinator keeping their state in ``__share_group_state``)."""
    from ..server.share.share_partition_manager import SharePartitionManager
    from .share.share_coordinator import ShareCoordinator
    if getattr(broker, "zk_mode", False):    # cluster mode: the share-partitions' state is kept in memory only
        manager = SharePartitionManager(broker)
        manager.load_zk_group_configs()
        return manager
    coordinator = ShareCoordinator(broker)
    coordinator.load()
    return SharePartitionManager(broker, persister=coordinator)
