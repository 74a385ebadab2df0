"""Transactions on a 3-broker mini cluster (#19): the transaction coordinator of a transactional id
is the leader of its ``__transaction_state`` partition (replicated, min ISR 2, as Kafka's
defaults); the markers go to each partition's leader with WriteTxnMarkers; the coordinator's broker
SIGKILLed mid-transaction: the new leader of the partition loads the state and aborts the open
transaction at its timeout, and a read_committed consumer sees every committed record once; and
SIGKILLed in PrepareCommit, while its markers are on their way: the new coordinator writes them and
completes the commit; and a consume-transform-produce copier losing the coordinator's broker, then
an output leader (and the group coordinator with it, at times): every record copied exactly once.
"""
from __future__ import annotations

import collections
import functools
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from tests.helpers import cluster_helpers
from tests.helpers import kafka_wire as wire
import kafkalab
from tests.helpers.cluster_helpers import leader_of, partition_row, restore_brokers
from kafkalab.broker.coordinator.group.offsets_topic import partition_for
from kafkalab.cluster.processes import pdeathsig_preexec
from tests.helpers.txn_helpers import read_committed

pytestmark = pytest.mark.cluster

WAIT_S = 45
LAB = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 3000,
       "transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
       "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S, interval=0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("txn-cluster")), **LAB) as c:
        yield c


@pytest.fixture(autouse=True)
def all_brokers_up(cluster):
    yield
    restore_brokers(cluster, timeout=WAIT_S)


def create_topic(cluster, prefix: str, partitions: int = 3) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 3)], operation_timeout=30)[name].result(60)
    return name


def producer(cluster, txn_id: str, timeout_ms: int = 60000) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                  "transaction.timeout.ms": timeout_ms, "linger.ms": 5})
    p.init_transactions(WAIT_S)
    return p


def coordinator_of(cluster, txn_id: str, not_on: int | None = None) -> int:
    """The coordinator a live broker names (FindCoordinator key type 1), once there is one."""
    def find():
        for b in cluster_helpers.broker_states(cluster):
            if b["alive"] != "running" or b["id"] == not_on:
                continue
            r = wire.call(f"127.0.0.1:{b['port']}", FindCoordinatorRequest(key=txn_id, key_type=1),
                          FindCoordinatorResponse, 1)
            if r.error_code == 0 and r.node_id != not_on:
                return (r.node_id,)
        return None
    return wait_until(find, f"a coordinator for {txn_id}")[0]


def test_commit_and_abort_with_the_coordinator_on_the_partition_leader(cluster):
    topic = create_topic(cluster, "txc")
    p = producer(cluster, "txc-basic")
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"committed-%d" % i, partition=i % 3)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"aborted-%d" % i, partition=i % 3)
    p.flush(WAIT_S)
    p.abort_transaction(WAIT_S)
    assert sorted(read_committed(cluster.bootstrap_servers, topic, expected=6)) == sorted(b"committed-%d" % i for i in range(6))

    # the coordinator is the leader of the id's __transaction_state partition; the others refuse
    coordinator = coordinator_of(cluster, "txc-basic")
    assert leader_of(cluster, "__transaction_state", partition_for("txc-basic", 3)) == coordinator
    assert all(len(partition_row(cluster, "__transaction_state", i)["replicas"]) == 3 for i in range(3))
    ports = {b["id"]: b["port"] for b in cluster_helpers.broker_states(cluster)}
    for broker_id, port in ports.items():
        r = wire.call(f"127.0.0.1:{port}", InitProducerIdRequest(
            transactional_id="txc-basic", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            InitProducerIdResponse, 4)
        if broker_id == coordinator:
            assert r.error_code == 0 and r.producer_epoch == 1     # this fences the producer above
        else:
            assert r.error_code == 16                              # NOT_COORDINATOR


def test_coordinator_sigkilled_mid_transaction(cluster):
    topic = create_topic(cluster, "txc-kill")
    txn_id = "txc-kill"
    p = producer(cluster, txn_id, timeout_ms=5000)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"before-%d" % i, partition=i % 3)
    p.commit_transaction(WAIT_S)
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"open-%d" % i, partition=i % 3)
    p.flush(WAIT_S)
    coordinator = coordinator_of(cluster, txn_id)
    cluster.kill(coordinator)                                      # SIGKILL, mid-transaction
    killed_at = time.monotonic()
    del p

    # a new leader of the __transaction_state partition loads the Ongoing transaction and aborts it at
    # its timeout: the read_committed consumer gets past it and sees the committed records once
    assert coordinator_of(cluster, txn_id, not_on=coordinator) != coordinator
    assert sorted(read_committed(cluster.bootstrap_servers, topic, expected=6)) == sorted(b"before-%d" % i for i in range(6))
    assert time.monotonic() - killed_at < WAIT_S

    again = producer(cluster, txn_id, timeout_ms=5000)             # the same id carries on
    again.begin_transaction()
    for i in range(6):
        again.produce(topic, b"after-%d" % i, partition=i % 3)
    again.commit_transaction(WAIT_S)
    got = read_committed(cluster.bootstrap_servers, topic, expected=12)
    assert sorted(got) == sorted([b"before-%d" % i for i in range(6)] + [b"after-%d" % i for i in range(6)])


