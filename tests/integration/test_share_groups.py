"""KIP-932 share groups ("queues for Kafka") with confluent-kafka's ``ShareConsumer``, on the mini broker and on
real Apache Kafka 4.4 (KRaft) as the oracle: the same scenarios, the same observable results.

* ``share.auto.offset.reset=earliest`` set with IncrementalAlterConfigs on the GROUP resource (the default,
  latest, would skip the records produced before the group first reads);
* explicit acknowledgement: RELEASE -> the record comes back with delivery count 2; REJECT -> archived, never
  again; ACCEPT -> done;
* three consumers on one partition divide its records: every record delivered, none to two consumers;
* a consumer SIGKILLed (a child process) while holding records: its connection closes, and another member
  gets them at once, with delivery count 2; one SIGSTOPped (alive, connection open): only after
  ``group.share.record.lock.duration.ms``;
* ``group.share.delivery.count.limit``: a "poison" record released at every delivery is archived after the
  limit and never delivered again;
* ShareGroupDescribe (raw) and ListGroups show the group as a share group;
* (mini broker) a restart keeps the share-partition start offset and the delivery counts.
"""
from __future__ import annotations

import base64
import itertools
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                   ResourceType)

from tests.helpers import kafka_wire as wire
from tests.helpers.cluster_helpers import wait_until
from kafka.protocol.admin.groups import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
import kafkalab
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.apis.share_group_describe import ShareGroupDescribeRequest, ShareGroupDescribeResponse

LOCK_MS = 3000          # group.share.record.lock.duration.ms (Kafka's default: 30000)
LIMIT = 3               # group.share.delivery.count.limit (Kafka's default: 5)
CONFIGS = {"group.share.heartbeat.interval.ms": 500, "group.share.session.timeout.ms": 6000,
           "group.share.record.lock.duration.ms": LOCK_MS, "group.share.delivery.count.limit": LIMIT}
# Kafka 4.4 bounds them, and a group's own overrides, by group.share.min.* (5000, 45000, 15000; the count limit's
# minimum, 2, is fine): Kafka refuses to start with a value below its minimum, the mini broker does not
KAFKA_CONFIGS = {**CONFIGS, "group.share.min.heartbeat.interval.ms": 500, "group.share.min.session.timeout.ms": 6000,
                 "group.share.min.record.lock.duration.ms": 1000}
ACCEPT, RELEASE, REJECT = 1, 2, 3
#: the mini clusters': a small __share_group_state (Kafka's default, 50 partitions of 3 replicas, takes three
#: Python brokers seconds to create)
CLUSTER_CONFIGS = {**CONFIGS, "share.coordinator.state.topic.num.partitions": 3}

CHILD = textwrap.dedent("""
    import sys, time
    from confluent_kafka import ShareConsumer
    c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([sys.argv[3]])
    while True:
        ms = [m for m in c.poll(0.5) if not m.error()]
        if ms:
            print("HOLDING", " ".join(str(m.offset()) for m in ms), flush=True)
            time.sleep(3600)   # holds them, unacknowledged, until killed
""")


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def bootstrap(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("kip932")), **KAFKA_CONFIGS) as b:
            yield request.param, b.bootstrap_servers
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("kip932kraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", combined=True,
                          **KAFKA_CONFIGS) as c:
        yield request.param, c.bootstrap_servers


def setup_topic(bs: str, records: int, partitions: int = 1, replication: int = 1) -> tuple[str, str]:
    """A new topic with ``records`` records (one batch each) and a new group reading it from the earliest."""
    topic, group = f"q-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bs})
    for f in admin.create_topics([NewTopic(topic, partitions, replication)]).values():
        f.result(30)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)

    def reset_is_earliest():   # (Kafka 4.4 answers from its metadata, which the change reaches a moment later)
        [f] = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
        return f.result(30)["share.auto.offset.reset"].value == "earliest"
    wait_until(reset_is_earliest, "share.auto.offset.reset=earliest to be described", timeout=30)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(records):
        p.produce(topic, value=b"r%d" % i)
        p.flush(30)
    return topic, group


def consumer(bs: str, group: str, topic: str, **extra) -> ShareConsumer:
    c = ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                       **extra})
    c.subscribe([topic])
    return c


def poll_until(consumers: dict, on_message, done, timeout: float = 40.0) -> None:
    """Poll the consumers round-robin, calling ``on_message(name, consumer, message)``, until ``done()``."""
    deadline = time.time() + timeout
    while not done():
        assert time.time() < deadline, "timed out"
        for name, c in consumers.items():
            for m in c.poll(0.2):
                assert m.error() is None, m.error()
                on_message(name, c, m)
            c.commit_sync(10)


def close_all(consumers) -> None:
    for c in consumers.values():
        c.close()


def test_release_redelivers_and_reject_archives(bootstrap):
    _, bs = bootstrap
    topic, group = setup_topic(bs, 10)
    c = consumer(bs, group, topic)
    seen: list[tuple[int, int]] = []

    def on_message(_name, c, m):
        seen.append((m.offset(), m.delivery_count()))
        kind = RELEASE if (m.offset() == 3 and m.delivery_count() == 1) else REJECT if m.offset() == 5 else ACCEPT
        c.acknowledge(m, kind)
    poll_until({"c": c}, on_message, lambda: len(seen) >= 11)
    # nothing more comes: 5 was rejected (archived), everything else accepted
    end = time.time() + 2 * 0.5
    while time.time() < end:
        assert not [m for m in c.poll(0.2) if m.error() is None]
    c.close()
    assert sorted(seen) == sorted([(o, 1) for o in range(10)] + [(3, 2)]), seen


