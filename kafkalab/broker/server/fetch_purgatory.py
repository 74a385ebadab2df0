"""The fetch purgatory: where a Fetch waits for data (Kafka's ``DelayedOperationPurgatory[DelayedFetch]``).

A Fetch without a session watches each partition it asked for (``wait_for_data``: a future in each partition's
set, ``waiters``); a Fetch of an incremental fetch session waits on its session instead (``wait_for_session``),
which is told of every change to its partitions (``watch_changes``: ``partition_changed`` of each listener).
:meth:`notify_data_arrived` — at an append, a new high watermark, log start offset or ISR, a leadership change,
a partition going away — wakes both.
"""
from __future__ import annotations

import asyncio
import collections
import time
from typing import Iterable

from ..network.request_channel import current_remote_time
from ..utils.async_util import wait_done


class FetchPurgatory:
    def __init__(self) -> None:
        #: (topic, partition) -> futures of the Fetches watching it
        self.waiters: dict[tuple[str, int], set[asyncio.Future]] = collections.defaultdict(set)
        #: (topic, partition) -> the fetch sessions holding it
        self.change_listeners: dict[tuple[str, int], set] = collections.defaultdict(set)
        #: the sessions with a Fetch parked
        self.parked_sessions: set = set()

    def notify_data_arrived(self, topic: str, index: int) -> None:
        """Wake the Fetches watching this partition, so they read again and check for min_bytes, and tell the
        fetch sessions holding it that it changed."""
        for fut in self.waiters.pop((topic, index), ()):
            if not fut.done():
                fut.set_result(None)
        listeners = self.change_listeners.get((topic, index))
        if listeners:
            for listener in list(listeners):
                listener.partition_changed((topic, index))

    def watch_changes(self, key: tuple[str, int], listener) -> None:
        """``listener.partition_changed(key)`` at every append, high watermark, log start, ISR or leadership
        change of the partition, and when it goes away."""
        self.change_listeners[key].add(listener)

    def unwatch_changes(self, key: tuple[str, int], listener) -> None:
        listeners = self.change_listeners.get(key)
        if listeners is not None:
            listeners.discard(listener)
            if not listeners:
                del self.change_listeners[key]

    async def wait_for_data(self, watched: Iterable[tuple[str, int]], timeout_s: float) -> None:
        """Park until one of the ``watched`` (topic, partition)s changes, or ``timeout_s`` passes."""
        watched = list(watched)
        fut = asyncio.get_running_loop().create_future()
        for key in watched:
            self.waiters[key].add(fut)
        remote = current_remote_time.get()
        parked = time.perf_counter()
        try:   # (never asyncio.wait_for here: it can lose the cancellation at shutdown, see async_util)
            await wait_done(fut, timeout_s)
        finally:
            if remote is not None:   # the Fetch's remote time (RequestMetrics RemoteTimeMs)
                remote.seconds += time.perf_counter() - parked
            for key in watched:
                waiters = self.waiters.get(key)
                if waiters is not None:
                    waiters.discard(fut)
                    if not waiters:
                        del self.waiters[key]

    async def wait_for_session(self, session, timeout_s: float) -> None:
        """Park a Fetch of an incremental fetch session until one of its partitions changes, or ``timeout_s``."""
        fut = asyncio.get_running_loop().create_future()
        session.waiter = fut
        self.parked_sessions.add(session)
        remote = current_remote_time.get()
        parked = time.perf_counter()
        try:
            await wait_done(fut, timeout_s)
        finally:
            if remote is not None:
                remote.seconds += time.perf_counter() - parked
            if session.waiter is fut:
                session.waiter = None
            self.parked_sessions.discard(session)
