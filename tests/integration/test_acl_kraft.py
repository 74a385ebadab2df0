"""ACLs in KRaft mode, as Kafka 4's StandardAuthorizer and AclControlManager keep them: created and deleted through
one broker (which forwards CreateAcls / DeleteAcls to the active controller, as the client's principal), they are
AccessControlEntryRecords every broker replays, so they apply on every broker; they survive a broker restart and a
controller failover. The same scenario on three combined Kafka 4.4 nodes is the oracle: the refusal/answer matrix
must be the same.

The clients (alice, bob) authenticate with SASL PLAIN on the CLIENTS listener; every PLAINTEXT connection is
User:ANONYMOUS, the brokers' own to each other and to the controllers included, and that is the super user (Kafka 4
authorizes the Envelope, BrokerRegistration and BrokerHeartbeat with CLUSTER_ACTION: without it the brokers could not
even register). The admin client uses PLAINTEXT."""
from __future__ import annotations

import functools

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                   AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                   ResourcePatternType, ResourceType)
from kafka.protocol.admin.acl import DescribeAclsRequest, DescribeAclsResponse

import kafkalab
from kafkalab.broker.common.message.codec import build
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.cluster.kraft_config import KRaftBackend
from tests.helpers import cluster_helpers
from tests.helpers import kafka_wire as wire

pytestmark = pytest.mark.cluster
WAIT_S = 60
wait_until = functools.partial(cluster_helpers.wait_until, timeout=WAIT_S)
STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
        'user_bob="bob-secret";')
CONFIGS = {"listeners": "PLAINTEXT://:0,CLIENTS://:0",
           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENTS:SASL_PLAINTEXT",
           "inter.broker.listener.name": "PLAINTEXT",
           "listener.name.clients.sasl.enabled.mechanisms": "PLAIN",
           "listener.name.clients.plain.sasl.jaas.config": JAAS,
           "authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS"}
ALL = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
       "host_filter": None, "operation": 1, "permission_type": 1}
W, ALLOW, DENY = AclOperation.WRITE, AclPermissionType.ALLOW, AclPermissionType.DENY
ORDERS = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*", W, ALLOW)
TEAM = AclBinding(ResourceType.TOPIC, "team-", ResourcePatternType.PREFIXED, "User:alice", "*", W, ALLOW)
SECRET = AclBinding(ResourceType.TOPIC, "team-secret", ResourcePatternType.LITERAL, "User:alice", "*", W, DENY)
#: (type, name, pattern type, principal, operation, permission) as DescribeAcls has them
DESCRIBED = [(2, "orders", 3, "User:alice", 4, 3), (2, "team-", 4, "User:alice", 4, 3),
             (2, "team-secret", 3, "User:alice", 4, 2)]


@pytest.fixture(params=["mini", "mini-combined", "kafka"])
def cluster(request, tmp_path):
    """Three mini brokers and three mini controllers, three combined mini nodes; as the oracle three combined Kafka
    4.4 nodes."""
    extra = {}
    if request.param == "mini-combined":
        extra = {"combined": True}
    elif request.param == "kafka":   # combined broker+controller nodes: three JVMs, not six
        extra = {"backend": KRaftBackend(str(fetch_kafka("4"))), "combined": True}
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "c"), **extra, **CONFIGS) as c:
        yield c


def address(cluster, broker_id: int) -> str:
    row = next(r for r in cluster_helpers.broker_states(cluster) if r["id"] == broker_id)
    return f"{row['host']}:{row['port']}"


def described(bootstrap: str) -> list[tuple]:
    r = wire.call(bootstrap, build(DescribeAclsRequest, 3, ALL), DescribeAclsResponse, 3)
    assert r.error_code == 0, r
    return sorted((res.resource_type, res.resource_name, res.pattern_type, a.principal, a.operation,
                   a.permission_type) for res in r.resources for a in res.acls)