def test_consumers_on_one_partition_divide_the_records(bootstrap):
    _, bs = bootstrap
    n = 30
    topic, group = setup_topic(bs, n)
    consumers = {name: consumer(bs, group, topic, **{"max.poll.records": 2}) for name in ("a", "b", "c")}
    got: dict[str, list[int]] = {name: [] for name in consumers}

    def on_message(name, c, m):
        got[name].append(m.offset())
        c.acknowledge(m, ACCEPT)
    try:
        poll_until(consumers, on_message, lambda: sum(map(len, got.values())) >= n)
    finally:
        close_all(consumers)
    every = [o for offsets in got.values() for o in offsets]
    assert sorted(every) == list(range(n)), got        # every record once: none delivered to two consumers
    assert sum(1 for offsets in got.values() if offsets) >= 2, got   # and shared out


def hold_in_child(bs: str, group: str, topic: str) -> tuple[subprocess.Popen, list[int]]:
    """A share consumer in a child process that polls records and holds them unacknowledged."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, bs, group, topic], stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("HOLDING"), line
    except BaseException:
        child.kill()
        child.wait(10)
        raise
    return child, [int(x) for x in line.split()[1:]]


def read_all(bs: str, group: str, topic: str, n: int) -> dict[int, int]:
    """Offset -> delivery count of the first ``n`` offsets, as another member of the group gets them."""
    c = consumer(bs, group, topic)
    seen: dict[int, int] = {}

    def on_message(_name, c, m):
        seen[m.offset()] = m.delivery_count()
        c.acknowledge(m, ACCEPT)
    try:
        poll_until({"c": c}, on_message, lambda: set(range(n)) <= set(seen))
    finally:
        c.close()
    return seen


@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_records_held_by_a_dead_or_stuck_consumer_are_redelivered(bootstrap, how):
    """SIGKILL closes the consumer's connections: its share sessions end and its records are released at once
    (Kafka's ConnectionDisconnectListener). SIGSTOP leaves them open: the records come back only when their
    acquisition locks expire (group.share.record.lock.duration.ms). Either way another member gets them with
    delivery count 2."""
    _, bs = bootstrap
    topic, group = setup_topic(bs, 5)
    child, held = hold_in_child(bs, group, topic)
    try:
        stopped_at = time.monotonic()
        child.send_signal(getattr(signal, how))
        seen = read_all(bs, group, topic, 5)
        waited = time.monotonic() - stopped_at
    finally:
        child.kill()
        child.wait(10)
    assert held and all(seen[o] == 2 for o in held), (held, seen)      # delivered once before, to the child
    assert all(seen[o] == 1 for o in range(5) if o not in held), seen
    if how == "SIGSTOP":   # a lower bound only: no record comes back before its lock expires
        assert waited >= LOCK_MS / 1000 * 0.9, waited


def test_delivery_count_limit_archives_a_poison_record(bootstrap):
    _, bs = bootstrap
    topic, group = setup_topic(bs, 3)
    c = consumer(bs, group, topic)
    deliveries: list[tuple[int, int]] = []

    def on_message(_name, c, m):
        deliveries.append((m.offset(), m.delivery_count()))
        c.acknowledge(m, RELEASE if m.offset() == 1 else ACCEPT)    # record 1 is "poison": always released
    try:
        poll_until({"c": c}, on_message, lambda: (1, LIMIT) in deliveries)
        end = time.time() + 2.0
        while time.time() < end:     # after the limit it never comes back
            for m in c.poll(0.2):
                deliveries.append((m.offset(), m.delivery_count()))
    finally:
        c.close()
    assert [d for d in deliveries if d[0] == 1] == [(1, k) for k in range(1, LIMIT + 1)], deliveries
    assert sorted(d for d in deliveries if d[0] != 1) == [(0, 1), (2, 1)], deliveries


def test_share_group_is_described_and_listed(bootstrap):
    _, bs = bootstrap
    topic, group = setup_topic(bs, 1)
    c = consumer(bs, group, topic)
    try:
        # (Kafka 4.4 assigns a partition once its share state is initialized: a heartbeat or two later)
        poll_until({"c": c}, lambda _n, c, m: c.acknowledge(m, ACCEPT),
                   lambda: [m for m in described(bs, group)["members"] if m["assignment"]["topic_partitions"]])
        d = described(bs, group)
        assert d["error_code"] == 0 and d["group_state"] == "Stable" and d["assignor_name"] == "simple", d
        [member] = d["members"]
        assert member["subscribed_topic_names"] == [topic] and member["member_epoch"] > 0
        assert [t["topic_name"] for t in member["assignment"]["topic_partitions"]] == [topic]
        listed = wire.call(bs, build(ListGroupsRequest, 5, {"states_filter": [], "types_filter": ["share"]}),
                           ListGroupsResponse, 5).to_dict()["groups"]
        [mine] = [g for g in listed if g["group_id"] == group]
        assert (mine["group_type"], mine["protocol_type"], mine["group_state"]) == ("share", "share", "Stable"), mine
    finally:
        c.close()
    unknown = described(bs, "no-such-group")
    assert unknown["error_code"] == 69, unknown       # GROUP_ID_NOT_FOUND


def described(bs: str, group: str) -> dict:
    request = build(ShareGroupDescribeRequest, 1, {"group_ids": [group], "include_authorized_operations": False})
    r = wire.call(bs, request, ShareGroupDescribeResponse, 1).to_dict()
    return r["groups"][0]


def test_share_api_versions_are_within_kafka_4_4s(bootstrap):
    """What the mini broker serves of the APIs Kafka 3.9 lacks (test_differential's NOT_IN_KAFKA_3_9) is what it
    advertises, and within what Kafka 4.4 advertises."""
    from test_differential import NOT_IN_KAFKA_3_9
    name, bs = bootstrap
    r = wire.call(bs, build(ApiVersionsRequest, 3, {"client_software_name": "kafkalab-tests",
                                                    "client_software_version": "1.0"}), ApiVersionsResponse, 3)
    served = {k["api_key"]: (k["min_version"], k["max_version"]) for k in r.to_dict()["api_keys"]}
    for key, (lo, hi) in NOT_IN_KAFKA_3_9.items():
        if name == "mini":
            assert served[key] == (lo, hi), (key, served.get(key))
        else:
            assert served[key][0] <= lo and hi <= served[key][1], (key, served[key])


def test_a_restart_keeps_the_start_offset_and_the_delivery_counts(tmp_path):
    """Mini broker only (a restart of Kafka is not needed to know Kafka keeps them: KIP-932's share coordinator
    exists for it). Records 0-4 accepted and 5-9 released before the restart: after it the group goes on at 5,
    and 5-9 come with delivery count 2."""
    with kafkalab.mini(log_dir=str(tmp_path), **CONFIGS) as b:
        topic, group = setup_topic(b.bootstrap_servers, 10)
        c = consumer(b.bootstrap_servers, group, topic)
        seen = []

        def on_message(_n, c, m):
            seen.append(m.offset())
            c.acknowledge(m, ACCEPT if m.offset() < 5 else RELEASE)
        try:
            poll_until({"c": c}, on_message, lambda: set(range(10)) <= set(seen))
        finally:
            c.close()
    with kafkalab.mini(log_dir=str(tmp_path), **CONFIGS) as b:
        seen2 = read_all_from(b.bootstrap_servers, group, topic, range(5, 10))
        snapshots = share_state_snapshots(b.bootstrap_servers)
    assert seen2 == {o: 2 for o in range(5, 10)}, seen2
    # what the share coordinator wrote before the restart (ShareSnapshot records keyed by group, topic id, partition)
    mine = [v for (g, _, p), v in snapshots if g == group and p == 0]
    assert mine[0]["start_offset"] == -1 and mine[0]["state_batches"] == []        # InitializeShareGroupState
    before = [v for v in mine if v["start_offset"] == 5]
    assert before and before[0]["state_batches"] == [
        {"first_offset": 5, "last_offset": 9, "delivery_state": 0, "delivery_count": 1}], mine
    assert mine[-1]["start_offset"] == 10, mine[-1]                              # all accepted after it


def share_state_snapshots(bs: str) -> list[tuple[tuple, dict]]:
    """Every ShareSnapshot record of ``__share_group_state``, decoded, in offset order per partition."""
    from confluent_kafka import Consumer, TopicPartition
    from kafkalab.broker.coordinator.share.share_coordinator import SHARE_STATE_TOPIC, decode_key, decode_snapshot_value
    admin = AdminClient({"bootstrap.servers": bs})
    n = len(admin.list_topics(SHARE_STATE_TOPIC, timeout=30).topics[SHARE_STATE_TOPIC].partitions)
    c = Consumer({"bootstrap.servers": bs, "group.id": "reader", "enable.partition.eof": True,
                  "enable.auto.commit": False})
    c.assign([TopicPartition(SHARE_STATE_TOPIC, p, 0) for p in range(n)])
    out, eof, deadline = [], set(), time.time() + 30
    while len(eof) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            eof.add(m.partition())
            continue
        out.append((decode_key(m.key()), decode_snapshot_value(m.value())))
    c.close()
    return out


def read_all_from(bs: str, group: str, topic: str, offsets) -> dict[int, int]:
    c = consumer(bs, group, topic)
    seen: dict[int, int] = {}

    def on_message(_name, c, m):
        seen[m.offset()] = m.delivery_count()
        c.acknowledge(m, ACCEPT)
    try:
        poll_until({"c": c}, on_message, lambda: set(offsets) <= set(seen))
        end = time.time() + 1.0
        while time.time() < end:     # and nothing below the start offset comes again
            for m in c.poll(0.2):
                seen[m.offset()] = m.delivery_count()
    finally:
        c.close()
    return seen


SHARE_CLIENT = Path(__file__).resolve().parent.parent / "java" / "ShareClient.java"


@pytest.fixture(scope="module")
def share_client():
    """Kafka's Java ``KafkaShareConsumer`` (kafka-clients 4.4, from the Kafka 4.4 distribution kafkalab caches),
    as tests/java/ShareClient.java; skipped only where Java or Kafka 4.4 cannot be had."""
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.streams.jvm import StreamsJvmError, java_command
    try:
        home = Path(fetch_kafka("4"))
        prefix = java_command(home, [], ["-Xmx128m"], source=SHARE_CLIENT)
    except (StreamsJvmError, Exception) as e:   # noqa: BLE001 - no Java, or no Kafka 4 download here
        pytest.skip(f"no Java share consumer here: {e}")

    def run(*args, timeout=90):
        done = subprocess.run([*prefix, "share", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"ShareClient failed:\n{done.stdout}\n{done.stderr[-3000:]}"
        return [tuple(map(int, line.split()[1:])) for line in done.stdout.splitlines() if line.startswith("DELIVERED")]
    return run


def test_java_share_consumer(bootstrap, share_client):
    """The same RELEASE / REJECT / ACCEPT scenario with Java's KafkaShareConsumer (it negotiates ShareFetch v1
    with the mini broker, v2 with Kafka 4.4)."""
    _, bs = bootstrap
    topic, group = setup_topic(bs, 8)
    deliveries = share_client(bs, group, topic, 8)
    assert sorted(deliveries) == sorted([(o, 1) for o in range(8)] + [(3, 2)]), deliveries


@pytest.mark.cluster
def test_share_groups_on_a_mini_cluster(tmp_path, share_client):
    """Three mini brokers on a real ZooKeeper: the share group lives on the leader of its __consumer_offsets
    partition (FindCoordinator), each partition's share state on that partition's leader, kept by the share
    coordinator (the leader of its ``__share_group_state`` partition: one partition here); the group config set
    through any broker reaches them all (ZooKeeper).

    1. two confluent-kafka consumers divide three partitions' records; Java's KafkaShareConsumer runs its
       scenario;
    2. records 0-4 of another topic accepted and 5-9 released; then the share coordinator's leader and the
       topic partition's leader are SIGKILLed. The new leaders carry on from the state the share coordinator
       replicated: the group goes on at 5, and 5-9 come with delivery count 2."""
    from kafkalab.broker.coordinator.share.share_coordinator import SHARE_STATE_TOPIC
    configs = {**CLUSTER_CONFIGS, "share.coordinator.state.topic.num.partitions": 1}
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **configs) as cl:
        bs = cl.bootstrap_servers
        topic, group = setup_topic(bs, 0, partitions=3)
        p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
        for i in range(30):
            p.produce(topic, value=b"r%d" % i, partition=i % 3)
            p.flush(30)
        consumers = {name: consumer(bs, group, topic, **{"max.poll.records": 3}) for name in ("a", "b")}
        got: dict[str, list[tuple[int, int]]] = {name: [] for name in consumers}

        def on_message(name, c, m):
            got[name].append((m.partition(), m.offset()))
            c.acknowledge(m, RELEASE if (m.partition(), m.offset(), m.delivery_count()) == (1, 2, 1) else ACCEPT)
        try:
            poll_until(consumers, on_message, lambda: sum(map(len, got.values())) >= 31, timeout=60)
        finally:
            close_all(consumers)
        every = sorted(x for xs in got.values() for x in xs)
        assert every == sorted([(p, o) for p in range(3) for o in range(10)] + [(1, 2)]), got
        topic, group = setup_topic(bs, 8)
        deliveries = share_client(bs, group, topic, 8)
        assert sorted(deliveries) == sorted([(o, 1) for o in range(8)] + [(3, 2)]), deliveries

        # 2. the share state moves with the leaders
        topic, group = setup_topic(bs, 10, replication=3)
        c = consumer(bs, group, topic)
        seen: list[int] = []

        def accept_five(_n, c, m):
            seen.append(m.offset())
            c.acknowledge(m, ACCEPT if m.offset() < 5 else RELEASE)
        try:
            poll_until({"c": c}, accept_five, lambda: set(range(10)) <= set(seen))
        finally:
            c.close()
        admin = AdminClient({"bootstrap.servers": bs})

        def leader(t):
            return admin.list_topics(t, timeout=10).topics[t].partitions[0].leader
        killed: list[int] = []
        for t in (SHARE_STATE_TOPIC, topic):
            if leader(t) not in killed:
                killed.append(leader(t))
                cl.kill(killed[-1])
            wait_until(lambda t=t: leader(t) not in killed + [-1], f"a new leader of {t}", timeout=60)
        assert read_all_from(bs, group, topic, range(5, 10)) == {o: 2 for o in range(5, 10)}


def test_bad_share_requests_get_kafkas_error_codes(bootstrap):
    """Raw ShareGroupHeartbeat / ShareFetch / ShareAcknowledge requests that are wrong in some way: the same error
    codes from both brokers, on one connection that stays open."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from kafkalab.broker.apis.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
    from kafkalab.broker.apis.share_fetch import ShareFetchRequest, ShareFetchResponse
    from kafkalab.broker.apis.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    _, bs = bootstrap
    topic, group = setup_topic(bs, 3)
    md = wire.call(bs, build(MetadataRequest, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}), MetadataResponse, 12)
    topic_id = md.to_dict()["topics"][0]["topic_id"]
    sock = wire.connect(bs)
    correlation = itertools.count(1)

    def call(req, resp, data, version=1):
        return wire.roundtrip(sock, build(req, version, data), resp, version, next(correlation)).to_dict()

    def heartbeat(member, epoch, topics=None):
        return call(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, {
            "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": topics})

    def fetch(member, epoch, acks=None, topic_id=topic_id):
        parts = [{"partition_index": 0, "acknowledgement_batches": acks or []}]
        return call(ShareFetchRequest, ShareFetchResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": 100,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10,
            "topics": [{"topic_id": topic_id, "partitions": parts}] if epoch >= 0 else [],
            "forgotten_topics_data": []})

    def ack(first, last, *types):
        return [{"first_offset": first, "last_offset": last, "acknowledge_types": list(types)}]

    def partition(r):
        [t] = r["responses"]
        [p] = t["partitions"]
        return p
    member = str(uuid.uuid4())
    try:
        # a client asks FindCoordinator first (Kafka creates __consumer_offsets then: until it is loaded, its
        # group coordinator answers COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR)
        def coordinator_ready():
            r = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 0, "coordinator_keys": [group]},
                     version=4)
            return r["coordinators"][0]["error_code"] == 0 and heartbeat(member, 5)["error_code"] not in (14, 15, 16)
        wait_until(coordinator_ready, "the group coordinator", timeout=30, interval=0.5)
        assert heartbeat(member, 5)["error_code"] == 69                    # GROUP_ID_NOT_FOUND: no such group
        assert heartbeat("", 0, [topic])["error_code"] == 42                # INVALID_REQUEST: no member id
        assert heartbeat(member, 0, None)["error_code"] == 42               # no subscription when joining
        assert fetch(member, 5)["error_code"] == 122                        # SHARE_SESSION_NOT_FOUND
        assert fetch(member, -1)["error_code"] == 122
        assert heartbeat(member, 0, [topic])["error_code"] == 0
        assert fetch(member, 0)["error_code"] == 0                          # opens the session
        assert fetch(member, 7)["error_code"] == 123                        # INVALID_SHARE_SESSION_EPOCH
        epoch = itertools.count(1)
        # (until the member holds records: Kafka 4.4 answers INVALID_REQUEST for acknowledgements to a
        # share-partition with nothing in flight, INVALID_RECORD_STATE once it has some)
        wait_until(lambda: [p for t in fetch(member, next(epoch))["responses"] for p in t["partitions"]
                            if p["acquired_records"]], "records acquired", timeout=20, interval=0.2)
        def ack_error(*batch):
            return partition(fetch(member, next(epoch), ack(*batch)))["acknowledge_error_code"]
        assert ack_error(100, 100, 1) == 42      # INVALID_REQUEST: past the records in flight
        assert ack_error(0, 1, 9) == 42          # an unknown acknowledge type
        assert ack_error(1, 1, 1) == 0           # record 1 accepted (0 stays acquired: the start offset stays)
        assert ack_error(1, 1, 1) == 121         # INVALID_RECORD_STATE: 1 is not acquired any more
        assert partition(fetch(member, next(epoch), topic_id=uuid.uuid4()))["error_code"] == 100    # UNKNOWN_TOPIC_ID
        assert call(ShareAcknowledgeRequest, ShareAcknowledgeResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": 0, "topics": []})["error_code"] == 123
        assert heartbeat(member, 99)["error_code"] == 110                   # FENCED_MEMBER_EPOCH
        # the share coordinator of a share-partition (what brokers ask): key group:topicId:partition
        tid = base64.urlsafe_b64encode(topic_id.bytes if isinstance(topic_id, uuid.UUID) else uuid.UUID(topic_id).bytes)
        for key, code in ((f"{group}:{tid.decode().rstrip('=')}:0", 0), ("nope", 42), (f"{group}:x:y", 42)):
            [found] = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 2, "coordinator_keys": [key]},
                           version=6)["coordinators"]
            assert found["error_code"] == code and (found["node_id"] >= 0) == (code == 0), (key, found)
    finally:
        sock.close()


