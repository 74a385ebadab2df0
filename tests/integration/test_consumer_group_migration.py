"""KIP-848's online migration with confluent-kafka, on the mini broker and on Apache Kafka 4.4 (KRaft) as the oracle.

A group of three ``group.protocol=classic`` consumers is bounced one by one to ``group.protocol=consumer`` (the
first one to come back upgrades the group: the two others stay inside it as classic members, served through
JoinGroup/SyncGroup/Heartbeat with the coordinator's assignment), and the reverse: three consumer-protocol
members bounced one by one to the classic protocol (when the last consumer-protocol member leaves, the group is
downgraded to a classic group). Records are produced between the steps; every consumer commits each record
before the next poll. On both brokers: no record is lost, none consumed twice, a partition is never held by two
members at once, and the group's type follows the migration. The classic members' ConsumerGroupMemberMetadata
records in ``__consumer_offsets`` carry their ClassicMemberMetadata (session timeout, JoinGroup protocols) as
Kafka writes it; ``group.consumer.migration.policy=disabled`` refuses the upgrade with Kafka's error.
"""
from __future__ import annotations

import io
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.broker.coordinator.group.consumer_group_records import (ConsumerGroupMemberMetadataValue,
                                                                      classic_member_metadata, record_type)

PARTITIONS = 6
GROUP_CONFIGS = {"group.consumer.session.timeout.ms": 6000, "group.consumer.heartbeat.interval.ms": 500,
                 "group.initial.rebalance.delay.ms": 0}
KAFKA_GROUP_CONFIGS = {**GROUP_CONFIGS, "group.consumer.min.session.timeout.ms": 6000,
                       "group.consumer.min.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module", params=["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def bootstrap(request, tmp_path_factory):
    if request.param == "mini":
        with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("migrate")), **GROUP_CONFIGS) as b:
            yield request.param, b.bootstrap_servers
        return
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=1, dir=str(tmp_path_factory.mktemp("migratekraft") / "cluster"),
                          backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", **KAFKA_GROUP_CONFIGS) as c:
        yield request.param, c.bootstrap_servers


class Group:
    """Consumers of one group polled round-robin in this thread; each record committed before the next poll."""

    def __init__(self, bs: str, group: str, topic: str):
        self.bs, self.group, self.topic = bs, group, topic
        self.consumers: dict[str, Consumer] = {}
        self.consumed: list[int] = []
        self.commit_errors: list[str] = []
        self.admin = AdminClient({"bootstrap.servers": bs})
        self.events: list[tuple[float, int, str, str, int]] = []   # (time, seq, member, assign/revoke, partition)

    def add(self, name: str, protocol: str, instance_id: str | None = None) -> None:
        conf = {"bootstrap.servers": self.bs, "group.id": self.group, "group.protocol": protocol,
                "enable.auto.commit": False, "auto.offset.reset": "earliest"}
        if instance_id is not None:
            conf["group.instance.id"] = instance_id
        if protocol == "classic":
            conf["heartbeat.interval.ms"] = 500
        c = Consumer(conf)

        def log(kind, ps, name=name):
            self.events += [(time.time(), len(self.events), name, kind, p.partition) for p in ps]
        c.subscribe([self.topic], on_assign=lambda _c, ps: log("assign", ps),
                    on_revoke=lambda _c, ps: log("revoke", ps), on_lost=lambda _c, ps: log("revoke", ps))
        self.consumers[name] = c

    def close(self, name: str) -> None:
        self.consumers.pop(name).close()

    def owned(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for *_, name, kind, p in self.events:
            s = out.setdefault(name, set())
            s.add(p) if kind == "assign" else s.discard(p)
        return {n: s for n, s in out.items() if n in self.consumers}

    def poll_until(self, done, timeout: float = 90) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            for c in list(self.consumers.values()):
                msg = c.poll(0.05)
                if msg is not None and msg.error() is None:
                    self.consumed.append(int(msg.value()))
                    try:
                        c.commit(message=msg, asynchronous=False)
                    except KafkaException as exc:   # e.g. ILLEGAL_GENERATION while the group rebalances
                        self.commit_errors.append(exc.args[0].name())
            if done():
                return
        raise AssertionError(f"not done within {timeout}s; owned {self.owned()}, consumed {len(self.consumed)}")

    def settled(self, produced: int) -> bool:
        """Every record so far consumed, and every partition owned by exactly one member."""
        every = sorted(p for s in self.owned().values() for p in s)
        if not (len(set(self.consumed)) >= produced and every == list(range(PARTITIONS))
                and all(self.owned().get(n) for n in self.consumers)):
            return False
        # and the group Stable: every member at the group's epoch (a classic member rejoins after a heartbeat)
        d = self.admin.describe_consumer_groups([self.group])[self.group].result()
        return str(d.state).endswith("STABLE") and len(d.members) == len(self.consumers)

    def assert_never_owned_twice(self) -> None:
        holder: dict[int, str] = {}
        for _, _, name, kind, p in sorted(self.events):
            if kind == "assign":
                assert p not in holder or holder[p] == name, f"partition {p} given to {name} while {holder[p]} owns it"
                holder[p] = name
            elif holder.get(p) == name:
                del holder[p]


def produce(producer: Producer, topic: str, start: int, n: int) -> int:
    failed: list[str] = []
    for i in range(start, start + n):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: err is not None and failed.append(f"{msg.partition()}: {err}"))
    assert producer.flush(30) == 0, "records still unsent after 30 s"
    assert not failed, f"records not delivered: {failed[:5]}"
    return start + n


