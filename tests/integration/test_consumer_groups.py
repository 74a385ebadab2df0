"""Consumer groups against the mini broker, with confluent-kafka and kafka-python.

Rebalances while records flow (eager, cooperative-sticky, kafka-python's
defaults), static membership, session and rebalance timeouts, committed
offsets surviving consumers and broker restarts, and the admin APIs.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
import uuid

import kafka
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.consumer.group import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
                                           SyncGroupRequest, SyncGroupResponse)

import kafkalab
from kafkalab.broker.common.errors import ErrorCode

GROUP_CONFIGS = {"num.partitions": 6, "group.initial.rebalance.delay.ms": 200, "offsets.topic.num.partitions": 5}
SESSION = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    """A broker for this module: 6 partitions per topic, a short initial rebalance delay."""
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("groups")), **GROUP_CONFIGS) as b:
        yield b


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, name: str, partitions: int = 6) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def produce(bootstrap: str, topic: str, n: int, partitions: int = 6) -> set[tuple[int, int]]:
    """Produce ``n`` records round-robin over the partitions; return their (partition, offset)s."""
    out: set[tuple[int, int]] = set()
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})

    def on_delivery(err, msg):
        assert err is None, err
        out.add((msg.partition(), msg.offset()))

    for i in range(n):
        p.produce(topic, value=str(i).encode(), partition=i % partitions, on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(30) == 0
    return out


def group_state(broker, group_id: str):
    """(state, generation, member ids) as the coordinator sees them."""
    def look():
        g = broker.server.group_coordinator.groups.get(group_id)
        return None if g is None else (str(g.state), g.generation_id, sorted(g.members))
    return broker.call(look)


def wait_for(predicate, timeout: float = 30, what: str = "condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")


# --- the ledger: what was consumed, what was committed ---------------------------------------------

class Ledger:
    """Every consumption of every record, and every successful commit, in one global order.

    A successful commit of offset ``n`` for partition ``p`` covers every record of ``p`` below ``n``.
    A record may be consumed twice only while no successful commit covers it (at-least-once: a
    commit that failed, e.g. REBALANCE_IN_PROGRESS, lets the next owner redeliver); once a commit
    covering it has succeeded, nobody may consume it again."""

    def __init__(self):
        self.lock = threading.Lock()
        self.seq = 0
        self.events: list[tuple[int, str, int, int, str]] = []  # (seq, "consume"/"commit", partition, offset, who)
        self.committed_upto: dict[int, int] = {}                # partition -> highest committed next-offset
        self.failed_commits = 0

    def consume(self, who: str, records):
        with self.lock:
            for p, o in records:
                self.seq += 1
                self.events.append((self.seq, "consume", p, o, who))

    def committed(self, who: str, positions: dict[int, int]):
        with self.lock:
            self.seq += 1
            for p, n in positions.items():
                self.events.append((self.seq, "commit", p, n, who))
                self.committed_upto[p] = max(self.committed_upto.get(p, 0), n)

    def covers(self, produced: set[tuple[int, int]]) -> bool:
        with self.lock:
            return bool(produced) and all(o < self.committed_upto.get(p, 0) for p, o in produced)

    def missing(self, produced) -> list:
        with self.lock:
            return sorted((p, o) for p, o in produced if o >= self.committed_upto.get(p, 0))

    def check(self, produced: set[tuple[int, int]]) -> None:
        with self.lock:
            events = sorted(self.events)
        seen = {(p, o) for _, kind, p, o, _ in events if kind == "consume"}
        assert seen == produced, f"lost {sorted(produced - seen)[:10]}, unexpected {sorted(seen - produced)[:10]}"
        upto: dict[int, int] = {}
        again = []
        for _, kind, p, o, who in events:
            if kind == "commit":
                upto[p] = max(upto.get(p, 0), o)
            elif o < upto.get(p, 0):
                again.append((p, o, who))
        assert not again, f"consumed again after a successful commit covered them: {again[:10]}"


class Committer:
    """Commits what one member consumed, synchronously, as an at-least-once application does.

    A commit can fail while the member's group rebalances (REBALANCE_IN_PROGRESS during
    CompletingRebalance, ILLEGAL_GENERATION just after a new generation began). The member
    then commits again at its next poll, for the partitions it still owns: without that, the
    last records of a partition whose commit failed would stay uncommitted for ever once the
    producer stops. A partition the member lost is left to its next owner, who starts at the
    last successful commit and so gets those records again (allowed: no commit covered them);
    so is a partition revoked and given back in one poll, which restarts at that commit too."""

    def __init__(self, name: str, ledger: Ledger, errors: list, commit, owned):
        self.name, self.ledger, self.errors = name, ledger, errors
        self._commit, self._owned = commit, owned   # commit({partition: next offset}), owned() -> partitions
        self.pending: dict[int, int] = {}           # partition -> next offset, consumed but not committed

    def consumed(self, records) -> None:
        self.ledger.consume(self.name, records)
        for p, o in records:
            self.pending[p] = max(self.pending.get(p, 0), o + 1)
        self.commit()

    def revoked(self, partitions) -> None:
        for p in partitions:
            self.pending.pop(p, None)

    def commit(self) -> None:
        owned = self._owned()
        self.pending = {p: n for p, n in self.pending.items() if p in owned}
        if not self.pending:
            return
        offsets = dict(self.pending)
        try:
            self._commit(offsets)
        except (KafkaException, kafka.errors.KafkaError) as exc:
            self.ledger.failed_commits += 1
            self.errors.append(f"{self.name}: commit failed: {exc!r}")
        else:
            self.ledger.committed(self.name, offsets)
            self.pending = {p: n for p, n in self.pending.items() if n > offsets.get(p, -1)}


def run_confluent_member(bootstrap, group, topic, name, ledger: Ledger, stop: threading.Event, strategy: str,
                         errors: list):
    """Poll, process, commit synchronously after each message (so a revocation never loses work)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "partition.assignment.strategy": strategy, **SESSION})

    def commit(offsets):
        done = c.commit(offsets=[TopicPartition(topic, p, n) for p, n in offsets.items()], asynchronous=False)
        failed = [tp.error for tp in done or [] if tp.error is not None]
        if failed:
            raise KafkaException(failed[0])

    committer = Committer(name, ledger, errors, commit, owned=lambda: {tp.partition for tp in c.assignment()})
    c.subscribe([topic], on_revoke=lambda _, tps: committer.revoked(tp.partition for tp in tps))
    try:
        while not stop.is_set():
            msg = c.poll(0.2)
            if msg is None:
                committer.commit()  # retry a failed commit
            elif msg.error():
                errors.append(f"{name}: {msg.error()}")
            else:
                committer.consumed([(msg.partition(), msg.offset())])
    finally:
        c.close()


