"""Coordinators: consumer groups (``GroupCoordinator``) and producer ids (``ProducerIdManager``)."""
from __future__ import annotations

from .group.group_coordinator import GroupCoordinator
from .transaction.producer_id_manager import ProducerIdManager, ZkProducerIdManager


def make_coordinators(broker) -> tuple[GroupCoordinator, ProducerIdManager | ZkProducerIdManager]:
    if getattr(broker, "zk_mode", False):
        return GroupCoordinator(broker), ZkProducerIdManager(broker)
    return GroupCoordinator(broker), ProducerIdManager(broker.log_dir)