def group_type(admin: AdminClient, group: str):
    return admin.describe_consumer_groups([group])[group].result().type


def migrate(bs: str, frm: str, to: str):
    """Three members of protocol ``frm`` bounced one by one to ``to``: (group, consumed, types seen after each step)."""
    admin = AdminClient({"bootstrap.servers": bs})
    topic, gid = f"mig-{uuid.uuid4().hex[:6]}", f"gm-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bs})
    g = Group(bs, gid, topic)
    types = []
    try:
        produced = produce(producer, topic, 0, 60)
        for name in "abc":
            g.add(name, frm)
        g.poll_until(lambda: g.settled(produced))
        types.append(group_type(admin, gid))
        for name in "abc":
            g.close(name)
            produced = produce(producer, topic, produced, 60)
            g.add(name, to)
            g.poll_until(lambda: g.settled(produced))
            types.append(group_type(admin, gid))
        g.assert_never_owned_twice()
    finally:
        for name in list(g.consumers):
            g.close(name)
    return g, produced, types


def assert_every_record_read_once(backend, g, produced):
    assert sorted(set(g.consumed)) == list(range(produced)), f"{backend}: records lost"
    duplicates = len(g.consumed) - produced
    assert duplicates == 0 and not g.commit_errors, f"{backend}: {duplicates} records consumed twice, {g.commit_errors}"


def test_rolling_upgrade_from_classic_to_consumer(bootstrap):
    backend, bs = bootstrap
    g, produced, types = migrate(bs, "classic", "consumer")
    assert_every_record_read_once(backend, g, produced)
    # classic at first; upgraded when the first member came back with the consumer protocol
    assert types == [ConsumerGroupType.CLASSIC] + [ConsumerGroupType.CONSUMER] * 3, types


def test_rolling_downgrade_from_consumer_to_classic(bootstrap):
    backend, bs = bootstrap
    g, produced, types = migrate(bs, "consumer", "classic")
    assert_every_record_read_once(backend, g, produced)
    # classic members join the consumer group; the last consumer-protocol member leaving downgrades it
    assert types == [ConsumerGroupType.CONSUMER] * 3 + [ConsumerGroupType.CLASSIC], types


