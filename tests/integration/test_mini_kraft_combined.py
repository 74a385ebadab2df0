"""``kafkalab.cluster(brokers=3, mode="kraft", combined=True)`` on the mini backend: three combined nodes
(``process.roles=broker,controller``, :class:`~kafkalab.kraft.kafka_raft_server.KafkaRaftServer`), each a voter
of the Raft quorum running the QuorumController and a KRaft broker, no ZooKeeper.

The node that is the active controller AND the leader of a partition is SIGKILLed while an idempotent acks=all
producer writes: the two others elect a new controller, which fences the dead broker after
``broker.session.timeout.ms`` and moves its leaderships; every acked record is read back. Restarted, the node
is a voter (Follower) and an unfenced broker again, back in the ISRs. After ``close()`` no process is left.
``kafkalab up --mode kraft --combined``: status, attach, pause/resume, the watchdog. What DescribeQuorum and
DescribeCluster answer is checked by the same functions against Apache Kafka 4.4's combined nodes (the oracle).
Deadlines are generous bounds for something to happen, not measurements.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.cluster.quorum import describe_cluster
from test_mini_kraft_cluster import partitions, read_all, wait_until

pytestmark = pytest.mark.cluster


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _describe_cluster_of_controller(host: str, port: int) -> dict:
    """DescribeCluster v1 with endpoint type 2 (KIP-919: ``kafka-metadata-quorum --bootstrap-controller``)."""
    from kafka.protocol.admin import DescribeClusterRequest

    from kafkalab.cluster.kafka_requests import kafka_request
    r = kafka_request(host, port, DescribeClusterRequest, 1, {"include_cluster_authorized_operations": False,
                                                               "endpoint_type": 2}, 2.0)
    return {"error": r.error_code, "controller_id": r.controller_id,
            "controllers": {b.broker_id: b.port for b in r.brokers}}


def check_combined_answers(c) -> None:
    """What a healthy combined cluster answers, the same from Kafka 4.4 and from the mini nodes (compared by running
    both): DescribeQuorum lists the N nodes as voters, each with its CONTROLLER listener, and no observers (a combined
    node's broker reads its own voter's log); every controller answers DescribeCluster (controller endpoint) with the
    N controllers at their CONTROLLER ports and the Raft leader as controller id; DescribeCluster to a broker lists
    the N brokers at their PLAINTEXT ports, none fenced."""
    answer = c._quorum_answer()
    leader, voters = answer["leader_id"], c.voters
    assert sorted(v["node_id"] for v in answer["voters"]) == c.broker_ids and answer["observers"] == []
    assert {n: [(name, port) for name, _, port in listeners] for n, listeners in answer["nodes"].items()} == \
        {n: [("CONTROLLER", port)] for n, (_, port) in voters.items()}
    for n, (host, port) in voters.items():
        assert _describe_cluster_of_controller(host, port) == {
            "error": 0, "controller_id": leader, "controllers": {i: p for i, (_, p) in voters.items()}}
    for b in c.broker_ids:
        node = c._broker(b)
        assert describe_cluster(node.host, node.port)["brokers"] == {
            i: {"host": c._broker(i).host, "port": c._broker(i).port, "fenced": False} for i in c.broker_ids}


def check_a_dead_node_is_listed_fenced(c, dead: int) -> None:
    """After the active controller is SIGKILLed (and fenced by the next one): DescribeCluster v2 with fenced brokers
    lists it fenced, DescribeQuorum still lists it among the voters; as Kafka 4.4 answers."""
    survivor = c._broker(next(b for b in c.broker_ids if b != dead))
    assert {b: r["fenced"] for b, r in describe_cluster(survivor.host, survivor.port)["brokers"].items()} == \
        {b: b == dead for b in c.broker_ids}
    answer = c._quorum_answer()
    assert sorted(v["node_id"] for v in answer["voters"]) == c.broker_ids and answer["observers"] == []


def test_combined_mini_kraft_cluster_survives_losing_the_active_controller_that_leads_a_partition(tmp_path):
    with kafkalab.cluster(brokers=3, mode="kraft", combined=True, dir=str(tmp_path / "combined")) as c:
        pids = [c._res.watchdog.pid] + [int(p) for p in c.nodes["pid"]]
        nodes = c.nodes.set_index("id")
        # three processes, each broker and voter (ids 1..3); no separate controllers, so no observers
        assert c.broker_ids == [1, 2, 3] and c.controller_ids == [1, 2, 3] and len(pids) == 4
        assert set(nodes["roles"]) == {"broker,controller"} and nodes["registered"].all() and not nodes["fenced"].any()
        quorum = c.quorum()
        assert sorted(quorum["status"]) == ["Follower", "Follower", "Leader"] and sorted(quorum["node_id"]) == [1, 2, 3]
        # each node listens twice: PLAINTEXT (clients) and CONTROLLER (its controller.quorum.voters address)
        assert all(nodes.loc[i, "port"] != c.voters[i][1] for i in (1, 2, 3))
        check_combined_answers(c)

        # partition 0's leader (first replica) is the active controller
        controller = c.controller
        others = [b for b in c.broker_ids if b != controller]
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        assignment = [[controller, *others], [others[0], others[1], controller], [others[1], controller, others[0]]]
        admin.create_topics([NewTopic("orders", 3, replica_assignment=assignment)])["orders"].result(20)
        wait_until(lambda: len(partitions(c, "orders")) == 3 and all(
            p["leader"] >= 0 and len(p["isr"]) == 3 for p in partitions(c, "orders").values()), "leaders and full ISRs")
        assert partitions(c, "orders")[0]["leader"] == controller

        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all", "linger.ms": 5,
                             "enable.idempotence": True})
        acked: list[bytes] = []

        def on_delivery(err, msg):
            if err is None:
                acked.append(msg.value())

        for i in range(300):
            producer.produce("orders", key=str(i).encode(), value=f"before-{i}".encode(), on_delivery=on_delivery)
            if i == 150:
                producer.flush(30)
                c.kill(controller)          # SIGKILL: the active controller and partition 0's leader at once
        # a new active controller among the two others (a Raft election), which fences the dead broker
        wait_until(lambda: c.controller in others, "a new active controller")
        survivor = c._broker(others[0])
        wait_until(lambda: describe_cluster(survivor.host, survivor.port)["brokers"][controller]["fenced"],
                   "the dead node to be fenced", 30)
        check_a_dead_node_is_listed_fenced(c, controller)
        wait_until(lambda: all(p["leader"] in others and controller not in p["isr"]
                               for p in partitions(c, "orders").values()), "its leaderships to move", 30)
        assert producer.flush(30) == 0
        for i in range(100):
            producer.produce("orders", key=str(i).encode(), value=f"after-{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(30) == 0 and len(acked) == 400
        got = read_all(c.bootstrap_servers, "orders", 3, len(acked))
        assert sorted(got) == sorted(acked) and len(got) == len(set(got))   # all there, none twice (idempotence)

        # restarted: a voter again (it catches up on __cluster_metadata as a Follower) and an unfenced broker
        c.restart(controller)
        wait_until(lambda: dict(zip(c.quorum()["node_id"], c.quorum()["status"])).get(controller) == "Follower",
                   "the node to be a Follower of the quorum again")
        nodes = c.nodes.set_index("id")
        assert nodes.loc[controller, "registered"] and not nodes.loc[controller, "fenced"]
        wait_until(lambda: all(len(p["isr"]) == 3 for p in partitions(c, "orders").values()), "full ISRs again", 30)
        described = c.describe("orders")     # leaders, ISRs and every replica's log end offset, from the brokers
        assert described["high_watermark"].sum() == len(acked) and sorted(described["partition"]) == [0, 1, 2]
        pids.append(int(nodes.loc[controller, "pid"]))
    wait_until(lambda: all(_gone(p) for p in pids), "every node and the watchdog to exit", 20)


def test_kafkalab_up_mode_kraft_combined_attach_pause_and_the_watchdog(tmp_path):
    """``kafkalab up --mode kraft --combined`` (no --backend kafka): three combined mini nodes; status shows the
    roles; a notebook attaches (nodes, quorum, pause/resume through the cluster object); the CLI kills one; the
    supervisor SIGKILLed takes every node along (the watchdog)."""
    from kafkalab.cluster.kraft import KRaftCluster
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKALAB_CLUSTER_DIR", "KAFKALAB_BOOTSTRAP_SERVERS")}

    def kafkalab_cli(*args):
        return subprocess.run([sys.executable, "-m", "kafkalab.cli", *args], capture_output=True, text=True,
                              timeout=120, env=env)

    directory = str(tmp_path / "up")
    up = kafkalab_cli("up", "--mode", "kraft", "--combined", "--dir", directory)
    assert up.returncode == 0, up.stdout + up.stderr
    supervisor = int(up.stdout.split("supervisor pid ")[1].split(")")[0])
    with open(os.path.join(directory, "cluster.json")) as f:
        pids = [n["pid"] for n in json.load(f)["nodes"]]
    try:
        status = kafkalab_cli("status", "--dir", directory)
        assert status.returncode == 0 and ("3 mini broker(s) and 3 controller(s) (combined nodes: broker,controller) "
                                           "in KRaft mode") in status.stdout, status.stdout
        lines = {line.split()[0]: line for line in status.stdout.splitlines() if line[:1].isdigit()}
        assert set(lines) == {"1", "2", "3"} and all("broker,controller" in line for line in lines.values())

        attached = KRaftCluster.attach(directory)
        assert attached.combined and attached.controller_ids == attached.broker_ids == [1, 2, 3]
        assert sorted(attached.quorum()["status"]) == ["Follower", "Follower", "Leader"]
        # a paused follower node: its heartbeats stop, the active controller fences its broker; resumed, unfenced
        follower = next(b for b in attached.broker_ids if b != attached.controller)
        attached.pause(follower)
        wait_until(lambda: attached.nodes.set_index("id").loc[follower, "fenced"] == True,   # noqa: E712
                   "the paused node to be fenced")
        attached.resume(follower)
        wait_until(lambda: attached.nodes.set_index("id").loc[follower, "fenced"] == False,  # noqa: E712
                   "the resumed node to be unfenced")

        assert kafkalab_cli("kill", "2", "--dir", directory).returncode == 0
        after = kafkalab_cli("status", "--dir", directory)
        assert "killed" in next(line for line in after.stdout.splitlines() if line.startswith("2 "))
    finally:
        os.kill(supervisor, signal.SIGKILL)    # the owner dies: the watchdog stops every node
    wait_until(lambda: all(_gone(p) for p in [supervisor, *pids]), "every node to exit after its supervisor", 30)


def test_kafka_44_combined_answers_as_the_mini_combined_nodes_do(tmp_path):
    """The oracle: the same checks against Apache Kafka 4.4, three combined nodes (``kafkalab fetch-kafka 4``)."""
    from kafkalab.cluster.distribution import fetch_kafka
    from kafkalab.cluster.kraft_config import KRaftBackend
    with kafkalab.cluster(brokers=3, backend=KRaftBackend(str(fetch_kafka("4"))), mode="kraft", combined=True,
                          dir=str(tmp_path / "kafka")) as c:
        wait_until(lambda: not c.nodes["fenced"].any(), "every Kafka node unfenced")
        check_combined_answers(c)
        controller = c.controller
        c.kill(controller)
        wait_until(lambda: c.controller not in (None, controller), "a new active controller", 30)
        survivor = c._broker(next(b for b in c.broker_ids if b != controller))
        wait_until(lambda: describe_cluster(survivor.host, survivor.port)["brokers"].get(controller, {}).get("fenced"),
                   "the dead Kafka node to be fenced", 30)
        check_a_dead_node_is_listed_fenced(c, controller)
