"""Kafka 4's group coordinator metrics (``kafka.server:type=group-coordinator-metrics``, Kafka metrics) on a mini
KRaft node and on a real Kafka 4.4 node (the JMX exporter's agent, kafkalab's rules), one combined node each, in
one scenario:

* a classic group (``group.protocol=classic``) and a KIP-848 consumer group (``group.protocol=consumer``) get a
  member, then a second one; a share group one member (the group joined and left once before: Kafka 4.4 counts
  a share group's first join twice, the join and the epoch bump that assigns its partitions once their share
  state is initialized; the mini broker assigns them at once and counts one);
* each group commits offsets for the topic's two partitions;
* the second member of each leaves; then every member leaves (the groups are Empty);
* the classic and the consumer group are deleted (DeleteGroups).

After each change the gauges equal what the node describes (ListGroups v5: each group's type and state; OffsetFetch:
the committed offsets), and the totals count what Kafka's sensors count: a classic rebalance completed by the
leader's SyncGroup (three: two joins and a leave), a consumer group epoch bumped by a heartbeat (two joins; a
member leaving bumps it uncounted), a share group's (one), the offsets committed (four). The
``GroupMetadataManager`` gauges Kafka 4.4 still registers count the classic groups and all offsets on both.
Both serve the same names and labels, but for what the mini broker leaves out (streams groups, OffsetDelete's
count; docs/differences.md). Kafka 4.4 recounts its group gauges every 60 s (``GroupCoordinatorShard``'s
``group-size-counter`` timer): the waits for them are long bounds, not measurements.
"""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse

import kafkalab
from kafkalab.broker.common.message.codec import build
from tests.helpers import kafka_wire as wire
from tests.helpers.cluster_helpers import wait_until
from test_share_groups import described as share_group_described

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

GCM = "kafka_server_group_coordinator_metrics_"
GMM = "kafka_coordinator_group_groupmetadatamanager_"
#: Kafka 4.4's states of each group type, as its tags name them (each state's toString())
STATES = {"classic": ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty"),
          "consumer": ("Empty", "Assigning", "Reconciling", "Stable", "Dead"),
          "share": ("Empty", "Stable", "Dead")}
COUNTS = ("offset_commit", "offset_expiration", "group_completed_rebalance", "consumer_group_rebalance",
          "share_group_rebalance")
#: what Kafka 4.4 serves and the mini broker does not: streams groups, OffsetDelete's count
STREAMS_STATES = ("Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead")
LEFT_OUT = {(GCM + "group_count", (("protocol", "streams"),)), (GCM + "offset_deletion_count", ()),
            (GCM + "streams_group_rebalance_count", ())} | {
    (GCM + "streams_group_count", (("state", s),)) for s in STREAMS_STATES} | {
    (GCM + f"streams_group_topology_description_{what}_count", ()) for what in (
        "cleanup_cycle", "cleanup_eligible", "delete_success", "delete_error", "set_success", "set_error",
        "get_success", "get_error")}
#: a gauge's wait: Kafka 4.4's group-size-counter runs every 60 s
GAUGE_WAIT_S = 100
CONFIGS = {"share.coordinator.state.topic.num.partitions": 3}


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def node(request, tmp_path_factory):
    backend = "mini"
    if request.param != "mini":
        from kafkalab.cluster.distribution import fetch_kafka
        from kafkalab.cluster.jmx_agent import fetch_jmx_exporter
        from kafkalab.cluster.kraft_config import KRaftBackend
        fetch_jmx_exporter()
        backend = KRaftBackend(str(fetch_kafka("4")), metrics=True)
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("gcm") / "cluster"), backend=backend,
                          mode="kraft", combined=True, **CONFIGS) as c:
        yield request.param, c


def served(c) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of the coordinator's metrics the node serves."""
    frame = c.metrics([GCM, GMM])
    assert not frame.empty, "no group coordinator metric is served"
    return {(r.metric, tuple(sorted(r.labels.items()))): r.value for r in frame.itertuples()}


def expected_names() -> set[tuple[str, tuple]]:
    names = {(GCM + "offset_count", ()), (GMM + "numoffsets", ()), (GMM + "numgroups", ())}
    names |= {(GCM + f"{c}_count", ()) for c in COUNTS}
    for protocol, states in STATES.items():
        names.add((GCM + "group_count", (("protocol", protocol),)))
        names |= {(GCM + f"{protocol}_group_count", (("state", s),)) for s in states}
    names |= {(GMM + "numgroups" + s.lower(), ()) for s in STATES["classic"]}
    return names


