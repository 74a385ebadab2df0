"""The automatic check of lab 11 (security): ``check_11(...)``, and the lab's clients (``produce_as``, ``consume_as``).

It does not read the student's list of ACLs for what it allows: it asks the broker. As alice, bob and mallory, each
logged in over SASL_SSL, it produces, consumes and commits on the lab's topics and on a ``payments-`` topic of its
own made after the ACLs (a team's *future* topic), and holds what the broker allowed and refused against the goal.
Then it reads the ACLs back (DescribeAcls) for least privilege: no ``ALL`` operation, no wildcard principal or
resource name, no ACL for mallory. Step 2 runs a transactional producer as alice with the lab's transactional id and
with another one.
"""
from __future__ import annotations

import logging
import time
import uuid

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

from kafkalab.checks import Report, unfilled, unfilled_detail

USERS = {"alice": "alice-secret", "bob": "bob-secret", "mallory": "mallory-secret", "admin": "admin-secret"}
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
TOPICS = ("payments-ledger", "payments-refunds", "payments-audit", "orders", "secrets")
TRANSACTIONAL_ID = "payments-tx"
TIMEOUT = 20
#: the clients' own log lines (a refused request logs errors, a refused transactional id a fatal one: both are the
#: outcomes asked for here) go to a logger that keeps them quiet
QUIET = logging.getLogger("lab11.librdkafka")
QUIET.propagate = False
QUIET.addHandler(logging.NullHandler())
ANY = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                       AclPermissionType.ANY)