def test_downgrade_when_a_classic_static_member_replaces_the_last_consumer_member(bootstrap):
    """Kafka 4.4 (``validateOnlineDowngradeWithReplacedMemberId``): a static consumer-protocol member closes (it
    stays in the group, as a static member does, until its session times out) and comes back within that time
    with the classic protocol and the same group.instance.id. It takes the old member's place and, being the
    last consumer-protocol member replaced, the group becomes classic at once, Stable: no rebalance, the new
    member holds the partitions the old one held. No record lost, none consumed twice."""
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic, gid = f"migs-{uuid.uuid4().hex[:6]}", f"gs-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    producer = Producer({"bootstrap.servers": bs})
    g = Group(bs, gid, topic)
    try:
        produced = produce(producer, topic, 0, 30)
        g.add("a", "consumer", instance_id="static-a")
        # the group is a consumer group before the classic member joins (had the classic JoinGroup come
        # first, a's heartbeat would have to upgrade a classic group mid-rebalance: a CI run's Kafka 4.4 then
        # answered a's ConsumerGroupHeartbeat with an error librdkafka treats as fatal)
        g.poll_until(lambda: bool(g.owned().get("a")))
        g.add("b", "classic")
        g.poll_until(lambda: g.settled(produced))
        assert group_type(admin, gid) == ConsumerGroupType.CONSUMER
        held, since = g.owned()["a"], len(g.events)
        g.close("a")
        produced = produce(producer, topic, produced, 30)
        g.add("a", "classic", instance_id="static-a")
        g.poll_until(lambda: g.settled(produced))
        assert group_type(admin, gid) == ConsumerGroupType.CLASSIC, backend
        d = admin.describe_consumer_groups([gid])[gid].result()
        static = [m for m in d.members if m.group_instance_id == "static-a"]
        assert len(static) == 1 and {p.partition for p in static[0].assignment.topic_partitions} == held, (backend, d)
        # no rebalance: the other member kept its partitions throughout
        assert [e for e in g.events[since:] if e[2] == "b"] == [], (backend, g.events[since:])
        g.assert_never_owned_twice()
        assert sorted(set(g.consumed)) == list(range(produced)), f"{backend}: records lost"
        assert len(g.consumed) == produced and not g.commit_errors, (backend, len(g.consumed), g.commit_errors)
    finally:
        for name in list(g.consumers):
            g.close(name)


def test_classic_members_are_persisted_with_their_classic_metadata(bootstrap):
    """Two classic members and one consumer-protocol member: the classic ones' type-5 records carry
    ClassicMemberMetadata (their session.timeout.ms, their JoinGroup protocols), the other's a null one."""
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic, gid = f"migp-{uuid.uuid4().hex[:6]}", f"gp-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    g = Group(bs, gid, topic)
    try:
        g.add("a", "classic")
        g.add("b", "classic")
        g.poll_until(lambda: g.settled(0))
        g.add("c", "consumer")
        g.poll_until(lambda: g.settled(0))
        assert group_type(admin, gid) == ConsumerGroupType.CONSUMER
        assert_described_as_a_consumer_group(bs, admin, gid)
        members = {}
        reader = Consumer({"bootstrap.servers": bs, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                           "enable.auto.commit": False})
        try:
            parts = reader.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
            reader.assign([TopicPartition("__consumer_offsets", p, 0) for p in parts])
            idle = time.time()
            while time.time() - idle < 3:
                msg = reader.poll(0.2)
                if msg is None or msg.error() is not None:
                    continue
                idle = time.time()
                key = msg.key()
                if key and len(key) > 2 and record_type(key) == 5 and gid.encode() in key:
                    members[key] = msg.value()
        finally:
            reader.close()
        # the last record of each member (key): a classic member's session timeout and protocols, or null
        current = [classic_member_metadata(ConsumerGroupMemberMetadataValue.decode(io.BytesIO(v)))
                   for v in members.values() if v is not None]
        classic = [c for c in current if c is not None]
        assert len(classic) == 2 and len(current) == 3, f"{backend}: {current}"
        for c in classic:
            assert c.session_timeout_ms == 45000   # librdkafka's session.timeout.ms default
            assert [n for n, _ in c.supported_protocols] == ["range", "roundrobin"]   # its default strategies
    finally:
        for name in list(g.consumers):
            g.close(name)


