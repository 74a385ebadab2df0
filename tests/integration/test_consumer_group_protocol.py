"""KIP-848's consumer group protocol (``group.protocol=consumer``) with confluent-kafka, on the mini broker and on
real Apache Kafka 4.4 (KRaft) as the oracle: the same scenario, the same observable results.

Three members join one by one, one closes, one is SIGKILLed in a child process (its partitions move only after
the broker-side ``group.consumer.session.timeout.ms``), a static member restarts without a reassignment, offsets
are committed and fetched, and the admin API describes the group as a CONSUMER group. Assignments by the
``uniform`` assignor may differ in detail between the two brokers, so what is compared is what KIP-848
specifies: every partition owned by exactly one member, balanced counts, no partition ever owned by two members
at once (on_assign/on_revoke timestamps), member epochs only increasing.

Also on both: raw heartbeats and commits (epochs, fencing, revoke before assign, OffsetCommit with the member's
epoch or an older one), DeleteGroups of a consumer group, the refusals between classic and consumer groups, and
(on Kafka 4.4; the lesson runs it on the mini broker) lesson 05's section 14: who stops consuming under each
protocol.
"""
from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.admin.groups import (DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest,
                                        ListGroupsResponse)
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetCommitResponse

import kafkalab
from kafkalab.broker.apis.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from kafkalab.broker.apis.consumer_group_describe import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.security.authorizer.acl import SUPPORTED_OPERATIONS, SUPPORTED_OPERATIONS_3_9, ResourceType

SESSION_MS = 6000      # group.consumer.session.timeout.ms, short by lab config (Kafka's default: 45000)
HEARTBEAT_MS = 500     # group.consumer.heartbeat.interval.ms (Kafka's default: 5000)
PARTITIONS = 6
GROUP_CONFIGS = {"group.consumer.session.timeout.ms": SESSION_MS, "group.consumer.heartbeat.interval.ms": HEARTBEAT_MS}
# Kafka 4.4 bounds them by group.consumer.min.session.timeout.ms / min.heartbeat.interval.ms (45000 / 5000)
KAFKA_GROUP_CONFIGS = {**GROUP_CONFIGS, "group.consumer.min.session.timeout.ms": SESSION_MS,
                       "group.consumer.min.heartbeat.interval.ms": HEARTBEAT_MS}

CHILD = textwrap.dedent("""
    import sys
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2], "group.protocol": "consumer"})
    c.subscribe([sys.argv[3]], on_assign=lambda c, ps: print("ASSIGNED", len(ps), flush=True))
    while True:
        c.poll(0.1)
""")


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def bootstrap(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("kip848")), **GROUP_CONFIGS) as b:
            yield request.param, b.bootstrap_servers
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("kip848kraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", **KAFKA_GROUP_CONFIGS) as c:
        yield request.param, c.bootstrap_servers