def run_kafka_python_member(bootstrap, group, topic, name, ledger: Ledger, stop: threading.Event, errors: list):
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=name,
                            auto_offset_reset="earliest", enable_auto_commit=False,
                            session_timeout_ms=6000, heartbeat_interval_ms=1000)
    committer = Committer(
        name, ledger, errors,
        commit=lambda offsets: c.commit({kafka.TopicPartition(topic, p): kafka.OffsetAndMetadata(n, "", -1)
                                         for p, n in offsets.items()}),
        owned=lambda: {tp.partition for tp in c.assignment()})

    class OnRevoke(kafka.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            committer.revoked(tp.partition for tp in revoked)

        def on_partitions_assigned(self, assigned):
            pass

    c.subscribe([topic], listener=OnRevoke())
    try:
        while not stop.is_set():
            batches = c.poll(200)
            records = [(m.partition, m.offset) for msgs in batches.values() for m in msgs]
            if records:
                committer.consumed(records)
            else:
                committer.commit()  # retry a failed commit
    finally:
        c.close()


@pytest.mark.slow
@pytest.mark.parametrize("client,strategy", [("confluent", "range"), ("confluent", "cooperative-sticky"),
                                             ("kafka-python", None)])
def test_three_members_rebalance_while_records_flow(gbroker, client, strategy):
    """Members join and leave while a producer writes: nothing lost, nothing committed is consumed again."""
    bootstrap = gbroker.bootstrap_servers
    topic, group = unique("flow"), unique("flow-group")
    create_topic(bootstrap, topic)
    ledger, errors, produced = Ledger(), [], set()
    stops = {name: threading.Event() for name in ("a", "b", "c")}

    def start(name):
        if client == "confluent":
            args = (bootstrap, group, topic, name, ledger, stops[name], strategy, errors)
            target = run_confluent_member
        else:
            args = (bootstrap, group, topic, name, ledger, stops[name], errors)
            target = run_kafka_python_member
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        return t

    def produce_in_background(n_batches):
        for _ in range(n_batches):
            produced.update(produce(bootstrap, topic, 60))
            time.sleep(0.3)

    threads = {"a": start("a")}
    producer = threading.Thread(target=produce_in_background, args=(20,), daemon=True)
    producer.start()
    generations = []
    try:
        wait_for(lambda: (group_state(gbroker, group) or ("",))[0] == "Stable", what="a Stable group")
        threads["b"] = start("b")
        wait_for(lambda: len(group_state(gbroker, group)[2]) == 2 and group_state(gbroker, group)[0] == "Stable",
                 what="b to join")
        threads["c"] = start("c")
        wait_for(lambda: len(group_state(gbroker, group)[2]) == 3 and group_state(gbroker, group)[0] == "Stable",
                 what="c to join")
        generations.append(group_state(gbroker, group)[1])
        time.sleep(1)
        stops["b"].set()                # b leaves (LeaveGroup on close): its partitions move
        threads["b"].join(30)
        wait_for(lambda: len(group_state(gbroker, group)[2]) == 2 and group_state(gbroker, group)[0] == "Stable",
                 what="the group to settle without b")
        producer.join(60)
        stops["c"].set()
        threads["c"].join(30)
        # a alone drains the rest
        wait_for(lambda: ledger.covers(produced), timeout=60,
                 what=lambda: f"every record to be consumed and committed; missing {ledger.missing(produced)[:12]}, "
                              f"last errors {errors[-3:]}")
        generations.append(group_state(gbroker, group)[1])
    finally:
        for s in stops.values():
            s.set()
        for t in threads.values():
            t.join(30)
        producer.join(60)
    assert generations[1] > generations[0] >= 3  # at least: a alone, a+b, a+b+c, then a+c, then a
    ledger.check(produced)
    # the group's committed offsets are the log end of every partition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = c.committed([TopicPartition(topic, p) for p in range(6)], timeout=10)
    finally:
        c.close()
    ends = {p: max(o for q, o in produced if q == p) + 1 for p in range(6)}
    assert {tp.partition: tp.offset for tp in committed} == ends


# --- static membership ---------------------------------------------------------------------------------

def confluent_static(bootstrap, group, topic, instance_id):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.instance.id": instance_id,
                  "auto.offset.reset": "earliest", "client.id": instance_id, **SESSION})
    c.subscribe([topic])
    return c


