"""Closing a separate-mode mini KRaft cluster (``kafkalab.cluster(brokers=3, mode="kraft")``) right after a
SIGKILLed active controller and a SIGKILLed broker were restarted.

``restart()`` of a broker returns once *this incarnation* is registered and unfenced. A mini broker answers
Metadata from its own metadata image before it has registered (Kafka's BrokerServer enables request processing
only once unfenced), and a broker restarted at once after a SIGKILL finds its previous incarnation there, still
registered and unfenced until ``broker.session.timeout.ms`` expires: Metadata alone would let ``restart()``
return early, and a ``close()`` right after it would find the broker still starting (waiting for its old
session to expire before it can register). Then every node stops by itself on SIGTERM — each broker after a
controlled shutdown the controller granted, exit status 0 — none SIGKILLed at the end of the stop timeout.
(Read from the nodes' logs and exit statuses; no timing is asserted.)
"""
from __future__ import annotations

import os
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab

pytestmark = pytest.mark.cluster


def wait_until(condition, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (ConnectionError, KeyError, RuntimeError):   # a node down for a moment
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def log_since(path: str, offset: int) -> str:
    with open(path, errors="replace") as f:
        f.seek(offset)
        return f.read()


def test_close_after_kills_and_restarts_stops_every_node_cleanly(tmp_path):
    c = kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "kraft"))
    try:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers, "log_level": 3})
        admin.create_topics([NewTopic("t", num_partitions=3,
                                      replica_assignment=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])])["t"].result(30)
        del admin
        wait_until(lambda: all(p["leader"] >= 0 for p in c.metadata(["t"])["topics"]["t"]["partitions"]),
                   "every partition of t has a leader")
        controller = c.controller
        c.kill(controller)
        wait_until(lambda: c.controller not in (None, controller), "a new active controller")
        c.restart(controller)

        log_path = c._broker(1).log_path
        c.kill(1)
        offset = os.path.getsize(log_path)
        c.restart(1)   # at once: the previous incarnation is still registered and unfenced
        restarted = log_since(log_path, offset)
        assert "broker 1: registered (broker epoch" in restarted and "ready on" in restarted, \
            f"restart(1) returned before the new incarnation was registered and unfenced; its log:\n{restarted}"
        nodes = {b: c._broker(b) for b in (*c.broker_ids, *c.controller_ids)}
        offsets = {b: os.path.getsize(n.log_path) for b, n in nodes.items()}
    except BaseException:
        c.close()
        raise
    c.close()
    statuses = {b: n.process.returncode for b, n in nodes.items()}
    assert statuses == {b: 0 for b in nodes}, f"exit statuses (-9: SIGKILLed at the stop timeout): {statuses}"
    for b in c.broker_ids:
        assert f"broker {b}: controlled shutdown done" in log_since(nodes[b].log_path, offsets[b]), \
            f"broker {b} did not finish its controlled shutdown:\n{log_since(nodes[b].log_path, offsets[b])}"
