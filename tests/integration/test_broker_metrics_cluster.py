"""A 3-broker mini cluster's Kafka metrics against the cluster's own state.

After each change (all healthy, a follower killed, it restarted, the controller killed), every broker's metrics are
compared with what ZooKeeper's partition states (``cluster.describe``) and Metadata say: UnderReplicatedPartitions,
UnderMinIsrPartitionCount, AtMinIsrPartitionCount, PartitionCount and LeaderCount per broker, ActiveControllerCount
summed over the brokers, and the controller's OfflinePartitionsCount, GlobalTopicCount and GlobalPartitionCount; the
ISR meters must move as the ISRs did.
"""
from __future__ import annotations

import functools
import time
import uuid

import pandas as pd
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from tests.helpers import cluster_helpers

pytestmark = pytest.mark.cluster

WAIT_S = 60
MIN_ISR = 3   # = the replication factor: one replica down puts every partition of the topic under min ISR
# a follower that stops fetching while there are new records leaves the ISR after replica.lag.time.max.ms (the
# leader shrinks it: an ISR shrink), well before its ZooKeeper session expires (then the controller would remove it)
# replica.fetch.max.bytes=1: a follower fetches one batch per Fetch (Kafka returns the first batch whatever its
# size), so that catching up takes many fetches and its MaxLag shows between them
LAB = {"zookeeper.session.timeout.ms": 6000, "replica.lag.time.max.ms": 1500,
       "leader.imbalance.check.interval.seconds": 3600, "replica.fetch.max.bytes": 1}
MAX_LAG = "kafka_server_replicafetchermanager_maxlag"

wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S, interval=0.3)


def running(cluster) -> list[int]:
    return sorted(b["id"] for b in cluster_helpers.broker_states(cluster) if b["alive"] == "running")


def gauges(cluster) -> dict[int, dict[str, float]]:
    """Each running broker's samples without labels: broker -> metric -> value (Cluster.metrics)."""
    df = cluster.metrics(["kafka_server_replicamanager_", "kafka_controller_"])
    out: dict[int, dict[str, float]] = {}
    for row in df.itertuples():
        if not row.labels:
            out.setdefault(int(row.broker), {})[row.metric] = row.value
    return out


def expected(cluster, admin, min_isr: dict[str, int]) -> dict[int, dict[str, int]]:
    """The same numbers counted from the partition states in ZooKeeper (describe) of every topic."""
    counts = {b: dict.fromkeys(["urp", "under_min", "at_min", "partitions", "leaders"], 0) for b in running(cluster)}
    partitions = 0
    offline = 0
    imbalanced = 0
    topics = sorted(admin.list_topics(timeout=10).topics)
    for topic in topics:
        for row in cluster.describe(topic).to_dict("records"):
            partitions += 1
            replicas, isr = [int(r) for r in row["replicas"]], [int(r) for r in row["isr"]]
            leader = None if row["leader"] is None or pd.isna(row["leader"]) else int(row["leader"])
            if leader is None or leader < 0 or leader not in counts:
                offline += 1
            if (-1 if leader is None else leader) != replicas[0]:
                imbalanced += 1   # not led by its preferred (first) replica (no leader counts too, as in Kafka)
            for b in replicas:
                if b in counts:
                    counts[b]["partitions"] += 1
            if leader in counts:
                c = counts[leader]
                c["leaders"] += 1
                c["urp"] += len(isr) < len(replicas)
                effective = min(min_isr.get(topic, 1), len(replicas))
                c["under_min"] += len(isr) < effective
                c["at_min"] += len(isr) == effective
    return {"brokers": counts, "topics": len(topics), "partitions": partitions, "offline": offline,
            "imbalanced": imbalanced}