def poll_until_assigned(consumer, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        consumer.poll(0.2)
        if consumer.assignment():
            return consumer.assignment()
    raise AssertionError("no assignment")


@pytest.mark.slow
def test_static_member_restart_within_session_timeout_does_not_rebalance(gbroker):
    bootstrap = gbroker.bootstrap_servers
    topic, group = unique("static"), unique("static-group")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, 60)
    c1 = confluent_static(bootstrap, group, topic, "instance-1")
    c2 = confluent_static(bootstrap, group, topic, "instance-2")
    try:
        poll_until_assigned(c1)
        poll_until_assigned(c2)

        def settled():
            s = group_state(gbroker, group)
            return s is not None and s[0] == "Stable" and len(s[2]) == 2 and s
        # both polled into the same generation
        for _ in range(20):
            c1.poll(0.1)
            c2.poll(0.1)
        state, generation, members = wait_for(settled, what="two Stable static members")
        before = {tp.partition for tp in c1.assignment()}
        c1.close()   # a static member sends no LeaveGroup: the coordinator keeps its place
        assert group_state(gbroker, group)[1] == generation
        c1 = confluent_static(bootstrap, group, topic, "instance-1")
        after = {tp.partition for tp in poll_until_assigned(c1)}
        for _ in range(20):
            c2.poll(0.1)
            c1.poll(0.1)
        state2, generation2, members2 = group_state(gbroker, group)
        assert (state2, generation2) == ("Stable", generation), "a static restart must not rebalance"
        assert after == before
        assert len(set(members2) - set(members)) == 1, "the restarted member has a new member id"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result(30)
        assert sorted(m.group_instance_id for m in desc.members) == ["instance-1", "instance-2"]
    finally:
        c1.close()
        c2.close()