def test_the_same_names_and_labels_and_nothing_before_the_first_group(node):
    kind, c = node
    got = served(c)
    names = set(got)
    assert names == (expected_names() if kind == "mini" else expected_names() | LEFT_OUT), \
        (kind, sorted(names ^ expected_names()))
    nonzero = {k: v for k, v in got.items() if v and k in expected_names()}
    assert not nonzero, (kind, nonzero)


def describe(c) -> tuple[list[tuple[str, str, str, int]], int]:
    """What the node says of its groups: (group id, type, state, members) of each, sorted, and how many offsets
    are committed (ListGroups v5, DescribeGroups / ConsumerGroupDescribe, ShareGroupDescribe, OffsetFetch)."""
    bs = c.bootstrap_servers
    listed = wire.call(bs, build(ListGroupsRequest, 5, {"states_filter": [], "types_filter": []}),
                       ListGroupsResponse, 5).to_dict()["groups"]
    admin = AdminClient({"bootstrap.servers": bs})
    groups, offsets = [], 0
    for g in listed:
        gid, kind = g["group_id"], g["group_type"]
        if kind == "share":
            members = len(share_group_described(bs, gid)["members"])
        else:
            [f] = admin.describe_consumer_groups([gid]).values()
            members = len(f.result(30).members)
            [f] = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(gid)]).values()
            offsets += sum(1 for tp in f.result(30).topic_partitions if tp.offset >= 0)
        groups.append((gid, kind, g["group_state"], members))
    return sorted(groups), offsets


def share_assigned(bs: str, group: str) -> int:
    """The partitions a share group's members are assigned (ShareGroupDescribe)."""
    return sum(len(tp["partitions"]) for m in share_group_described(bs, group)["members"]
               for tp in m["assignment"]["topic_partitions"])


def gauges_of(groups, offsets: int) -> dict[tuple[str, tuple], float]:
    """The gauges as they must be for ``describe``'s state."""
    out = {(GCM + "offset_count", ()): offsets, (GMM + "numoffsets", ()): offsets}
    for protocol, states in STATES.items():
        mine = [state for _, kind, state, _ in groups if kind == protocol]
        out[(GCM + "group_count", (("protocol", protocol),))] = len(mine)
        for state in states:
            out[(GCM + f"{protocol}_group_count", (("state", state),))] = mine.count(state)
    classic = [state for _, kind, state, _ in groups if kind == "classic"]
    out[(GMM + "numgroups", ())] = len(classic)
    for state in STATES["classic"]:
        out[(GMM + "numgroups" + state.lower(), ())] = classic.count(state)
    return out


class Scenario:
    def __init__(self, c):
        self.c = c
        self.bs = c.bootstrap_servers
        self.consumers: dict[str, Consumer | ShareConsumer] = {}
        self.base = {k: served(c).get((GCM + k + "_count", ()), 0.0) for k in COUNTS}

    def counts(self) -> dict[str, float]:
        got = served(self.c)
        return {k: got[(GCM + k + "_count", ())] - self.base[k] for k in COUNTS}

    def poll(self) -> None:
        """Keep the members alive and rebalancing (a classic member rejoins inside poll)."""
        for consumer in self.consumers.values():
            consumer.poll(0.05)

    def join(self, name: str, consumer) -> None:
        self.consumers[name] = consumer

    def leave(self, name: str) -> None:
        self.consumers.pop(name).close()

    def check(self, groups, offsets: int, **counts) -> None:
        """The node describes ``groups`` and ``offsets``, the totals moved by ``counts`` (the others not at all),
        and the gauges equal that state."""
        want_counts = {k: float(counts.get(k, 0)) for k in COUNTS}
        last = []

        def described():
            self.poll()
            last[:] = [describe(self.c), self.counts()]
            return last == [(sorted(groups), offsets), want_counts]
        try:
            wait_until(described, f"{groups}, {offsets} offsets, counts {want_counts}", timeout=60, retry_on=())
        except AssertionError as exc:
            raise AssertionError(f"{exc}: last {last}") from None
        want = gauges_of(sorted(groups), offsets)

        def gauges_equal():
            self.poll()
            got = served(self.c)
            last[:] = [{k: got.get(k) for k in want}]
            return last[0] == want
        try:
            wait_until(gauges_equal, "the gauges to equal the state", timeout=GAUGE_WAIT_S, retry_on=())
        except AssertionError as exc:
            raise AssertionError(f"{exc}: last {last}, want {want}") from None


