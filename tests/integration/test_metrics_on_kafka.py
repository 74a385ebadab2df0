"""Real Kafka serves the mini broker's metrics under the same names, through the Prometheus JMX exporter's agent
(kafkalab/cluster/jmx_agent.py, the rules kafkalab/cluster/jmx_exporter/kafka.yml).

A 3-broker mini cluster and a 3-broker Kafka 3.9 cluster (ZooKeeper mode) are brought to the same state: one topic of
3 partitions, replication factor 3, N records produced with acks=all (N/3 to each partition, so no partitioner can
make the two differ), every replica caught up. Their ``Cluster.metrics()`` are scraped once each (each cluster is
closed before the other starts: one cluster on the machine at a time) and compared:

- every metric name and label set the mini broker serves, Kafka serves too;
- the same values for PartitionCount, LeaderCount (summed), UnderReplicatedPartitions, ActiveControllerCount (sum 1),
  OfflinePartitionsCount, GlobalTopicCount and GlobalPartitionCount, MessagesInPerSec of the topic (== N) and each
  replica's LogEndOffset. No internal topic exists on either: no consumer group, no transaction, no idempotent
  producer (what would create __consumer_offsets or __transaction_state, which each broker creates with its own
  partition count), so the global counts are comparable as they are; the test checks that no topic but ours exists.

A 4.x KRaft cluster (one broker, one controller): both nodes' metrics_url answer, the broker's with
kafka_server_replicamanager_partitioncount, the controller's (which has no ReplicaManager: it holds no partitions)
with kafka_controller_kafkacontroller_activecontrollercount.
"""
from __future__ import annotations

import functools
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.jmx_agent import fetch_jmx_exporter
from kafkalab.cluster.kraft_config import KRaftBackend
from tests.helpers import cluster_helpers

pytestmark = pytest.mark.cluster

TOPIC = "metered"
PARTITIONS, RF = 3, 3
N = 300
RM, KC = "kafka_server_replicamanager_", "kafka_controller_kafkacontroller_"
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
LEO = "kafka_log_log_logendoffset"
#: everything a JVM's exporter adds beside Kafka's MBeans (the agent's own JVM and scrape metrics)
NOT_KAFKA = ("jvm_", "process_", "jmx_")

wait_until = functools.partial(cluster_helpers.wait_until, timeout=90, interval=0.5)


def settled(cluster):
    """[the metrics] once every replica has all N records and no partition is under-replicated, else None."""
    df = cluster.metrics()
    leo = df[df.metric == LEO]
    ours = [r for r in leo.itertuples() if r.labels.get("topic") == TOPIC]
    urp = df[df.metric == RM + "underreplicatedpartitions"].value.sum()
    if len(ours) != PARTITIONS * RF or any(r.value != N // PARTITIONS for r in ours) or urp != 0:
        return None
    if df[df.metric == KC + "activecontrollercount"].value.sum() != 1:
        return None
    return [df]


def run_the_script(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, RF)])[TOPIC].result(30)
    wait_until(lambda: len(cluster.describe(TOPIC)) == PARTITIONS and
               all(len(isr) == RF for isr in cluster.describe(TOPIC)["isr"]), "the topic's ISRs are full")
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
    failed = []
    for i in range(N):
        producer.produce(TOPIC, value=b"v%d" % i, key=b"k%d" % i, partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: err and failed.append(err))
    assert producer.flush(30) == 0 and not failed
    [df] = wait_until(lambda: settled(cluster), "every replica has the records, nothing under-replicated")
    assert sorted(admin.list_topics(timeout=10).topics) == [TOPIC]   # no internal topic on either
    return df


@pytest.fixture(scope="module")
def on_mini(tmp_path_factory):
    with kafkalab.cluster(3, dir=str(tmp_path_factory.mktemp("mini") / "cluster")) as c:
        return run_the_script(c)


@pytest.fixture(scope="module")
def on_kafka(on_mini, tmp_path_factory):
    fetch_jmx_exporter()
    backend = KafkaBackend(str(fetch_kafka("3.9")), metrics=True)
    assert backend.agent_jar is not None
    with kafkalab.cluster(3, backend=backend, dir=str(tmp_path_factory.mktemp("kafka") / "cluster")) as c:
        assert c.brokers["metrics_url"].str.startswith("http://127.0.0.1:").all()
        return run_the_script(c)


def shapes(df) -> set[tuple[str, frozenset]]:
    return {(r.metric, frozenset(r.labels)) for r in df.itertuples() if not r.metric.startswith(NOT_KAFKA)}


def total(df, metric, **labels) -> float:
    return sum(r.value for r in df[df.metric == metric].itertuples()
               if all(r.labels.get(k) == v for k, v in labels.items()))


def per_broker(df, metric) -> dict[int, float]:
    return {int(r.broker): r.value for r in df[df.metric == metric].itertuples() if not r.labels}


def test_every_name_and_label_set_the_mini_broker_serves_kafka_serves(on_mini, on_kafka):
    mini, kafka = shapes(on_mini), shapes(on_kafka)
    assert len(mini) > 50
    assert mini - kafka == set()


