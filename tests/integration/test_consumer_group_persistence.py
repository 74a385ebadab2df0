"""A KIP-848 consumer group survives its coordinator: its records in ``__consumer_offsets`` (types 3-8) are
replayed by the broker that loads the partition, so members keep their epochs and partitions.

* a standalone broker restarted on the same log directory and port: members heartbeat on with their epochs
  (raw ConsumerGroupHeartbeat v1), the group epoch and every assignment are the same;
* a 3-broker mini cluster whose coordinator is SIGKILLed: the new leader of the group's
  ``__consumer_offsets`` partition serves the group at the same epoch, and confluent-kafka consumers
  (``group.protocol=consumer``) keep their partitions: no revocation, no new assignment.
"""
from __future__ import annotations

import time
import uuid

import pytest
from tests.helpers.cluster_helpers import broker_states, leader_of, wait_until
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from test_consumer_group_protocol import heartbeat, raw

import kafkalab
from kafkalab.broker.apis.consumer_group_describe import (ConsumerGroupDescribeRequest,
                                                          ConsumerGroupDescribeResponse)
from kafkalab.broker.coordinator.group.offsets_topic import partition_for

GROUP_CONFIGS = {"group.consumer.session.timeout.ms": 6000, "group.consumer.heartbeat.interval.ms": 500}


def describe(bs: str, group: str):
    resp = raw(bs, ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
               ConsumerGroupDescribeResponse, 0)
    g = resp.groups[0]
    assert g.error_code == 0, g
    return g.group_epoch, g.assignment_epoch, {m.member_id: (m.member_epoch, sorted(
        (str(t.topic_id), tuple(t.partitions)) for t in m.assignment.topic_partitions)) for m in g.members}


def reconcile(bs: str, group: str, members: dict[str, list]) -> None:
    """Heartbeat every member (reporting what it owns, revoking at once) until all are at the group epoch."""
    deadline = time.time() + 20
    while True:
        for mid, state in members.items():
            err, epoch, got = heartbeat(bs, group, mid, state[0], owned=state[1])
            assert err == 0, (mid, err)
            state[0], state[1] = epoch, got if got is not None else state[1]
        group_epoch, _, _ = describe(bs, group)
        if all(s[0] == group_epoch for s in members.values()):
            return
        assert time.time() < deadline, members
        time.sleep(0.1)


def test_a_restarted_broker_serves_the_group_at_the_same_epochs(tmp_path):
    log_dir = str(tmp_path / "broker")
    topic, group = "t", f"g-{uuid.uuid4().hex[:6]}"
    with kafkalab.mini(log_dir=log_dir, **GROUP_CONFIGS) as b:
        bs, port = b.bootstrap_servers, int(b.bootstrap_servers.rpartition(":")[2])
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_topics([NewTopic(topic, 4, 1)])[topic].result()
        members = {}
        for mid in (str(uuid.uuid4()), str(uuid.uuid4())):
            err, epoch, got = heartbeat(bs, group, mid, 0, topics=[topic], owned={}, rebalance_timeout_ms=30000)
            assert err == 0
            members[mid] = [epoch, got or {}]
            reconcile(bs, group, members)
        before = describe(bs, group)
        assert sorted(len(dict(a)[list(dict(a))[0]]) for _, a in before[2].values()) == [2, 2]
    with kafkalab.mini(log_dir=log_dir, port=port, **GROUP_CONFIGS) as b:
        assert describe(bs, group) == before           # loaded from __consumer_offsets
        for mid, (epoch, owned) in members.items():  # each member heartbeats on with its epoch: nothing moves
            assert heartbeat(bs, group, mid, epoch, owned=owned) == (0, epoch, None)
        assert describe(bs, group) == before
        # a member that stops heartbeating is fenced after the session timeout, which restarted at load
        gone, stays = list(members)
        deadline = time.time() + 15
        while gone in describe(bs, group)[2]:
            assert time.time() < deadline
            heartbeat(bs, group, stays, members[stays][0], owned=members[stays][1])
            time.sleep(0.3)
        assert describe(bs, group)[0] == before[0] + 1


@pytest.mark.cluster
def test_the_group_moves_with_its_coordinator_on_a_mini_cluster(tmp_path):
    lab = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000, **GROUP_CONFIGS}
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **lab) as c:
        bs = c.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        topic, group = "t", f"g-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, 4, 3)])[topic].result()
        events = []
        consumers = []
        for name in ("a", "b"):
            k = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer"})
            k.subscribe([topic], on_assign=lambda _c, ps, n=name: events.append((n, "assign", len(ps))),
                        on_revoke=lambda _c, ps, n=name: events.append((n, "revoke", len(ps))),
                        on_lost=lambda _c, ps, n=name: events.append((n, "lost", len(ps))))
            consumers.append(k)

        def poll(seconds: float) -> None:
            t0 = time.time()
            while time.time() - t0 < seconds:
                for k in consumers:
                    k.poll(0.05)

        def stable():
            poll(0.5)
            d = admin.describe_consumer_groups([group])[group].result()
            parts = sorted(len(m.assignment.topic_partitions) for m in d.members)
            # the coordinator's view and each client's own: a member's on_assign runs in a later poll()
            # than the heartbeat response the coordinator marks it STABLE with
            mine = sorted(len(k.assignment()) for k in consumers)
            return d if parts == mine == [2, 2] and str(d.state).endswith("STABLE") else None
        try:
            d = wait_until(stable, "the group is stable with 2 partitions each", timeout=60)
            assignment = {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in d.members}
            coordinator = d.coordinator.id
            offsets_partition = partition_for(group, 5)   # the lab's offsets.topic.num.partitions
            assert leader_of(c, "__consumer_offsets", offsets_partition) == coordinator
            n_events = len(events)
            c.kill(coordinator)
            wait_until(lambda: leader_of(c, "__consumer_offsets", offsets_partition) not in (coordinator, -1),
                       "a new leader of the group's __consumer_offsets partition", timeout=60)
            d2 = wait_until(stable, "the new coordinator serves the group", timeout=60)
            assert d2.coordinator.id != coordinator
            assert {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
                    for m in d2.members} == assignment
            poll(3)   # the members heartbeat with their epochs at the new coordinator: no rebalance
            assert events[n_events:] == []
            epoch = raw(bs_of(c, d2.coordinator.id), ConsumerGroupDescribeRequest(
                group_ids=[group], include_authorized_operations=False), ConsumerGroupDescribeResponse, 0).groups[0]
            assert epoch.error_code == 0 and epoch.group_epoch == epoch.assignment_epoch
            assert all(m.member_epoch == epoch.group_epoch for m in epoch.members)
        finally:
            for k in consumers:
                k.close()


def bs_of(cluster, broker_id: int) -> str:
    for b in broker_states(cluster):
        if b["id"] == broker_id:
            return f"{b['host']}:{b['port']}"
    raise AssertionError(f"no broker {broker_id}")
