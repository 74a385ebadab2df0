"""The controller's event queue (Kafka's ``kafka.controller.ControllerEventManager``).

Kafka's controller does everything on one thread, the *ControllerEventThread*:
ZooKeeper watches, requests from brokers (AlterPartition, ControlledShutdown),
admin requests (ElectLeaders) and timers only *put* an event on a queue, and
the thread takes the events one at a time and processes them in order. So the
controller's state (the ``ControllerContext``) needs no locks, and no two
decisions about the same partition can interleave.

kafkalab does the same on the broker's asyncio loop: an event is a name, a
coroutine function and its arguments; :meth:`ControllerEventManager.put`
queues it and returns a future with the handler's result (Kafka's events
carry a callback instead). One task takes the events in order and awaits each
handler before the next. A kazoo watch fires on kazoo's thread: it hands the
event to the loop with :meth:`put_threadsafe`.

A handler that loses ZooKeeper half-way (the connection dropped, the session
expired) fails; the manager logs one line and tells the controller
(``on_zookeeper_unavailable``), which re-reads what it watches once it is
connected again. (Kafka's ZooKeeper client instead holds requests until it
reconnects.)

Where kafkalab simplifies: no controller-state metrics (event queue time,
rate and time per state), no ``clearAndPut`` preemption (closing just fails
whatever is still queued with :class:`NotControllerError`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, SessionExpiredError

from ..zk.kafka_zk_client import ControllerMovedError

if TYPE_CHECKING:
    from ..common.metrics import Timer

log = logging.getLogger(__name__)


class NotControllerError(Exception):
    """The event reached a controller that is not (or no longer) active."""


ZOOKEEPER_UNAVAILABLE = (ConnectionLoss, SessionExpiredError, ConnectionClosedError)


class ControllerEventManager:
    def __init__(self, controller_id: int, on_controller_moved: Callable[[], Awaitable[None]],
                 on_zookeeper_unavailable: Callable[[str], None] | None = None,
                 event_timers: "dict[str, Timer] | None" = None):
        """``on_controller_moved`` is awaited when a handler finds it lost the controllership
        (a ZooKeeper write fenced by a newer controller epoch): Kafka's ``maybeResign``.
        ``on_zookeeper_unavailable(event name)`` is called when a handler failed for want of ZooKeeper."""
        self.controller_id = controller_id
        self.on_controller_moved = on_controller_moved
        self.on_zookeeper_unavailable = on_zookeeper_unavailable
        #: event name -> the timer of its controller state (ControllerStats' ...RateAndTimeMs); each event's
        #: processing is timed, failed ones too (Yammer's ``Timer.time``)
        self.event_timers = event_timers or {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        self._queue: asyncio.Queue | None = None
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._task = self.loop.create_task(self._process_events())

    async def close(self) -> None:
        """Stop taking events (the one being processed is cancelled); nothing new is accepted."""
        self.closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    def fail_pending_events(self) -> None:
        """Answer every event still queued with NotControllerError (after :meth:`close`)."""
        while self._queue is not None and not self._queue.empty():
            _, _, _, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(NotControllerError())

    def put(self, name: str, handler, *args) -> asyncio.Future:
        """Queue the event ``name``: ``await handler(*args)``; the future gets its result."""
        future = self.loop.create_future()
        if self.closed:        # the event task is gone: nobody would ever answer
            future.set_exception(NotControllerError())
        else:
            self._queue.put_nowait((name, handler, args, future))
        return future

    def put_nowait(self, name: str, handler, *args) -> None:
        """Queue an event nobody waits for (a watch, a timer, a response callback)."""
        if self.closed or self._queue is None:
            return
        future = self.put(name, handler, *args)
        future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)

    def put_threadsafe(self, name: str, handler, *args) -> None:
        """:meth:`put_nowait` from another thread (kazoo's)."""
        if self.loop is None or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.put_nowait, name, handler, *args)

    async def _process_events(self) -> None:
        while True:
            name, handler, args, future = await self._queue.get()
            if future.done():
                continue
            timer = self.event_timers.get(name)
            started = time.perf_counter() if timer is not None else 0.0
            try:
                result = await handler(*args)
            except asyncio.CancelledError:
                future.cancel()
                raise
            except NotControllerError as exc:
                future.set_exception(exc)
                continue
            except ControllerMovedError as exc:
                log.info("controller %d: %s during %s: resigning", self.controller_id, exc, name)
                await self.on_controller_moved()
                future.set_exception(NotControllerError())
                continue
            except ZOOKEEPER_UNAVAILABLE as exc:
                log.warning("controller %d: ZooKeeper unavailable while processing %s (%s)", self.controller_id,
                            name, type(exc).__name__)
                if self.on_zookeeper_unavailable is not None:
                    self.on_zookeeper_unavailable(name)
                future.set_exception(exc)
                continue
            except Exception as exc:
                log.exception("controller %d: error processing %s", self.controller_id, name)
                future.set_exception(exc)
                continue
            finally:
                if timer is not None:
                    timer.update((time.perf_counter() - started) * 1000.0)
            future.set_result(result)