@pytest.mark.parametrize("metric", ["partitioncount", "leadercount", "underreplicatedpartitions"])
def test_the_replica_manager_s_gauges_are_the_same(on_mini, on_kafka, metric):
    mini, kafka = per_broker(on_mini, RM + metric), per_broker(on_kafka, RM + metric)
    assert set(mini) == set(kafka) == {1, 2, 3}
    if metric == "leadercount":   # which broker leads which partition is each controller's choice: the sum
        assert sum(mini.values()) == sum(kafka.values()) == PARTITIONS
    else:
        assert mini == kafka == {b: PARTITIONS if metric == "partitioncount" else 0 for b in (1, 2, 3)}


@pytest.mark.parametrize("metric,value", [("activecontrollercount", 1), ("offlinepartitionscount", 0),
                                          ("globaltopiccount", 1), ("globalpartitioncount", PARTITIONS)])
def test_the_controller_s_gauges_summed_over_the_brokers_are_the_same(on_mini, on_kafka, metric, value):
    # only the active controller counts topics and partitions; the others say 0
    assert total(on_mini, KC + metric) == total(on_kafka, KC + metric) == value


def test_messages_in_of_the_topic_is_n_on_both(on_mini, on_kafka):
    assert total(on_mini, MESSAGES_IN, topic=TOPIC) == total(on_kafka, MESSAGES_IN, topic=TOPIC) == N


def test_each_replica_s_log_end_offset_is_the_same(on_mini, on_kafka):
    def leo(df):
        return {(int(r.broker), r.labels["partition"]): r.value for r in df[df.metric == LEO].itertuples()
                if r.labels.get("topic") == TOPIC}
    assert leo(on_mini) == leo(on_kafka) == {(b, str(p)): N // PARTITIONS for b in (1, 2, 3)
                                             for p in range(PARTITIONS)}


def test_kraft_broker_and_controller_serve_their_metrics(tmp_path):
    fetch_jmx_exporter()
    backend = KRaftBackend(str(fetch_kafka("4")), metrics=True)
    with kafkalab.cluster(brokers=1, controllers=1, backend=backend, mode="kraft", dir=str(tmp_path / "c")) as c:
        urls = {row["roles"]: row["metrics_url"] for row in c.nodes.to_dict("records")}
        assert set(urls) == {"broker", "controller"}
        served = {roles: {line.split(" ")[0] for line in urllib.request.urlopen(url, timeout=10).read().decode()
                          .splitlines() if line and not line.startswith("#")} for roles, url in urls.items()}
        # a controller-only node has no ReplicaManager (it holds no partitions): its own gauges instead
        assert RM + "partitioncount" in served["broker"]
        assert RM + "partitioncount" not in served["controller"]
        assert KC + "activecontrollercount" in served["controller"]
        # the Raft client's metrics under the mini controllers' names, and the leader they say is the quorum's
        raft = c.metrics("kafka_server_raft_metrics_")
        names = set(raft[raft["roles"] == "controller"]["metric"])
        assert {"kafka_server_raft_metrics_current_leader", "kafka_server_raft_metrics_current_epoch",
                "kafka_server_raft_metrics_high_watermark"} <= names, names
        leader = raft[(raft["roles"] == "controller") & (raft["metric"] == "kafka_server_raft_metrics_current_leader")]
        assert leader["value"].tolist() == [c.quorum().attrs["leader_id"]]


def _over_a_quota(cluster, seconds=3.0):
    """A producer with client id "q" flat out against a 100 kB/s client-id quota; the throttle times it was told,
    then the client quota samples of the brokers."""
    import time
    from kafkalab.tools.client_quotas import alter_client_quotas

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic("quota", 1, 1)])["quota"].result(30)
    alter_client_quotas(cluster.bootstrap_servers, {"client-id": "q"}, {"producer_byte_rate": 100_000})
    time.sleep(1)   # Kafka's brokers apply it when ZooKeeper notifies them
    told = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "client.id": "q", "linger.ms": 5,
                         "queue.buffering.max.kbytes": 256, "throttle_cb": lambda ev: told.append(ev.throttle_time)})
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        try:
            producer.produce("quota", b"x" * 1000)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(30)
    df = cluster.metrics(["kafka_server_produce_byte_rate", "kafka_server_produce_throttle_time"])
    return [t for t in told if t > 0], df


def test_the_client_quota_metrics_have_the_same_names_on_kafka(tmp_path):
    """kafka.server:type=Produce,client-id=q (byte-rate, throttle-time) through kafkalab's rules on a Kafka 3.9
    broker: the names and labels a mini broker serves for the same quota, values of the same kind."""
    fetch_jmx_exporter()
    backend = KafkaBackend(str(fetch_kafka("3.9")), metrics=True)
    results = {}
    for name, kwargs in (("mini", {}), ("kafka", {"backend": backend})):
        with kafkalab.cluster(1, dir=str(tmp_path / name), **kwargs) as c:
            results[name] = _over_a_quota(c)
    for name, (told, df) in results.items():
        assert told, name
        got = {(r.metric, tuple(sorted(r.labels.items()))): r.value for r in df.itertuples()}
        assert set(got) == {("kafka_server_produce_byte_rate", (("client_id", "q"),)),
                            ("kafka_server_produce_throttle_time", (("client_id", "q"),))}, name
        assert got[("kafka_server_produce_byte_rate", (("client_id", "q"),))] > 0, name
        assert got[("kafka_server_produce_throttle_time", (("client_id", "q"),))] > 0, name
