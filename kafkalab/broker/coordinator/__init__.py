"""Coordinators: consumer groups (``GroupCoordinator``) and producer ids (``ProducerIdManager``)."""
from __future__ import annotations

from .producer_id_manager import ProducerIdManager


def make_coordinators(broker):
    try:
        from .group_coordinator import GroupCoordinator
    except ImportError:  # not built yet
        group = None
    else:
        group = GroupCoordinator(broker)
    return group, ProducerIdManager(broker.log_dir)
