"""A lab cluster behind SASL_SSL for the students' clients: ``kafkalab.cluster(listeners=...)``.

Three brokers, each with the lab's PLAINTEXT listener (the lab's tooling, the brokers among themselves) and a
CLIENTS listener that is SASL_SSL, given with Kafka's own configs; each broker gets a port of its own for each
listener. The same scenario runs on mini brokers and on Kafka's (the oracle), in ZooKeeper mode and in KRaft mode:
a SCRAM-SHA-512 user made over the admin API on PLAINTEXT (stored in ``/config/users`` in ZooKeeper mode, as a
UserScramCredentialRecord the controller writes in KRaft mode), then a producer and a consumer on CLIENTS only;
Metadata on CLIENTS advertises every broker's CLIENTS port; a wrong password is refused there; the leader SIGKILLed
and restarted keeps its ports, and the clients on CLIENTS go on; the user deleted, its password refused. Also, the
admin API's refusals of bad credentials, which differ between the modes (KRaft: one change per user and request).
"""
from __future__ import annotations

import functools

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, NewTopic, ScramCredentialInfo, ScramMechanism,
                                  UserScramCredentialDeletion, UserScramCredentialUpsertion)
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

import kafkalab
from kafkalab.cluster import Cluster, KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from kafkalab.cluster.listeners import listener_spec
from kafkalab.lab import LabKafka
from kafkalab.security import CertificateAuthority
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.common.message.codec import build
from tests.helpers import kafka_wire as wire
from tests.helpers import secured_cluster
from tests.helpers.cluster_helpers import leader_of, wait_until

WAIT_S = 60
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
#: what the broker tells a client with a wrong password, by mechanism (Kafka's messages)
REFUSED = {"SCRAM-SHA-512": "invalid credentials with SASL mechanism SCRAM-SHA-512",
           "PLAIN": "Invalid username or password"}


produce = functools.partial(secured_cluster.produce, timeout_s=WAIT_S)
consume_all = functools.partial(secured_cluster.consume_all, timeout_s=WAIT_S)


def configs(ca: CertificateAuthority, mechanism: str = "SCRAM-SHA-512") -> dict:
    return {"listeners": "PLAINTEXT://:0,CLIENTS://:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL",
            "inter.broker.listener.name": "PLAINTEXT",
            **ca.broker_configs(listener="CLIENTS"),
            "listener.name.clients.sasl.enabled.mechanisms": mechanism,
            f"listener.name.clients.{mechanism.lower()}.sasl.jaas.config":
                SCRAM_JAAS if mechanism.startswith("SCRAM") else PLAIN_JAAS}


def student(cluster, ca, mechanism: str, password="alice-secret", **extra) -> dict:
    return {**ca.client_configs(), "bootstrap.servers": cluster.listeners["CLIENTS"], "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": "alice", "sasl.password": password, **extra}






def refusals(bootstrap: str) -> dict[str, tuple[str, str]]:
    """AlterUserScramCredentials with a bad change per user, and erin's two mechanisms: user -> (error, message)."""
    def up(name, mechanism=2, iterations=4096):
        return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": b"salt",
                "salted_password": b"x"}
    request = build(AlterUserScramCredentialsRequest, 0, {
        "deletions": [{"name": "frank", "mechanism": 2}],
        "upsertions": [up(""), up("bob", mechanism=9), up("carol", iterations=1000), up("dave", iterations=20000),
                       up("erin", mechanism=1), up("erin", mechanism=2)]})
    response = wire.call(bootstrap, request, AlterUserScramCredentialsResponse, 0)
    return {r.user: (ErrorCode(r.error_code).name, r.error_message) for r in response.results}


REFUSALS = {"": ("UNACCEPTABLE_CREDENTIAL", "Username must not be empty"),
            "bob": ("UNSUPPORTED_SASL_MECHANISM", "Unknown SCRAM mechanism"),
            "carol": ("UNACCEPTABLE_CREDENTIAL", "Too few iterations"),
            "dave": ("UNACCEPTABLE_CREDENTIAL", "Too many iterations"),
            "frank": ("RESOURCE_NOT_FOUND", "Attempt to delete a user credential that does not exist")}
#: erin's two mechanisms in one request: Kafka 3.9's ZkAdminManager keys changes by user and mechanism, Kafka 4's
#: ScramControlManager by user
ERIN = {"zookeeper": ("NONE", ""),       # 3.9 sets no message on a success: the field's default, ""
        "kraft": ("DUPLICATE_RESOURCE", "A user credential cannot be altered twice in the same request")}