def every_broker_describes(cluster, want: list[tuple]) -> None:
    for b in cluster.broker_ids:
        wait_until(lambda b=b: described(address(cluster, b)) == want, f"broker {b}'s ACLs to be {want}")


def produce(cluster, user: str, topic: str) -> str:
    """One record as ``user`` through CLIENTS: "ok" or the error's name."""
    errors: list = []
    p = Producer({"bootstrap.servers": cluster.listeners["CLIENTS"], "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret",
                  "enable.idempotence": False, "acks": "all", "linger.ms": 0, "message.timeout.ms": 20000})
    p.produce(topic, value=b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(30)
    assert errors, "no delivery report"
    return "ok" if errors[0] is None else errors[0].name()


def matrix(cluster, topics) -> dict:
    return {(user, t): produce(cluster, user, t) for user in ("alice", "bob") for t in topics}


def outcome(future) -> str | tuple:
    try:
        future.result(WAIT_S)
        return "ok"
    except KafkaException as exc:
        return exc.args[0].name(), exc.args[0].str()


def alice_admin_requests(alice_admin) -> dict:
    """Forwarded admin requests as alice: what the controller's ControllerApis checks answer."""
    out = {}
    out["create_topic"] = outcome(alice_admin.create_topics([NewTopic("alice-t", 1, 1)])["alice-t"])
    if out["create_topic"] == "ok":
        wait_until(lambda: "alice-t" in alice_admin.list_topics(timeout=10).topics, "alice-t in the metadata")
    out["create_partitions"] = outcome(alice_admin.create_partitions([NewPartitions("alice-t", 2)])["alice-t"])
    resource = ConfigResource("TOPIC", "alice-t", incremental_configs=[
        ConfigEntry("retention.ms", "100000", incremental_operation=AlterConfigOpType.SET)])
    out["alter_configs"] = outcome(alice_admin.incremental_alter_configs([resource])[resource])
    out["delete_topic"] = outcome(alice_admin.delete_topics(["alice-t"])["alice-t"])
    return out


def scenario(cluster) -> dict:
    admin = AdminClient({"bootstrap.servers": address(cluster, 1)})   # everything asked of broker 1
    topics = {"orders": 2, "team-a": 3, "team-secret": 2}              # each led by another broker than 1
    futures = admin.create_topics([NewTopic(t, 1, replica_assignment=[[leader]]) for t, leader in topics.items()])
    for f in futures.values():
        f.result(WAIT_S)
    out: dict = {"before": matrix(cluster, topics)}
    for f in admin.create_acls([ORDERS, TEAM, SECRET]).values():
        f.result(WAIT_S)
    again = admin.create_acls([ORDERS])                                # there already: a success, no second ACL
    out["again"] = [f.result(WAIT_S) for f in again.values()]
    every_broker_describes(cluster, DESCRIBED)
    out["after_create"] = matrix(cluster, topics)
    # malformed creations: the controller's (or the broker's) answers
    bad = [AclBinding(ResourceType.BROKER, "other", ResourcePatternType.LITERAL, "User:x", "*",
                      AclOperation.ALTER, ALLOW)]
    out["bad"] = []
    for f in admin.create_acls(bad).values():
        try:
            f.result(WAIT_S)
            out["bad"].append("ok")
        except KafkaException as exc:
            out["bad"].append((exc.args[0].name(), exc.args[0].str()))
    # alice may not change the ACLs (ALTER on the cluster), even through a broker that forwards
    alice_admin = AdminClient({"bootstrap.servers": cluster.listeners["CLIENTS"], "security.protocol": "SASL_PLAINTEXT",
                               "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
    try:
        for f in alice_admin.create_acls([AclBinding(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL,
                                                     "User:alice", "*", W, ALLOW)]).values():
            f.result(WAIT_S)
        out["alice_creates"] = "ok"
    except KafkaException as exc:
        out["alice_creates"] = exc.args[0].name()
    out["alice_admin"] = alice_admin_requests(alice_admin)
    for f in admin.create_acls([AclBinding(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, "User:alice",
                                           "*", AclOperation.ALL, ALLOW)]).values():
        f.result(WAIT_S)
    wait_until(lambda: all(len(described(address(cluster, b))) == 4 for b in cluster.broker_ids), "alice-'s ACL")
    out["alice_admin_allowed"] = alice_admin_requests(alice_admin)
    for f in admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "alice-", ResourcePatternType.PREFIXED, None,
                                                 None, AclOperation.ANY, AclPermissionType.ANY)]).values():
        f.result(WAIT_S)
    # a broker restarted: it replays the ACLs from its metadata log
    cluster.restart(2)
    every_broker_describes(cluster, DESCRIBED)
    out["after_broker_restart"] = produce(cluster, "alice", "orders")
    # the active controller fails over: the next one has the ACLs too (it deletes by them)
    active = cluster.controller
    cluster.stop(active)
    wait_until(lambda: cluster.controller not in (None, active), "another active controller")
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        deleted = admin.delete_acls([AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL,
                                                      None, None, AclOperation.ANY, AclPermissionType.ANY)])
        out["deleted"] = [[(b.name, b.principal, b.permission_type.name) for b in f.result(WAIT_S)]
                          for f in deleted.values()]
        running = [b for b in cluster.broker_ids if b != active]
        for b in running:
            wait_until(lambda b=b: described(address(cluster, b)) == DESCRIBED[1:], f"broker {b} without orders' ACL")
    finally:
        cluster.restart(active)
    every_broker_describes(cluster, DESCRIBED[1:])
    out["after_delete"] = produce(cluster, "alice", "orders")
    # two filters matching the same ACL: Kafka 4 lists it in each filter's result (and removes it once)
    overlapping = admin.delete_acls([
        AclBindingFilter(ResourceType.TOPIC, "team-", ResourcePatternType.PREFIXED, None, None, AclOperation.ANY,
                         AclPermissionType.ANY),
        AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                         AclPermissionType.ANY)])
    out["overlapping"] = [sorted((b.name, b.resource_pattern_type.name) for b in f.result(WAIT_S))
                          for f in overlapping.values()]
    every_broker_describes(cluster, [])
    return out


