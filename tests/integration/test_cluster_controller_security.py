"""A lab KRaft cluster whose CONTROLLER listener is SASL_SSL, as is its brokers' INTERNAL one, on mini
nodes and on Kafka 4.4.

Three brokers (separate controllers, or three combined nodes) with the lab's PLAINTEXT listener (the lab's tooling,
the test's clients), INTERNAL:SASL_SSL as the inter-broker listener and CONTROLLER:SASL_SSL
(``sasl.mechanism.controller.protocol=PLAIN``, ``listener.name.controller.*`` TLS and JAAS configs), so that the
controllers' Vote / Fetch / BeginQuorumEpoch among themselves and the brokers' registrations, heartbeats, metadata
fetches and forwarded requests all log in over TLS. What must hold, the same on mini nodes and on Kafka 4.4: the
brokers register and are unfenced; a topic with three replicas and ``min.insync.replicas=3`` takes ``acks=all``
records; the active controller SIGKILLed is succeeded by another, which creates a topic, and comes back; a broker
SIGKILLed and restarted is back in every ISR; nothing acknowledged is lost; every controller counts successful
authentications on CONTROLLER in Kafka's ``socket-server-metrics``, and none failed.
"""
from __future__ import annotations

import functools

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import kafkalab
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.security import CertificateAuthority
from tests.helpers import secured_cluster
from tests.helpers.cluster_helpers import leader_of, wait_until
from tests.helpers.secured_cluster import whole_isr

WAIT_S = 90
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
        'password="broker-secret" user_broker="broker-secret";')


produce = functools.partial(secured_cluster.produce, timeout_s=WAIT_S, idempotent=True)
consume_all = functools.partial(secured_cluster.consume_all, timeout_s=WAIT_S)


def authentications(cluster, listener: str = "CONTROLLER") -> dict[int, tuple[int, int]]:
    return secured_cluster.authentications(cluster, listener)



def configs(ca: CertificateAuthority) -> dict:
    return {"listeners": "PLAINTEXT://:0,INTERNAL://:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": JAAS,
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": JAAS,
            **ca.broker_configs(listener="INTERNAL"), **ca.broker_configs(listener="CONTROLLER")}


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


def create(cluster, *topics: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.create_topics(list(topics)).values():
        f.result(WAIT_S)


def scenario(cluster) -> dict:
    assert sorted(cluster.brokers["id"]) == [1, 2, 3]   # registered over CONTROLLER, unfenced
    strict = "strict"
    create(cluster, NewTopic(strict, 3, 3, config={"min.insync.replicas": "3"}))
    wait_until(lambda: whole_isr(cluster, strict, 3), "three in-sync replicas of every partition", WAIT_S)
    produce(cluster.bootstrap_servers, strict, 30)
    before = authentications(cluster)
    old = cluster.controller
    assert old is not None
    cluster.kill(old)
    wait_until(lambda: cluster.controller not in (None, old), "a new active controller", WAIT_S)
    new = cluster.controller
    # A combined node was a broker too: until the new active controller fences it (broker.session.timeout.ms)
    # Metadata may still name it as the broker to send CreateTopics to (Kafka's KRaft brokers name a random
    # unfenced broker, the mini broker the lowest), and librdkafka then waits for it for the request's whole
    # timeout without asking again. A student waits for the fencing too, as the dashboard shows it.
    wait_until(lambda: old not in cluster.metadata()["brokers"], "the killed node fenced", WAIT_S)
    create(cluster, NewTopic("after-failover", 3, 2))   # forwarded to the new active controller over CONTROLLER
    cluster.restart(old)
    wait_until(lambda: whole_isr(cluster, strict, 3), "every ISR whole after the controller's restart", WAIT_S)
    produce(cluster.bootstrap_servers, strict, 10, start=30)
    broker = next(b for b in (leader_of(cluster, strict, 0), 1, 2, 3) if b not in (old, new))   # counts kept
    cluster.kill(broker)
    cluster.restart(broker)   # registers anew over CONTROLLER
    wait_until(lambda: whole_isr(cluster, strict, 3), "the restarted broker back in every ISR", WAIT_S)
    produce(cluster.bootstrap_servers, strict, 10, start=40)
    return {"before": before, "after": authentications(cluster), "old": old, "new": new,
            "controllers": list(cluster.controller_ids),
            "strict": sorted(consume_all(cluster.bootstrap_servers, strict, 50)),
            "topics": set(AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(
                timeout=WAIT_S).topics)}


def check(run: dict) -> None:
    assert sorted(run["before"]) == sorted(run["controllers"]), run
    assert all(ok > 0 and failed == 0 for ok, failed in run["before"].values()), run["before"]
    assert run["new"] != run["old"]
    assert sum(ok for ok, _ in run["after"].values()) > 0, run["after"]
    assert all(failed == 0 for _, failed in run["after"].values()), run["after"]
    assert run["after"][run["new"]][0] > run["before"][run["new"]][0], run   # the brokers logged in to it
    assert run["strict"] == sorted(f"v{i}" for i in range(50))
    assert "after-failover" in run["topics"]


@pytest.mark.parametrize("combined", [False, True], ids=["separate", "combined"])
def test_mini_kraft_cluster_with_a_sasl_ssl_controller_listener(ca, tmp_path, combined):
    with kafkalab.cluster(brokers=3, mode="kraft", combined=combined, dir=str(tmp_path / "c"), **configs(ca)) as c:
        for node in c.controller_ids:
            props = open(c.backend.properties_path(c.dir, node)).read()
            assert "CONTROLLER:SASL_SSL" in props
        check(scenario(c))


@pytest.mark.cluster
def test_kafka_4_with_the_same_controller_listener(ca, tmp_path):
    backend = KRaftBackend(str(fetch_kafka("4")), metrics=True)
    with kafkalab.cluster(brokers=3, mode="kraft", combined=True, dir=str(tmp_path / "c"), backend=backend,
                          **configs(ca)) as c:
        props = open(c.backend.properties_path(c.dir, 1)).read()
        assert "CONTROLLER:SASL_SSL" in props and "sasl.mechanism.controller.protocol=PLAIN" in props
        check(scenario(c))
