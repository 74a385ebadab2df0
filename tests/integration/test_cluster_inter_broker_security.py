"""A lab cluster whose brokers talk to one another over SASL_SSL, on mini brokers and on Kafka's.

Three brokers, each with the lab's PLAINTEXT listener (the lab's tooling and the test's clients) and an INTERNAL
listener that is SASL_SSL and the inter-broker listener (``inter.broker.listener.name=INTERNAL``, SASL/PLAIN with
the JAAS entry's ``username`` / ``password``). What must hold, the same on mini brokers and on Kafka 3.9 (ZooKeeper
mode) and Kafka 4.4 (KRaft, combined nodes; the controllers keep their PLAINTEXT CONTROLLER listener):
replication runs over INTERNAL (a topic with three replicas and ``min.insync.replicas=3`` takes ``acks=all``
records, and every broker counts successful authentications on INTERNAL, none failed, in Kafka's
``socket-server-metrics``); the leader SIGKILLed and restarted catches up over INTERNAL (its fetchers log in to
the other brokers anew) (the ISR is whole again,
in ZooKeeper mode only once the controller's LeaderAndIsr has reached it over INTERNAL); nothing acknowledged is
lost.
"""
from __future__ import annotations

import functools

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.cluster.listeners import listener_spec
from kafkalab.security import CertificateAuthority
from tests.helpers import secured_cluster
from tests.helpers.cluster_helpers import leader_of, wait_until
from tests.helpers.secured_cluster import whole_isr

WAIT_S = 60
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret";')

produce = functools.partial(secured_cluster.produce, timeout_s=WAIT_S, idempotent=True)
consume_all = functools.partial(secured_cluster.consume_all, timeout_s=WAIT_S)
authentications = functools.partial(secured_cluster.authentications, listener="INTERNAL")


def configs(ca: CertificateAuthority) -> dict:
    return {"listeners": "PLAINTEXT://:0,INTERNAL://:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": JAAS,
            **ca.broker_configs(listener="INTERNAL")}


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))










def scenario(cluster) -> dict:
    assert list(cluster.listeners) == ["PLAINTEXT", "INTERNAL"]
    assert cluster.listeners["PLAINTEXT"] == cluster.bootstrap_servers   # the lab's listener is PLAINTEXT
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    strict, topic = "strict", "replicated"
    futures = admin.create_topics([NewTopic(strict, 3, 3, config={"min.insync.replicas": "3"}),
                                   NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])
    for f in futures.values():
        f.result(WAIT_S)
    wait_until(lambda: whole_isr(cluster, strict, 3), "three in-sync replicas of every partition", WAIT_S)
    produce(cluster.bootstrap_servers, strict, 30)   # acks=all with min.insync.replicas=3: every follower fetched
    produce(cluster.bootstrap_servers, topic, 20)
    before = authentications(cluster)
    leader = leader_of(cluster, topic, 0)
    cluster.kill(leader)
    produce(cluster.bootstrap_servers, topic, 20, start=20)
    cluster.restart(leader)
    wait_until(lambda: whole_isr(cluster, topic, 3), "the restarted broker back in every ISR", WAIT_S)
    produce(cluster.bootstrap_servers, strict, 10, start=30)   # it fetches over INTERNAL again
    return {"before": before, "after": authentications(cluster), "restarted": leader,
            "strict": sorted(consume_all(cluster.bootstrap_servers, strict, 40)),
            "replicated": sorted(consume_all(cluster.bootstrap_servers, topic, 40))}


def check(run: dict) -> None:
    assert sorted(run["before"]) == [1, 2, 3], run
    assert all(ok > 0 and failed == 0 for ok, failed in run["before"].values()), run["before"]
    # the restarted broker's counts began again at 0 (a new process); its fetchers logged in to the others anew
    others = [b for b in run["before"] if b != run["restarted"]]
    assert sum(run["after"][b][0] for b in others) > sum(run["before"][b][0] for b in others), run
    assert all(failed == 0 for _, failed in run["after"].values()), run["after"]
    assert run["strict"] == sorted(f"v{i}" for i in range(40))
    assert run["replicated"] == sorted(f"v{i}" for i in range(40))


def test_the_lab_listener_is_the_plaintext_one_when_the_brokers_use_another():
    spec = listener_spec(configs(CertificateAuthority()), "127.0.0.1")
    assert (spec.names, spec.primary, spec.inter_broker) == (("PLAINTEXT", "INTERNAL"), "PLAINTEXT", "INTERNAL")
    only_secured = {**configs(CertificateAuthority()), "listeners": "INTERNAL://:0"}
    with pytest.raises(ValueError, match="a lab cluster needs a PLAINTEXT listener for the lab's tooling"):
        listener_spec(only_secured, "127.0.0.1")


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_mini_brokers_replicate_over_sasl_ssl(ca, tmp_path, mode):
    with kafkalab.cluster(brokers=3, mode=mode, dir=str(tmp_path / "c"), **configs(ca)) as c:
        check(scenario(c))


@pytest.mark.cluster
def test_kafka_39_replicates_over_the_same_listener(ca, tmp_path):
    backend = KafkaBackend(str(fetch_kafka("3.9")), metrics=True)
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "c"), backend=backend, **configs(ca)) as c:
        check(scenario(c))


@pytest.mark.cluster
def test_kafka_4_kraft_replicates_over_the_same_listener(ca, tmp_path):
    backend = KRaftBackend(str(fetch_kafka("4")), metrics=True)
    with kafkalab.cluster(brokers=3, mode="kraft", combined=True, dir=str(tmp_path / "c"), backend=backend,
                          **configs(ca)) as c:
        props = open(c.backend.properties_path(c.dir, 1)).read()
        assert "inter.broker.listener.name=INTERNAL" in props
        check(scenario(c))
