"""ACL authorization end to end: a mini broker with Kafka's AclAuthorizer, ACLs made over the wire with
confluent-kafka's AdminClient, and confluent-kafka's clients refused as Kafka refuses them.

Every PLAINTEXT client is ``User:ANONYMOUS``: the ACLs are made while ANONYMOUS is a super user, the broker is
restarted without ``super.users`` (the ACLs stay, in ``acls.json``), and the refusals come from which topics,
groups and transactional ids ANONYMOUS has ACLs for."""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding, AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic, ResourcePatternType,
    ResourceType)

import kafkalab

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ANON = "User:ANONYMOUS"
TIMEOUT = 30
ANY_FILTER = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)


def acl(rtype, name, op, perm=AclPermissionType.ALLOW, pattern=ResourcePatternType.LITERAL, principal=ANON):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


def create(admin, bindings):
    for f in admin.create_acls(bindings).values():
        assert f.result(TIMEOUT) is None


def admin_of(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap_servers})


def produce_one(broker, topic, **conf):
    """The delivery error of one record (None: delivered)."""
    errors = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 10_000, **conf})
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    p.flush(TIMEOUT)
    assert len(errors) == 1
    return errors[0]


def test_acls_made_described_and_deleted_over_the_wire(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path), **{"authorizer.class.name": ACL_AUTHORIZER,
                                                   "super.users": ANON}) as broker:
        a = admin_of(broker)
        lit = acl(ResourceType.TOPIC, "orders", AclOperation.WRITE, principal="User:alice")
        pre = acl(ResourceType.TOPIC, "team-", AclOperation.READ, pattern=ResourcePatternType.PREFIXED,
                  principal="User:*")
        grp = acl(ResourceType.GROUP, "g", AclOperation.READ, AclPermissionType.DENY, principal="User:bob")
        create(a, [lit, pre, grp])
        create(a, [lit])     # again: no error, nothing new
        assert sorted(map(str, a.describe_acls(ANY_FILTER).result(TIMEOUT))) == sorted(map(str, [lit, pre, grp]))
        # MATCH: every pattern that applies to the resource team-orders
        match = AclBindingFilter(ResourceType.TOPIC, "team-orders", ResourcePatternType.MATCH, None, None,
                                 AclOperation.ANY, AclPermissionType.ANY)
        assert [str(b) for b in a.describe_acls(match).result(TIMEOUT)] == [str(pre)]
        by_principal = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:bob", None,
                                        AclOperation.ANY, AclPermissionType.ANY)
        assert [str(b) for b in a.describe_acls(by_principal).result(TIMEOUT)] == [str(grp)]
        # Kafka's validation: the cluster resource has one name
        bad = AclBinding(ResourceType.BROKER, "my-cluster", ResourcePatternType.LITERAL, ANON, "*",
                         AclOperation.ALTER, AclPermissionType.ALLOW)
        with pytest.raises(KafkaException) as refused:
            next(iter(a.create_acls([bad]).values())).result(TIMEOUT)
        assert refused.value.args[0].code() == KafkaError.INVALID_REQUEST
        assert "The only valid name for the CLUSTER resource is kafka-cluster" in refused.value.args[0].str()
        deleted = next(iter(a.delete_acls([by_principal]).values())).result(TIMEOUT)
        assert [str(b) for b in deleted] == [str(grp)]
        assert len(a.describe_acls(ANY_FILTER).result(TIMEOUT)) == 2
    # kept in the log directory: a restarted broker has them
    with kafkalab.mini(log_dir=str(tmp_path), **{"authorizer.class.name": ACL_AUTHORIZER,
                                                   "super.users": ANON}) as broker:
        assert sorted(map(str, admin_of(broker).describe_acls(ANY_FILTER).result(TIMEOUT))) == sorted(
            map(str, [lit, pre]))


