"""ACLs in ZooKeeper mode, as Kafka 3.9's AclAuthorizer keeps them: /kafka-acl/<Type>/<name> (LITERAL) and
/kafka-acl-extended/prefixed/<Type>/<name> (PREFIXED), each with a change notification every broker applies; the
same test run on two Kafka 3.9 brokers finds the same znodes.

Every PLAINTEXT connection is User:ANONYMOUS, the brokers' own included: it is the super user here (as it must be
for a PLAINTEXT inter-broker listener with an authorizer, in Kafka too)."""
from __future__ import annotations

import functools
import json

import pytest
from kafka.protocol.admin.acl import DescribeAclsRequest, DescribeAclsResponse

import kafkalab
from kafkalab.broker.common.message.codec import build
from tests.helpers import cluster_helpers
from tests.helpers import kafka_wire as wire

pytestmark = pytest.mark.cluster
wait_until = functools.partial(cluster_helpers.wait_until, timeout=15, retry_on=())
ALL = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1, "principal_filter": None,
       "host_filter": None, "operation": 1, "permission_type": 1}


@pytest.fixture(scope="module", params=["mini", "kafka"])
def cluster(request, tmp_path_factory):
    """Two mini brokers, and as the oracle two Apache Kafka 3.9 brokers (``kafkalab fetch-kafka``'s)."""
    if request.param == "kafka":
        from kafkalab.cluster.distribution import fetch_kafka
        fetch_kafka()
    with kafkalab.cluster(brokers=2, dir=str(tmp_path_factory.mktemp(f"acl-zk-{request.param}")),
                          backend=request.param, **{
            "zookeeper.session.timeout.ms": 6000, "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:ANONYMOUS"}) as c:
        yield c


def bootstrap_of(cluster, broker_id) -> str:
    row = next(r for r in cluster.brokers.to_dict("records") if r["id"] == broker_id)
    return f"{row['host']}:{row['port']}"


def described(bootstrap) -> list[tuple]:
    """(type, name, pattern type, principal, operation, permission) of every ACL one broker knows."""
    r = wire.call(bootstrap, build(DescribeAclsRequest, 3, ALL), DescribeAclsResponse, 3)
    assert r.error_code == 0
    return sorted((res.resource_type, res.resource_name, res.pattern_type, a.principal, a.operation,
                   a.permission_type) for res in r.resources for a in res.acls)


def test_acls_in_zookeeper_reach_every_broker(cluster):
    from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       ResourcePatternType, ResourceType)
    admin = AdminClient({"bootstrap.servers": bootstrap_of(cluster, 1)})
    bindings = [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW),
                AclBinding(ResourceType.TOPIC, "team-", ResourcePatternType.PREFIXED, "User:*", "*",
                           AclOperation.READ, AclPermissionType.DENY)]
    for f in admin.create_acls(bindings).values():
        f.result(30)
    zk = cluster.zk
    assert json.loads(zk.get("/kafka-acl/Topic/orders")[0]) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"}]}
    assert json.loads(zk.get("/kafka-acl-extended/prefixed/Topic/team-")[0]) == {"version": 1, "acls": [
        {"principal": "User:*", "permissionType": "Deny", "operation": "Read", "host": "*"}]}
    literal = [zk.get(f"/kafka-acl-changes/{c}")[0] for c in sorted(zk.get_children("/kafka-acl-changes"))]
    assert b"TOPIC:orders" in literal
    extended = [json.loads(zk.get(f"/kafka-acl-extended-changes/{c}")[0])
                for c in zk.get_children("/kafka-acl-extended-changes")]
    assert {"version": 1, "resourceType": "TOPIC", "name": "team-", "patternType": "PREFIXED"} in extended
    assert all(c.startswith("acl_changes_") for c in zk.get_children("/kafka-acl-changes"))
    assert set(zk.get_children("/kafka-acl")) == {"Cluster", "Group", "User", "Topic", "TransactionalId",
                                                   "DelegationToken"}
    want = [(2, "orders", 3, "User:alice", 4, 3), (2, "team-", 4, "User:*", 3, 2)]
    for broker_id in (1, 2):   # broker 2 from its own cache, filled by the change notifications
        wait_until(lambda b=broker_id: described(bootstrap_of(cluster, b)) == want, f"broker {broker_id}'s ACLs")
    # deleted through one broker: gone from ZooKeeper and from every broker
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    deleted = next(iter(admin.delete_acls([everything]).values())).result(30)
    assert len(deleted) == 2
    assert zk.exists("/kafka-acl/Topic/orders") is None and zk.get_children("/kafka-acl/Topic") == []
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/team-") is None
    for broker_id in (1, 2):
        wait_until(lambda b=broker_id: described(bootstrap_of(cluster, b)) == [], f"broker {broker_id} without ACLs")


def test_a_restarted_broker_loads_them_from_zookeeper(cluster):
    from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType,
                                       ResourceType)
    admin = AdminClient({"bootstrap.servers": bootstrap_of(cluster, 1)})
    acl = AclBinding(ResourceType.GROUP, "g", ResourcePatternType.LITERAL, "User:bob", "*", AclOperation.READ,
                     AclPermissionType.ALLOW)
    for f in admin.create_acls([acl]).values():
        f.result(30)
    cluster.kill(2)
    cluster.restart(2)
    # retried while broker 2 comes back (its connection refused meanwhile)
    cluster_helpers.wait_until(lambda: described(bootstrap_of(cluster, 2)) == [(3, "g", 3, "User:bob", 3, 3)],
                               "the restarted broker's ACLs", timeout=60)
