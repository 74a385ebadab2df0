"""Regex subscriptions under KIP-848 (``group.protocol=consumer``) with confluent-kafka, on the mini broker and on
Apache Kafka 4.4 (KRaft) as the oracle: the coordinator resolves the pattern in the background.

* a subscription to a pattern and a literal topic is assigned in two steps: the literal topic at once, the
  pattern's topics a heartbeat later, once the group's regex is resolved (librdkafka's
  ``0045_resubscribe_with_regex`` expects exactly this);
* a topic created later that matches is picked up (Kafka resolves again when topics were created, at most every
  10 s), and a deleted one is dropped.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab

GROUP_CONFIGS = {"group.consumer.session.timeout.ms": 6000, "group.consumer.heartbeat.interval.ms": 500}
KAFKA_GROUP_CONFIGS = {**GROUP_CONFIGS, "group.consumer.min.session.timeout.ms": 6000,
                       "group.consumer.min.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def bootstrap(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("regex")), **GROUP_CONFIGS) as b:
            yield request.param, b.bootstrap_servers
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("regexkraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", **KAFKA_GROUP_CONFIGS) as c:
        yield request.param, c.bootstrap_servers


def create(admin: AdminClient, *topics: tuple[str, int]) -> None:
    for name, n in topics:
        admin.create_topics([NewTopic(name, n, 1)])[name].result()


class Watched:
    """One consumer-protocol consumer and every assignment change it is told of (incremental, as KIP-848 does)."""

    def __init__(self, bs: str, group: str, subscription: list[str]):
        self.c = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                           "topic.metadata.refresh.interval.ms": 1000})
        self.assigned: list[set[tuple[str, int]]] = []   # one entry per on_assign callback
        self.revoked: list[set[tuple[str, int]]] = []
        self.c.subscribe(subscription, on_assign=lambda _c, ps: self.assigned.append({(p.topic, p.partition) for p in ps}),
                         on_revoke=lambda _c, ps: self.revoked.append({(p.topic, p.partition) for p in ps}))

    def owned_topics(self) -> set[str]:
        return {tp.topic for tp in self.c.assignment()}

    def poll_until(self, done, timeout: float = 60) -> float:
        t0 = time.time()
        while time.time() - t0 < timeout:
            self.c.poll(0.1)
            if done():
                return time.time() - t0
        raise AssertionError(f"not done within {timeout}s: assigned {self.assigned}, revoked {self.revoked}")


def test_literal_topics_first_then_the_regex_topics(bootstrap):
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    p = f"rx{uuid.uuid4().hex[:6]}"
    create(admin, (f"{p}-regex1", 4), (f"{p}-regex2", 4), (f"{p}-literal", 2))
    w = Watched(bs, f"g-{p}", [f"^{p}-regex.*", f"{p}-literal"])
    try:
        w.poll_until(lambda: w.owned_topics() == {f"{p}-regex1", f"{p}-regex2", f"{p}-literal"})
        # the first assignment is the literal topic alone; the regex's topics come in a later one
        assert w.assigned[0] == {(f"{p}-literal", 0), (f"{p}-literal", 1)}, (backend, w.assigned)
        assert set().union(*w.assigned[1:]) == {(f"{p}-regex{i}", q) for i in (1, 2) for q in range(4)}, w.assigned
    finally:
        w.c.close()


def test_regex_picks_up_a_created_topic_and_drops_a_deleted_one(bootstrap):
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    p = f"rd{uuid.uuid4().hex[:6]}"
    create(admin, (f"{p}-a", 2), (f"other-{p}", 2))
    w = Watched(bs, f"g-{p}", [f"^{p}-.*"])
    try:
        w.poll_until(lambda: w.owned_topics() == {f"{p}-a"})
        create(admin, (f"{p}-b", 3))
        took = w.poll_until(lambda: w.owned_topics() == {f"{p}-a", f"{p}-b"})
        print(f"{backend}: a created topic matching the regex assigned after {took:.1f}s")
        admin.delete_topics([f"{p}-a"])[f"{p}-a"].result()
        took = w.poll_until(lambda: w.owned_topics() == {f"{p}-b"})
        print(f"{backend}: a deleted topic dropped after {took:.1f}s")
        assert any(all(t == f"{p}-a" for t, _ in r) and r for r in w.revoked) or f"{p}-a" not in w.owned_topics()
        assert all(t != f"other-{p}" for a in w.assigned for t, _ in a)   # the pattern is anchored: full match
    finally:
        w.c.close()
