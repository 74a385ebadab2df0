"""Lab faults across the processes of a cluster, through each broker's control socket."""
from __future__ import annotations

import functools
import os
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab

pytestmark = pytest.mark.cluster

LAB = {"zookeeper.session.timeout.ms": 4000, "replica.lag.time.max.ms": 1500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with kafkalab.cluster(brokers=2, dir=str(tmp_path_factory.mktemp("faults")), **LAB) as c:
        yield c


@pytest.fixture(autouse=True)
def no_faults_left(cluster):
    yield
    cluster.clear_faults()


# an exception raised while polling fails the test at once (retry_on=())
wait_until = functools.partial(cluster_helpers.wait_until, timeout=20, retry_on=())


def new_topic(cluster) -> str:
    name = f"cf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(name, 1, 2)])[name].result(15)
    wait_until(lambda: len(row(cluster, name)["isr"]) == 2, "both replicas in sync")
    return name


def row(cluster, topic) -> dict:
    rows = cluster.describe(topic)
    return (rows.to_dict("records") if hasattr(rows, "to_dict") else rows)[0]


def produce(cluster, topic, n, **conf):
    errors = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0, **conf})
    for i in range(n):
        p.produce(topic, f"v{i}".encode(), on_delivery=lambda e, m: errors.append(e))
    p.flush(30)
    return errors


def test_paused_follower_leaves_the_isr_and_returns(cluster):
    topic = new_topic(cluster)
    r = row(cluster, topic)
    follower = next(b for b in r["replicas"] if b != r["leader"])
    fault = cluster.inject_fault(follower, "pause_replication", duration_s=30, topic=topic)
    assert [(f["broker"], f["kind"]) for f in cluster.faults()] == [(follower, "pause_replication")]
    assert produce(cluster, topic, 5, acks=1) == [None] * 5
    wait_until(lambda: row(cluster, topic)["isr"] == [r["leader"]], "the follower to leave the ISR")
    assert row(cluster, topic)[f"leo_{follower}"] == 0       # it really stopped copying
    assert cluster.clear_faults(follower, fault["id"]) == 1 and cluster.faults() == []
    wait_until(lambda: sorted(row(cluster, topic)["isr"]) == sorted(r["replicas"]), "the follower back in the ISR")
    assert row(cluster, topic)[f"leo_{follower}"] == 5


def test_pause_ends_by_itself(cluster):
    topic = new_topic(cluster)
    r = row(cluster, topic)
    follower = next(b for b in r["replicas"] if b != r["leader"])
    cluster.inject_fault(follower, "pause_replication", duration_s=4.0)
    produce(cluster, topic, 3)
    assert row(cluster, topic)[f"leo_{follower}"] == 0
    wait_until(lambda: row(cluster, topic)[f"leo_{follower}"] == 3, "replication to resume")
    assert cluster.faults() == []


def test_failed_requests_on_the_leader_process(cluster):
    topic = new_topic(cluster)
    leader = row(cluster, topic)["leader"]
    cluster.inject_fault(leader, "fail", api="Produce", error="NOT_ENOUGH_REPLICAS", count=2, topic=topic)
    assert cluster.faults()[0]["remaining"] == 2
    assert produce(cluster, topic, 1, **{"enable.idempotence": False, "retry.backoff.ms": 20}) == [None]
    assert row(cluster, topic)["high_watermark"] == 1 and cluster.faults() == []


def test_bad_fault_is_refused_with_the_reason(cluster):
    with pytest.raises(ValueError, match="unknown fault kind"):
        cluster.inject_fault(1, "explode")
    with pytest.raises(KeyError):
        cluster.inject_fault(99, "fail", api="Produce")


def test_a_killed_brokers_control_socket_does_not_outlive_its_cluster(tmp_path):
    # A log dir path too long for a Unix socket puts the control socket in the temporary directory, where
    # a killed broker would leave it for good: close() removes it.
    from kafkalab.broker.server.faults import control_socket_path
    deep = tmp_path / ("a-directory-name-long-enough-to-push-the-socket-path-out-" + "x" * 40)
    with kafkalab.cluster(brokers=1, dir=str(deep), **LAB) as c:
        socket_path = control_socket_path(c._broker(1).log_dir)
        assert not socket_path.startswith(str(deep))
        wait_until(lambda: os.path.exists(socket_path), "the broker's control socket")
        c.kill(1)
        assert os.path.exists(socket_path)            # a SIGKILL leaves it behind ...
    assert not os.path.exists(socket_path)            # ... and the cluster's close() removes it
