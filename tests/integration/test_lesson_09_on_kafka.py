"""Lesson 09 (share groups) and lab 09's solution held against Apache Kafka 4.4 itself (KRaft, one combined node).

Kafka 3.9 has no share groups, so test_real_kafka_lessons.py (Kafka 3.9) leaves lesson 09 out, and
``kafkalab.connect()`` with ``KAFKALAB_BACKEND=kafka`` starts Kafka 3.9 in ZooKeeper mode. Here the test starts
Kafka 4.4 in KRaft mode with the lesson's share-group settings (and Kafka's lower bounds for them lowered) and
points the lesson at it with ``KAFKALAB_BOOTSTRAP_SERVERS``, as the workshop's JupyterLab would. Outputs are not
compared (``--nbval-lax``); the lesson's asserts on measured data must hold on Kafka. The lab's solution runs on the
same node afterwards (one JVM start for both): ``create_topic`` never reuses a topic (the lab's "poison" becomes
"poison-2"), the one share group both use ("workers") reads a new topic from its earliest offset, and the lab's check
replays the experiments on topics and share groups with fresh names.
"""
from __future__ import annotations

import os

import pytest

import kafkalab
from tests.helpers.fake_docker import ROOT, run_nbval

pytestmark = pytest.mark.cluster

#: the lesson's first cell (its lab values), and Kafka 4.4's lower bounds for them (group.share.min.*)
CONFIGS = {"group.share.record.lock.duration.ms": 3000, "group.share.delivery.count.limit": 3,
           "group.share.heartbeat.interval.ms": 500, "group.share.session.timeout.ms": 6000,
           "group.share.min.record.lock.duration.ms": 1000, "group.share.min.heartbeat.interval.ms": 500,
           "group.share.min.session.timeout.ms": 6000,
           "group.consumer.heartbeat.interval.ms": 500, "group.consumer.session.timeout.ms": 6000,
           "group.consumer.min.heartbeat.interval.ms": 500, "group.consumer.min.session.timeout.ms": 6000}


@pytest.fixture(scope="module")
def kafka4(tmp_path_factory):
    """One Kafka 4.4 node (KRaft, combined) with the lesson's share-group settings, for this module."""
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("kafka4") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", combined=True, **CONFIGS) as kafka4:
        yield kafka4


def run_on(kafka4, notebook: str, what: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALAB_")}
    env["KAFKALAB_BOOTSTRAP_SERVERS"] = kafka4.bootstrap_servers
    run, took = run_nbval(os.path.join(ROOT, notebook), env, timeout_s=300)
    assert run.returncode == 0, (f"{what} on Kafka 4.4 (KRaft): nbval --nbval-lax failed after {took:.0f} s:\n"
                                 f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}")


def test_lesson_09_holds_on_kafka_4(kafka4):
    run_on(kafka4, os.path.join("notebooks", "09_share_groups.ipynb"), "lesson 09")


def test_lab_09_solution_holds_on_kafka_4(kafka4):
    run_on(kafka4, os.path.join("labs", "09_share_groups", "solution.ipynb"), "lab 09's solution")