def test_describe_share_group_offsets(bootstrap):
    """DescribeShareGroupOffsets v1 (what Java's Admin.listShareGroupOffsets sends): records 0-2 and 4 accepted,
    3 rejected, 5-9 released (one acknowledgement); the lag is 5 (records from the start offset to the high
    watermark not done yet). A partition the group was assigned but never acknowledged anything of has start
    offset -1 (initialized, not yet written by its leader); an unknown group has no offsets (and no error)."""
    from kafkalab.broker.apis.describe_share_group_offsets import (DescribeShareGroupOffsetsRequest,
                                                                   DescribeShareGroupOffsetsResponse)
    _, bs = bootstrap
    topic, group = setup_topic(bs, 0, partitions=2)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0})
    for i in range(10):
        p.produce(topic, value=b"r%d" % i, partition=0)
        p.flush(30)
    c = consumer(bs, group, topic)
    seen: list[int] = []

    def on_message(_n, c, m):
        seen.append((m.partition(), m.offset()))
        c.acknowledge(m, REJECT if m.offset() == 3 else ACCEPT if m.offset() < 5 else RELEASE)
    try:
        poll_until({"c": c}, on_message, lambda: len(seen) >= 10)
    finally:
        c.close()
    assert {p for p, _ in seen} == {0}

    def describe(group_id, topics):
        request = build(DescribeShareGroupOffsetsRequest, 1, {"groups": [{"group_id": group_id, "topics": topics}]})
        return wire.call(bs, request, DescribeShareGroupOffsetsResponse, 1).to_dict()["groups"][0]

    def offsets():
        g = describe(group, [{"topic_name": topic, "partitions": [0, 1]}])
        assert g["error_code"] == 0, g
        return {p["partition_index"]: (p["start_offset"], p["lag"], p["error_code"])
                for p in g["topics"][0]["partitions"]}
    # Kafka 4.4 persists (and so describes) the start offset the share-partition had before the acknowledgement
    # it writes, 0 here (measured); the mini broker the one after it. The lag is the same.
    expected = {0: (5 if bootstrap[0] == "mini" else 0, 5, 0), 1: (-1, -1, 0)}
    wait_until(lambda: offsets() == expected, f"start offsets {expected} (last: {offsets()})", timeout=20)
    assert describe("no-such-group", None) == {"group_id": "no-such-group", "topics": [], "error_code": 0,
                                               "error_message": None}


