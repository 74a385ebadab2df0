"""The ZooKeeper-mode controller on real clusters (real ZooKeeper, real broker processes).

* a controlled shutdown does not wait for partitions with a single replica (Kafka's
  ``doControlledShutdown`` neither moves nor reports them);
* the automatic preferred-leader rebalance (``auto.leader.rebalance.enable``);
* ElectLeaders (PREFERRED) through confluent-kafka's and kafka-python's admin clients;
* the controller's own ZooKeeper session expires: another broker takes over with a higher
  controller epoch, and the old one, resumed, resigns without writing anything with its old epoch.

One 3-broker cluster is shared by the tests (the ``all_brokers_up`` fixture restarts or resumes
what a test broke). The ElectLeaders test uses a second, 2-broker cluster without the automatic
rebalance, which would otherwise race with the election the test asks for.
"""
from __future__ import annotations

import functools
import os
import re
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from tests.helpers.cluster_helpers import broker_states, restore_brokers
from kafkalab.broker.zk import zk_data

pytestmark = pytest.mark.cluster

WAIT_S = 30
SESSION_MS = 4000
LAB = {"zookeeper.session.timeout.ms": SESSION_MS, "replica.lag.time.max.ms": 3000,
       "leader.imbalance.check.interval.seconds": 5}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path_factory.mktemp("ctrl-cluster")), **LAB) as c:
        yield c


@pytest.fixture
def all_brokers_up(cluster):
    yield
    restore_brokers(cluster, timeout=WAIT_S)


# -- helpers -------------------------------------------------------------------------

wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S, interval=0.1)


def state(cluster, topic: str, partition: int) -> zk_data.LeaderIsrAndControllerEpoch:
    data, stat = cluster.zk.get(zk_data.partition_state_path(topic, partition))
    return zk_data.decode_partition_state(data, stat.version)


def leader_of(cluster, topic: str, partition: int) -> int:
    return state(cluster, topic, partition).leader


def isr_of(cluster, topic: str, partition: int) -> list[int]:
    return sorted(state(cluster, topic, partition).isr)


def controller_epoch(cluster) -> int:
    data, _ = cluster.zk.get(zk_data.CONTROLLER_EPOCH)
    return zk_data.decode_controller_epoch(data)