class Members:
    """Consumers of one group polled round-robin in this thread, with every on_assign/on_revoke timestamped."""

    def __init__(self, bs: str, group: str, topic: str):
        self.bs, self.group, self.topic = bs, group, topic
        self.consumers: dict[str, Consumer] = {}
        self.events: list[tuple[float, str, str, int]] = []   # (time, member, "assign"/"revoke", partition)

    def add(self, name: str, **extra) -> Consumer:
        c = Consumer({"bootstrap.servers": self.bs, "group.id": self.group, "group.protocol": "consumer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})

        def on_assign(_c, ps, name=name):
            self.events += [(time.time(), name, "assign", p.partition) for p in ps]

        def on_revoke(_c, ps, name=name):
            self.events += [(time.time(), name, "revoke", p.partition) for p in ps]
        c.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        self.consumers[name] = c
        return c

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()

    def owned(self) -> dict[str, set[int]]:
        """Who owns what, by the callbacks."""
        out: dict[str, set[int]] = {n: set() for n in self.consumers}
        for _, name, kind, p in self.events:
            s = out.setdefault(name, set())
            s.add(p) if kind == "assign" else s.discard(p)
        return {n: s for n, s in out.items() if n in self.consumers}

    def poll_until(self, done, timeout: float = 60) -> float:
        t0 = time.time()
        while time.time() - t0 < timeout:
            for c in list(self.consumers.values()):
                c.poll(0.05)
            if done():
                return time.time() - t0
        raise AssertionError(f"not done within {timeout}s; owned {self.owned()}")

    def balanced(self, members: list[str]) -> bool:
        owned = self.owned()
        counts = [len(owned.get(m, ())) for m in members]
        every = sorted(p for m in members for p in owned.get(m, ()))
        return every == list(range(PARTITIONS)) and max(counts) - min(counts) <= 1

    def assert_never_owned_twice(self) -> None:
        """Replay the callbacks in time order: a partition is assigned only while nobody else holds it."""
        holder: dict[int, str] = {}
        for t, name, kind, p in sorted(self.events):
            if kind == "assign":
                assert p not in holder or holder[p] == name, f"partition {p} given to {name} at {t} while {holder[p]} owns it"
                holder[p] = name
            elif holder.get(p) == name:
                del holder[p]


def describe(admin: AdminClient, group: str):
    return admin.describe_consumer_groups([group])[group].result()


def test_consumer_group_protocol_scenario(bootstrap):
    run_scenario(*bootstrap)


@pytest.mark.cluster
def test_consumer_group_protocol_scenario_on_a_mini_cluster(tmp_path):
    """Three mini brokers on a real ZooKeeper: the group lives on the leader of its __consumer_offsets partition,
    which the clients find with FindCoordinator."""
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **GROUP_CONFIGS) as c:
        run_scenario("mini-cluster", c.bootstrap_servers)


def run_scenario(backend: str, bs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bs})
    topic, group = f"kip848-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bs})
    for i in range(60):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    producer.flush(30)
    m = Members(bs, group, topic)
    epochs = []
    try:
        # three members join one by one: each time all partitions owned once, balanced
        for i, name in enumerate(["c1", "c2", "c3"]):
            m.add(name)
            m.poll_until(lambda: m.balanced(list(m.consumers)) and all(m.owned()[n] for n in m.consumers))
            d = describe(admin, group)
            assert d.type == ConsumerGroupType.CONSUMER
            assert len(d.members) == i + 1
        m.assert_never_owned_twice()
        # a member closes (epoch -1): its partitions move to the others
        m.close("c3")
        m.poll_until(lambda: m.balanced(["c1", "c2"]))
        m.assert_never_owned_twice()
        # a member SIGKILLed in a child process: nothing moves before the broker-side session timeout
        child = subprocess.Popen([sys.executable, "-c", CHILD, bs, group, topic], stdout=subprocess.PIPE, text=True)
        try:
            m.poll_until(lambda: sum(len(s) for s in m.owned().values()) == PARTITIONS - 2)  # the child holds 2
            assert child.stdout.readline().startswith("ASSIGNED")
            os.kill(child.pid, signal.SIGKILL)
            killed_at = time.time()
        finally:
            child.kill()
            child.wait()
            child.stdout.close()
        moved_after = m.poll_until(lambda: m.balanced(["c1", "c2"]))
        assert moved_after >= SESSION_MS / 1000 - 2 * HEARTBEAT_MS / 1000, moved_after
        print(f"{backend}: partitions of the SIGKILLed member moved after {time.time() - killed_at:.1f}s")
        m.assert_never_owned_twice()
        # commit and fetch offsets with the member epoch
        c1 = m.consumers["c1"]
        mine = sorted(m.owned()["c1"])
        c1.commit(offsets=[TopicPartition(topic, p, 5) for p in mine], asynchronous=False)
        got = c1.committed([TopicPartition(topic, p) for p in mine], timeout=10)
        assert [tp.offset for tp in got] == [5] * len(mine)
        d = describe(admin, group)
        assert d.type == ConsumerGroupType.CONSUMER and str(d.state).endswith("STABLE"), d.state
        epochs.append(d)
        # a static member: closing (epoch -2) and restarting with its instance id gets the same partitions, and
        # the others see no rebalance
        m.add("s1", **{"group.instance.id": "static-1"})
        m.poll_until(lambda: m.balanced(["c1", "c2", "s1"]) and m.owned()["s1"])
        before = {n: set(s) for n, s in m.owned().items()}
        n_events = len(m.events)
        m.close("s1")
        m.add("s1", **{"group.instance.id": "static-1"})
        m.poll_until(lambda: m.owned().get("s1") == before["s1"])
        others = [e for e in m.events[n_events:] if e[1] != "s1"]
        assert others == [], others
        m.assert_never_owned_twice()
        groups = admin.list_consumer_groups().result().valid
        listed = {g.group_id: g for g in groups}
        assert listed[group].type == ConsumerGroupType.CONSUMER
    finally:
        for name in list(m.consumers):
            m.close(name)