@pytest.mark.parametrize("members, partitions", [(4, 2)])
def test_simple_assignor_spreads_partitions(bootstrap, members, partitions):
    """The ``simple`` assignor as ShareGroupDescribe shows it: with fewer members than partitions each partition
    goes to one member (counts differ by at most one); with more members, every member gets one partition and
    the partitions are shared. (Both shapes were compared with Kafka 4.4; to keep this file's time, the test
    runs the shared one: the other is in tests/unit/broker/coordinator/group/test_share_group_assignor.py and the
    mini cluster test.)"""
    _, bs = bootstrap
    topic, group = setup_topic(bs, 0, partitions=partitions)
    consumers = {f"c{i}": consumer(bs, group, topic) for i in range(members)}

    def settled():
        for c in consumers.values():
            c.poll(0.1)
        d = described(bs, group)
        assigned = {m["member_id"]: [p for t in m["assignment"]["topic_partitions"] for p in t["partitions"]]
                    for m in d["members"]}
        everything = sorted(p for ps in assigned.values() for p in ps)
        if len(assigned) != members or set(everything) != set(range(partitions)):
            return None
        if members <= partitions and len(everything) != partitions:
            return None
        return assigned
    try:
        wait_until(settled, "every member assigned", timeout=40, interval=0.2)
        assigned = settled() or settled()
    finally:
        close_all(consumers)
    counts = sorted(len(ps) for ps in assigned.values())
    if members <= partitions:
        assert counts[-1] - counts[0] <= 1 and sum(counts) == partitions, assigned
    else:
        assert counts == [1] * members, assigned