def create_topic(cluster, prefix: str, assignment: list[list[int]], **configs) -> str:
    """A topic with an explicit replica assignment (partition p -> assignment[p]); waits for full ISRs."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, len(assignment), replica_assignment=assignment,
                                  config={k: str(v) for k, v in configs.items()})],
                        operation_timeout=30)[name].result(60)
    wait_until(lambda: all(isr_of(cluster, name, p) == sorted(r) for p, r in enumerate(assignment)),
               f"{name}: every partition with a full ISR")
    return name


def produce(cluster, topic: str, partitions: int, n: int = 20) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    for i in range(n):
        p.produce(topic, value=b"%04d" % i, partition=i % partitions)
    assert p.flush(30) == 0


def broker_log(cluster, broker_id: int) -> str:
    path = next(b["log"] for b in broker_states(cluster) if b["id"] == broker_id)
    with open(path, errors="replace") as f:
        return f.read()


# -- ControlledShutdown ---------------------------------------------------------------------

def test_controlled_shutdown_does_not_wait_for_single_replica_partitions(cluster, all_brokers_up):
    """A broker alone in a partition's replicas cannot hand that leadership over: the controller does not
    count such partitions as remaining, so the broker's first ControlledShutdown succeeds (it used to retry
    ``controlled.shutdown.max.retries`` times, 5 s apart, and then shut down uncleanly)."""
    target = next(b for b in cluster.broker_ids if b != cluster.controller)
    others = [b for b in cluster.broker_ids if b != target]
    single = create_topic(cluster, "rf1", [[target], [target]])
    replicated = create_topic(cluster, "rf3", [[target] + others])
    assert leader_of(cluster, single, 0) == target and leader_of(cluster, replicated, 0) == target
    log_size = os.path.getsize(next(b["log"] for b in broker_states(cluster) if b["id"] == target))

    started = time.monotonic()
    cluster.stop(target)
    elapsed = time.monotonic() - started

    log = broker_log(cluster, target)[log_size:]
    assert "controlled shutdown succeeded" in log, log[-3000:]
    assert "partitions remaining to move" not in log
    assert "retrying controlled shutdown" not in log
    assert elapsed < 4.0, f"stopping took {elapsed:.1f} s"
    # the replicated partition moved; the single-replica ones are offline until the broker is back
    assert leader_of(cluster, replicated, 0) in others
    assert target not in isr_of(cluster, replicated, 0)
    wait_until(lambda: leader_of(cluster, single, 0) == -1, "the single-replica partition offline")
    assert isr_of(cluster, single, 0) == [target]


def test_controlled_shutdown_of_a_single_broker_cluster_is_immediate(tmp_path):
    with kafkalab.cluster(brokers=1, dir=str(tmp_path / "single"), **LAB) as single:
        create_topic(single, "solo", [[1], [1], [1]])
        started = time.monotonic()
        single.stop(1)
        elapsed = time.monotonic() - started
        log = broker_log(single, 1)
        assert "controlled shutdown succeeded" in log, log[-3000:]
        assert "retrying controlled shutdown" not in log
        assert elapsed < 4.0, f"stopping took {elapsed:.1f} s"


# -- the automatic preferred-leader rebalance -------------------------------------------------------

def test_auto_leader_rebalance_moves_leadership_back_to_the_preferred_replica(cluster, all_brokers_up):
    """Kill the preferred leader (SIGKILL): the controller elects another ISR member once the broker's session
    expires. Restart it: it catches up and rejoins the ISR, and the controller's periodic imbalance check
    (every ``leader.imbalance.check.interval.seconds``) makes it the leader again, with no admin action."""
    preferred = next(b for b in cluster.broker_ids if b != cluster.controller)
    others = [b for b in cluster.broker_ids if b != preferred]
    topic = create_topic(cluster, "rebalance", [[preferred] + others, [preferred] + others[::-1]])
    produce(cluster, topic, 2)
    epochs = [state(cluster, topic, p).leader_epoch for p in (0, 1)]

    cluster.kill(preferred)
    wait_until(lambda: all(leader_of(cluster, topic, p) in others for p in (0, 1)),
               "new leaders from the ISR", timeout=SESSION_MS / 1000 + 10)
    cluster.restart(preferred)
    wait_until(lambda: all(preferred in isr_of(cluster, topic, p) for p in (0, 1)),
               f"broker {preferred} back in the ISRs")
    # the check runs every 5 s: leadership is back within two rounds
    wait_until(lambda: all(leader_of(cluster, topic, p) == preferred for p in (0, 1)),
               f"broker {preferred} leading again (auto leader rebalance)", timeout=12)
    for p in (0, 1):
        s = state(cluster, topic, p)
        assert s.leader_epoch == epochs[p] + 2        # one election away, one back
        assert sorted(s.isr) == sorted([preferred] + others)
    produce(cluster, topic, 2)     # the new leaders serve


# -- the controller's own session expires -------------------------------------------------------------

def test_controller_session_expiry_new_controller_and_old_one_resigns(cluster, all_brokers_up):
    """SIGSTOP the controller past ``zookeeper.session.timeout.ms``: its session expires, another broker
    becomes controller with a higher epoch and moves the frozen broker's leaderships. SIGCONT: the old
    controller still believes it leads (and, as a partition leader, tries to shrink ISRs through itself);
    it must resign, and nothing may be written to ZooKeeper with its old epoch."""
    old = cluster.controller
    others = [b for b in cluster.broker_ids if b != old]
    topic = create_topic(cluster, "expiry", [[old] + others, [old] + others[::-1], others + [old]])
    produce(cluster, topic, 3)
    old_epoch = controller_epoch(cluster)
    log_path = next(b["log"] for b in broker_states(cluster) if b["id"] == old)
    log_size = os.path.getsize(log_path)

    # every version of the partition states (and the controller epoch) ZooKeeper sees from now on
    seen: list[tuple[int, int, int]] = []   # (mzxid, partition, controller_epoch)
    watches = []
    for p in range(3):
        def on_change(data, stat, p=p):
            if data is not None:
                seen.append((stat.mzxid, p, zk_data.decode_partition_state(data, stat.version).controller_epoch))
        watches.append(cluster.zk.DataWatch(zk_data.partition_state_path(topic, p), on_change))

    cluster.pause(old)
    new = wait_until(lambda: cluster.controller not in (None, old) and cluster.controller,
                     "another broker to become controller", timeout=SESSION_MS / 1000 + 10)
    new_epoch = controller_epoch(cluster)
    assert new in others and new_epoch > old_epoch
    _, epoch_stat = cluster.zk.get(zk_data.CONTROLLER_EPOCH)
    takeover_zxid = epoch_stat.mzxid
    wait_until(lambda: all(leader_of(cluster, topic, p) in others for p in range(3)),
               "the new controller to move the frozen broker's leaderships")

    cluster.resume(old)
    wait_until(lambda: re.search(rf"controller {old}: .*resigning", open(log_path, errors="replace").read()[log_size:]),
               f"broker {old} to log its resignation")
    wait_until(lambda: str(old) in cluster.zk.get_children(zk_data.BROKER_IDS), f"broker {old} registered again")
    wait_until(lambda: all(old in isr_of(cluster, topic, p) for p in range(3)),
               f"broker {old} back in the ISRs (a follower of the new leaders)")
    produce(cluster, topic, 3)

    assert cluster.controller == new
    assert controller_epoch(cluster) == new_epoch
    log = open(log_path, errors="replace").read()[log_size:]
    assert f"broker {old}: became the controller" not in log
    # events it still had (watches fired while it was frozen) fail for want of its session: one line each
    assert "ERROR kafkalab.broker.zk_controller" not in log, log
    # no state written after the takeover carries the old epoch: neither what the watches saw ...
    stale = [(zxid, p, e) for zxid, p, e in seen if zxid > takeover_zxid and e < new_epoch]
    assert not stale, f"partition states written with the old controller epoch {old_epoch}: {stale}"
    assert any(zxid > takeover_zxid for zxid, _, _ in seen), "the new controller wrote no state?"
    # ... nor what is there now
    for p in range(3):
        _, stat = cluster.zk.get(zk_data.partition_state_path(topic, p))
        if stat.mzxid > takeover_zxid:
            assert state(cluster, topic, p).controller_epoch >= new_epoch


# -- ElectLeaders through the admin clients ---------------------------------------------------------

@pytest.fixture(scope="module")
def cluster_without_rebalance(tmp_path_factory):
    configs = dict(LAB, **{"auto.leader.rebalance.enable": "false"})
    with kafkalab.cluster(brokers=2, dir=str(tmp_path_factory.mktemp("ctrl-elect")), **configs) as c:
        yield c


def test_elect_leaders_preferred_through_admin_clients(cluster_without_rebalance):
    """Stop the preferred leader (leadership moves to the other replica), start it again: without the
    automatic rebalance it stays a follower until an admin asks for a PREFERRED election: partition 0
    through confluent-kafka, partition 1 through kafka-python."""
    from confluent_kafka import ElectionType, KafkaError, KafkaException
    from confluent_kafka import TopicPartition as CTopicPartition
    from kafka.admin import KafkaAdminClient

    c = cluster_without_rebalance
    preferred, other = c.broker_ids
    topic = create_topic(c, "elect", [[preferred, other], [preferred, other]])
    c.stop(preferred)
    assert all(leader_of(c, topic, p) == other for p in (0, 1))
    c.restart(preferred)
    wait_until(lambda: all(isr_of(c, topic, p) == sorted([preferred, other]) for p in (0, 1)),
               f"broker {preferred} back in the ISRs")
    time.sleep(1.0)
    assert all(leader_of(c, topic, p) == other for p in (0, 1)), "leadership moved back by itself"

    admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
    results = admin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition(topic, 0)]).result(30)
    assert list(results.values()) == [None], results
    assert leader_of(c, topic, 0) == preferred and leader_of(c, topic, 1) == other
    # asked again: nothing to do
    try:
        again = admin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition(topic, 0)]).result(30)
        codes = [e.code() if e is not None else None for e in again.values()]
    except KafkaException as exc:
        codes = [exc.args[0].code()]
    assert codes == [KafkaError.ELECTION_NOT_NEEDED]

    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap_servers, request_timeout_ms=30000)
    try:
        kp.elect_leaders(0, {topic: [1]})
    finally:
        kp.close()
    assert leader_of(c, topic, 1) == preferred
    for p in (0, 1):
        s = state(c, topic, p)
        assert s.leader_epoch == 2 and sorted(s.isr) == sorted([preferred, other])
    produce(c, topic, 2)


def test_a_topic_is_shown_by_update_metadata_not_by_an_earlier_leader_and_isr(cluster, all_brokers_up):
    """A broker's LeaderAndIsr for its own replicas of a new topic can come before the UpdateMetadata that brings
    the whole topic. Kafka's metadata cache is filled by UpdateMetadata only: until then Metadata does not know
    the topic, rather than showing it with the partitions up to this broker's highest one (a producer that saw 4
    of 6 partitions failed its records for partitions 4 and 5 with UNKNOWN_PARTITION). Here the LeaderAndIsr is
    sent by hand, for partition 3 of a topic no UpdateMetadata will ever bring."""
    from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

    from kafkalab.broker.common.message.codec import build
    from kafkalab.broker.common.message.zk_messages import (LEADER_AND_ISR_VERSION, LeaderAndIsrRequest,
                                                            LeaderAndIsrResponse)
    from tests.helpers import kafka_wire as wire

    broker_id = cluster.broker_ids[0]
    address = cluster.bootstrap_servers.split(",")[0]
    topic = f"ghost-{uuid.uuid4().hex[:6]}"
    request = build(LeaderAndIsrRequest, LEADER_AND_ISR_VERSION, dict(
        controller_id=cluster.controller, is_kraft_controller=False, controller_epoch=controller_epoch(cluster),
        broker_epoch=-1, request_type=0, live_leaders=[dict(broker_id=broker_id, host_name=address.split(":")[0],
                                                            port=int(address.split(":")[1]))],
        topic_states=[dict(topic_name=topic, topic_id=uuid.uuid4(), partition_states=[dict(
            partition_index=3, controller_epoch=controller_epoch(cluster), leader=broker_id, leader_epoch=0,
            isr=[broker_id], partition_epoch=0, replicas=[broker_id], adding_replicas=[], removing_replicas=[],
            is_new=True, leader_recovery_state=0)])]))
    answer = wire.call(address, request, LeaderAndIsrResponse, LEADER_AND_ISR_VERSION)
    assert answer.error_code == 0 and answer.topics[0].partition_errors[0].error_code == 0, answer

    named = wire.call(address, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                               allow_auto_topic_creation=False), MetadataResponse, 9)
    [entry] = named.topics
    assert (entry.name, entry.error_code, entry.partitions) == (topic, 3, []), entry   # UNKNOWN_TOPIC_OR_PARTITION
    every = wire.call(address, MetadataRequest(topics=None, allow_auto_topic_creation=False), MetadataResponse, 9)
    assert topic not in [t.name for t in every.topics]
