"""``wait_until(condition, what)``: poll until a condition holds, or fail saying what was waited for.

Every lesson that changes a cluster waits for the cluster to catch up: a topic's replicas to be in
the ISR (lessons 02 and 03), a new leader after a broker's ZooKeeper session expired (03), a Connect
sink's file to have its lines (08), a KRaft controller to be elected (lab 10). Kafka's own tests do
the same with ``TestUtils.waitUntilTrue(condition, msg, waitTimeMs)``; this is that helper, once.

:func:`wait_in_thread` waits for a blocking call instead — lesson 06's ``query.processAllAvailable()``,
which returns once a Spark query has processed everything in its input so far — with a progress bar
meanwhile.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from ..progress import wait_with_progress


def wait_until(condition: Callable[[], object], what: str, timeout_s: float = 60.0, *,
               interval_s: float = 0.1, retry_on: tuple[type[BaseException], ...] = (),
               bar: bool = False) -> float:
    """Call ``condition()`` every ``interval_s`` until it returns something true; return the seconds waited.

    After ``timeout_s`` without that: ``TimeoutError("waited {timeout_s} s for {what}")``.
    ``retry_on``: exception types that mean "not yet" (a partition the metadata does not know yet
    raises ``KeyError``, a broker that is down ``ConnectionError``): caught, and polled again; any
    other exception propagates at once. ``bar=True`` shows a progress bar filling with the time
    spent (:func:`kafkalab.progress.wait_with_progress`), for the long waits such as a ZooKeeper
    session expiring.
    """
    if timeout_s <= 0:
        raise ValueError(f"wait_until: timeout_s must be positive, got {timeout_s!r}")

    def holds() -> bool:
        try:
            return bool(condition())
        except retry_on:
            return False

    if bar:
        try:
            return wait_with_progress(holds, timeout_s, what, interval_s=interval_s)
        except TimeoutError:
            raise TimeoutError(f"waited {timeout_s:g} s for {what}") from None
    start = time.monotonic()
    deadline = start + timeout_s
    while not holds():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:g} s for {what}")
        time.sleep(interval_s)
    return time.monotonic() - start


def wait_in_thread(call: Callable[[], object], what: str, timeout_s: float = 120.0) -> object:
    """Run the blocking ``call()`` in a daemon thread, a progress bar showing the wait; return its result.

    ``call()`` raising: the same exception, raised here. Not returned within ``timeout_s``:
    ``TimeoutError`` (:func:`kafkalab.progress.wait_with_progress`'s), and the thread is left to
    finish on its own (Python cannot stop it; a Spark query would be stopped by the lesson).
    """
    done, outcome = threading.Event(), {}

    def run():
        try:
            outcome["result"] = call()
        except BaseException as error:   # noqa: BLE001 - the call failed: raised below, in the caller's thread
            outcome["error"] = error
        finally:
            done.set()

    threading.Thread(target=run, daemon=True, name=f"wait-in-thread: {what}").start()
    wait_with_progress(done.is_set, timeout_s, what)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("result")
