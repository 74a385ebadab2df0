"""Lesson 09 (share groups) held against Apache Kafka 4.4 itself (KRaft, one combined node).

Kafka 3.9 has no share groups, so test_real_kafka_lessons.py (Kafka 3.9) leaves lesson 09 out, and
``kafkalab.connect()`` with ``KAFKALAB_BACKEND=kafka`` starts Kafka 3.9 in ZooKeeper mode. Here the test starts
Kafka 4.4 in KRaft mode with the lesson's share-group settings (and Kafka's lower bounds for them lowered) and
points the lesson at it with ``KAFKALAB_BOOTSTRAP_SERVERS``, as the workshop's JupyterLab would. Outputs are not
compared (``--nbval-lax``); the lesson's asserts on measured data must hold on Kafka.
"""
from __future__ import annotations

import os

import pytest

import kafkalab
from fake_docker import ROOT, run_nbval

pytestmark = pytest.mark.cluster

#: the lesson's first cell (its lab values), and Kafka 4.4's lower bounds for them (group.share.min.*)
CONFIGS = {"group.share.record.lock.duration.ms": 3000, "group.share.delivery.count.limit": 3,
           "group.share.heartbeat.interval.ms": 500, "group.share.session.timeout.ms": 6000,
           "group.share.min.record.lock.duration.ms": 1000, "group.share.min.heartbeat.interval.ms": 500,
           "group.share.min.session.timeout.ms": 6000,
           "group.consumer.heartbeat.interval.ms": 500, "group.consumer.session.timeout.ms": 6000,
           "group.consumer.min.heartbeat.interval.ms": 500, "group.consumer.min.session.timeout.ms": 6000}


def test_lesson_09_holds_on_kafka_4(tmp_path):
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path / "cluster"), backend=KRaftBackend(str(fetch_kafka("4"))),
                          mode="kraft", combined=True, **CONFIGS) as kafka4:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKALAB_")}
        env["KAFKALAB_BOOTSTRAP_SERVERS"] = kafka4.bootstrap_servers
        run, took = run_nbval(os.path.join(ROOT, "notebooks", "09_share_groups.ipynb"), env, timeout_s=300)
    assert run.returncode == 0, (f"lesson 09 on Kafka 4.4 (KRaft): nbval --nbval-lax failed after {took:.0f} s:\n"
                                 f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}")
