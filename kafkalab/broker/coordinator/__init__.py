"""Coordinators: consumer groups (``GroupCoordinator``) and producer ids (``ProducerIdManager``)."""
from __future__ import annotations

from .group_coordinator import GroupCoordinator
from .producer_id_manager import ProducerIdManager


def make_coordinators(broker) -> tuple[GroupCoordinator, ProducerIdManager]:
    return GroupCoordinator(broker), ProducerIdManager(broker.log_dir)