def test_coordinator_sigkilled_while_its_markers_are_on_their_way(cluster):
    """EndTxn(commit): PrepareCommit is written (EndTxn is answered then, as Kafka's coordinator
    answers) and the COMMIT markers are on their way (one leader's answer held back 4 s by a lab
    fault) when the coordinator's broker is SIGKILLed. The broker that becomes the leader of the id's
    ``__transaction_state`` partition loads PrepareCommit, sends the markers again and completes the
    commit; the producer's ``commit_transaction()`` succeeds."""
    import threading

    from kafka.protocol.admin.transactions import DescribeTransactionsRequest, DescribeTransactionsResponse
    txn_id = "txc-prepared"
    p = producer(cluster, txn_id, timeout_ms=60000)
    coordinator = coordinator_of(cluster, txn_id)
    others = sorted(b["id"] for b in cluster_helpers.broker_states(cluster) if b["id"] != coordinator)
    topic = f"txc-prep-{uuid.uuid4().hex[:6]}"
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic as KNewTopic
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:   # partition 0 led by one of the other brokers, partition 1 by the last one
        admin.create_topics([KNewTopic(topic, -1, -1, replica_assignments={
            0: [others[0], others[1], coordinator], 1: [others[1], others[0], coordinator]})])
    finally:
        admin.close()
    wait_until(lambda: leader_of(cluster, topic, 0) == others[0] and leader_of(cluster, topic, 1) == others[1],
               f"{topic}'s leaders")
    p.begin_transaction()
    for i in range(6):
        p.produce(topic, b"v-%d" % i, partition=i % 2)
    p.flush(WAIT_S)
    cluster.inject_fault(others[0], "delay", api="WriteTxnMarkers", delay_ms=4000, count=1)
    outcome = {}

    def commit():
        try:
            p.commit_transaction(WAIT_S)
            outcome["result"] = "committed"
        except Exception as exc:   # reported below, with what the consumer saw  # noqa: BLE001
            outcome["result"] = exc
    committer = threading.Thread(target=commit)
    committer.start()
    port = {b["id"]: b["port"] for b in cluster_helpers.broker_states(cluster)}[coordinator]

    def state():
        r = wire.call(f"127.0.0.1:{port}", DescribeTransactionsRequest(transactional_ids=[txn_id]),
                      DescribeTransactionsResponse, 0)
        return r.transaction_states[0].transaction_state
    wait_until(lambda: state() == "PrepareCommit", "the transaction in PrepareCommit, its markers on their way")
    cluster.kill(coordinator)
    committer.join(WAIT_S + 15)
    assert not committer.is_alive()
    new = coordinator_of(cluster, txn_id, not_on=coordinator)
    assert sorted(read_committed(cluster.bootstrap_servers, topic, expected=6)) == sorted(b"v-%d" % i for i in range(6))
    assert outcome["result"] == "committed", outcome
    port = {b["id"]: b["port"] for b in cluster_helpers.broker_states(cluster)}[new]
    # written by the new coordinator once every marker is written (the consumer may see the records first)
    wait_until(lambda: state() == "CompleteCommit", "CompleteCommit written by the new coordinator")


