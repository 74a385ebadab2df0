"""Helpers shared by the tests that run a real cluster (``kafkalab.cluster``) and by benchmarks/cluster.py.

Imported like ``kafka_wire``: ``from tests.helpers.cluster_helpers import ...`` (the repository root is on
``sys.path``: pytest's ``pythonpath = ["."]``, or ``python -m benchmarks.cluster`` run from the root).

Each test module keeps its own timeouts: bind them once with ``functools.partial``, e.g.
``wait_until = functools.partial(cluster_helpers.wait_until, timeout=45, interval=0.2)``.
"""
from __future__ import annotations

import os
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


def duplicates_report(cluster, topic: str, partition: int, consumed: list[tuple[int, bytes]]) -> str:
    """What a failed "stored twice" check needs to be explained: the offsets of each value read more than once
    and, from every broker's copy of the partition on disk, the batches holding those offsets (leader epoch,
    producer id and epoch, sequence numbers). Same offsets twice: the consumer read a record again; different
    offsets: the log holds it twice, and the batches show whether the producer sent it again under a new
    sequence or epoch, or a leader took a retry it should have known."""
    import glob

    from kafkalab.broker.common.records import iter_batches

    offsets: dict[bytes, list[int]] = {}
    for offset, value in consumed:
        offsets.setdefault(value, []).append(offset)
    twice = {v: o for v, o in offsets.items() if len(o) > 1}
    wanted = {o for os_ in twice.values() for o in os_}
    lines = [f"{topic}-{partition}: {len(twice)} values read more than once: "
             + ", ".join(f"{v!r} at {o}" for v, o in list(twice.items())[:5])]
    for segment in sorted(glob.glob(os.path.join(cluster.dir, "*", f"{topic}-{partition}", "*.log"))):
        with open(segment, "rb") as f:
            data = f.read()
        node = os.path.basename(os.path.dirname(os.path.dirname(segment)))
        for _, h in iter_batches(data, strict=False):
            if any(h.base_offset <= o <= h.last_offset for o in wanted):
                lines.append(f"  {node}: batch {h.base_offset}..{h.last_offset} leader epoch "
                             f"{h.partition_leader_epoch} producer {h.producer_id}/{h.producer_epoch} sequence "
                             f"{h.base_sequence}..{h.base_sequence + h.last_offset_delta}")
    return "\n".join(lines)
