"""The oracle for the mini broker's security: one Apache Kafka 4.4 node (KRaft, combined roles) with
StandardAuthorizer, ``super.users=User:ANONYMOUS`` for its PLAINTEXT listener (the lab's admin), a SASL_PLAINTEXT
listener where confluent-kafka's clients are ``User:alice`` (PLAIN from the JAAS config), and an SSL listener with
``ssl.client.auth=required`` (PEM certificates from kafkalab's CertificateAuthority), run with the Prometheus JMX
exporter's agent and kafkalab's rules.

ACLs: with the ACL set of ``test_acl_authorization.py`` given to alice, she sees what that test shows on the mini
broker: Metadata of all topics leaves the other out, names it TOPIC_AUTHORIZATION_FAILED (so does an unknown topic
she may not DESCRIBE); a producer is refused on one topic and delivers to the other (idempotent too); a consumer
without READ on its group gets GROUP_AUTHORIZATION_FAILED; a transactional producer without WRITE on its id
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; CreateAcls needs ALTER on the cluster; and the authorizer's log says so
in the words the mini broker's StandardAuthorizer uses.

Authentication metrics: the scenario of ``tests/helpers/authentication_scenario.py`` (connections that
authenticate, fail to, or never have to, on each listener) moves Kafka's ``socket-server-metrics`` counts exactly
as ``test_authentication_metrics.py`` asserts a mini broker's move. The distribution is ``kafkalab fetch-kafka 4``'s,
the agent ``kafkalab fetch-jmx-exporter``'s."""
from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType, ResourceType)

from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.jmx_agent import fetch_jmx_exporter, javaagent_option
from kafkalab.cluster.metrics import scrape
from kafkalab.cluster.zookeeper import find_java
from kafkalab.security import CertificateAuthority
from tests.helpers import authentication_scenario as scenario

