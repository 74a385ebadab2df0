"""AclAuthorizer's decisions as Kafka 3.9's (kafka.security.authorizer.AclAuthorizer.authorizeAction): LITERAL,
PREFIXED and the ``*`` wildcard, principals and hosts incl. wildcards, DENY winning, implied operations, super
users, allow.everyone.if.no.acl.found; the filters of DescribeAcls / DeleteAcls; the audit log's format."""
from __future__ import annotations

import json
import logging

import pytest

from kafkalab.broker.security.authorizer.acl import (
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation as Op,
    AclPermissionType as Perm, PatternType as PT, ResourcePattern, ResourcePatternFilter, ResourceType as RT)
from kafkalab.broker.security.authorizer.acl_authorizer import Action, AclAuthorizer, parse_super_users
from kafkalab.broker.security.authorizer.acl_store import (
    FileAclStore, decode_change, encode_change, encode_entries, decode_entries, resource_path)

ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER_HOST = "127.0.0.1", "10.0.0.9"


def binding(rtype, name, pt=PT.LITERAL, principal=ALICE, op=Op.WRITE, perm=Perm.ALLOW, host="*"):
    return AclBinding(ResourcePattern(rtype, name, pt), AccessControlEntry(principal, host, op, perm))


def authorizer(*bindings, **kw):
    auth = AclAuthorizer(**kw)
    assert auth.create_acls(list(bindings)) == [None] * len(bindings)
    return auth


def allowed(auth, op, rtype, name, principal=ALICE, host=HOST):
    return auth.authorize(principal, host, [Action(op, ResourcePattern(rtype, name))], "Test")[0]


def test_no_acl_denies_unless_allow_everyone_if_no_acl_found():
    assert not allowed(AclAuthorizer(), Op.WRITE, RT.TOPIC, "orders")
    assert allowed(AclAuthorizer(allow_everyone_if_no_acl_found=True), Op.WRITE, RT.TOPIC, "orders")


def test_allow_everyone_applies_only_where_no_acl_at_all_matches_the_resource():
    # an ACL for bob on the topic: alice is no longer "no ACL found", she is denied
    auth = authorizer(binding(RT.TOPIC, "orders", principal=BOB), allow_everyone_if_no_acl_found=True)
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders")
    assert allowed(auth, Op.WRITE, RT.TOPIC, "orders", principal=BOB)
    assert allowed(auth, Op.WRITE, RT.TOPIC, "payments")           # no ACL on that one


def test_literal_matches_the_name_exactly_and_the_type():
    auth = authorizer(binding(RT.TOPIC, "orders"))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "orders")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders2")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "order")
    assert not allowed(auth, Op.READ, RT.GROUP, "orders")
    assert not allowed(auth, Op.READ, RT.TOPIC, "orders")          # another operation


def test_wildcard_literal_matches_every_resource_of_its_type():
    auth = authorizer(binding(RT.TOPIC, "*"))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "anything")
    assert not allowed(auth, Op.WRITE, RT.TRANSACTIONAL_ID, "anything")


def test_prefixed_matches_names_starting_with_it():
    auth = authorizer(binding(RT.TOPIC, "team-a.", PT.PREFIXED))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "team-a.orders")
    assert allowed(auth, Op.WRITE, RT.TOPIC, "team-a.")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "team-b.orders")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "team-a")
    # a PREFIXED "*" is a prefix like any other: only names starting with "*"
    auth = authorizer(binding(RT.TOPIC, "*", PT.PREFIXED))
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders")


def test_deny_wins_over_allow_whatever_the_pattern():
    auth = authorizer(binding(RT.TOPIC, "team-a.", PT.PREFIXED),
                      binding(RT.TOPIC, "team-a.secret", perm=Perm.DENY))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "team-a.orders")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "team-a.secret")
    auth = authorizer(binding(RT.TOPIC, "orders"), binding(RT.TOPIC, "*", principal="User:*", perm=Perm.DENY))
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders")


