"""Three ZooKeeper-mode broker processes with an SSL listener for clients and PLAINTEXT between brokers: every
endpoint registered in /brokers/ids/<id> as Kafka 3.9's BrokerInfo JSON has it, every endpoint in UpdateMetadata,
and clients of the SSL listener told the brokers' SSL endpoints."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from conftest import BrokerProcess, free_port
from kafkalab.cluster.zookeeper import ZooKeeperServer
from kafkalab.security import CertificateAuthority

BROKER_IDS = (1, 2, 3)
WAIT_S = 60


@pytest.fixture(scope="module")
def zk(tmp_path_factory):
    server = ZooKeeperServer(str(tmp_path_factory.mktemp("zk")))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def cluster(zk, ca, tmp_path_factory):
    root = tmp_path_factory.mktemp("brokers")
    brokers: dict[int, BrokerProcess] = {}
    ssl_ports: dict[int, int] = {}
    try:
        for i in BROKER_IDS:
            port, ssl_ports[i] = free_port(), free_port()
            configs = {"zookeeper.connect": zk.connect_string, "zookeeper.session.timeout.ms": 6000,
                       "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_ports[i]}",
                       "inter.broker.listener.name": "PLAINTEXT", "offsets.topic.replication.factor": 3,
                       "offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
                       **ca.broker_configs()}
            brokers[i] = BrokerProcess(str(root / f"b{i}"), port=port, broker_id=i, configs=configs).start()
        yield brokers, ssl_ports
    finally:
        for bp in brokers.values():
            bp.stop()


def wait_for(predicate, what: str):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_registration_carries_every_endpoint(cluster, zk):
    brokers, ssl_ports = cluster
    kz = KazooClient(hosts=zk.connect_string)
    kz.start(timeout=10)
    try:
        for i in BROKER_IDS:
            data, _ = kz.get(f"/brokers/ids/{i}")
            js = json.loads(data)
            assert js["version"] == 5
            assert js["endpoints"] == [f"PLAINTEXT://127.0.0.1:{brokers[i].port}", f"SSL://127.0.0.1:{ssl_ports[i]}"]
            assert js["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}
            assert (js["host"], js["port"]) == ("127.0.0.1", brokers[i].port)
    finally:
        kz.stop()
        kz.close()


def brokers_seen(bootstrap: str, **configs) -> dict[int, int]:
    md = AdminClient({"bootstrap.servers": bootstrap, **configs}).list_topics(timeout=WAIT_S)
    return {b.id: b.port for b in md.brokers.values()}


def test_each_listener_sees_the_brokers_on_that_listener(cluster, ca):
    brokers, ssl_ports = cluster
    for i in BROKER_IDS:   # UpdateMetadata carried every endpoint to every broker
        wait_for(lambda: brokers_seen(f"127.0.0.1:{ssl_ports[i]}", **ca.client_configs()) == ssl_ports,
                 f"broker {i}'s SSL Metadata naming every broker's SSL port")
        assert brokers_seen(brokers[i].bootstrap_servers) == {j: brokers[j].port for j in BROKER_IDS}


def test_replicated_produce_and_consume_over_ssl(cluster, ca):
    _, ssl_ports = cluster
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ssl_ports.values())
    admin = AdminClient({"bootstrap.servers": bootstrap, **ca.client_configs()})
    admin.create_topics([NewTopic("tls-replicated", 3, 3)])["tls-replicated"].result(timeout=WAIT_S)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", **ca.client_configs()})
    errors: list = []
    for n in range(30):
        producer.produce("tls-replicated", str(n).encode(), on_delivery=lambda e, m: e and errors.append(e))
    assert producer.flush(WAIT_S) == 0 and not errors
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "tls-group", "auto.offset.reset": "earliest",
                         **ca.client_configs()})
    consumer.subscribe(["tls-replicated"])
    seen: set[bytes] = set()
    deadline = time.monotonic() + WAIT_S
    try:
        while len(seen) < 30 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                seen.add(m.value())
    finally:
        consumer.close()
    assert seen == {str(n).encode() for n in range(30)}