def matches(cluster, admin, min_isr) -> dict | None:
    """The metrics when they say what the cluster's state says, else None (not yet)."""
    want = expected(cluster, admin, min_isr)
    got = gauges(cluster)
    if set(got) != set(want["brokers"]):
        return None
    rm = "kafka_server_replicamanager_"
    for b, c in want["brokers"].items():
        g = got[b]
        if (g[rm + "underreplicatedpartitions"], g[rm + "underminisrpartitioncount"], g[rm + "atminisrpartitioncount"],
                g[rm + "partitioncount"], g[rm + "leadercount"]) != (
                c["urp"], c["under_min"], c["at_min"], c["partitions"], c["leaders"]):
            return None
    kc = "kafka_controller_kafkacontroller_"
    active = [b for b in got if got[b][kc + "activecontrollercount"] == 1]
    if sum(got[b][kc + "activecontrollercount"] for b in got) != 1 or active != [cluster.controller]:
        return None
    g = got[active[0]]
    names = ("offlinepartitionscount", "preferredreplicaimbalancecount", "globaltopiccount", "globalpartitioncount")
    if tuple(g[kc + n] for n in names) != (want["offline"], want["imbalanced"], want["topics"], want["partitions"]):
        return None
    if any(got[b][kc + "globaltopiccount"] != 0 for b in got if b != active[0]):   # only the active one counts
        return None
    return {"got": got, "want": want, "controller": active[0]}


def meter(state: dict, name: str, brokers) -> float:
    return sum(state["got"][b][name] for b in brokers)


def test_metrics_follow_the_cluster_through_failures(tmp_path):
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "cluster"), **LAB) as cluster:
        urls = cluster_helpers.broker_states(cluster)
        assert all(str(b["metrics_url"]).startswith("http://127.0.0.1:") for b in urls)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = f"metered-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": str(MIN_ISR)})],
                            operation_timeout=30)[topic].result(60)
        min_isr = {topic: MIN_ISR}

        # all healthy: nothing under-replicated, one active controller, nothing offline
        healthy = wait_until(lambda: matches(cluster, admin, min_isr), "the metrics of a healthy cluster")
        assert all(c["urp"] == 0 and c["under_min"] == 0 for c in healthy["want"]["brokers"].values())
        assert healthy["want"]["offline"] == 0 and healthy["want"]["partitions"] == 3
        assert healthy["want"]["imbalanced"] == 0

        # a broker that is not the controller is killed: its followers' leaders shrink their ISRs
        controller = healthy["controller"]
        victim = next(b for b in running(cluster) if b != controller)
        others = [b for b in running(cluster) if b != victim]
        shrinks = "kafka_server_replicamanager_isrshrinks_total"
        expands = "kafka_server_replicamanager_isrexpands_total"
        elections = "kafka_controller_controllerstats_leaderelectionrateandtimems_count"
        cluster.kill(victim)
        # records to every partition: a leader shrinks its ISR only for a follower behind its log end (an idle
        # partition's followers are caught up whether they fetch or not, as in Kafka: then the controller removes
        # the dead broker when its session expires)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1, "linger.ms": 0})
        for p in range(3):
            producer.produce(topic, b"after the kill", partition=p)
        assert producer.flush(WAIT_S) == 0

        def victim_out_of_every_isr():
            rows = cluster.describe(topic).to_dict("records")
            return all(victim not in [int(r) for r in row["isr"]] for row in rows) and \
                matches(cluster, admin, min_isr)
        down = wait_until(victim_out_of_every_isr, f"broker {victim} out of every ISR, as the metrics say")
        states = cluster.describe(topic).to_dict("records")
        assert sum(c["urp"] for c in down["want"]["brokers"].values()) == \
            sum(len(r["isr"]) < len(r["replicas"]) for r in states) == 3
        assert sum(c["under_min"] for c in down["want"]["brokers"].values()) == 3   # ISR 2 < min.insync.replicas 3
        assert meter(down, shrinks, others) > meter(healthy, shrinks, others)
        assert down["want"]["imbalanced"] == 1   # the victim's partition has another leader now
        assert down["got"][controller][elections] > healthy["got"][controller][elections]   # its BrokerChange

        # it comes back and catches up: the leaders expand their ISRs again
        cluster.restart(victim)
        up = wait_until(lambda: (m := matches(cluster, admin, min_isr)) and
                        all(c["urp"] == 0 for c in m["want"]["brokers"].values()) and m,
                        f"broker {victim} back in every ISR, as the metrics say")
        assert meter(up, expands, others) > meter(down, expands, others)
        restarted = next(b for b in cluster_helpers.broker_states(cluster) if b["id"] == victim)
        assert restarted["metrics_url"] and restarted["metrics_url"] != \
            next(b for b in urls if b["id"] == victim)["metrics_url"]   # a free port again: the new one

        # the controller is killed: another broker's ActiveControllerCount becomes 1
        cluster.kill(controller)
        moved = wait_until(lambda: (m := matches(cluster, admin, min_isr)) and m["controller"] != controller and m,
                           "another broker to be the active controller, as the metrics say")
        assert sum(moved["got"][b]["kafka_controller_kafkacontroller_activecontrollercount"] for b in moved["got"]) == 1
        assert controller not in moved["got"]

        # a follower paused while records are written: MaxLag (kafka.server:type=ReplicaFetcherManager,
        # name=MaxLag,clientId=Replica) is the largest max(0, leader's high watermark - fetch offset) its fetchers
        # saw in a fetch response (AbstractFetcherThread.processFetchResponse): above 0 while it catches up
        max_lag_of_follower_caught_up(cluster, admin, f"lagging-{uuid.uuid4().hex[:6]}")


