"""check_11 (labs/11_security): right answers pass, each kind of wrong or unfilled answer is named.

The check logs in as the lab's users over SASL_SSL and asks the broker what they may do; here it runs against an
embedded mini broker with the lab's configs (a fresh one per case: ACLs stay on a broker). The lab's solution
notebook runs the same check under nbval, and tests/test_labs.py the unfilled exercise."""
from __future__ import annotations

import importlib.util
import os

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

import kafkalab
from kafkalab.checks import LabCheckFailed
from kafkalab.security import CertificateAuthority

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("lab11_check", os.path.join(ROOT, "labs", "11_security", "check.py"))
lab11 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab11)

T, G, TX = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID
LIT, PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acl(rtype, name, pattern, principal, op, perm=ALLOW):
    return AclBinding(rtype, name, pattern, principal, "*", op, perm)


RIGHT = [acl(T, "payments-", PRE, "User:alice", AclOperation.WRITE),
         acl(T, "payments-audit", LIT, "User:alice", AclOperation.WRITE, DENY),
         acl(T, "orders", LIT, "User:bob", AclOperation.READ), acl(G, "reports", LIT, "User:bob", AclOperation.READ)]
RIGHT_TX = [acl(TX, "payments-tx", LIT, "User:alice", AclOperation.WRITE)]


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    with CertificateAuthority(directory=str(tmp_path_factory.mktemp("ca"))) as authority:
        yield authority


@pytest.fixture
def lab(tmp_path, ca):
    """The lab's broker, its topics, and an admin client that grants the given ACLs."""
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **lab11.broker_configs(ca)) as broker:
        ops = AdminClient({"bootstrap.servers": broker.bootstrap_servers, "logger": lab11.QUIET})
        for f in ops.create_topics([NewTopic(t, 1, 1) for t in lab11.TOPICS]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "logger": lab11.QUIET})
        p.produce("orders", b"o")
        p.flush(30)

        def check(team_acls, tx_acls):
            for bindings in (team_acls, tx_acls):
                if bindings is not ...:
                    for f in ops.create_acls(bindings).values():
                        f.result(30)
            lab11.check_11(broker, ca, ops, team_acls, tx_acls)
        yield check


def test_right_answers_pass(lab, capsys):
    lab(RIGHT, RIGHT_TX)
    assert "All checks passed" in capsys.readouterr().out


def test_a_literal_acl_misses_tomorrows_topic_and_all_is_not_least_privilege(lab, capsys):
    wrong = [acl(T, t, LIT, "User:alice", AclOperation.ALL) for t in ("payments-ledger", "payments-refunds")] + [
        acl(T, "orders", LIT, "User:bob", AclOperation.READ), acl(G, "reports", LIT, "User:bob", AclOperation.READ)]
    with pytest.raises(LabCheckFailed):
        lab(wrong, [acl(TX, "payments-", PRE, "User:alice", AclOperation.WRITE)])
    out = capsys.readouterr().out
    assert "a LITERAL ACL names today's topics only" in out
    assert "ALL allows far more than the step needs" in out
    assert "alice produce to payments-" in out and ": TOPIC_AUTHORIZATION_FAILED, wanted delivered" in out
    assert "✓ tx_acls" in out   # a PREFIXED payments- id: the check's other-<hex> id is still refused


def test_unfilled_answers_are_named(lab, capsys):
    with pytest.raises(LabCheckFailed):
        lab(..., ...)
    out = capsys.readouterr().out
    assert "team_acls is still `...`" in out and "tx_acls is still `...`" in out
