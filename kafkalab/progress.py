"""Progress bars for long cells (producing many records, sweeps, waiting for a failover), with tqdm.

``progress(...)`` is a tqdm bar: in a Jupyter kernel the notebook bar (a widget), in a terminal or a
plain ``python`` the text bar on stderr — what ``tqdm.auto`` picks. ``wait_with_progress(...)``
waits for a condition with a bar that fills up towards the timeout.

The environment variable ``KAFKALAB_PROGRESS`` chooses:

* unset, ``1``, ``auto``: as above;
* ``0``, ``off``, ``false``, ``no``: no bar at all — nothing is written or displayed;
* ``text``: the text bar even in a kernel (it goes to the cell's stderr).

In a notebook, a bar is one ``display_data`` output: its ``text/plain`` is the bar as it was
drawn first (``desc:   0%|          | 0/20000 [00:00<?, ?records/s]``: no timings yet, the same
on every run) and its widget view, which nbval does not compare (the model id is random); the bar
then moves through widget messages, not through outputs. So a cell with a bar keeps passing nbval
against its stored outputs without sanitizing anything.
"""
from __future__ import annotations

import os
import time
from typing import Callable

ENV_VAR = "KAFKALAB_PROGRESS"
_OFF = {"0", "off", "false", "no"}


def mode() -> str:
    """``"auto"``, ``"off"`` or ``"text"``, from ``$KAFKALAB_PROGRESS``."""
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _OFF:
        return "off"
    if value == "text":
        return "text"
    if value in ("", "1", "on", "true", "yes", "auto"):
        return "auto"
    raise ValueError(f"${ENV_VAR}={value!r}: use 0 (no bars), text (text bars) or 1 (auto)")


def progress(iterable=None, total: float | None = None, desc: str | None = None, unit: str = "it", **kwargs):
    """A tqdm progress bar over ``iterable`` (or updated by hand: ``bar.update(n)``).

    ``total``: how many steps make 100 % (default: ``len(iterable)`` when it has one). ``unit``: what
    a step is (``"records"``). Further ``kwargs`` go to tqdm (``file=``, ``leave=``, ...). Use it
    as an iterable or as a context manager::

        for i in progress(range(N), desc="producing", unit="records"): ...
        with progress(total=N, desc="acknowledged", unit="records") as bar: ... bar.update(1) ...
    """
    chosen = mode()
    if chosen == "off":
        from tqdm.std import tqdm
        kwargs["disable"] = True
    elif chosen == "text":
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm(iterable, total=total, desc=desc, unit=unit, **kwargs)


WAIT_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {elapsed} (gives up after {total:g} s)"


def wait_with_progress(condition: Callable[[], object], timeout_s: float, desc: str, *,
                       interval_s: float = 0.1, **kwargs) -> float:
    """Call ``condition()`` every ``interval_s`` until it returns something true; return the seconds waited.

    The bar fills with the time spent, up to ``timeout_s``; it jumps to full when the condition
    holds. After ``timeout_s`` without that: ``TimeoutError`` naming ``desc`` and the timeout (in a
    notebook the bar turns red). Exceptions from ``condition`` propagate. ``kwargs`` go to tqdm.
    """
    if timeout_s <= 0:
        raise ValueError(f"wait_with_progress: timeout_s must be positive, got {timeout_s!r}")
    start = time.monotonic()
    bar = progress(total=float(timeout_s), desc=desc, unit="s", bar_format=WAIT_FORMAT, **kwargs)
    try:
        while True:
            if condition():
                bar.update(bar.total - bar.n)
                return time.monotonic() - start
            waited = time.monotonic() - start
            if waited >= timeout_s:
                raise TimeoutError(f"{desc}: not done after {timeout_s:g} s")
            bar.update(min(waited, timeout_s * 0.999) - bar.n)   # short of full: a notebook bar closed
                                                                  # unfilled turns red
            time.sleep(interval_s)
    finally:
        bar.close()
