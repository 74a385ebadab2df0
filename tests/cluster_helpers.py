"""Helpers shared by the tests that run a real cluster (``kafkalab.cluster``) and by benchmarks/cluster.py.

Imported like ``kafka_wire``: ``from cluster_helpers import ...`` (pytest puts tests/ on ``sys.path``
because of tests/conftest.py; benchmarks/cluster.py adds tests/ to its path itself).

Each test module keeps its own timeouts: bind them once with ``functools.partial``, e.g.
``wait_until = functools.partial(cluster_helpers.wait_until, timeout=45, interval=0.2)``.
"""
from __future__ import annotations

import time

import pandas as pd


class WaitTimedOut(AssertionError, TimeoutError):
    """A condition did not come true in time: a test failure to pytest, a ``TimeoutError`` to scripts."""


def wait_until(predicate, what: str, timeout: float = 30.0, interval: float = 0.1,
               retry_on: tuple[type[BaseException], ...] = (Exception,)):
    """Call ``predicate`` every ``interval`` seconds until it returns something truthy, and return that.

    An exception of a type in ``retry_on`` (by default any: a broker may be down while we look)
    counts as "not yet" and is named in the message if time runs out; ``retry_on=()`` lets every
    exception fail the wait at once.
    """
    deadline = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except retry_on as exc:
            last_exc = exc
        time.sleep(interval)
    raise WaitTimedOut(f"timed out after {timeout:.0f} s waiting for {what}" +
                       (f" (last error: {last_exc!r})" if last_exc else ""))


def broker_states(cluster) -> list[dict]:
    """``cluster.brokers`` as a list of dicts (it is a DataFrame when pandas is there)."""
    brokers = cluster.brokers
    return brokers.to_dict("records") if hasattr(brokers, "to_dict") else [dict(b) for b in brokers]


def restore_brokers(cluster, timeout: float = 30.0) -> None:
    """Resume the paused brokers, restart the stopped, killed or exited ones, and wait until every
    broker is registered in ZooKeeper again: what a test on a shared cluster must leave behind."""
    states = broker_states(cluster)
    for b in states:
        if b["alive"] == "paused":
            cluster.resume(b["id"])
        elif b["alive"] != "running":
            cluster.restart(b["id"])
    wait_until(lambda: len(cluster.zk.get_children("/brokers/ids")) == len(states), "all brokers registered again",
               timeout=timeout)


def partition_row(cluster, topic: str, partition: int) -> dict:
    """One partition's row of ``cluster.describe(topic)``."""
    df = cluster.describe(topic)
    return df[df["partition"] == partition].iloc[0].to_dict()


def leader_of(cluster, topic: str, partition: int) -> int:
    """The partition's leader, -1 when it has none (describe shows that as a missing value)."""
    leader = partition_row(cluster, topic, partition)["leader"]
    return -1 if leader is None or pd.isna(leader) else int(leader)