def test_deny_of_all_denies_every_operation_and_allow_of_all_allows_every_one():
    auth = authorizer(binding(RT.TOPIC, "orders", op=Op.ALL))
    for op in (Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DELETE):
        assert allowed(auth, op, RT.TOPIC, "orders")
    auth.create_acls([binding(RT.TOPIC, "orders", op=Op.ALL, perm=Perm.DENY)])
    assert not allowed(auth, Op.READ, RT.TOPIC, "orders")


def test_implied_operations():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        auth = authorizer(binding(RT.TOPIC, "orders", op=op))
        assert allowed(auth, Op.DESCRIBE, RT.TOPIC, "orders"), op
    auth = authorizer(binding(RT.TOPIC, "orders", op=Op.ALTER_CONFIGS))
    assert allowed(auth, Op.DESCRIBE_CONFIGS, RT.TOPIC, "orders")
    assert not allowed(auth, Op.DESCRIBE, RT.TOPIC, "orders")
    # implication only goes one way, and a DENY of the implied one still wins
    auth = authorizer(binding(RT.TOPIC, "orders", op=Op.DESCRIBE))
    assert not allowed(auth, Op.READ, RT.TOPIC, "orders")
    auth = authorizer(binding(RT.TOPIC, "orders", op=Op.READ), binding(RT.TOPIC, "orders", op=Op.DESCRIBE,
                                                                       perm=Perm.DENY))
    assert not allowed(auth, Op.DESCRIBE, RT.TOPIC, "orders")
    assert allowed(auth, Op.READ, RT.TOPIC, "orders")
    # a DENY of READ does not deny DESCRIBE
    auth = authorizer(binding(RT.TOPIC, "orders", op=Op.WRITE), binding(RT.TOPIC, "orders", op=Op.READ,
                                                                        perm=Perm.DENY))
    assert allowed(auth, Op.DESCRIBE, RT.TOPIC, "orders")


def test_principals_and_wildcard_principal():
    auth = authorizer(binding(RT.GROUP, "g", principal="User:*", op=Op.READ))
    assert allowed(auth, Op.READ, RT.GROUP, "g", principal=BOB)
    assert allowed(auth, Op.READ, RT.GROUP, "g", principal="User:ANONYMOUS")
    auth = authorizer(binding(RT.GROUP, "g", principal=ALICE, op=Op.READ))
    assert not allowed(auth, Op.READ, RT.GROUP, "g", principal=BOB)
    assert not allowed(auth, Op.READ, RT.GROUP, "g", principal="Group:alice")   # the type counts


def test_hosts():
    auth = authorizer(binding(RT.TOPIC, "orders", host=HOST))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "orders", host=HOST)
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders", host=OTHER_HOST)
    auth = authorizer(binding(RT.TOPIC, "orders"), binding(RT.TOPIC, "orders", perm=Perm.DENY, host=OTHER_HOST))
    assert allowed(auth, Op.WRITE, RT.TOPIC, "orders", host=HOST)
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders", host=OTHER_HOST)


def test_super_users_skip_the_acls_even_a_deny():
    assert parse_super_users(" User:admin ; User:ops;") == {"User:admin", "User:ops"}
    with pytest.raises(ValueError):
        parse_super_users("admin")
    auth = authorizer(binding(RT.TOPIC, "*", principal="User:*", op=Op.ALL, perm=Perm.DENY),
                      super_users={"User:admin"})
    assert allowed(auth, Op.WRITE, RT.TOPIC, "orders", principal="User:admin")
    assert not allowed(auth, Op.WRITE, RT.TOPIC, "orders", principal=ALICE)


def test_authorize_answers_each_action_in_order():
    auth = authorizer(binding(RT.TOPIC, "a"))
    actions = [Action(Op.WRITE, ResourcePattern(RT.TOPIC, n)) for n in ("a", "b", "a")]
    assert auth.authorize(ALICE, HOST, actions, "Produce") == [True, False, True]
    with pytest.raises(ValueError):
        auth.authorize(ALICE, HOST, [Action(Op.WRITE, ResourcePattern(RT.TOPIC, "a", PT.PREFIXED))])


