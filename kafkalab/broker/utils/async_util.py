"""Waiting with a timeout, and stopping tasks, without losing a cancellation.

Kafka's broker stops its threads by interrupting them and joining them
(``ShutdownableThread.initiateShutdown`` + ``awaitShutdown``). The mini broker's
jobs are asyncio tasks instead: a connection, a replica fetcher, a purgatory
wait, and ``BaseBroker.stop`` ends them by cancelling them and waiting for them.

That only works if a cancelled task really ends. On Python < 3.12,
``asyncio.wait_for`` can lose a cancellation: if the future it waits for
completes in the same loop iteration as the cancellation arrives, it returns
the future's result as if nothing had happened (CPython issue #86296,
bpo-42130; 3.12 rebuilt ``wait_for`` on ``asyncio.timeout``). A broker meets
that race at every controlled shutdown: the controller's LeaderAndIsr wakes
every waiting Fetch and acks=all Produce (the partitions move away) just as
``SocketServer.stop`` cancels their connections; a connection that lost its
cancellation went back to reading its socket, and the broker's stop waited for
it until the client hung up (``Cluster.stop`` then killed it after 30 s).

So the broker uses these instead of ``asyncio.wait_for``:

* :func:`wait_done` — wait for a future up to a timeout, without touching it;
* :func:`wait_for` — ``asyncio.wait_for`` (the awaitable is cancelled at the
  timeout) built on ``asyncio.wait``, which never swallows a cancellation;
* :func:`cancel_and_wait` — cancel tasks and wait until they have ended,
  cancelling again any that carried on (belt and braces: a handler anywhere
  that catches ``CancelledError`` cannot hold the broker's stop up).
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Iterable, TypeVar

T = TypeVar("T")

#: how often :func:`cancel_and_wait` cancels again a task that is still running
RECANCEL_INTERVAL_S = 0.5


async def wait_done(fut: asyncio.Future, timeout_s: float | None) -> bool:
    """Wait until ``fut`` is done or ``timeout_s`` has passed; True if it is done.

    ``fut`` is not cancelled at the timeout, and a cancellation of the caller is
    always raised, even when ``fut`` completed at the same moment."""
    if fut.done():
        return True
    if timeout_s is not None and timeout_s <= 0:
        return False
    done, _ = await asyncio.wait({fut}, timeout=timeout_s)
    return bool(done)


async def wait_for(aw: Awaitable[T], timeout_s: float | None) -> T:
    """Like ``asyncio.wait_for``: the result of ``aw``, or ``asyncio.TimeoutError`` after
    ``timeout_s`` (``aw`` is then cancelled and waited for). Cancelling the caller cancels
    ``aw`` and is never swallowed."""
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout_s)
    except BaseException:
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is None:
            return task.result()   # it finished at the very end rather than being cancelled
        raise asyncio.TimeoutError()
    return task.result()


async def cancel_and_wait(tasks: Iterable[asyncio.Future], recancel_s: float = RECANCEL_INTERVAL_S) -> None:
    """Cancel ``tasks`` and return once every one of them has ended (whatever its outcome);
    a task still running after ``recancel_s`` is cancelled again."""
    tasks = list(tasks)
    pending = {t for t in tasks if not t.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=recancel_s)
    for task in tasks:
        if not task.cancelled():
            task.exception()   # retrieved: no "exception was never retrieved" warning