# --- a raw member: speaks the protocol by hand, so it can stop heartbeating ----------------------------

class RawMember:
    """A consumer-group member built from kafka-python's protocol classes over a plain socket."""

    def __init__(self, port, group, topic, session_timeout_ms=6000, rebalance_timeout_ms=6000):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.group, self.topic = group, topic
        self.session, self.rebalance = session_timeout_ms, rebalance_timeout_ms
        self.member_id, self.generation, self.correlation = "", -1, 0

    def call(self, request, response_cls, version):
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id="raw-member")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        (n,) = struct.unpack(">i", self._read(4))
        return response_cls.decode(self._read(n), version=version, header=True)

    def _read(self, n):
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def subscription(self):
        t = self.topic.encode()
        return struct.pack(">hih", 0, 1, len(t)) + t + struct.pack(">i", -1)

    def join(self):
        while True:
            resp = self.call(JoinGroupRequest(
                version=5, group_id=self.group, session_timeout_ms=self.session,
                rebalance_timeout_ms=self.rebalance, member_id=self.member_id, group_instance_id=None,
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=self.subscription())]),
                JoinGroupResponse, 5)
            self.member_id = resp.member_id
            if resp.error_code != ErrorCode.MEMBER_ID_REQUIRED:
                break
        assert resp.error_code == 0, ErrorCode(resp.error_code)
        self.generation = resp.generation_id
        return resp

    def sync(self):
        resp = self.call(SyncGroupRequest(version=3, group_id=self.group, generation_id=self.generation,
                                          member_id=self.member_id, group_instance_id=None, assignments=[]),
                         SyncGroupResponse, 3)
        return resp

    def heartbeat(self):
        return self.call(HeartbeatRequest(version=3, group_id=self.group, generation_id=self.generation,
                                          member_id=self.member_id, group_instance_id=None),
                         HeartbeatResponse, 3).error_code

    def close(self):
        self.sock.close()


def test_silent_member_is_removed_after_session_timeout(gbroker):
    """A member that stops heartbeating is removed after session.timeout.ms; its partitions move."""
    bootstrap = gbroker.bootstrap_servers
    topic, group = unique("session"), unique("session-group")
    create_topic(bootstrap, topic)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest", **SESSION})
    c.subscribe([topic])
    raw = RawMember(gbroker.port, group, topic)
    try:
        poll_until_assigned(c)
        joined = threading.Thread(target=raw.join, daemon=True)
        joined.start()
        while joined.is_alive():   # the confluent member rejoins from poll()
            c.poll(0.1)
        assert raw.generation > 0
        sync = raw.sync()
        assert sync.error_code == 0
        wait_for(lambda: (c.poll(0.1), len(c.assignment()) == 3)[1], what="the confluent member to get 3 of 6")
        assert raw.heartbeat() == 0
        silent_since = time.time()
        wait_for(lambda: (c.poll(0.1), len(c.assignment()) == 6)[1], timeout=30,
                 what="the silent member's partitions to move")
        assert time.time() - silent_since >= 5  # not before (most of) session.timeout.ms
        assert raw.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID
        assert raw.member_id not in group_state(gbroker, group)[2]
    finally:
        raw.close()
        c.close()


