"""``kafkalab.cluster(brokers=3, mode="kraft")`` on the mini backend: three Python controllers
(``python -m kafkalab.controller``) and three mini brokers in KRaft mode (``python -m kafkalab.kraft``), no
ZooKeeper.

confluent-kafka creates a topic (RF 3) through a broker (forwarded to the active controller) and produces with
acks=all (idempotent); the leader broker of a partition is SIGKILLed; the active controller fences it after
``broker.session.timeout.ms`` (3 s, the lab default) and moves its leaderships with PartitionChangeRecords; every
acked record is still read. Then the active controller is SIGKILLed, a broker is stopped (controlled shutdown)
and restarted, and ``Cluster.quorum()`` shows the three voters and the brokers as observers. Deadlines here are
generous bounds for something to happen, not measurements.
"""
from __future__ import annotations

import functools
import glob
import io
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.tools import dump_log

pytestmark = pytest.mark.cluster


# a wait that fails at the first exception (the predicates here must not raise)
wait_until = functools.partial(cluster_helpers.wait_until, retry_on=())


def partitions(c, topic: str) -> dict[int, dict]:
    return {p["partition"]: p for p in c.metadata([topic])["topics"][topic]["partitions"]}


def read_all(bootstrap: str, topic: str, n_partitions: int, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(n_partitions)])   # no group coordinator needed
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        consumer.close()


def test_mini_kraft_cluster_keeps_every_acked_record_when_a_leader_broker_is_killed(tmp_path):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "kraft")) as c:
        nodes = c.nodes.set_index("id")
        assert sorted(c.controller_ids) == [3001, 3002, 3003] and c.broker_ids == [1, 2, 3]
        assert set(nodes.loc[[1, 2, 3], "quorum"]) == {"Observer"}
        assert not nodes.loc[[1, 2, 3], "fenced"].any() and nodes.loc[[1, 2, 3], "registered"].all()
        quorum = c.quorum()
        assert sorted(quorum["status"]) == ["Follower", "Follower", "Leader", "Observer", "Observer", "Observer"]

        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic("orders", 3, 3)])["orders"].result(20)
        wait_until(lambda: len(partitions(c, "orders")) == 3 and all(
            p["leader"] >= 0 and len(p["isr"]) == 3 for p in partitions(c, "orders").values()), "leaders and full ISRs")

        # idempotent: retries after the leader change write no duplicates (its producer id comes from a block the
        # broker got from the active controller: AllocateProducerIds)
        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 5,
                             "enable.idempotence": True})
        acked: list[bytes] = []

        def on_delivery(err, msg):
            if err is None:
                acked.append(msg.value())

        for i in range(300):
            producer.produce("orders", key=str(i).encode(), value=f"before-{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(30) == 0 and len(acked) == 300

        # -- the leader of partition 0 SIGKILLed: fenced after broker.session.timeout.ms, leadership moved
        victim = partitions(c, "orders")[0]["leader"]
        killed_at = time.monotonic()
        c.kill(victim)
        wait_until(lambda: all(p["leader"] not in (victim, -1) and victim not in p["isr"]
                               for p in partitions(c, "orders").values()), "the victim's leaderships to move")
        moved_after = time.monotonic() - killed_at
        assert moved_after >= 2.5   # not before the 3 s session timeout (a generous floor: the kill is seen late)
        for i in range(100):
            producer.produce("orders", key=str(i).encode(), value=f"after-{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(30) == 0 and len(acked) == 400

        got = read_all(c.bootstrap_servers, "orders", 3, len(acked))
        assert sorted(got) == sorted(acked)

        # -- the records that did it, in the active controller's log
        controller = c.controller
        segment = sorted(glob.glob(f"{c.metadata_log_dir(controller)}/*.log"))[0]
        out = io.StringIO()
        dump_log(segment, cluster_metadata_decoder=True, file=out, err=io.StringIO())
        text = out.getvalue()
        assert '"type":"TOPIC_RECORD","version":0,"data":{"name":"orders"' in text
        assert f'"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{{"brokerId":{victim}' in text
        assert '"type":"PARTITION_CHANGE_RECORD"' in text and '"fenced":1' in text

        # -- the active controller SIGKILLed: another takes over, and still serves the brokers; a topic is deleted
        # (a new admin client: the first one may still hold the killed broker as the cluster's "controller" from an
        # old Metadata answer, and librdkafka waits for that broker to come back before it sends CreateTopics)
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        c.kill(controller)
        wait_until(lambda: c.controller not in (None, controller), "a new active controller")
        admin.create_topics([NewTopic("after-failover", 1, 2)])["after-failover"].result(20)
        wait_until(lambda: partitions(c, "after-failover").get(0, {}).get("leader", -1) >= 0, "the new topic's leader")
        # DeleteTopics, forwarded: RemoveTopicRecord; every broker drops the topic and deletes its replicas' logs
        replicas = partitions(c, "after-failover")[0]["replicas"]
        admin.delete_topics(["after-failover"])["after-failover"].result(20)
        wait_until(lambda: "after-failover" not in c.metadata()["topics"], "the topic to be gone")
        wait_until(lambda: not any(glob.glob(f"{c.dir}/node-{b}/after-failover-0") for b in replicas),
                   "the deleted topic's logs to be removed")

        # -- a broker stopped (controlled shutdown) and restarted: registered and unfenced again
        other = next(b for b in c.broker_ids if b != victim)
        c.stop(other)
        c.restart(other)
        c.restart(victim)
        brokers = c.brokers.set_index("id")
        assert brokers.loc[[1, 2, 3], "registered"].all() and not brokers.loc[[1, 2, 3], "fenced"].any()
        # the restarted replicas catch up and the leaders take them back into the ISRs (AlterPartition)
        wait_until(lambda: all(len(p["isr"]) == 3 for p in partitions(c, "orders").values()), "full ISRs again", 30)


def test_kafkalab_up_mode_kraft_runs_the_mini_kraft_cluster(tmp_path):
    """``kafkalab up --mode kraft`` (no --backend kafka): the mini controllers and brokers, status, kill, down."""
    import subprocess
    import sys

    import os
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALAB_CLUSTER_DIR", "KAFKALAB_BOOTSTRAP_SERVERS")}

    def kafkalab_cli(*args):
        return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                              timeout=120, env=env)

    directory = str(tmp_path / "up")
    up = kafkalab_cli("up", "--mode", "kraft", "--dir", directory)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = kafkalab_cli("status", "--dir", directory)
        assert status.returncode == 0 and "3 controller(s) in KRaft mode" in status.stdout, status.stdout
        lines = {line.split()[0]: line for line in status.stdout.splitlines() if line[:1].isdigit()}
        assert {"1", "2", "3", "3001", "3002", "3003"} <= set(lines) and "yes" in lines["2"]
        assert kafkalab_cli("kill", "2", "--dir", directory).returncode == 0
        after = kafkalab_cli("status", "--dir", directory)
        assert "killed" in next(line for line in after.stdout.splitlines() if line.startswith("2 "))
    finally:
        down = kafkalab_cli("down", "--dir", directory, "--delete")
    assert down.returncode == 0, down.stdout + down.stderr
