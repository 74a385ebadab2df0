"""The failure drills of the labs (``labs/02_producer``, ``labs/03_replication``): what they share.

A drill breaks one partition on purpose: a topic with one partition on three brokers of a local
cluster (``kafkalab.connect(brokers=3)``), whose brokers it stops, kills and restarts. Between two
failures it waits for the state it needs (every replica in sync, a new leader, a broker back in the
ISR), read the way an operator would: ``Cluster.describe``, i.e. the partition state the controller
keeps in ZooKeeper (``/brokers/topics/<topic>/partitions/0/state``).

Both labs then ask the student to read the partition back (:func:`check_stored` checks that step).
"""
from __future__ import annotations

import logging
import time

import pandas as pd

from .checks import Report, as_text, unfilled, unfilled_detail

#: how long a drill waits for the partition to reach a state before it gives up
WAIT_S = 45


def quiet_client_log(name: str) -> logging.Logger:
    """A logger for the drill's clients that drops librdkafka's own log lines (brokers die on purpose:
    the clients would fill the notebook with connection errors)."""
    log = logging.getLogger(name)
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log


def partition_state(cluster, topic: str) -> dict:
    """Partition 0 of ``topic``: ``leader`` (None while it has none), ``replicas``, ``isr`` (sorted)."""
    row = cluster.describe(topic).iloc[0]
    leader = None if pd.isna(row["leader"]) else int(row["leader"])
    return {"leader": leader, "replicas": [int(b) for b in row["replicas"]], "isr": sorted(int(b) for b in row["isr"])}


def wait_for_partition(cluster, topic: str, condition, what: str, timeout_s: float = WAIT_S) -> dict:
    """Poll :func:`partition_state` until ``condition(state)`` holds, and return that state.

    Raises ``TimeoutError`` naming ``what`` and the last state seen after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        state = partition_state(cluster, topic)
        if condition(state):
            return state
        if time.monotonic() > deadline:
            raise TimeoutError(f"the drill waited {timeout_s:.0f} s for {what}; the partition is now {state}")
        time.sleep(0.1)


def drill_partition(cluster, topic: str) -> dict | None:
    """Wait until ``topic``'s partition has a leader and every replica in sync, and return its state;
    None (with the reason printed) unless the topic is one partition on three brokers, what a drill needs."""
    state = wait_for_partition(cluster, topic,
                               lambda s: len(s["replicas"]) == len(s["isr"]) and s["leader"] is not None,
                               "every replica in sync")
    if len(state["replicas"]) != 3 or len(cluster.describe(topic)) != 1:
        print(f"the drill needs one partition on three brokers; {topic!r} has {len(cluster.describe(topic))} "
              f"partition(s) on {state['replicas']}: nothing was run")
        return None
    return state


def check_stored(report: Report, name: str, stored, in_topic: list, how: str) -> None:
    """The step "stored lists every value the partition holds, in offset order": the student's ``stored``
    against ``in_topic``, what the check read back itself; ``how`` ends the hint (how to read it)."""
    with report.answer(name, "stored"):
        if unfilled(stored):
            report.step(name, False, unfilled_detail("stored", stored, "read the partition from its first offset "
                                                     "up to the high watermark"))
        else:
            got = [as_text(v) for v in stored]
            report.step(name, got == in_topic,
                        f"got {len(got)} value(s), the partition holds {len(in_topic)}"
                        + ("" if sorted(got) != sorted(in_topic) else " (the same ones, in another order)")
                        + f" — {how}")