def test_member_that_does_not_rejoin_is_removed_after_rebalance_timeout(gbroker):
    """max.poll.interval.ms (rebalance_timeout_ms): a member that keeps heartbeating but never rejoins is dropped."""
    topic, group = unique("rebalance"), unique("rebalance-group")
    create_topic(gbroker.bootstrap_servers, topic)
    raw = RawMember(gbroker.port, group, topic, session_timeout_ms=30000, rebalance_timeout_ms=2000)
    other = RawMember(gbroker.port, group, topic, session_timeout_ms=30000, rebalance_timeout_ms=2000)
    try:
        raw.join()
        assert raw.sync().error_code == 0
        old_generation = raw.generation
        t = threading.Thread(target=other.join, daemon=True)   # starts a rebalance raw never answers
        t.start()
        t.join(30)
        assert not t.is_alive()
        assert other.generation == old_generation + 1
        state, generation, members = group_state(gbroker, group)
        assert members == [other.member_id]
        assert raw.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID
    finally:
        raw.close()
        other.close()


# --- committed offsets ---------------------------------------------------------------------------------

def test_committed_offsets_survive_consumers_and_broker_restart(tmp_path):
    log_dir = str(tmp_path / "restart")
    topic, group = "orders", "billing"
    with kafkalab.mini(log_dir=log_dir, **GROUP_CONFIGS) as b:
        create_topic(b.bootstrap_servers, topic, 3)
        produce(b.bootstrap_servers, topic, 30, partitions=3)
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, **SESSION})
        c.subscribe([topic])
        got = 0
        deadline = time.time() + 30
        while got < 15 and time.time() < deadline:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                got += 1
        c.commit(offsets=[TopicPartition(topic, p, 5, metadata=f"checkpoint-{p}") for p in range(3)],
                 asynchronous=False)
        c.close()  # every consumer gone: the group is Empty, its offsets stay
        assert group_state(b, group)[0] == "Empty"
    with kafkalab.mini(log_dir=log_dir, **GROUP_CONFIGS) as b:
        assert group_state(b, group)[0] == "Empty"
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": group, "auto.offset.reset": "earliest",
                      **SESSION})
        try:
            committed = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
            assert [(tp.offset, tp.metadata) for tp in committed] == [(5, f"checkpoint-{p}") for p in range(3)]
            c.subscribe([topic])
            seen = []
            deadline = time.time() + 30
            while len(seen) < 15 and time.time() < deadline:
                msg = c.poll(0.2)
                if msg is not None and not msg.error():
                    seen.append((msg.partition(), msg.offset()))
            assert sorted(seen) == [(p, o) for p in range(3) for o in range(5, 10)], "resumes at the commits"
        finally:
            c.close()
        md = AdminClient({"bootstrap.servers": b.bootstrap_servers}).list_topics(timeout=10)
        assert "__consumer_offsets" in md.topics and len(md.topics["__consumer_offsets"].partitions) == 5