def test_renew_keeps_records_acquired(bootstrap):
    """ShareFetch / ShareAcknowledge v2 (KIP-1222): a RENEW (4) acknowledgement in a request with IsRenewAck keeps
    the record acquired (with a fresh lock), so the member can still ACCEPT it, where a RELEASE gives it up; a
    renewing ShareFetch (its fetch limits all 0) acquires nothing new; RENEW without IsRenewAck is
    INVALID_REQUEST."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafkalab.broker.apis.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
    from kafkalab.broker.apis.share_fetch import ShareFetchRequest, ShareFetchResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from kafkalab.broker.apis.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    _, bs = bootstrap
    topic, group = setup_topic(bs, 4)
    md = wire.call(bs, build(MetadataRequest, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}), MetadataResponse, 12)
    topic_id = md.to_dict()["topics"][0]["topic_id"]
    member, correlation, epoch = str(uuid.uuid4()), itertools.count(1), itertools.count(0)
    sock = wire.connect(bs)

    def call(req, resp, data, version=2):
        return wire.roundtrip(sock, build(req, version, data), resp, version, next(correlation)).to_dict()

    def fetch(acks=(), renew=False, limits=(200, 1, 1 << 20, 2, 2)):
        wait, min_bytes, max_bytes, max_records, batch = limits
        return call(ShareFetchRequest, ShareFetchResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": next(epoch), "max_wait_ms": wait,
            "min_bytes": min_bytes, "max_bytes": max_bytes, "max_records": max_records, "batch_size": batch,
            "share_acquire_mode": 1,
            "is_renew_ack": renew, "topics": [{"topic_id": topic_id, "partitions": [
                {"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": o, "last_offset": o, "acknowledge_types": [k]} for o, k in acks]}]}],
            "forgotten_topics_data": []})

    def parts(r):
        return [p for t in r["responses"] for p in t["partitions"]]

    def acknowledge(acks, renew=False):
        r = call(ShareAcknowledgeRequest, ShareAcknowledgeResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": next(epoch), "is_renew_ack": renew,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": o, "last_offset": o, "acknowledge_types": [k]} for o, k in acks]}]}]})
        return [p["error_code"] for p in parts(r)]
    try:
        def joined():   # (FindCoordinator first: Kafka creates __consumer_offsets then)
            found = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 0, "coordinator_keys": [group]},
                         version=4)
            if found["coordinators"][0]["error_code"]:
                return False
            r = call(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, {
                "group_id": group, "member_id": member, "member_epoch": 0, "rack_id": None,
                "subscribed_topic_names": [topic]}, version=1)
            return r["error_code"] == 0
        wait_until(joined, "the member to join", timeout=30, interval=0.5)
        acquired = []
        wait_until(lambda: acquired.extend(a for p in parts(fetch()) for a in p["acquired_records"]) or acquired,
                   "records acquired", timeout=20, interval=0.2)
        first = acquired[0]["first_offset"]
        assert acknowledge([(first, 4)]) == [42]                   # RENEW without IsRenewAck: INVALID_REQUEST
        # a renewing ShareFetch fetches nothing: with fetch limits set Kafka 4.4 refuses it (INVALID_REQUEST)
        assert fetch([(first, 4)], renew=True)["error_code"] == 42
        epoch = itertools.count(next(epoch) - 1)   # (a refused request does not move the session's epoch)
        renewed = fetch([(first, 4)], renew=True, limits=(0, 0, 0, 0, 0))
        assert [p["acknowledge_error_code"] for p in parts(renewed)] == [0], renewed
        assert not [a for p in parts(renewed) for a in p["acquired_records"]], renewed   # nothing new acquired
        assert acknowledge([(first, 4)], renew=True) == [0]       # renew again, with ShareAcknowledge v2
        assert acknowledge([(first, 1)]) == [0]                    # still acquired: the ACCEPT holds
        released = first + 1 if acquired[0]["last_offset"] > first else acquired[1]["first_offset"]
        assert acknowledge([(released, 2)]) == [0]                 # RELEASE gives it up ...
        assert acknowledge([(released, 1)]) == [121]               # ... so an ACCEPT after it is refused
    finally:
        sock.close()


def test_a_fetched_partition_without_records_has_empty_not_null_records(bootstrap):
    """A ShareFetch for a partition with nothing to acquire: Kafka answers its Records as empty (size 0), never
    null (-1), which librdkafka's share consumer rejects ("invalid MessageSetSize -1", its test 0170)."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from kafkalab.broker.apis.share_fetch import ShareFetchRequest, ShareFetchResponse
    from kafkalab.broker.apis.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    _, bs = bootstrap
    topic, group = setup_topic(bs, 0)
    md = wire.call(bs, build(MetadataRequest, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}), MetadataResponse, 12)
    topic_id = md.to_dict()["topics"][0]["topic_id"]
    sock = wire.connect(bs)
    correlation = itertools.count(1)

    def call(req, resp, data, version=1):
        return wire.roundtrip(sock, build(req, version, data), resp, version, next(correlation)).to_dict()

    def heartbeat(epoch):
        return call(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, {
            "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": [topic]})
    member = str(uuid.uuid4())
    try:
        def coordinator_ready():
            r = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 0, "coordinator_keys": [group]},
                     version=4)
            return r["coordinators"][0]["error_code"] == 0 and heartbeat(0)["error_code"] == 0
        wait_until(coordinator_ready, "the group coordinator", timeout=30, interval=0.5)
        r = call(ShareFetchRequest, ShareFetchResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": 0, "max_wait_ms": 100,
            "min_bytes": 1, "max_bytes": 1 << 20, "max_records": 10, "batch_size": 10,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}],
            "forgotten_topics_data": []})
        assert r["error_code"] == 0, r
        [t] = r["responses"]
        [p] = t["partitions"]
        assert p["error_code"] == 0 and p["acquired_records"] == [], p
        assert p["records"] is not None and len(p["records"]) == 0, p
    finally:
        sock.close()