def assert_described_as_a_consumer_group(bs: str, admin: AdminClient, gid: str) -> None:
    """A consumer group with classic members, as Kafka 4.4 describes it: ConsumerGroupDescribe (the AdminClient)
    shows all three members, v1 with their type (two classic, one consumer); the classic DescribeGroups does not
    describe it (v5: no error, state Dead, no members; v6: GROUP_ID_NOT_FOUND "not a classic group"); ListGroups
    lists it as a Stable consumer group of protocol type consumer."""
    from kafka.protocol.admin.groups import (DescribeGroupsRequest, DescribeGroupsResponse, ListGroupsRequest,
                                            ListGroupsResponse)
    from test_consumer_group_protocol import raw

    from kafkalab.broker.apis.consumer_group_describe import (ConsumerGroupDescribeRequest,
                                                              ConsumerGroupDescribeResponse)
    from kafkalab.broker.common.errors import ErrorCode
    d = admin.describe_consumer_groups([gid])[gid].result()
    assert (d.type, str(d.state).rsplit(".", 1)[-1], len(d.members)) == (ConsumerGroupType.CONSUMER, "STABLE", 3)
    assert sorted(p.partition for m in d.members for p in m.assignment.topic_partitions) == list(range(PARTITIONS))
    # ConsumerGroupDescribe v1 (KIP-1099): each member's type, 0 classic, 1 consumer
    described = raw(bs, ConsumerGroupDescribeRequest(group_ids=[gid], include_authorized_operations=False),
                    ConsumerGroupDescribeResponse, 1).groups[0]
    assert described.error_code == 0 and sorted(m.member_type for m in described.members) == [0, 0, 1], described
    request = DescribeGroupsRequest(groups=[gid], include_authorized_operations=False)
    v5 = raw(bs, request, DescribeGroupsResponse, 5).groups[0]
    assert (v5.error_code, v5.group_state, v5.protocol_type, v5.protocol_data, v5.members) == (0, "Dead", "", "", [])
    v6 = raw(bs, request, DescribeGroupsResponse, 6).groups[0]
    assert (v6.error_code, v6.error_message, v6.group_state, v6.members) == (
        ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a classic group.", "Dead", [])
    listed = [g for g in raw(bs, ListGroupsRequest(states_filter=[], types_filter=[]), ListGroupsResponse, 5).groups
              if g.group_id == gid]
    assert [(g.protocol_type, g.group_state, g.group_type) for g in listed] == [("consumer", "Stable", "consumer")]
    [listed] = [g for g in admin.list_consumer_groups().result().valid if g.group_id == gid]
    assert (listed.type, str(listed.state).rsplit(".", 1)[-1]) == (ConsumerGroupType.CONSUMER, "STABLE")


def classic_leader(bs: str, gid: str, topic: str, user_data: bytes | None) -> str:
    """One classic member by hand (JoinGroup v5, SyncGroup v3): the leader assigns itself every partition, its
    ConsumerProtocolAssignment carrying ``user_data`` as a client-side assignor's would. Its member id."""
    from kafka.protocol.consumer.group import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
    from test_consumer_group_protocol import RETRIABLE, raw
    subscription = ConsumerProtocolSubscription(version=0, topics=[topic], user_data=None).encode(0)
    member_id, deadline = "", time.time() + 30
    while True:
        resp = raw(bs, JoinGroupRequest(group_id=gid, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                                        member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                            name="custom", metadata=subscription)]), JoinGroupResponse, 5)
        if resp.error_code == 79:   # MEMBER_ID_REQUIRED
            member_id = resp.member_id
        elif resp.error_code not in RETRIABLE or time.time() > deadline:
            break
        else:
            time.sleep(0.2)
    assert resp.error_code == 0 and resp.leader == resp.member_id, resp
    assignment = ConsumerProtocolAssignment(version=0, assigned_partitions=[ConsumerProtocolAssignment.TopicPartition(
        topic=topic, partitions=list(range(PARTITIONS)))], user_data=user_data).encode(0)
    sync = raw(bs, SyncGroupRequest(group_id=gid, generation_id=resp.generation_id, member_id=resp.member_id,
                                    group_instance_id=None, assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                                        member_id=resp.member_id, assignment=assignment)]), SyncGroupResponse, 3)
    assert sync.error_code == 0 and bytes(sync.assignment) == assignment, sync
    return resp.member_id