def broker_configs(ca) -> dict:
    """The lab broker: the lab's PLAINTEXT listener (User:ANONYMOUS, a super user: the notebook's own admin client)
    and SASL_SSL with PLAIN users; Kafka's AclAuthorizer with nothing allowed without an ACL."""
    return {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0", **ca.broker_configs(listener="SASL_SSL"),
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "false", "super.users": "User:ANONYMOUS;User:admin",
            "num.partitions": 1, "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1}


def as_user(broker, ca, user: str) -> dict:
    return {**ca.client_configs(), "bootstrap.servers": broker.listeners["SASL_SSL"], "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user], "logger": QUIET}


def produce_as(broker, ca, user: str, topic: str, transactional_id: str | None = None) -> str:
    """One record as ``user``: ``"delivered"`` or the name of the error that refused it."""
    conf = {**as_user(broker, ca, user), "message.timeout.ms": 10_000}
    if transactional_id is not None:
        conf["transactional.id"] = transactional_id
    producer = Producer(conf)
    try:
        if transactional_id is not None:
            producer.init_transactions(TIMEOUT)
            producer.begin_transaction()
        errors: list[str] = []
        producer.produce(topic, b"x", on_delivery=lambda err, msg: err and errors.append(err.name()))
        if transactional_id is not None:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)
        return errors[0] if errors else "delivered"
    except KafkaException as exc:
        return exc.args[0].name()
    finally:
        try:
            producer.purge()
            producer.flush(1)
        except KafkaException:   # a producer in a fatal state (a refused transactional id) refuses these too
            pass


def consume_as(broker, ca, user: str, topic: str, group: str) -> str:
    """Read ``topic`` from the beginning in ``group`` as ``user`` and commit: ``"read"`` or the refusal's name."""
    consumer = Consumer({**as_user(broker, ca, user), "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    return m.error().name()
                continue
            consumer.commit(m, asynchronous=False)
            return "read"
        return "nothing read"
    except KafkaException as exc:
        return exc.args[0].name()
    finally:
        consumer.close()


def attempts(broker, ca, future_topic: str) -> dict:
    """What the broker allows: (who, what) -> outcome."""
    out = {}
    lab = Producer({"bootstrap.servers": broker.bootstrap_servers, "logger": QUIET})   # PLAINTEXT: a super user
    lab.produce("orders", b"an order for bob to read")   # new, past the group's committed offset
    lab.flush(TIMEOUT)
    for topic in ("payments-ledger", future_topic, "payments-audit", "orders"):
        out[("alice", f"produce to {topic}")] = produce_as(broker, ca, "alice", topic)
    out[("bob", "consume orders in group reports")] = consume_as(broker, ca, "bob", "orders", "reports")
    out[("bob", "consume orders in group adhoc")] = consume_as(broker, ca, "bob", "orders", "adhoc")
    out[("bob", "consume payments-ledger in group reports")] = consume_as(broker, ca, "bob", "payments-ledger",
                                                                          "reports")
    out[("bob", "produce to orders")] = produce_as(broker, ca, "bob", "orders")
    out[("mallory", "produce to payments-ledger")] = produce_as(broker, ca, "mallory", "payments-ledger")
    out[("mallory", "consume orders in group reports")] = consume_as(broker, ca, "mallory", "orders", "reports")
    return out


def goal(future_topic: str) -> dict:
    t, g = "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"
    return {("alice", "produce to payments-ledger"): "delivered", ("alice", f"produce to {future_topic}"): "delivered",
            ("alice", "produce to payments-audit"): t, ("alice", "produce to orders"): t,
            ("bob", "consume orders in group reports"): "read", ("bob", "consume orders in group adhoc"): g,
            ("bob", "consume payments-ledger in group reports"): t, ("bob", "produce to orders"): t,
            ("mallory", "produce to payments-ledger"): t, ("mallory", "consume orders in group reports"): (t, g)}


def least_privilege_problems(ops) -> list[str]:
    problems = []
    for b in ops.describe_acls(ANY).result(TIMEOUT):
        acl = (f"{b.permission_type.name} {b.principal} {b.operation.name} "
               f"{b.restype.name}:{b.resource_pattern_type.name}:{b.name}")
        if b.operation == AclOperation.ALL and b.permission_type == AclPermissionType.ALLOW:
            problems.append(f"{acl}: ALL allows far more than the step needs (ALTER, DELETE, ...)")
        if b.principal in ("User:*", "*"):
            problems.append(f"{acl}: the wildcard principal is everyone, mallory too")
        if b.name == "*" and b.permission_type == AclPermissionType.ALLOW:
            problems.append(f"{acl}: the wildcard resource name is every {b.restype.name.lower()}")
        if b.principal == "User:mallory" and b.permission_type == AclPermissionType.ALLOW:
            problems.append(f"{acl}: mallory is allowed nothing")
    return problems


def check_11(broker, ca, ops, team_acls, tx_acls) -> None:
    """Check lab 11 (``labs/11_security``); ``ops``: the notebook's admin client on the PLAINTEXT listener."""
    report = Report("Lab 11 — security: least-privilege ACLs for a team, and a transactional producer")
    future = f"payments-{uuid.uuid4().hex[:6]}"   # a topic the team makes tomorrow: the ACLs must cover it too
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "logger": QUIET})
    for f in admin.create_topics([NewTopic(future, 1, 1)]).values():
        f.result(TIMEOUT)
    name = "team_acls: alice writes every payments- topic but payments-audit, bob reads orders in group reports"
    with report.answer(name, "team_acls"):
        if unfilled(team_acls) or not list(team_acls):
            report.step(name, False, unfilled_detail("team_acls", team_acls, "a list of AclBinding"))
        else:
            seen, want = attempts(broker, ca, future), goal(future)
            wrong = [f"{who} {what}: {seen[(who, what)]}, wanted {want[(who, what)]}"
                     for (who, what) in want if seen[(who, what)] not in
                     (want[(who, what)] if isinstance(want[(who, what)], tuple) else (want[(who, what)],))]
            hint = ""
            if any(future in w for w in wrong):
                hint = f"\n(a LITERAL ACL names today's topics only: {future} was made after your ACLs)"
            report.step(name, not wrong, "\n".join(wrong) + hint)
    name = "least privilege: no ALL, no wildcard principal or name, nothing for mallory"
    with report.answer(name, "team_acls"):
        if unfilled(team_acls):
            report.step(name, False, unfilled_detail("team_acls", team_acls))
        else:
            problems = least_privilege_problems(ops)
            report.step(name, not problems, "\n".join(problems))
    name = f"tx_acls: alice's transactional producer works with transactional.id={TRANSACTIONAL_ID}, and only that one"
    with report.answer(name, "tx_acls"):
        if unfilled(tx_acls) or not list(tx_acls):
            report.step(name, False, unfilled_detail("tx_acls", tx_acls, "a list of AclBinding"))
        else:
            mine = produce_as(broker, ca, "alice", "payments-ledger", TRANSACTIONAL_ID)
            other = produce_as(broker, ca, "alice", "payments-ledger", f"other-{uuid.uuid4().hex[:6]}")
            report.step(name, (mine, other) == ("delivered", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
                        f"with {TRANSACTIONAL_ID}: {mine}; with another transactional.id: {other} "
                        f"(wanted delivered / TRANSACTIONAL_ID_AUTHORIZATION_FAILED)")
    report.finish()