def test_authorize_by_resource_type():
    def by_type(auth, principal=ALICE):
        return auth.authorize_by_resource_type(principal, HOST, Op.WRITE, RT.TOPIC, "InitProducerId")
    assert not by_type(AclAuthorizer())
    assert by_type(AclAuthorizer(allow_everyone_if_no_acl_found=True))
    assert by_type(authorizer(binding(RT.TOPIC, "orders")))
    assert by_type(authorizer(binding(RT.TOPIC, "team-", PT.PREFIXED)))
    assert not by_type(authorizer(binding(RT.TOPIC, "orders")), principal=BOB)
    assert not by_type(authorizer(binding(RT.TOPIC, "orders"), binding(RT.TOPIC, "*", perm=Perm.DENY)))
    assert not by_type(authorizer(binding(RT.TOPIC, "orders"), binding(RT.TOPIC, "orders", perm=Perm.DENY)))
    assert not by_type(authorizer(binding(RT.TOPIC, "team-a", PT.PREFIXED),
                                  binding(RT.TOPIC, "team-", PT.PREFIXED, perm=Perm.DENY)))
    assert by_type(AclAuthorizer(super_users={ALICE}))


def test_the_audit_log_and_the_decision_rows(caplog):
    auth = authorizer(binding(RT.TOPIC, "orders"))
    with caplog.at_level(5, logger="kafka.authorizer.logger"):
        auth.authorize(ALICE, HOST, [Action(Op.WRITE, ResourcePattern(RT.TOPIC, "orders")),
                                     Action(Op.WRITE, ResourcePattern(RT.TOPIC, "payments"), 3),
                                     Action(Op.DESCRIBE_CONFIGS, ResourcePattern(RT.TOPIC, "x"), 1, False, False),
                                     Action(Op.DESCRIBE, ResourcePattern(RT.TRANSACTIONAL_ID, "tx"))], "Produce")
    audit = [(r.levelno, r.getMessage()) for r in caplog.records if r.getMessage().startswith("Principal = ")]
    assert audit == [
        (logging.DEBUG, "Principal = User:alice is Allowed Operation = Write from host = 127.0.0.1 on resource = "
                        "Topic:LITERAL:orders for request = Produce with resourceRefCount = 1"),
        (logging.INFO, "Principal = User:alice is Denied Operation = Write from host = 127.0.0.1 on resource = "
                       "Topic:LITERAL:payments for request = Produce with resourceRefCount = 3"),
        (5, "Principal = User:alice is Denied Operation = DescribeConfigs from host = 127.0.0.1 on resource = "
            "Topic:LITERAL:x for request = Produce with resourceRefCount = 1"),
        (logging.INFO, "Principal = User:alice is Denied Operation = Describe from host = 127.0.0.1 on resource = "
                       "TransactionalId:LITERAL:tx for request = Produce with resourceRefCount = 1"),
    ]
    rows = auth.decision_rows()    # the TRACE one (it grants nothing) is not a row
    assert [(r["operation"], r["resource"], r["decision"]) for r in rows] == [
        ("Write", "Topic:LITERAL:orders", "ALLOWED"), ("Write", "Topic:LITERAL:payments", "DENIED"),
        ("Describe", "TransactionalId:LITERAL:tx", "DENIED")]
    assert rows[0]["principal"] == ALICE and rows[0]["host"] == HOST and rows[0]["request"] == "Produce"


# -- the filters (DescribeAcls, DeleteAcls) -------------------------------------------------------------

def test_resource_pattern_filter_semantics():
    lit, pre, wild = (ResourcePattern(RT.TOPIC, "team-a.orders"), ResourcePattern(RT.TOPIC, "team-a.", PT.PREFIXED),
                      ResourcePattern(RT.TOPIC, "*"))
    group = ResourcePattern(RT.GROUP, "team-a.orders")

    def hits(f):
        return [p for p in (lit, pre, wild, group) if f.matches(p)]
    assert hits(ResourcePatternFilter()) == [lit, pre, wild, group]
    assert hits(ResourcePatternFilter(RT.TOPIC)) == [lit, pre, wild]
    assert hits(ResourcePatternFilter(RT.TOPIC, None, PT.PREFIXED)) == [pre]
    # ANY with a name: the name exactly, any pattern type
    assert hits(ResourcePatternFilter(RT.TOPIC, "team-a.", PT.ANY)) == [pre]
    assert hits(ResourcePatternFilter(RT.TOPIC, "team-a.orders", PT.LITERAL)) == [lit]
    # MATCH: every pattern that applies to the named resource
    assert hits(ResourcePatternFilter(RT.TOPIC, "team-a.orders", PT.MATCH)) == [lit, pre, wild]
    assert hits(ResourcePatternFilter(RT.ANY, "team-a.orders", PT.MATCH)) == [lit, pre, wild, group]
    assert hits(ResourcePatternFilter(RT.TOPIC, "other", PT.MATCH)) == [wild]
    # a literal "*" filter with LITERAL: only the wildcard ACL itself
    assert hits(ResourcePatternFilter(RT.TOPIC, "*", PT.LITERAL)) == [wild]