def test_a_share_fetch_with_max_bytes_0_acquires_nothing(bootstrap):
    """MaxBytes 0: Kafka 4.4 acquires no record, even with records available (librdkafka's 0180,
    fetch.max.bytes=0); the mini broker used to hand out one batch."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from kafkalab.broker.apis.share_fetch import ShareFetchRequest, ShareFetchResponse
    from kafkalab.broker.apis.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    _, bs = bootstrap
    topic, group = setup_topic(bs, 3)
    md = wire.call(bs, build(MetadataRequest, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}), MetadataResponse, 12)
    topic_id = md.to_dict()["topics"][0]["topic_id"]
    sock = wire.connect(bs)
    correlation = itertools.count(1)
    epochs = itertools.count(0)

    def call(req, resp, data, version=1):
        return wire.roundtrip(sock, build(req, version, data), resp, version, next(correlation)).to_dict()

    def heartbeat(epoch):
        return call(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, {
            "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": [topic]})

    def acquired(max_bytes):
        r = call(ShareFetchRequest, ShareFetchResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": next(epochs), "max_wait_ms": 100,
            "min_bytes": 1, "max_bytes": max_bytes, "max_records": 1, "batch_size": 1,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}],
            "forgotten_topics_data": []})
        assert r["error_code"] == 0, r
        return [a for t in r["responses"] for p in t["partitions"] for a in p["acquired_records"]]
    member = str(uuid.uuid4())
    try:
        def coordinator_ready():
            r = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 0, "coordinator_keys": [group]},
                     version=4)
            return r["coordinators"][0]["error_code"] == 0 and heartbeat(0)["error_code"] == 0
        wait_until(coordinator_ready, "the group coordinator", timeout=30, interval=0.5)
        first = []
        wait_until(lambda: first.extend(acquired(1 << 20)) or first, "a record acquired", timeout=20, interval=0.2)
        assert first[0]["first_offset"] == 0, first                   # offsets 1 and 2 remain available
        assert acquired(0) == []
        assert acquired(1 << 20), "offset 1 was available"
    finally:
        sock.close()


def test_final_acknowledgements_count_after_leaving_the_group(bootstrap):
    """A closing librdkafka 2.16 ShareConsumer sends its leave heartbeat (member epoch -1) and its final
    ShareAcknowledge (session epoch -1, the last poll's acknowledgements) concurrently, in either order. Leaving
    the group releases nothing (Kafka 4.4: only the end of the share session does, after its acknowledgements),
    so acknowledgements that arrive after the leave still count and the records are not delivered again."""
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
    from kafkalab.broker.apis.share_acknowledge import ShareAcknowledgeRequest, ShareAcknowledgeResponse
    from kafkalab.broker.apis.share_fetch import ShareFetchRequest, ShareFetchResponse
    from kafkalab.broker.apis.share_group_heartbeat import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
    _, bs = bootstrap
    topic, group = setup_topic(bs, 4)
    md = wire.call(bs, build(MetadataRequest, 12, {"topics": [{"name": topic, "topic_id": None}],
                                                   "allow_auto_topic_creation": False,
                                                   "include_topic_authorized_operations": False}), MetadataResponse, 12)
    topic_id = md.to_dict()["topics"][0]["topic_id"]
    member, correlation = str(uuid.uuid4()), itertools.count(1)
    sock = wire.connect(bs)

    def call(req, resp, data, version=1):
        return wire.roundtrip(sock, build(req, version, data), resp, version, next(correlation)).to_dict()

    def heartbeat(epoch):
        return call(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, {
            "group_id": group, "member_id": member, "member_epoch": epoch, "rack_id": None,
            "subscribed_topic_names": [topic] if epoch == 0 else None})

    def acquire():
        r = call(ShareFetchRequest, ShareFetchResponse, {
            "group_id": group, "member_id": member, "share_session_epoch": 0, "max_wait_ms": 500, "min_bytes": 1,
            "max_bytes": 1 << 20, "max_records": 2, "batch_size": 2,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}],
            "forgotten_topics_data": []})
        return [o for t in r["responses"] for p in t["partitions"] for a in p["acquired_records"]
                for o in range(a["first_offset"], a["last_offset"] + 1)]
    try:
        def joined():   # (FindCoordinator first: Kafka creates __consumer_offsets then)
            found = call(FindCoordinatorRequest, FindCoordinatorResponse, {"key_type": 0, "coordinator_keys": [group]},
                         version=4)
            return not found["coordinators"][0]["error_code"] and heartbeat(0)["error_code"] == 0
        wait_until(joined, "the member to join", timeout=30, interval=0.5)
        acquired: list[int] = []
        wait_until(lambda: acquired.extend(acquire()) or acquired, "records acquired", timeout=20, interval=0.2)
        assert heartbeat(-1)["error_code"] == 0                                    # leave the group first ...
        closed = call(ShareAcknowledgeRequest, ShareAcknowledgeResponse, {         # ... then the final request
            "group_id": group, "member_id": member, "share_session_epoch": -1,
            "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": o, "last_offset": o, "acknowledge_types": [ACCEPT]} for o in acquired]}]}]})
    finally:
        sock.close()
    assert closed["error_code"] == 0, closed
    assert [p["error_code"] for t in closed["responses"] for p in t["partitions"]] == [0], closed
    rest = [o for o in range(4) if o not in acquired]
    c = consumer(bs, group, topic)
    seen: dict[int, list[int]] = {}

    def on_message(_name, c, m):
        seen.setdefault(m.offset(), []).append(m.delivery_count())
        c.acknowledge(m, ACCEPT)
    try:
        poll_until({"c": c}, on_message, lambda: set(rest) <= set(seen))
        quiet_until = time.monotonic() + 2.0   # the accepted records never come back (a release would be at once)
        poll_until({"c": c}, on_message, lambda: time.monotonic() > quiet_until)
    finally:
        c.close()
    assert acquired and seen == {o: [1] for o in rest}, (acquired, seen)


#: IncrementalAlterConfigs SET of one group config -> Kafka 4.4.0's answer (error code, message), with the fixture's
#: bounds (group.share.min.heartbeat.interval.ms 500, min.session.timeout.ms 6000, min.record.lock.duration.ms 1000;
#: Kafka's defaults for the rest)
GROUP_CONFIG_CASES = {
    ("share.record.lock.duration.ms", "2000"): (0, None),
    ("share.record.lock.duration.ms", "999"): (40, "Invalid value 999 for configuration share.record.lock.duration.ms: "
                                                   "Value must be at least 1000"),
    ("share.record.lock.duration.ms", "70000"): (40, "share.record.lock.duration.ms must be in the range 1000 to "
                                                     "60000 inclusive."),
    ("share.record.lock.duration.ms", "abc"): (40, "Invalid value abc for configuration share.record.lock.duration.ms: "
                                                   "Not a number of type INT"),
    ("share.delivery.count.limit", "3"): (0, None),
    ("share.delivery.count.limit", "1"): (40, "Invalid value 1 for configuration share.delivery.count.limit: Value "
                                              "must be at least 2"),
    ("share.delivery.count.limit", "11"): (40, "share.delivery.count.limit must be in the range 2 to 10 inclusive."),
    ("share.partition.max.record.locks", "50"): (40, "Invalid value 50 for configuration "
                                                     "share.partition.max.record.locks: Value must be at least 100"),
    ("share.partition.max.record.locks", "5000"): (40, "share.partition.max.record.locks must be in the range 100 to "
                                                       "4000 inclusive."),
    ("share.session.timeout.ms", "1000"): (40, "share.session.timeout.ms must be in the range 6000 to 60000 "
                                               "inclusive."),
    ("share.session.timeout.ms", "7000"): (0, None),
    ("share.heartbeat.interval.ms", "100"): (40, "share.heartbeat.interval.ms must be in the range 500 to 15000 "
                                                 "inclusive."),
    ("consumer.session.timeout.ms", "1000"): (40, "consumer.session.timeout.ms must be in the range 45000 to 60000 "
                                                  "inclusive."),
    ("consumer.heartbeat.interval.ms", "6000"): (0, None),
    ("share.isolation.level", "x"): (40, "Invalid value x for configuration share.isolation.level: String must be one "
                                         "of: read_committed, read_uncommitted"),
    ("share.auto.offset.reset", "by_duration:PT1H"): (0, None),
    ("share.auto.offset.reset", "none"): (40, "Invalid value none for configuration share.auto.offset.reset: Invalid "
                                              "value `none` for configuration share.auto.offset.reset. The value must "
                                              "be either 'earliest', 'latest' or of the format "
                                              "'by_duration:<PnDTnHnMn.nS>'."),
    ("no.such.config", "1"): (40, "Unknown group config name: no.such.config"),
    ("share.isolation.level", "read_committed"): (0, None),
    ("streams.num.standby.replicas", "1"): (0, None),
}
#: where the mini broker answers otherwise, and why: it does not serve read_committed share groups, nor KIP-1071's
#: Streams groups
GROUP_CONFIG_LISTED = {
    ("share.isolation.level", "read_committed"): (
        40, "share.isolation.level read_committed is not served by the mini broker: its share groups read every "
            "record up to the high watermark (Kafka 4.x serves it; docs/differences.md)"),
    ("streams.num.standby.replicas", "1"): (40, "Unknown group config name: streams.num.standby.replicas"),
}


def test_group_configs_are_checked_as_kafka_4_4_checks_them(bootstrap):
    """A GROUP resource's configs (Kafka 4.x's GroupConfig): names, values and the broker's bounds, with Kafka's
    messages; the mini broker's answers differ only where GROUP_CONFIG_LISTED says."""
    kind, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    got = {}
    for (name, value), _ in GROUP_CONFIG_CASES.items():
        resource = ConfigResource(ResourceType.GROUP, f"g-{uuid.uuid4().hex[:8]}", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
        [f] = admin.incremental_alter_configs([resource]).values()
        try:
            f.result(30)
            got[(name, value)] = (0, None)
        except KafkaException as exc:
            got[(name, value)] = (exc.args[0].code(), exc.args[0].str())
    want = {**GROUP_CONFIG_CASES, **(GROUP_CONFIG_LISTED if kind == "mini" else {})}
    assert got == want


def test_a_groups_own_delivery_count_limit_and_reset_by_duration(bootstrap):
    """A group's overrides take effect: share.delivery.count.limit 2 (the broker's is 3) archives a record released
    twice; share.auto.offset.reset by_duration:PT1H starts at the first record at most an hour old (here: all)."""
    _, bs = bootstrap
    topic, group = setup_topic(bs, 3)
    admin = AdminClient({"bootstrap.servers": bs})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.delivery.count.limit", "2", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.auto.offset.reset", "by_duration:PT1H", incremental_operation=AlterConfigOpType.SET)])
    for f in admin.incremental_alter_configs([resource]).values():
        f.result(30)

    def described():
        [f] = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
        configs = f.result(30)
        return (configs["share.delivery.count.limit"].value, configs["share.auto.offset.reset"].value)
    wait_until(lambda: described() == ("2", "by_duration:PT1H"), "the group's configs to be described", timeout=30)
    c = consumer(bs, group, topic)
    deliveries: list[tuple[int, int]] = []

    def on_message(_name, c, m):
        deliveries.append((m.offset(), m.delivery_count()))
        c.acknowledge(m, RELEASE if m.offset() == 1 else ACCEPT)
    try:
        poll_until({"c": c}, on_message, lambda: (1, 2) in deliveries)
        end = time.time() + 2.0
        while time.time() < end:
            for m in c.poll(0.2):
                deliveries.append((m.offset(), m.delivery_count()))
    finally:
        c.close()
    assert [d for d in deliveries if d[0] == 1] == [(1, 1), (1, 2)], deliveries
    assert sorted(d for d in deliveries if d[0] != 1) == [(0, 1), (2, 1)], deliveries