class CopierProcess:
    """The owner's side of ``tests/helpers/txn_copier.py``: one copier process at a time for a transactional id,
    its ``copied N`` lines summed, and a liveness watchdog: a copier that commits nothing for ``stall_s``
    while input is left is SIGKILLed and replaced by a new process with the same transactional id
    (whose ``init_transactions`` fences the old one), as an operator or a liveness probe would."""

    SCRIPT = str(Path(__file__).resolve().parent.parent / "helpers" / "txn_copier.py")

    def __init__(self, args: list[str], stall_s: float = 20.0):
        self.args, self.stall_s = args, stall_s
        self.copied: list[int] = []
        self.restarts: list[str] = []       # the copier's own start-overs after a KafkaException
        self.kills: list[str] = []          # the watchdog's SIGKILLs of a stalled copier
        self.exits: list[str] = []          # copiers that ended by themselves (they never should)
        self.other_output: collections.deque[str] = collections.deque(maxlen=10)   # e.g. a traceback's tail
        self.processes: list[subprocess.Popen] = []
        self.readers: list[threading.Thread] = []
        self.last_progress = time.monotonic()
        self._spawn()

    def _spawn(self) -> None:
        # the copier ends when its stdin closes (the test is done, or died); PDEATHSIG as well from the main thread
        proc = subprocess.Popen([sys.executable, self.SCRIPT, *self.args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0,
                                preexec_fn=pdeathsig_preexec())
        self.processes.append(proc)
        self.last_progress = time.monotonic()
        self.readers.append(threading.Thread(target=self._read, args=(proc,), daemon=True))
        self.readers[-1].start()

    def _read(self, proc: subprocess.Popen) -> None:
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if line.startswith("copied "):
                self.copied.append(int(line.split()[1]))
                self.last_progress = time.monotonic()
            elif line.startswith("restart: "):
                self.restarts.append(line[len("restart: "):])
            elif line and not line.startswith("%"):    # (librdkafka's own log lines start with %)
                self.other_output.append(line)

    def total(self) -> int:
        return sum(self.copied)

    def tend(self, done) -> None:
        """Replace the copier if it is stalled and ``done()`` (every input offset committed) is not true."""
        old = self.processes[-1]
        if old.poll() is not None:
            self.exits.append(f"pid {old.pid} exited with {old.returncode}")
            self._spawn()
            return
        stalled_s = time.monotonic() - self.last_progress
        if stalled_s < self.stall_s or done():
            return
        old.kill()
        old.wait(10)
        self.kills.append(f"pid {old.pid} after {stalled_s:.0f}s without a commit, {self.total()} copied")
        self._spawn()

    def stop(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
        for reader in self.readers:
            reader.join(10)
        for proc in self.processes:
            for f in (proc.stdin, proc.stdout):
                f.close()

    def report(self) -> str:
        return (f"{self.total()} copied in {len(self.copied)} transactions; {len(self.kills)} stalled copier(s) "
                f"SIGKILLed and replaced: {self.kills}; copier restarts: {self.restarts}" +
                (f"; copiers that exited: {self.exits}, their last output: {list(self.other_output)}"
                 if self.exits else ""))


def test_copier_exactly_once_while_brokers_are_sigkilled(cluster):
    """Kafka's transactions_test.py in small: a copier (read_committed consumer, transactional producer,
    ``send_offsets_to_transaction``) copies 300 records while the transaction coordinator's broker and
    then an output partition's leader are SIGKILLed and restarted; a copier that fails aborts, starts
    over from the committed offsets (a new instance, fencing the old). The output holds every input
    record exactly once.

    As in Kafka's system test (whose ``TransactionalMessageCopier`` processes it also SIGKILLs on
    purpose), the copier is a separate process (``tests/helpers/txn_copier.py``); here it is watched for
    progress: one that commits nothing for 20 s is SIGKILLed and replaced by a new process with the same
    transactional id. That is needed for librdkafka (2.16), not for the broker: after the group
    coordinator's broker is SIGKILLed, librdkafka may keep the dead broker as the group coordinator and
    ``send_offsets_to_transaction`` then never sends TxnOffsetCommit, nor returns at its timeout, until
    that broker comes back (librdkafka issues #5511, "rd_kafka_send_offsets_to_transaction() hangs when
    the group coordinator is decommissioned", and #5456, its timeout never checked). The hang is the
    client's, whichever broker it talks to; the test restarts a killed broker only once the copier made
    progress, so a hung copier in the test's own process would wait forever. The kill and replacement are a fault
    exactly-once must survive too; their count is in the assertion messages."""
    src, dst = create_topic(cluster, "copy-in", 2), create_topic(cluster, "copy-out", 2)
    n = 300
    plain = Producer({"bootstrap.servers": cluster.bootstrap_servers, "enable.idempotence": True})
    for i in range(n):
        plain.produce(src, b"rec-%03d" % i, partition=i % 2)
    assert plain.flush(WAIT_S) == 0
    txn_id, group = "copier", f"copier-{uuid.uuid4().hex[:6]}"

    def caught_up():
        c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
        try:
            committed = c.committed([TopicPartition(src, p) for p in (0, 1)], timeout=10)
            return sum(max(tp.offset, 0) for tp in committed) == n
        except KafkaException:
            return False
        finally:
            c.close()

    copier = CopierProcess([cluster.bootstrap_servers, src, dst, group, txn_id])

    def copied_at_least(k: int):
        def check():
            copier.tend(caught_up)
            return copier.total() >= k
        return check
    try:
        wait_until(copied_at_least(40), "the copier under way")
        coordinator = coordinator_of(cluster, txn_id)
        cluster.kill(coordinator)                                    # the transaction coordinator
        wait_until(copied_at_least(120), "the copier going on after the coordinator died")
        cluster.restart(coordinator)
        victim = leader_of(cluster, dst, 0)
        cluster.kill(victim)                                         # an output partition's leader
        wait_until(copied_at_least(200), "the copier going on after a leader died")
        cluster.restart(victim)

        def all_committed():
            copier.tend(caught_up)
            return caught_up()
        wait_until(all_committed, "every input record's offset committed", timeout=90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; {copier.report()}") from None
    finally:
        copier.stop()
    print(copier.report())                                        # shown with pytest -rP
    got = read_committed(cluster.bootstrap_servers, dst, expected=n)
    assert len(got) == n and sorted(got) == sorted(b"rec-%03d" % i for i in range(n)), (len(got), copier.report())