def max_lag_of(url: str) -> float:
    from kafkalab.cluster.metrics import scrape
    return next(v for name, labels, v in scrape(url) if name == MAX_LAG and labels == {"clientId": "Replica"})


def max_lag_of_follower_caught_up(cluster, admin, topic: str) -> None:
    # a topic of its own with min.insync.replicas 1: the lag is measured against the high watermark, which a leader
    # does not move while its ISR is under min.insync.replicas (maybeIncrementLeaderHW): under the first topic's
    # min ISR of 3 a paused follower's MaxLag stays 0 however far behind the log end it is
    admin.create_topics([NewTopic(topic, 1, 2)], operation_timeout=30)[topic].result(60)
    partition = 0
    row = wait_until(lambda: next((r for r in cluster.describe(topic).to_dict("records")
                                   if pd.notna(r["leader"]) and len(r["isr"]) == 2), None),
                     f"{topic} led, with 2 replicas in sync")
    leader = int(row["leader"])
    follower = next(int(b) for b in row["isr"] if int(b) != leader)
    url = next(b["metrics_url"] for b in cluster_helpers.broker_states(cluster) if b["id"] == follower)
    wait_until(lambda: max_lag_of(url) == 0, f"broker {follower}'s MaxLag 0 (caught up)")

    fault = cluster.inject_fault(follower, "pause_replication", duration_s=WAIT_S, topic=topic, partition=partition)
    # one record per batch (batch.num.messages=1): catching up takes one fetch per record
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1, "linger.ms": 0,
                         "batch.num.messages": 1})
    records = 400
    for i in range(records):
        producer.produce(topic, b"while the follower is paused", partition=partition)
        producer.poll(0)
    assert producer.flush(WAIT_S) == 0
    wait_until(lambda: follower not in isr_of(cluster, topic, partition),
               f"broker {follower} out of partition {partition}'s ISR (the high watermark goes on without it)")
    # as in Kafka, a partition's lag is set when a fetch response for it is processed: none comes while paused
    assert max_lag_of(url) == 0
    paused = next(r for r in cluster.describe(topic).to_dict("records") if int(r["partition"]) == partition)

    assert cluster.clear_faults(follower, fault["id"]) == 1
    seen = []   # scraped as fast as it goes while the follower catches up, one batch per fetch
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not (seen and seen[-1] == 0 and max(seen) > 0):
        seen.append(max_lag_of(url))
    assert max(seen) > 0, (paused, seen[:5], len(seen))
    assert max(seen) <= records
    wait_until(lambda: follower in isr_of(cluster, topic, partition) and max_lag_of(url) == 0,
               f"broker {follower} back in the ISR with MaxLag 0")


def isr_of(cluster, topic: str, partition: int) -> list[int]:
    row = next(r for r in cluster.describe(topic).to_dict("records") if int(r["partition"]) == partition)
    return [int(b) for b in row["isr"]]