def scenario(cluster, ca: CertificateAuthority, mechanism: str = "SCRAM-SHA-512") -> dict:
    listeners = cluster.listeners
    assert list(listeners) == ["PLAINTEXT", "CLIENTS"] and listeners["PLAINTEXT"] == cluster.bootstrap_servers
    ports = {name: [int(a.rpartition(":")[2]) for a in value.split(",")] for name, value in listeners.items()}
    assert all(len(p) == 3 for p in ports.values()) and len(set(ports["PLAINTEXT"]) | set(ports["CLIENTS"])) == 6
    table = cluster.brokers.to_dict("records")
    assert [row["listeners"]["CLIENTS"] for row in table] == listeners["CLIENTS"].split(",")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})   # the lab's tooling: PLAINTEXT
    if mechanism == "SCRAM-SHA-512":
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-secret")]).values():
            f.result(WAIT_S)
    topic = "secured"
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(WAIT_S)
    wait_until(lambda: leader_of(cluster, topic, 0) >= 1, "a leader for the new topic", WAIT_S)
    # the student's clients reach the cluster on CLIENTS only; its Metadata names every broker's CLIENTS port
    conf = student(cluster, ca, mechanism)
    advertised = sorted(b.port for b in AdminClient(conf).list_topics(timeout=WAIT_S).brokers.values())
    produce(conf, topic, 10)
    first = consume_all(conf, topic, 10)
    # a wrong password is refused on CLIENTS (SASL_AUTHENTICATION_FAILED), while PLAINTEXT goes on serving
    errors: list = []
    wrong = Producer(student(cluster, ca, mechanism, password="wrong", error_cb=errors.append))
    wait_until(lambda: wrong.poll(0.2) is not None and errors, "the wrong password's error", 20)
    refused = (errors[0].name(), REFUSED[mechanism] in errors[0].str())
    # the leader SIGKILLed and restarted: its listeners come back on the same ports, and CLIENTS serves on
    leader = leader_of(cluster, topic, 0)
    cluster.kill(leader)
    produce(conf, topic, 10, start=10)
    cluster.restart(leader)
    after = cluster.listeners
    produce(conf, topic, 10, start=20)
    everything = sorted(consume_all(conf, topic, 30))
    described = deleted = None
    if mechanism == "SCRAM-SHA-512":   # the user deleted over the admin API: its password refused from then on
        info = admin.describe_user_scram_credentials(["alice"])["alice"].result(WAIT_S)
        described = [(c.mechanism.name, c.iterations) for c in info.scram_credential_infos]
        for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion(
                "alice", ScramMechanism.SCRAM_SHA_512)]).values():
            f.result(WAIT_S)
        errors.clear()
        gone = Producer(student(cluster, ca, mechanism, error_cb=errors.append))
        wait_until(lambda: gone.poll(0.2) is not None and errors, "the deleted user's error", 20)
        deleted = errors[0].name()
    # the refusals: in ZooKeeper mode the active controller alters credentials (another broker: NOT_CONTROLLER, for
    # every user); in KRaft mode any broker forwards the request to the active controller
    address = {b["id"]: f"{b['host']}:{b['port']}" for b in cluster.brokers.to_dict("records")}
    others = None
    if cluster.mode == "zookeeper":
        controller = cluster.controller
        others = refusals(next(a for i, a in address.items() if i != controller))
        answered = refusals(address[controller])
    else:
        answered = refusals(address[min(address)])
    return {"advertised": advertised, "clients_ports": sorted(ports["CLIENTS"]), "first": first, "refused": refused,
            "same_after_restart": after == listeners, "all": everything, "described": described, "deleted": deleted,
            "refusals": answered, "others": others, "mode": cluster.mode}


def check(run: dict) -> None:
    assert run["advertised"] == run["clients_ports"]
    assert run["first"] == [f"v{i}" for i in range(10)]
    assert run["refused"] == ("_AUTHENTICATION", True)   # librdkafka's name for SASL_AUTHENTICATION_FAILED
    assert run["same_after_restart"]
    assert run["all"] == sorted(f"v{i}" for i in range(30))
    if run["described"] is not None:
        assert run["described"] == [("SCRAM_SHA_512", 4096)] and run["deleted"] == "_AUTHENTICATION"
    assert run["refusals"] == {**REFUSALS, "erin": ERIN[run["mode"]]}
    if run["mode"] == "zookeeper":
        assert run["others"] == {user: ("NOT_CONTROLLER", None) for user in run["refusals"]}


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca")))