def test_entry_filter_is_exact():
    entry = AccessControlEntry("User:*", "*", Op.READ, Perm.ALLOW)
    assert AccessControlEntryFilter().matches(entry)
    assert AccessControlEntryFilter("User:*").matches(entry)
    assert not AccessControlEntryFilter(ALICE).matches(entry)     # no wildcard expansion in filters
    assert not AccessControlEntryFilter(host=HOST).matches(entry)
    assert not AccessControlEntryFilter(operation=Op.WRITE).matches(entry)
    assert AccessControlEntryFilter(permission_type=Perm.ALLOW).matches(entry)
    assert not AccessControlEntryFilter(permission_type=Perm.DENY).matches(entry)


def test_describe_and_delete_with_filters():
    a, b, c = (binding(RT.TOPIC, "orders"), binding(RT.TOPIC, "or", PT.PREFIXED, op=Op.READ),
               binding(RT.GROUP, "g", op=Op.READ, principal=BOB))
    auth = authorizer(a, b, c)
    assert auth.acls(AclBindingFilter()) == [a, b, c]
    assert auth.acls(AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH))) == [a, b]
    # two filters matching one binding: it counts for the first
    first = AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "orders", PT.MATCH))
    second = AclBindingFilter(ResourcePatternFilter(RT.TOPIC))
    assert auth.delete_acls([first, second]) == [[a, b], []]
    assert auth.acls(AclBindingFilter()) == [c]
    assert auth.delete_acls([AclBindingFilter(entry_filter=AccessControlEntryFilter(ALICE))]) == [[]]
    assert auth.delete_acls([AclBindingFilter(entry_filter=AccessControlEntryFilter(BOB))]) == [[c]]
    assert auth.acls(AclBindingFilter()) == []


def test_create_acls_validation_and_duplicates():
    auth = AclAuthorizer()
    good = binding(RT.TOPIC, "orders")
    assert auth.create_acls([good, good, binding(RT.TOPIC, "a/b"), binding(RT.TOPIC, "x", principal="alice")]) == [
        None, None, ("INVALID_REQUEST", "Failed to create ACL"), ("UNKNOWN_SERVER_ERROR", "")]
    assert auth.acls(AclBindingFilter()) == [good]


# -- where they are kept ----------------------------------------------------------------------------------

def test_zookeeper_formats_as_kafka_39():
    entries = frozenset({AccessControlEntry(ALICE, "*", Op.DESCRIBE_CONFIGS, Perm.ALLOW)})
    assert json.loads(encode_entries(entries)) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "DescribeConfigs", "host": "*"}]}
    assert decode_entries(encode_entries(entries)) == entries
    lit = ResourcePattern(RT.TRANSACTIONAL_ID, "tx-1")
    pre = ResourcePattern(RT.TOPIC, "team-", PT.PREFIXED)
    assert resource_path(lit) == "/kafka-acl/TransactionalId/tx-1"
    assert resource_path(pre) == "/kafka-acl-extended/prefixed/Topic/team-"
    assert encode_change(lit) == ("/kafka-acl-changes", b"TRANSACTIONAL_ID:tx-1")
    parent, data = encode_change(pre)
    assert parent == "/kafka-acl-extended-changes"
    assert json.loads(data) == {"version": 1, "resourceType": "TOPIC", "name": "team-", "patternType": "PREFIXED"}
    assert decode_change(*encode_change(lit)) == lit and decode_change(parent, data) == pre