# -- the protocol itself, request by request (raw ConsumerGroupHeartbeat v1), on both brokers ----------------------

RETRIABLE = {14, 15, 16}   # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def raw(bs: str, request, response_cls, version: int):
    """One request with kafka-python's protocol classes over a plain socket; the decoded answer."""
    host, _, port = bs.rpartition(":")
    request.API_VERSION = version
    request.with_header(correlation_id=7, client_id="kip848-raw")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", _recv(s, 4))
        frame = _recv(s, size)
    return response_cls.decode(frame, version=version, header=True)


def _recv(s, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        assert chunk, "connection closed"
        buf += chunk
    return buf


def heartbeat(bs: str, group: str, member_id: str, epoch: int, topics=None, owned=None, instance_id=None,
              rebalance_timeout_ms=-1):
    """A ConsumerGroupHeartbeat v1: (error code, member epoch, {topic id: partitions} or None)."""
    tps = None if owned is None else [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t, partitions=sorted(p))
                                      for t, p in owned.items()]
    req = ConsumerGroupHeartbeatRequest(group_id=group, member_id=member_id, member_epoch=epoch,
                                        instance_id=instance_id, rebalance_timeout_ms=rebalance_timeout_ms,
                                        subscribed_topic_names=topics, topic_partitions=tps)
    deadline = time.time() + 30
    while True:
        resp = raw(bs, req, ConsumerGroupHeartbeatResponse, 1)
        if resp.error_code not in RETRIABLE or time.time() > deadline:
            break
        time.sleep(0.2)
    assignment = None if resp.assignment is None else {t.topic_id: set(t.partitions)
                                                       for t in resp.assignment.topic_partitions}
    return resp.error_code, resp.member_epoch, assignment


