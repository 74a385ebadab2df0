"""Faults on the mini KRaft cluster: three controllers (``python -m kafkalab.controller``: the Raft
quorum and the QuorumController) and three mini brokers (``python -m kafkalab.kraft``), broken while they work.

* the active controller SIGKILLed while a burst of CreateTopics is in flight: every topic whose create was
  answered OK exists on every broker with all its partitions; no topic is half made;
* a follower controller paused (SIGSTOP), then the active controller: the majority goes on (a new leader in a
  higher epoch), writes commit; the resumed stale leader learns the new epoch, gives up its uncommitted write
  (answered NOT_CONTROLLER) and follows; every voter's log is the same up to the high watermark;
* two of three controllers down: the quorum stalls and says so (CreateTopics: REQUEST_TIMED_OUT,
  ``Cluster.quorum()``: no leader, who is down), the brokers keep serving produce and fetch on existing
  partitions; one controller back, the quorum elects and nothing committed is lost.

One cluster serves the module; each test leaves every node running. Deadlines are generous bounds for
something to happen, not measurements.
"""
from __future__ import annotations

import glob
import os
import threading
import time

import pandas as pd
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from tests.helpers.cluster_helpers import wait_until
from kafkalab.cluster.kafka_requests import kafka_request, metadata_answer, metadata_request
from kafkalab.cluster.quorum import QuorumUnavailableError
from kafkalab.cli import format_status
from kafkalab.tools.dump_log import dump_log_df
from kafkalab.viz.cluster_state import collect

pytestmark = pytest.mark.cluster

NOT_CONTROLLER, REQUEST_TIMED_OUT = 41, 7


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path_factory.mktemp("kraft-faults"))) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def every_node_running(c):
    """What a test broke, running again: every controller and broker, and a leader."""
    yield
    for row in c.nodes.to_dict("records"):
        if row["alive"] == "paused":
            c.resume(row["id"])
        elif row["alive"] != "running":
            c.restart(row["id"])
    wait_until(lambda: c.controller is not None, "a leader again")


def topics_on(c, broker_id: int) -> dict[str, dict]:
    """The topics one broker's Metadata lists (its own metadata image)."""
    b = c._broker(broker_id)
    return metadata_answer(metadata_request(b.host, b.port, None, 2.0))["topics"]


def voter_batches(c, node_id: int) -> list[tuple]:
    """A voter's ``__cluster_metadata-0`` log, read from its segment files (read only, as ``kafka-dump-log``):
    (base offset, last offset, partition leader epoch, control, CRC) per batch."""
    rows = []
    for segment in sorted(glob.glob(os.path.join(c.metadata_log_dir(node_id), "*.log"))):
        df = dump_log_df(segment, level="batch")
        rows += [(int(r.baseOffset), int(r.lastOffset), int(r.partitionLeaderEpoch), bool(r.isControl), int(r.crc))
                 for r in df.itertuples() if not r.error]
    return rows


def voter_values(c, node_id: int) -> list:
    """Every record value in a voter's ``__cluster_metadata-0`` segments."""
    values = []
    for segment in sorted(glob.glob(os.path.join(c.metadata_log_dir(node_id), "*.log"))):
        values += list(dump_log_df(segment, level="record", decode=False)["value"])
    return values


def committed_prefix(batches: list[tuple], high_watermark: int) -> list[tuple]:
    return [b for b in batches if b[1] < high_watermark]


def voters_caught_up(c) -> bool:
    """Every voter fetched up to the leader's log end (DescribeQuorum's lag 0; unknown is not 0)."""
    voters = c.quorum().query("status != 'Observer'")
    return len(voters) == len(c.controller_ids) and all(pd.notna(lag) and lag == 0 for lag in voters["lag"])


def assert_logs_agree(c, at_least: int) -> int:
    """Every voter's log holds the very same batches (offsets, epochs, CRCs) below the high watermark — as far as
    the voter that is furthest behind has come — and that reaches ``at_least`` (a high watermark read before the
    fault): nothing committed was lost or changed. Returns how far they were compared."""
    hw = high_watermark(c)
    logs = {i: voter_batches(c, i) for i in c.controller_ids}
    upto = min([hw] + [batches[-1][1] + 1 for batches in logs.values() if batches])
    assert upto >= at_least, (upto, at_least, hw)
    # a voter that fetched a snapshot (FetchSnapshot: it came back with a last epoch older than the leader's
    # earliest snapshot, Kafka's validateOffsetAndEpoch) holds its log from that snapshot's end offset on, and the
    # snapshot for what is below: the batches are compared from the highest log start on
    start = max(batches[0][0] for batches in logs.values() if batches)
    for i, batches in logs.items():
        if batches and batches[0][0] > 0:
            ends = [int(os.path.basename(f)[:20]) for f in
                    glob.glob(os.path.join(c.metadata_log_dir(i), "*.checkpoint"))]
            assert batches[0][0] in ends, f"controller {i}'s log starts at {batches[0][0]} without a snapshot there"
    first = [b for b in committed_prefix(logs[c.controller_ids[0]], upto) if b[0] >= start]
    for i, batches in logs.items():
        assert [b for b in committed_prefix(batches, upto) if b[0] >= start] == first, \
            f"controller {i}'s log differs between offsets {start} and {upto}"
    return upto