pytestmark = pytest.mark.cluster
TIMEOUT = 30
LOG4J2 = """Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.authorizer.logger
        level: DEBUG
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def kafka_node(tmp_path_factory):
    home = str(fetch_kafka("4"))
    d = tmp_path_factory.mktemp("acl-kafka")
    ca = CertificateAuthority(directory=str(d / "ca"))
    plain, controller, sasl, tls, metrics = (_free_port() for _ in range(5))
    listeners = scenario.broker_listener_configs(ca, plain, sasl, tls)
    ssl_lines = "\n".join(f"{k}={v}" for k, v in listeners.items() if k.startswith("listener.name.ssl."))
    (d / "server.properties").write_text(f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller}
listeners={listeners["listeners"]},CONTROLLER://127.0.0.1:{controller}
advertised.listeners={listeners["listeners"]}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config={scenario.ALICE_JAAS}
{ssl_lines}
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:ANONYMOUS
log.dirs={d}/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
num.partitions=1
""")
    (d / "log4j2.yaml").write_text(LOG4J2)
    java = [find_java(), "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:ParallelGCThreads=1",
            f"-Dlog4j2.configurationFile={d}/log4j2.yaml", f"-Dkafka.logs.dir={d}", "-cp",
            os.path.join(home, "libs", "*")]
    subprocess.run([*java, "kafka.tools.StorageTool", "format", "--cluster-id", "MkU3OEVBNTcwNTJENDM2Qk",
                    "--config", str(d / "server.properties"), "--ignore-formatted"], check=True, capture_output=True)
    out = open(d / "stdout", "w")
    agent = javaagent_option(fetch_jmx_exporter(), "127.0.0.1", metrics)
    proc = subprocess.Popen([java[0], agent, *java[1:], "kafka.Kafka", str(d / "server.properties")], stdout=out,
                            stderr=subprocess.STDOUT)
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{plain}"})
        deadline = time.monotonic() + 120
        while True:
            try:
                admin.list_topics(timeout=1)
                break
            except KafkaException:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
        for f in admin.create_topics([NewTopic(t, 1, 1) for t in ("x-orders", "y-orders", "team-a.events",
                                                                 "team-a.secret")]).values():
            f.result(TIMEOUT)
        A, LIT, PRE, ALLOW = "User:alice", ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED, \
            AclPermissionType.ALLOW
        acls = [AclBinding(ResourceType.TOPIC, "y-orders", LIT, A, "*", op, ALLOW)
                for op in (AclOperation.WRITE, AclOperation.READ)] + [
            AclBinding(ResourceType.TOPIC, "team-a.", PRE, A, "*", AclOperation.WRITE, ALLOW),
            AclBinding(ResourceType.TOPIC, "team-a.secret", LIT, A, "*", AclOperation.WRITE, AclPermissionType.DENY),
            AclBinding(ResourceType.GROUP, "allowed-", PRE, A, "*", AclOperation.READ, ALLOW),
            AclBinding(ResourceType.TRANSACTIONAL_ID, "allowed-tx", LIT, A, "*", AclOperation.WRITE, ALLOW)]
        for f in admin.create_acls(acls).values():
            f.result(TIMEOUT)
        alice = {"bootstrap.servers": f"127.0.0.1:{sasl}", "security.protocol": "SASL_PLAINTEXT",
                 "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
        addresses = {"PLAINTEXT": f"127.0.0.1:{plain}", "SASL_PLAINTEXT": f"127.0.0.1:{sasl}",
                     "SSL": f"127.0.0.1:{tls}"}
        yield alice, d / "stdout", (ca, addresses, f"http://127.0.0.1:{metrics}/metrics")
    finally:
        proc.terminate()
        proc.wait(60)
        out.close()
        ca.close()


def _produce_one(conf, topic, **more):
    errors = []
    p = Producer({**conf, "message.timeout.ms": 10_000, **more})
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(TIMEOUT)
    return errors[0]


def test_kafka_counts_authentications_as_the_mini_broker_does(kafka_node):
    # first in this module: the other test's librdkafka clients go on closing connections for a while after it
    _, _, (ca, addresses, metrics_url) = kafka_node
    delta, want = scenario.run(addresses, ca, lambda: scrape(metrics_url), settle_s=20)
    assert dict(delta) == dict(want)


def test_kafka_refuses_alice_as_the_mini_broker_does(kafka_node):
    alice, stdout, _ = kafka_node
    a = AdminClient(alice)
    assert set(a.list_topics(timeout=TIMEOUT).topics) == {"y-orders", "team-a.events", "team-a.secret"}
    for name in ("x-orders", "nope-topic"):
        err = a.list_topics(name, timeout=TIMEOUT).topics[name].error
        assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce_one(alice, "x-orders").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _produce_one(alice, "y-orders") is None
    assert _produce_one(alice, "y-orders", **{"enable.idempotence": True}) is None
    assert _produce_one(alice, "team-a.events") is None                    # PREFIXED
    assert _produce_one(alice, "team-a.secret").code() == KafkaError.TOPIC_AUTHORIZATION_FAILED   # DENY wins

    def first(group):
        c = Consumer({**alice, "group.id": group, "auto.offset.reset": "earliest"})
        try:
            c.subscribe(["y-orders"])
            for _ in range(40):
                m = c.poll(0.5)
                if m is not None:
                    return m.error().code() if m.error() else None
        finally:
            c.close()
        return "nothing"
    assert first("no-acl-group") == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert first("allowed-group") is None
    c = Consumer({**alice, "group.id": "allowed-848", "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:   # KIP-848: every subscribed topic needs DESCRIBE, else the heartbeat is TOPIC_AUTHORIZATION_FAILED
        c.subscribe(["y-orders", "x-orders"])
        code = "nothing"
        for _ in range(40):
            m = c.poll(0.5)
            if m is not None:
                code = m.error().code() if m.error() else None
                break
    finally:
        c.close()
    assert code == KafkaError.TOPIC_AUTHORIZATION_FAILED
    p = Producer({**alice, "transactional.id": "no-acl-tx"})
    with pytest.raises(KafkaException) as refused:
        p.init_transactions(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    p = Producer({**alice, "transactional.id": "allowed-tx"})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce("y-orders", b"in a transaction")
    p.commit_transaction(TIMEOUT)
    acl = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as refused:
        next(iter(a.create_acls([acl]).values())).result(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    log = stdout.read_text()
    assert ("INFO Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:x-orders for request = Produce with resourceRefCount = 1 based on rule DefaultDeny") in log \
        or ("INFO Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:x-orders for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny") in log
    assert ("DEBUG Principal = User:alice is Allowed operation = WRITE from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:y-orders for request = Produce with resourceRefCount = 1 based on rule MatchingAcl(acl="
            "StandardAcl[resourceType=TOPIC, resourceName=y-orders, patternType=LITERAL, principal=User:alice, "
            "host=*, operation=WRITE, permissionType=ALLOW])") in log