def test_heartbeat_epochs_errors_and_revoke_before_assign(bootstrap):
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic, group = f"kip848r-{uuid.uuid4().hex[:6]}", f"gr-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result()
    try:  # the admin client's FindCoordinator makes Kafka create __consumer_offsets (raw heartbeats do not)
        describe(admin, group)
    except KafkaException:
        pass
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    # A joins with epoch 0 and heartbeats (as a client does, reporting what it owns) until it has every partition;
    # Kafka 4.4 may answer the first heartbeat before its target assignment includes a topic just created
    err, ea, got = heartbeat(bs, group, a, 0, topics=[topic], owned={}, rebalance_timeout_ms=30000)
    assert err == 0 and ea > 0
    owned_a = got or {}
    deadline = time.time() + 20
    while sum(len(p) for p in owned_a.values()) < 4:
        assert time.time() < deadline, owned_a
        time.sleep(0.2)
        err, ea, got = heartbeat(bs, group, a, ea, owned=owned_a)
        assert err == 0
        owned_a = got if got is not None else owned_a
    (tid,) = owned_a
    e_full = ea   # the epoch at which A got every partition
    # a greater epoch than the coordinator's is fenced; an unknown member id is unknown
    assert heartbeat(bs, group, a, ea + 1)[0] == ErrorCode.FENCED_MEMBER_EPOCH
    assert heartbeat(bs, group, str(uuid.uuid4()), ea)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    # B joins; both heartbeat in turn, each revoking at once what it is told to give up. At every step no
    # partition is held by both, and A stays at its epoch while it still owns partitions it must revoke
    err, eb, got = heartbeat(bs, group, b, 0, topics=[topic], owned={}, rebalance_timeout_ms=30000)
    # B's epoch is the target assignment epoch it reached: Kafka 4.4 may not have recomputed the target yet
    assert err == 0 and eb >= ea
    owned_b = got or {}
    epochs_a, epochs_b, revoked_at = [ea], [eb], None
    deadline = time.time() + 20
    while not (len(owned_a.get(tid, ())) == 2 and len(owned_b.get(tid, ())) == 2):
        assert time.time() < deadline, (owned_a, owned_b)
        assert not owned_a.get(tid, set()) & owned_b.get(tid, set()), (owned_a, owned_b)
        before = owned_a
        err, ea, got = heartbeat(bs, group, a, ea, owned=owned_a)
        assert err == 0
        if got is not None:
            if got.get(tid, set()) < before.get(tid, set()):
                assert ea == epochs_a[-1], "told to revoke: the epoch moves only once the revocation is reported"
                revoked_at = ea
            owned_a = got
        epochs_a.append(ea)
        assert not owned_a.get(tid, set()) & owned_b.get(tid, set()), (owned_a, owned_b)
        err, eb, got = heartbeat(bs, group, b, eb, owned=owned_b)
        assert err == 0
        owned_b = got if got is not None else owned_b
        epochs_b.append(eb)
        time.sleep(0.1)
    assert revoked_at is not None and ea > revoked_at
    assert epochs_a == sorted(epochs_a) and epochs_b == sorted(epochs_b)
    keep = owned_a
    ea3 = ea
    # a commit with a newer epoch than the member's is refused, with its epoch accepted
    def commit_errors(epoch, partitions, version=9):
        topic_field = {"topic_id": tid} if version >= 10 else {"name": topic}
        commit = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=epoch, member_id=a, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(**topic_field, partitions=[
                OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=0) for p in partitions])])
        return [p.error_code for p in raw(bs, commit, OffsetCommitResponse, version).topics[0].partitions]
    stale = ErrorCode.STALE_MEMBER_EPOCH
    assert commit_errors(ea3 + 1, [min(keep[tid])]) == [stale]
    assert commit_errors(ea3, [min(keep[tid])]) == [0]
    assert ea3 > e_full
    # an older epoch is taken if the member has held every committed partition since then (Kafka 4.4), else the
    # whole commit is refused
    gone = sorted(set(range(4)) - keep[tid])
    for version in (9, 10):
        assert commit_errors(e_full, sorted(keep[tid]), version) == [0] * len(keep[tid])
        assert commit_errors(e_full, [min(keep[tid]), gone[0]], version) == [stale, stale]
        assert commit_errors(e_full - 1, [min(keep[tid])], version) == [stale]
    # ListGroups v5: the group's type
    listed = raw(bs, ListGroupsRequest(states_filter=[], types_filter=["consumer"]), ListGroupsResponse, 5)
    mine = [g for g in listed.groups if g.group_id == group]
    assert [(g.group_type, g.protocol_type) for g in mine] == [("consumer", "consumer")]
    listed = raw(bs, ListGroupsRequest(states_filter=[], types_filter=["classic"]), ListGroupsResponse, 5)
    assert group not in [g.group_id for g in listed.groups]
    # static members: a second member with a taken instance id is refused until the first leaves with -2
    s1, s2 = str(uuid.uuid4()), str(uuid.uuid4())
    assert heartbeat(bs, group, s1, 0, topics=[topic], owned={}, instance_id="inst", rebalance_timeout_ms=30000)[0] == 0
    assert heartbeat(bs, group, s2, 0, topics=[topic], owned={}, instance_id="inst",
                     rebalance_timeout_ms=30000)[0] == ErrorCode.UNRELEASED_INSTANCE_ID
    assert heartbeat(bs, group, s1, -2, instance_id="inst")[:2] == (0, -2)
    err, es2, _ = heartbeat(bs, group, s2, 0, topics=[topic], owned={}, instance_id="inst", rebalance_timeout_ms=30000)
    assert err == 0 and es2 > 0
    # DescribeGroups (the classic API) does not describe a consumer group
    described = raw(bs, DescribeGroupsRequest(groups=[group], include_authorized_operations=False),
                    DescribeGroupsResponse, 6).groups[0]
    assert (described.error_code, described.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                               f"Group {group} is not a classic group.")
    # KIP-430 without an authorizer: every operation a group supports, Kafka 4.4's (KRaft) AclEntry against Kafka
    # 3.9's, which the mini broker standing alone follows (Kafka 4.0 added DESCRIBE_CONFIGS and ALTER_CONFIGS)
    described = raw(bs, ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=True),
                    ConsumerGroupDescribeResponse, 0).groups[0]
    table = SUPPORTED_OPERATIONS if backend == "kafka-4.4" else SUPPORTED_OPERATIONS_3_9
    assert described.error_code == 0
    assert described.authorized_operations == sum(1 << op for op in table[ResourceType.GROUP])
    # leaving: epoch -1 in, -1 out
    assert heartbeat(bs, group, a, -1)[:2] == (0, -1)
    assert heartbeat(bs, group, a, ea3)[0] == ErrorCode.UNKNOWN_MEMBER_ID