def test_upgrade_refused_when_a_custom_assignor_left_user_data(bootstrap):
    """Kafka 4.4 (``ConsumerGroup.fromClassicGroup``): a classic member whose assignment carries user data (what a
    client-side assignor passes its members) would lose it in a consumer group, so the first ConsumerGroupHeartbeat
    gets GROUP_ID_NOT_FOUND and the group stays classic; without user data the same group is upgraded."""
    from test_consumer_group_protocol import raw

    from kafkalab.broker.apis.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                               ConsumerGroupHeartbeatResponse)
    from kafkalab.broker.common.errors import ErrorCode
    backend, bs = bootstrap
    admin = AdminClient({"bootstrap.servers": bs})
    topic = f"miga-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
    for user_data, refused in ((b"custom-state", True), (None, False)):
        gid = f"ga-{uuid.uuid4().hex[:6]}"
        classic_leader(bs, gid, topic, user_data)
        assert group_type(admin, gid) == ConsumerGroupType.CLASSIC
        resp = raw(bs, ConsumerGroupHeartbeatRequest(group_id=gid, member_id=str(uuid.uuid4()), member_epoch=0,
                                                     rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
                                                     topic_partitions=[]), ConsumerGroupHeartbeatResponse, 1)
        if refused:
            assert (resp.error_code, resp.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade classic group {gid} to consumer group because an unsupported custom assignor is in "
                "use. Please refer to the documentation or switch to a default assignor before re-attempting the "
                "upgrade.")), (backend, resp)
            assert group_type(admin, gid) == ConsumerGroupType.CLASSIC
        else:
            assert resp.error_code == 0, (backend, resp)
            assert group_type(admin, gid) == ConsumerGroupType.CONSUMER


@pytest.mark.parametrize("backend", ["mini", pytest.param("kafka-4.4", marks=pytest.mark.cluster)])
def test_upgrade_refused_when_the_policy_disables_it(tmp_path, backend):
    """``group.consumer.migration.policy=disabled``: a ConsumerGroupHeartbeat joining a classic group with members
    gets GROUP_ID_NOT_FOUND with Kafka's words, and the group stays classic."""
    from test_consumer_group_protocol import join_group, raw   # kafka-python's codecs over a plain socket

    from kafkalab.broker.apis.consumer_group_heartbeat import (ConsumerGroupHeartbeatRequest,
                                                               ConsumerGroupHeartbeatResponse)
    from kafkalab.broker.common.errors import ErrorCode
    configs = {**GROUP_CONFIGS, "group.consumer.migration.policy": "disabled"}
    if backend == "mini":
        ctx = kafkalab.mini(log_dir=str(tmp_path), **configs)
    else:
        from kafkalab.cluster.distribution import fetch_kafka
        from kafkalab.cluster.kraft_config import KRaftBackend
        ctx = kafkalab.cluster(brokers=1, dir=str(tmp_path / "cluster"), backend=KRaftBackend(str(fetch_kafka("4"))),
                               mode="kraft", **KAFKA_GROUP_CONFIGS, **{"group.consumer.migration.policy": "disabled"})
    with ctx as b:
        bs = b.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        topic, gid = f"migd-{uuid.uuid4().hex[:6]}", f"gd-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result()
        g = Group(bs, gid, topic)
        try:
            g.add("a", "classic")
            g.poll_until(lambda: g.settled(0))
            resp = raw(bs, ConsumerGroupHeartbeatRequest(group_id=gid, member_id=str(uuid.uuid4()), member_epoch=0,
                                                         rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
                                                         topic_partitions=[]), ConsumerGroupHeartbeatResponse, 1)
            assert (resp.error_code, resp.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, (
                f"Cannot upgrade classic group {gid} to consumer group because online upgrade is disabled."))
            assert group_type(admin, gid) == ConsumerGroupType.CLASSIC
            # and a classic member cannot join a consumer group with members
            cgid = f"gdc-{uuid.uuid4().hex[:6]}"
            resp = raw(bs, ConsumerGroupHeartbeatRequest(group_id=cgid, member_id=str(uuid.uuid4()), member_epoch=0,
                                                         rebalance_timeout_ms=30000, subscribed_topic_names=[topic],
                                                         topic_partitions=[]), ConsumerGroupHeartbeatResponse, 1)
            assert resp.error_code == 0
            assert join_group(bs, cgid, "consumer")[0] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        finally:
            g.close("a")


@pytest.mark.cluster
def test_rolling_migration_on_a_mini_cluster(tmp_path):
    """Three mini brokers on a real ZooKeeper: the group lives on the leader of its __consumer_offsets partition;
    the upgrade, the classic members inside the consumer group and the downgrade work there too."""
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **GROUP_CONFIGS) as c:
        for frm, to, last in (("classic", "consumer", ConsumerGroupType.CONSUMER),
                              ("consumer", "classic", ConsumerGroupType.CLASSIC)):
            g, produced, types = migrate(c.bootstrap_servers, frm, to)
            assert sorted(g.consumed) == list(range(produced)) and not g.commit_errors, (frm, g.commit_errors)
            assert types[-1] == last, types