def create_one(bootstrap: str, name: str, partitions: int = 2, timeout_s: float = 30.0):
    """CreateTopics through a broker: None when answered OK, else confluent-kafka's KafkaError."""
    # librdkafka waits socket.timeout.ms (60 s by default) for an answer to any request, whatever the admin
    # call's request_timeout: a client that is to outwait the broker's 60 s forwarding retry must raise it
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(max(60.0, timeout_s + 5) * 1000)})
    try:
        admin.create_topics([NewTopic(name, partitions, 3)], request_timeout=timeout_s)[name].result(timeout_s + 10)
        return None
    except Exception as exc:   # confluent_kafka.KafkaException(KafkaError)  # noqa: BLE001
        return exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else exc


def create_topics_direct(host: str, port: int, name: str, timeout_s: float = 15.0):
    """CreateTopics (v7) sent straight to one controller's listener: its (error code, message)."""
    from kafka.protocol.admin import CreateTopicsRequest
    response = kafka_request(host, port, CreateTopicsRequest, 7, {"topics": [{
        "name": name, "num_partitions": 1, "replication_factor": 3, "assignments": [], "configs": []}],
        "timeout_ms": 5000, "validate_only": False}, timeout_s)
    t = response.topics[0]
    return t.error_code, t.error_message


def high_watermark(c) -> int:
    return c.quorum().attrs["high_watermark"]


def test_active_controller_killed_during_a_burst_of_create_topics(c):
    """CreateTopics one after another in a thread; the active controller SIGKILLed after the first few are done.
    Every create answered OK (or TOPIC_ALREADY_EXISTS: a retry of a create whose first answer was lost) names a
    topic that every broker lists with its 2 partitions, each with a leader; no broker lists a topic with some
    partitions missing."""
    answers: dict[str, object] = {}
    stop = threading.Event()

    def burst():
        for i in range(40):
            if stop.is_set():
                return
            name = f"burst-{i}"
            answers[name] = create_one(c.bootstrap_servers, name)

    old = c.controller
    thread = threading.Thread(target=burst, daemon=True)
    thread.start()
    wait_until(lambda: sum(a is None for a in answers.values()) >= 5, "the first creates", timeout=30)
    hw_before = high_watermark(c)
    c.kill(old)
    killed_at = len(answers)
    thread.join(120)
    stop.set()
    assert not thread.is_alive()
    ok = sorted(n for n, a in answers.items() if a is None or (isinstance(a, KafkaError)
                                                               and a.code() == KafkaError.TOPIC_ALREADY_EXISTS))
    failed = {n: a for n, a in answers.items() if n not in ok}
    print(f"burst: {len(answers)} creates, the active controller killed after {killed_at}; "
          f"{len(ok)} OK, failed: {({n: str(a) for n, a in failed.items()})}")
    assert len(answers) == 40 and killed_at < 40, (killed_at, len(answers))
    assert len(ok) >= 30, failed          # a few may fail during the election; the rest go through the new leader
    assert c.controller not in (None, old)

    def complete_everywhere():
        for b in c.broker_ids:
            topics = topics_on(c, b)
            if any(n not in topics or len(topics[n]["partitions"]) != 2 for n in ok):
                return False
        return True

    wait_until(complete_everywhere, "every created topic on every broker", timeout=30)
    for b in c.broker_ids:
        topics = topics_on(c, b)
        for name, t in topics.items():
            if name.startswith("burst-"):
                assert len(t["partitions"]) == 2, (b, name, t)
                assert all(p["leader"] >= 0 for p in t["partitions"]), (b, name, t)
    c.restart(old)
    wait_until(lambda: voters_caught_up(c), "the restarted controller to catch up")
    assert_logs_agree(c, hw_before)


def test_a_paused_follower_controller_the_majority_goes_on(c):
    quorum = c.quorum()
    leader, epoch = quorum.attrs["leader_id"], quorum.attrs["leader_epoch"]
    follower = next(i for i in c.controller_ids if i != leader)
    c.pause(follower)
    assert create_one(c.bootstrap_servers, "while-follower-paused") is None
    assert c.controller == leader and c.quorum().attrs["leader_epoch"] == epoch   # no election needed
    hw = high_watermark(c)
    c.resume(follower)
    wait_until(lambda: voters_caught_up(c), "the follower to catch up")
    assert_logs_agree(c, hw)