def test_regex_subscription_is_resolved_by_the_broker(bootstrap):
    """ConsumerGroupHeartbeat v1 carries the pattern (SubscribedTopicRegex); the coordinator resolves it, also
    for a matching topic created later."""
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    prefix = f"rx{uuid.uuid4().hex[:6]}"
    for t in (f"{prefix}-a", f"{prefix}-b", f"other{prefix}"):
        admin.create_topics([NewTopic(t, 2, 1)])[t].result()
    m = Members(bs, f"rg-{prefix}", f"^{prefix}-.*")
    try:
        m.add("c", **{"topic.metadata.refresh.interval.ms": 1000})

        def topics():
            return {tp.topic for tp in m.consumers["c"].assignment()}
        m.poll_until(lambda: topics() == {f"{prefix}-a", f"{prefix}-b"} and len(m.consumers["c"].assignment()) == 4)
        admin.create_topics([NewTopic(f"{prefix}-c", 1, 1)])[f"{prefix}-c"].result()
        took = m.poll_until(lambda: f"{prefix}-c" in topics(), timeout=40)
        print(f"{backend}: a new topic matching the regex assigned after {took:.1f}s")
    finally:
        m.close("c")


def test_who_stops_consuming_per_protocol(bootstrap):
    """Lesson 05's section 14 on both brokers: the same three members under classic eager, classic cooperative-sticky
    and the consumer protocol (kafkalab.tools.rebalance_scenario), and the lesson's claims about them."""
    from kafkalab.tools.rebalance_scenario import PROTOCOLS, STEPS, run_protocols, summary
    backend, bs = bootstrap
    if backend == "mini":
        pytest.skip("on the mini broker the lesson itself runs it (nbval, notebooks/05_consumer_groups_and_offsets)")
    admin = AdminClient({"bootstrap.servers": bs})
    topic = f"protocols-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 6, 1)])[topic].result()
    runs = run_protocols(bs, topic, 6, SESSION_MS, f"p-{uuid.uuid4().hex[:6]}", admin=admin)
    rows = {r["protocol"]: r for r in summary(runs, 6)}
    print(backend, rows)
    eager = rows["classic eager"]
    assert all(eager[f"{s}: a revoked"] == len(runs["classic eager"].owned("a", until=runs["classic eager"].steps[s])) > 0
               for s in STEPS)
    for p in ("classic cooperative", "consumer (KIP-848)"):
        assert all(rows[p][f"{s}: a idle s"] == 0 for s in STEPS), rows[p]
        assert 0 < rows[p]["k joins: a revoked"] < 6 and rows[p]["b leaves: a revoked"] == rows[p]["k killed: a revoked"] == 0
    assert all(0.8 * SESSION_MS / 1000 <= rows[p]["k killed: unowned s"] <= SESSION_MS / 1000 + 5 for p in PROTOCOLS)
    assert all(rows[p]["b leaves: unowned s"] < 3 for p in PROTOCOLS)
    assert [runs[p].described.type for p in PROTOCOLS] == [ConsumerGroupType.CLASSIC, ConsumerGroupType.CLASSIC,
                                                          ConsumerGroupType.CONSUMER]