@pytest.mark.parametrize("mode", ["zookeeper", "kraft"])
def test_a_mini_cluster_behind_sasl_ssl(ca, tmp_path, mode):
    with kafkalab.cluster(brokers=3, mode=mode, dir=str(tmp_path / "c"), **configs(ca)) as c:
        if mode == "kraft":   # the controllers keep their CONTROLLER listener alone
            assert c.controllers["listeners"].isna().all()
        check(scenario(c, ca))
        assert LabKafka(c.bootstrap_servers, cluster=c).listeners == c.listeners   # connect(brokers=3)'s handle
        attached = Cluster.attach(c.dir)
        try:
            assert attached.listeners == c.listeners
        finally:
            attached.close()


@pytest.mark.cluster
def test_kafka_39_behind_the_same_listeners(ca, tmp_path):
    backend = KafkaBackend(str(fetch_kafka("3.9")))
    with kafkalab.cluster(brokers=3, dir=str(tmp_path / "c"), backend=backend, **configs(ca)) as c:
        props = open(c.backend.properties_path(c.dir, 1)).read()
        assert f"listeners=PLAINTEXT://127.0.0.1:{c.brokers['port'][0]},CLIENTS://" in props
        check(scenario(c, ca))


@pytest.mark.cluster
def test_kafka_4_kraft_behind_the_same_listeners(ca, tmp_path):
    backend = KRaftBackend(str(fetch_kafka("4")))
    # combined broker+controller nodes: three JVMs, not six, on a CI machine's two cores
    with kafkalab.cluster(brokers=3, mode="kraft", combined=True, dir=str(tmp_path / "c"), backend=backend,
                          **configs(ca)) as c:
        props = open(c.backend.properties_path(c.dir, 1)).read()
        assert "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL" in props
        check(scenario(c, ca))


def test_plain_users_of_the_jaas_config_on_a_mini_kraft_cluster(ca, tmp_path):
    with kafkalab.cluster(brokers=1, mode="kraft", dir=str(tmp_path / "c"), **configs(ca, "PLAIN")) as c:
        conf = student(c, ca, "PLAIN")
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic("plain", 1, 1)])["plain"].result(WAIT_S)
        produce(conf, "plain", 3)
        assert consume_all(conf, "plain", 3) == ["v0", "v1", "v2"]


@pytest.mark.parametrize("listeners, extra, message", [
    ("PLAINTEXT://:9092,CLIENTS://:0", {}, "give each listener port 0"),
    ("PLAINTEXT://:0,OTHER://:0", {}, "OTHER has no security protocol"),
    ("CLIENTS://:0", {}, "the inter-broker listener PLAINTEXT"),
    ("CLIENTS://:0", {"inter.broker.listener.name": "CLIENTS"}, "needs a PLAINTEXT listener for the lab's tooling"),
    ("PLAINTEXT://:0,PLAINTEXT://:0", {}, "given twice"),
    ("PLAINTEXT://10.1.2.3:0", {}, "listen on 127.0.0.1"),
])
def test_listeners_a_lab_cluster_refuses(listeners, extra, message):
    given = {"listeners": listeners, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL",
             **extra}
    with pytest.raises(ValueError, match=message):
        listener_spec(given, "127.0.0.1")
    with pytest.raises(ValueError, match=message):   # before any process starts, in either mode
        kafkalab.cluster(brokers=1, **given)
    with pytest.raises(ValueError, match=message):
        kafkalab.cluster(brokers=1, mode="kraft", **given)


def test_the_lab_listener_comes_first():
    spec = listener_spec({"listeners": "CLIENTS://:0,PLAINTEXT://127.0.0.1:0",
                          "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_SSL"}, "127.0.0.1")
    assert spec.names == ("PLAINTEXT", "CLIENTS") and spec.extra == ("CLIENTS",) and spec.primary == "PLAINTEXT"
    assert spec.listeners("127.0.0.1", 4001, {"CLIENTS": 4002}) == "PLAINTEXT://127.0.0.1:4001,CLIENTS://127.0.0.1:4002"