def test_the_standalone_file_keeps_them_across_restarts(tmp_path):
    a, b = binding(RT.TOPIC, "orders"), binding(RT.CLUSTER, "kafka-cluster", op=Op.ALTER, perm=Perm.DENY)
    auth = AclAuthorizer(store=FileAclStore(str(tmp_path)))
    auth.create_acls([a, b])
    again = AclAuthorizer(store=FileAclStore(str(tmp_path)))
    assert again.acls(AclBindingFilter()) == [a, b]
    again.delete_acls([AclBindingFilter()])
    assert AclAuthorizer(store=FileAclStore(str(tmp_path))).acls(AclBindingFilter()) == []


def test_standard_authorizer_logs_in_its_own_words(caplog):
    # as a Kafka 4.4 combined node logged these (its kafka.authorizer.logger at DEBUG)
    from kafkalab.broker.security.authorizer.acl_authorizer import STANDARD_AUTHORIZER
    auth = authorizer(binding(RT.TOPIC, "y-orders"), class_name=STANDARD_AUTHORIZER, super_users={"User:admin"})
    with caplog.at_level(logging.DEBUG, logger="kafka.authorizer.logger"):
        auth.authorize(ALICE, HOST, [Action(Op.DESCRIBE, ResourcePattern(RT.TOPIC, "y-orders")),
                                     Action(Op.DESCRIBE, ResourcePattern(RT.TOPIC, "x-orders"))], "Metadata")
        auth.authorize("User:admin", HOST, [Action(Op.ALTER, ResourcePattern(RT.CLUSTER, "kafka-cluster"))],
                       "CreateAcls")
    audit = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Principal = ")]
    assert audit == [
        "Principal = User:alice is Allowed operation = DESCRIBE from host = 127.0.0.1 on resource = "
        "Topic:LITERAL:y-orders for request = Metadata with resourceRefCount = 1 based on rule MatchingAcl(acl="
        "StandardAcl[resourceType=TOPIC, resourceName=y-orders, patternType=LITERAL, principal=User:alice, host=*, "
        "operation=WRITE, permissionType=ALLOW])",
        "Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
        "Topic:LITERAL:x-orders for request = Metadata with resourceRefCount = 1 based on rule DefaultDeny",
        "Principal = User:admin is Allowed operation = ALTER from host = 127.0.0.1 on resource = "
        "Cluster:LITERAL:kafka-cluster for request = CreateAcls with resourceRefCount = 1 based on rule SuperUser",
    ]


def test_which_authorizer_each_broker_mode_serves(tmp_path):
    from kafkalab.broker.security.authorizer.acl_store import broker_authorizer
    from kafkalab.broker.server.config import BrokerConfig
    acl, standard = "kafka.security.authorizer.AclAuthorizer", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert broker_authorizer(BrokerConfig(), "STANDALONE", str(tmp_path)) is None      # none configured: off
    auth = broker_authorizer(BrokerConfig({"authorizer.class.name": acl, "super.users": "User:admin",
                                           "allow.everyone.if.no.acl.found": "true"}), "STANDALONE", str(tmp_path))
    assert auth.super_users == {"User:admin"} and auth.allow_everyone_if_no_acl_found
    assert isinstance(auth.store, FileAclStore)
    assert broker_authorizer(BrokerConfig({"authorizer.class.name": standard}), "STANDALONE", str(tmp_path))
    with pytest.raises(ValueError, match="KRaft metadata log"):
        broker_authorizer(BrokerConfig({"authorizer.class.name": standard}), "ZOOKEEPER", str(tmp_path))
    # KRaft: StandardAuthorizer, loaded from the metadata log (no file); Kafka 4 has no AclAuthorizer class at all
    kraft = broker_authorizer(BrokerConfig({"authorizer.class.name": standard}), "KRAFT", str(tmp_path))
    assert kraft.class_name == standard and not isinstance(kraft.store, FileAclStore)
    with pytest.raises(ValueError, match="could not be found .*uses org.apache.kafka.metadata.authorizer."
                                         "StandardAuthorizer"):
        broker_authorizer(BrokerConfig({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}),
                          "KRAFT", str(tmp_path))
    with pytest.raises(ValueError, match="authorizer.class.name"):
        BrokerConfig({"authorizer.class.name": "com.example.MyAuthorizer"})