def test_delete_groups_deletes_an_empty_consumer_group(bootstrap):
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic, group = f"del-{uuid.uuid4().hex[:6]}", f"gd-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result()
    try:   # FindCoordinator creates __consumer_offsets on Kafka
        describe(admin, group)
    except KafkaException:
        pass
    a = str(uuid.uuid4())
    err, epoch, _ = heartbeat(bs, group, a, 0, topics=[topic], owned={}, rebalance_timeout_ms=30000)
    assert err == 0
    with pytest.raises(KafkaException) as refused:
        admin.delete_consumer_groups([group])[group].result()
    assert refused.value.args[0].code() == ErrorCode.NON_EMPTY_GROUP
    assert heartbeat(bs, group, a, -1)[0] == 0
    assert str(describe(admin, group).state).endswith("EMPTY")
    admin.delete_consumer_groups([group])[group].result()
    assert group not in {g.group_id for g in admin.list_consumer_groups().result().valid}
    with pytest.raises(KafkaException) as gone:
        admin.delete_consumer_groups([group])[group].result()
    assert gone.value.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND


def join_group(bs: str, group: str, protocol_type: str, member_id: str = ""):
    """A classic JoinGroup v5 (the member id Kafka asks for, then the join): (error code, member id)."""
    from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse
    req = JoinGroupRequest(group_id=group, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id=member_id,
                           group_instance_id=None, protocol_type=protocol_type, protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="p", metadata=b"")])
    deadline = time.time() + 30
    while True:
        resp = raw(bs, req, JoinGroupResponse, 5)
        if resp.error_code not in RETRIABLE or time.time() > deadline:
            break
        time.sleep(0.2)
    if resp.error_code == ErrorCode.MEMBER_ID_REQUIRED and not member_id:
        return join_group(bs, group, protocol_type, resp.member_id)
    return resp.error_code, resp.member_id


def test_classic_and_consumer_groups_refuse_each_other_as_kafka_does(bootstrap):
    """One coordinator, both kinds of group: a ConsumerGroupHeartbeat for a classic group that does not use the
    consumer protocol (here a Connect-style ``protocol_type``) gets GROUP_ID_NOT_FOUND, and a JoinGroup of such a
    protocol type for a consumer group with members gets INCONSISTENT_GROUP_PROTOCOL (Kafka 4.4 answers both so
    whatever its ``group.consumer.migration.policy``: only groups of the consumer protocol type migrate, see
    test_consumer_group_migration.py)."""
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic = f"mix-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result()
    classic, consumer = f"gc-{uuid.uuid4().hex[:6]}", f"gk-{uuid.uuid4().hex[:6]}"
    for g in (classic, consumer):
        try:   # FindCoordinator creates __consumer_offsets on Kafka
            describe(admin, g)
        except KafkaException:
            pass
    err, _ = join_group(bs, classic, "connect")
    assert err == 0
    resp = raw(bs, ConsumerGroupHeartbeatRequest(group_id=classic, member_id=str(uuid.uuid4()), member_epoch=0,
                                                 rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
                                                 topic_partitions=[]), ConsumerGroupHeartbeatResponse, 1)
    assert (resp.error_code, resp.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, (
        f"Cannot upgrade classic group {classic} to consumer group because the group does not use the consumer "
        "embedded protocol."))
    assert heartbeat(bs, consumer, str(uuid.uuid4()), 0, topics=[topic], owned={}, rebalance_timeout_ms=30000)[0] == 0
    assert join_group(bs, consumer, "connect")[0] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    listed = raw(bs, ListGroupsRequest(states_filter=[], types_filter=[]), ListGroupsResponse, 5).groups
    types = {g.group_id: (g.group_type, g.protocol_type) for g in listed if g.group_id in (classic, consumer)}
    assert types == {classic: ("classic", "connect"), consumer: ("consumer", "consumer")}, types