@pytest.mark.slow
def test_committed_offsets_survive_sigkill_kafka_python(broker_process):
    bp = broker_process(configs=GROUP_CONFIGS).start()
    topic, group = "events", "kp-group"
    create_topic(bp.bootstrap_servers, topic, 2)
    produce(bp.bootstrap_servers, topic, 20, partitions=2)
    c = kafka.KafkaConsumer(topic, bootstrap_servers=bp.bootstrap_servers, group_id=group,
                            auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                            heartbeat_interval_ms=1000)
    n = 0
    deadline = time.time() + 30
    while n < 20 and time.time() < deadline:
        n += sum(len(v) for v in c.poll(200).values())
    assert n == 20
    c.commit()
    c.close()
    bp.kill()   # SIGKILL: no clean shutdown
    bp.start()
    c = kafka.KafkaConsumer(bootstrap_servers=bp.bootstrap_servers, group_id=group, enable_auto_commit=False)
    try:
        offsets = {p: c.committed(kafka.TopicPartition(topic, p)) for p in range(2)}
    finally:
        c.close()
    assert offsets == {0: 10, 1: 10}
    admin = kafka.KafkaAdminClient(bootstrap_servers=bp.bootstrap_servers)
    try:
        listed = admin.list_group_offsets(group)[group]
        assert {tp.partition: om.offset for tp, om in listed.items()} == {0: 10, 1: 10}
    finally:
        admin.close()


def test_simple_commit_without_group_management(gbroker):
    """assign() + commit: generation -1 commits are accepted for an Empty group, fetched back with metadata."""
    topic, group = unique("simple"), unique("simple-group")
    create_topic(gbroker.bootstrap_servers, topic, 2)
    c = Consumer({"bootstrap.servers": gbroker.bootstrap_servers, "group.id": group})
    try:
        c.assign([TopicPartition(topic, 0)])
        c.commit(offsets=[TopicPartition(topic, 0, 42, metadata="hello")], asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
        assert [(tp.offset, tp.metadata) for tp in committed][0] == (42, "hello")
        assert committed[1].offset < 0   # nothing committed: -1 on the wire (librdkafka shows OFFSET_INVALID)
    finally:
        c.close()
    assert group_state(gbroker, group)[0] == "Empty"


# --- admin ----------------------------------------------------------------------------------------------

def test_admin_list_describe_delete_groups(gbroker):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions
    bootstrap = gbroker.bootstrap_servers
    topic, group = unique("admin"), unique("admin-group")
    create_topic(bootstrap, topic)
    produce(bootstrap, topic, 12)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "client.id": "admin-test", "enable.auto.commit": False, **SESSION})
    c.subscribe([topic])
    try:
        n = 0
        deadline = time.time() + 30
        while n < 12 and time.time() < deadline:
            msg = c.poll(0.2)
            n += msg is not None and not msg.error()
        assert n == 12, f"consumed {n} of 12 records in 30 s"
        c.commit(asynchronous=False)
        listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(30)
        assert group in {g.group_id for g in listed.valid}
        listed = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(30)
        assert group not in {g.group_id for g in listed.valid}
        desc = admin.describe_consumer_groups([group])[group].result(30)
        assert desc.state == ConsumerGroupState.STABLE and desc.partition_assignor == "range"
        assert [m.client_id for m in desc.members] == ["admin-test"]
        assert sorted(tp.partition for tp in desc.members[0].assignment.topic_partitions) == list(range(6))
        # a group with members cannot be deleted
        with pytest.raises(KafkaException) as exc:
            admin.delete_consumer_groups([group])[group].result(30)
        assert exc.value.args[0].code() == ErrorCode.NON_EMPTY_GROUP
        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(p, 2) for p in range(6)]
    finally:
        c.close()
    desc = admin.describe_consumer_groups([group])[group].result(30)
    assert desc.state == ConsumerGroupState.EMPTY and not desc.members
    admin.delete_consumer_groups([group])[group].result(30)
    assert group_state(gbroker, group) is None
    listed = admin.list_consumer_groups().result(30)
    assert group not in {g.group_id for g in listed.valid}
    with pytest.raises(KafkaException) as exc:
        admin.delete_consumer_groups([group])[group].result(30)
    assert exc.value.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND
    # the offsets went with the group
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        assert all(tp.offset < 0 for tp in c.committed([TopicPartition(topic, p) for p in range(6)], timeout=10))
    finally:
        c.close()