def test_without_an_authorizer_the_acl_apis_say_security_disabled(broker):
    a = admin_of(broker)   # kept until its future is done
    f = next(iter(a.create_acls([acl(ResourceType.TOPIC, "t", AclOperation.READ)]).values()))
    with pytest.raises(KafkaException) as refused:
        f.result(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.SECURITY_DISABLED
    assert produce_one(broker, "no-authorizer-topic") is None     # and everything is allowed, as before


@pytest.fixture(scope="module")
def locked_down(tmp_path_factory):
    """Topics and ACLs made by ANONYMOUS as a super user; then the same broker restarted without super users."""
    log_dir = str(tmp_path_factory.mktemp("acl"))
    cfg = {"authorizer.class.name": ACL_AUTHORIZER, "num.partitions": 1}
    with kafkalab.mini(log_dir=log_dir, **cfg, **{"super.users": ANON}) as broker:
        a = admin_of(broker)
        for f in a.create_topics([NewTopic(t, 1, 1) for t in ("x-orders", "y-orders", "team-a.events",
                                                             "team-a.secret")]).values():
            f.result(TIMEOUT)
        T, G, TX = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
        create(a, [
            acl(T, "y-orders", AclOperation.WRITE), acl(T, "y-orders", AclOperation.READ),
            acl(T, "team-a.", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
            acl(T, "team-a.secret", AclOperation.WRITE, AclPermissionType.DENY),
            acl(G, "allowed-", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
            acl(TX, "allowed-tx", AclOperation.WRITE),
        ])
    with kafkalab.mini(log_dir=log_dir, **cfg) as broker:
        yield broker


def test_a_producer_refused_on_one_topic_allowed_on_another(locked_down):
    err = produce_one(locked_down, "x-orders")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_one(locked_down, "y-orders") is None
    rows = locked_down.authorizer_log()
    assert {"principal": ANON, "operation": "Write", "resource": "Topic:LITERAL:y-orders", "host": "127.0.0.1",
            "decision": "ALLOWED", "request": "Produce"} in rows
    assert any(r["resource"] == "Topic:LITERAL:x-orders" and r["decision"] == "DENIED" for r in rows)


def test_an_idempotent_producer_needs_write_on_some_topic(locked_down):
    assert produce_one(locked_down, "y-orders", **{"enable.idempotence": True}) is None


def test_prefixed_allow_and_a_deny_overriding_it(locked_down):
    assert produce_one(locked_down, "team-a.events") is None
    err = produce_one(locked_down, "team-a.secret")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_metadata_of_all_topics_leaves_out_what_may_not_be_described(locked_down):
    a = admin_of(locked_down)
    topics = set(a.list_topics(timeout=TIMEOUT).topics)
    # DESCRIBE is implied by WRITE/READ: x-orders has no ACL for ANONYMOUS, so it is not listed
    assert topics == {"y-orders", "team-a.events", "team-a.secret"}
    named = a.list_topics("x-orders", timeout=TIMEOUT).topics["x-orders"]
    assert named.error is not None and named.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_consumer_needs_read_on_its_group(locked_down):
    def first_error(group):
        c = Consumer({"bootstrap.servers": locked_down.bootstrap_servers, "group.id": group,
                      "auto.offset.reset": "earliest"})
        try:
            c.subscribe(["y-orders"])
            for _ in range(40):
                m = c.poll(0.5)
                if m is not None and m.error() is not None:
                    return m.error().code()      # read before close(): the error lives in the consumer
                if m is not None:
                    return None
        finally:
            c.close()
        return "nothing"
    produce_one(locked_down, "y-orders")
    err = first_error(f"other-{uuid.uuid4().hex[:6]}")
    assert err == KafkaError.GROUP_AUTHORIZATION_FAILED
    assert first_error(f"allowed-{uuid.uuid4().hex[:6]}") is None      # a record: READ on topic and group


def test_a_kip_848_consumer_needs_describe_on_every_subscribed_topic(locked_down):
    # as Kafka 4.4 answers it (tests/integration/test_security_on_kafka.py): the whole heartbeat refused
    def first_error(topics):
        c = Consumer({"bootstrap.servers": locked_down.bootstrap_servers, "group.protocol": "consumer",
                      "group.id": f"allowed-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
        try:
            c.subscribe(topics)
            for _ in range(40):
                m = c.poll(0.5)
                if m is not None:
                    return m.error().code() if m.error() is not None else None
        finally:
            c.close()
        return "nothing"
    assert first_error(["y-orders", "x-orders"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    produce_one(locked_down, "y-orders")
    assert first_error(["y-orders"]) is None


def test_a_transactional_producer_needs_write_on_its_transactional_id(locked_down):
    p = Producer({"bootstrap.servers": locked_down.bootstrap_servers, "transactional.id": "other-tx"})
    with pytest.raises(KafkaException) as refused:
        p.init_transactions(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    p = Producer({"bootstrap.servers": locked_down.bootstrap_servers, "transactional.id": "allowed-tx"})
    p.init_transactions(TIMEOUT)
    p.begin_transaction()
    p.produce("y-orders", b"in a transaction")
    p.commit_transaction(TIMEOUT)


def test_without_super_user_the_acl_apis_need_cluster_alter(locked_down):
    a = admin_of(locked_down)
    with pytest.raises(KafkaException) as refused:
        next(iter(a.create_acls([acl(ResourceType.TOPIC, "t", AclOperation.READ)]).values())).result(TIMEOUT)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_describing_scram_users_needs_describe_on_the_cluster(locked_down):
    """Kafka's KafkaApis (3.9 and 4.x): DESCRIBE on the cluster, else getErrorResponse's answer - the error at the
    top and once per user asked for, no message, and (as Kafka's) no user name in those results."""
    from kafka.protocol.admin.users import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

    from kafkalab.broker.common.message.codec import build
    from tests.helpers import kafka_wire as wire
    request = build(DescribeUserScramCredentialsRequest, 0, {"users": [{"name": "alice"}, {"name": "bob"}]})
    answer = wire.call(locked_down.bootstrap_servers, request, DescribeUserScramCredentialsResponse, 0)
    assert (answer.error_code, answer.error_message) == (KafkaError.CLUSTER_AUTHORIZATION_FAILED, None)
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("", KafkaError.CLUSTER_AUTHORIZATION_FAILED, None)] * 2
    every = wire.call(locked_down.bootstrap_servers, build(DescribeUserScramCredentialsRequest, 0, {"users": None}),
                      DescribeUserScramCredentialsResponse, 0)
    assert (every.error_code, every.results) == (KafkaError.CLUSTER_AUTHORIZATION_FAILED, [])


def test_kafka_pythons_admin_client_too(tmp_path, broker):
    """kafka-python's KafkaAdminClient makes, lists and deletes ACLs; unlike librdkafka it reports DescribeAcls'
    own error, so a broker without an authorizer is seen to answer SECURITY_DISABLED."""
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             KafkaAdminClient, ResourcePattern, ResourcePatternFilter)
    from kafka.admin import ResourceType as KResourceType
    from kafka.errors import SecurityDisabledError
    read = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
               ResourcePattern(KResourceType.TOPIC, "orders", ACLResourcePatternType.LITERAL))
    everything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                           ResourcePatternFilter(KResourceType.ANY, None, ACLResourcePatternType.ANY))
    with kafkalab.mini(log_dir=str(tmp_path), **{"authorizer.class.name": ACL_AUTHORIZER,
                                                   "super.users": ANON}) as secured:
        k = KafkaAdminClient(bootstrap_servers=secured.bootstrap_servers)
        try:
            assert k.create_acls([read])["failed"] == []
            acls, error = k.describe_acls(everything)
            assert [str(a) for a in acls] == [str(read)] and error.errno == 0
            [(_, deleted, error)] = k.delete_acls([everything])
            assert [str(a) for a in deleted] == [str(read)] and error.errno == 0
        finally:
            k.close()
    k = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
    try:
        with pytest.raises(SecurityDisabledError):
            k.describe_acls(everything)
    finally:
        k.close()