def test_each_metric_follows_the_groups_and_offsets_it_counts(node):
    kind, c = node
    bs = c.bootstrap_servers
    topic, suffix = f"gcm-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex[:6]
    classic, modern, share = f"classic-{suffix}", f"consumer-{suffix}", f"share-{suffix}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(topic, 2, 1)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bs})
    for i in range(4):
        p.produce(topic, value=b"r%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    # the share group once joined and left before counting: Kafka 4.4 assigns a share group's partitions only once
    # their share state is initialized, at a second epoch bump, also counted (the mini broker assigns them in the
    # joining heartbeat); from then on a member joining is one rebalance on both
    first = served(c)[(GCM + "share_group_rebalance_count", ())]
    warm = ShareConsumer({"bootstrap.servers": bs, "group.id": share})
    warm.subscribe([topic])
    try:
        wait_until(lambda: (warm.poll(0.1), share_assigned(bs, share) == 2)[1],
                   "the share group's first member to be assigned both partitions", timeout=60, retry_on=())
    finally:
        warm.close()
    first_join = served(c)[(GCM + "share_group_rebalance_count", ())] - first
    assert first_join == (1 if kind == "mini" else 2), (kind, first_join)
    s = Scenario(c)

    def consumer(group: str, protocol: str) -> Consumer:
        cons = Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": protocol,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        cons.subscribe([topic])
        return cons

    try:
        # groups made: a member each, then a second one in the classic and the consumer group
        s.join("classic-1", consumer(classic, "classic"))
        s.join("consumer-1", consumer(modern, "consumer"))
        share_consumer = ShareConsumer({"bootstrap.servers": bs, "group.id": share})
        share_consumer.subscribe([topic])
        s.join("share-1", share_consumer)
        s.check([(classic, "classic", "Stable", 1), (modern, "consumer", "Stable", 1), (share, "share", "Stable", 1)],
                0, group_completed_rebalance=1, consumer_group_rebalance=1, share_group_rebalance=1)
        s.join("classic-2", consumer(classic, "classic"))
        s.join("consumer-2", consumer(modern, "consumer"))
        s.check([(classic, "classic", "Stable", 2), (modern, "consumer", "Stable", 2), (share, "share", "Stable", 1)],
                0, group_completed_rebalance=2, consumer_group_rebalance=2, share_group_rebalance=1)

        # offsets committed: both partitions, by a member of each group
        for name in ("classic-1", "consumer-1"):
            s.consumers[name].commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 2)],
                                     asynchronous=False)
        s.check([(classic, "classic", "Stable", 2), (modern, "consumer", "Stable", 2), (share, "share", "Stable", 1)],
                4, offset_commit=4, group_completed_rebalance=2, consumer_group_rebalance=2, share_group_rebalance=1)

        # a member leaves each: the classic group rebalances (counted), the consumer group's epoch goes up (not)
        s.leave("classic-2")
        s.leave("consumer-2")
        s.check([(classic, "classic", "Stable", 1), (modern, "consumer", "Stable", 1), (share, "share", "Stable", 1)],
                4, offset_commit=4, group_completed_rebalance=3, consumer_group_rebalance=2, share_group_rebalance=1)

        # every member leaves: the groups are Empty, their offsets stay
        for name in list(s.consumers):
            s.leave(name)
        s.check([(classic, "classic", "Empty", 0), (modern, "consumer", "Empty", 0), (share, "share", "Empty", 0)],
                4, offset_commit=4, group_completed_rebalance=3, consumer_group_rebalance=2, share_group_rebalance=1)

        # the classic and the consumer group deleted, with their offsets
        for f in admin.delete_consumer_groups([classic, modern]).values():
            f.result(30)
        s.check([(share, "share", "Empty", 0)],
                0, offset_commit=4, group_completed_rebalance=3, consumer_group_rebalance=2, share_group_rebalance=1)
        if kind != "mini":   # Kafka 4.4 counts OffsetDelete's offsets there, not those DeleteGroups removes
            assert served(c)[(GCM + "offset_deletion_count", ())] == 0.0
    finally:
        for consumer_ in s.consumers.values():
            consumer_.close()
