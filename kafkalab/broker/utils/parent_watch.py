"""Stopping a process once the process that started it is gone (``--parent-pid``): not in Kafka.

``python -m kafkalab.broker``, ``python -m kafkalab.kraft``, ``python -m kafkalab.raft`` and ``python -m
kafkalab.controller`` take ``--parent-pid P`` (the cluster launcher passes its own pid), so that a broker or
controller never outlives the notebook or test that started it, even one killed with SIGKILL: every half second
:func:`watch_parent` checks that P is still there; once it is not, it asks for the clean shutdown, and exits the
process if that has not finished 10 s later.
"""
from __future__ import annotations

import asyncio
import logging
import os

log = logging.getLogger(__name__)

PARENT_CHECK_S = 0.5
PARENT_GONE_EXIT_S = 10.0


def parent_alive(parent_pid: int, original_ppid: int) -> bool:
    """Is the launcher still there? If it is our parent, its death shows as a new ppid (we are
    adopted, even while the dead parent is a zombie); any other pid is probed with signal 0."""
    if parent_pid == original_ppid:
        return os.getppid() == parent_pid
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


async def watch_parent(parent_pid: int, stop: asyncio.Event) -> None:
    """Set ``stop`` once ``parent_pid`` is gone; exit the process if stopping then takes too long."""
    original_ppid = os.getppid()
    while parent_alive(parent_pid, original_ppid):
        await asyncio.sleep(PARENT_CHECK_S)
    log.warning("parent process %d is gone: shutting down", parent_pid)
    stop.set()
    asyncio.get_running_loop().call_later(PARENT_GONE_EXIT_S, os._exit, 1)