def test_a_paused_active_controller_is_fenced_by_the_new_epoch_and_truncates(c):
    """The active controller SIGSTOPped: the others elect a leader in a higher epoch, which commits. A CreateTopics
    sent straight to the stale leader waits in its socket; on SIGCONT it finds the leadership lost (check-quorum:
    no fetch from a majority for 1.5 x the fetch timeout, or the new leader's BeginQuorumEpoch) and answers
    NOT_CONTROLLER; a record it may have appended first is truncated away. It follows the new leader."""
    quorum = c.quorum()
    old, epoch = quorum.attrs["leader_id"], quorum.attrs["leader_epoch"]
    c.pause(old)
    wait_until(lambda: c.controller not in (None, old), "a new leader")
    new_epoch = c.quorum().attrs["leader_epoch"]
    assert new_epoch > epoch
    assert create_one(c.bootstrap_servers, "while-leader-paused") is None
    hw = high_watermark(c)

    host, port = c.voters[old]
    answer = {}
    sender = threading.Thread(target=lambda: answer.update(result=create_topics_direct(host, port, "stale-write")))
    sender.start()
    time.sleep(0.5)        # the request is in the paused controller's socket
    c.resume(old)
    sender.join(30)
    assert answer["result"][0] == NOT_CONTROLLER, answer
    wait_until(lambda: voters_caught_up(c), "the old leader to follow and catch up")
    assert c.quorum().attrs["leader_epoch"] >= new_epoch and c.controller != old
    assert_logs_agree(c, hw)
    # the create answered OK reaches every broker's metadata (as it propagates: brokers apply committed records
    # on their own); the stale leader's write reaches none
    wait_until(lambda: all("while-leader-paused" in topics_on(c, b) for b in c.broker_ids),
               "while-leader-paused on every broker", timeout=20)
    for b in c.broker_ids:
        assert "stale-write" not in topics_on(c, b)
    assert not any(v and b"stale-write" in v for v in voter_values(c, old))


def test_two_controllers_down_the_quorum_stalls_and_says_so(c):
    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    admin.create_topics([NewTopic("existing", 1, 3)])["existing"].result(30)
    producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "message.timeout.ms": 20000})
    for i in range(20):
        producer.produce("existing", value=b"before-%d" % i)
    assert producer.flush(30) == 0
    hw_before = high_watermark(c)
    batches_before = committed_prefix(voter_batches(c, c.controller), hw_before)

    # both followers killed: the leader is left alone, a minority of one
    survivor = c.controller
    down = [i for i in c.controller_ids if i != survivor]
    for i in down:
        c.kill(i)

    # check-quorum: without fetches from a majority for 1.5 x controller.quorum.fetch.timeout.ms (1.5 s) the lone
    # leader resigns; it no longer answers as leader (nor as the active controller)
    wait_until(lambda: c.controller is None, "the lone leader to resign", timeout=15)
    # the quorum says so: no leader, who is down, what the running one says
    with pytest.raises(QuorumUnavailableError) as info:
        c.quorum()
    message = str(info.value)
    assert "no leader" in message and "2 of the 3" in message, message
    assert all(f"{i} killed" in message for i in down), message
    assert f"{survivor}: not the leader" in message, message
    assert info.value.running == [survivor] and info.value.down == sorted(down)
    status = format_status(collect(c, timeout_s=1.0))     # kafkalab status says it too
    assert "active controller -" in status and "note: KRaft quorum: the quorum has no leader" in status, status

    # CreateTopics fails with a clear error: REQUEST_TIMED_OUT, once the broker's forwarding channel has looked for
    # an active controller for 60 s (Kafka 4.4's brokers: the same fixed retry timeout). Asked in the background
    # (the client waits longer than the broker), while the brokers are checked
    stalled: list = []
    create = threading.Thread(target=lambda: stalled.append(
        create_one(c.bootstrap_servers, "during-the-stall", 1, timeout_s=75)), daemon=True)
    create.start()

    # the brokers keep serving produce and fetch on the existing partition
    acked = []
    for i in range(20):
        producer.produce("existing", value=b"during-%d" % i, on_delivery=lambda e, m: acked.append(e))
    assert producer.flush(30) == 0 and acked == [None] * 20
    consumer = Consumer({"bootstrap.servers": c.bootstrap_servers, "group.id": "unused",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition("existing", 0, 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 40 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted([b"before-%d" % i for i in range(20)] + [b"during-%d" % i for i in range(20)])
    create.join(90)
    error, = stalled
    assert isinstance(error, KafkaError) and error.code() == KafkaError.REQUEST_TIMED_OUT, error
    assert "active controller" in error.str(), error.str()

    # one controller back: the quorum elects, resumes, and nothing committed is lost
    c.restart(down[1])
    wait_until(lambda: c.controller in (survivor, down[1]), "a leader of the two", timeout=30)
    print(f"two of three down: {message}")
    assert create_one(c.bootstrap_servers, "after-the-stall") is None
    for name in ("existing", "after-the-stall"):
        wait_until(lambda: all(name in topics_on(c, b) for b in c.broker_ids), f"{name} on every broker")
    c.restart(down[0])      # the last one back too: every voter holds what was committed before the stall
    wait_until(lambda: voters_caught_up(c), "every voter to catch up")
    assert_logs_agree(c, hw_before)
    assert committed_prefix(voter_batches(c, survivor), hw_before) == batches_before