REFUSED = "TOPIC_AUTHORIZATION_FAILED"
EXPECTED = {
    "before": {("alice", "orders"): REFUSED, ("alice", "team-a"): REFUSED, ("alice", "team-secret"): REFUSED,
               ("bob", "orders"): REFUSED, ("bob", "team-a"): REFUSED, ("bob", "team-secret"): REFUSED},
    "again": [None],
    "after_create": {("alice", "orders"): "ok", ("alice", "team-a"): "ok", ("alice", "team-secret"): REFUSED,
                     ("bob", "orders"): REFUSED, ("bob", "team-a"): REFUSED, ("bob", "team-secret"): REFUSED},
    "bad": [("INVALID_REQUEST", "The only valid name for the CLUSTER resource is kafka-cluster")],
    "alice_creates": "CLUSTER_AUTHORIZATION_FAILED",
    # the messages as librdkafka shows them ("Broker: ...": none in the response, or not read)
    "alice_admin": {"create_topic": (REFUSED, "Authorization failed."),
                    "create_partitions": (REFUSED, "Broker: Topic authorization failed"),
                    "alter_configs": (REFUSED, "Topic authorization failed."),
                    "delete_topic": (REFUSED, "Broker: Topic authorization failed")},
    "alice_admin_allowed": {"create_topic": "ok", "create_partitions": "ok", "alter_configs": "ok",
                            "delete_topic": "ok"},
    "after_broker_restart": "ok",
    "deleted": [[("orders", "User:alice", "ALLOW")]],
    "after_delete": REFUSED,
    "overlapping": [[("team-", "PREFIXED")], [("team-", "PREFIXED"), ("team-secret", "LITERAL")]],
}


def test_acls_in_kraft_apply_on_every_broker_and_survive_restarts(cluster):
    assert scenario(cluster) == EXPECTED
