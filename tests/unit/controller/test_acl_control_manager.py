"""AclControlManager: KRaft's ACLs as Kafka 4.x's controller checks and writes them (AccessControlEntryRecord,
RemoveAccessControlEntryRecord), replays them and puts them in a snapshot; the controller's CreateAcls / DeleteAcls
answers and authorization; the Envelope's principal serde (DefaultPrincipalData)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace as NS

import pytest
from kafka.protocol.admin.acl import CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse

from kafkalab.broker.common.errors import ErrorCode, KafkaError
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.security.kafka_principal import (ANONYMOUS, KafkaPrincipal, deserialize_principal,
                                                              serialize_principal)
from kafkalab.broker.security.authorizer.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourcePatternFilter, ResourceType)
from kafkalab.broker.security.authorizer.acl_authorizer import STANDARD_AUTHORIZER, Action, AclAuthorizer
from kafkalab.controller import acl_apis
from kafkalab.controller.acl_control_manager import AclControlManager
from kafkalab.controller.controller_apis import handle_envelope_request
from kafkalab.controller.controller_messages import EnvelopeRequest
from kafkalab.controller.controller_node import controller_authorizer
from kafkalab.controller.controller_request_context import Forwarded, forwarded
from kafkalab.controller.envelope_utils import handle_envelope
from kafkalab.controller.snapshot_generator import snapshot_records
from kafkalab.kraft.metadata_image import MetadataImage
from kafkalab.metadata.metadata_records import decode_metadata_record

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def binding(name="orders", principal="User:alice", op=AclOperation.WRITE, perm=ALLOW, pattern=PatternType.LITERAL,
            resource_type=ResourceType.TOPIC) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern), AccessControlEntry(principal, "*", op, perm))


def committed(manager, records):
    """The records as the log holds them, replayed."""
    for r in records:
        decoded = decode_metadata_record(r.encode())
        manager.replay(decoded.name, decoded.data)


def test_create_writes_one_record_per_new_acl_and_duplicates_succeed_without_one():
    m = AclControlManager()
    a, b = binding(), binding("team-", "User:*", AclOperation.READ, DENY, PatternType.PREFIXED)
    records, results = m.create_acls([a, b, a])       # twice in one request: one record
    assert results == [None, None, None]
    assert [r.name for r in records] == ["AccessControlEntryRecord"] * 2
    decoded = decode_metadata_record(records[1].encode())
    assert decoded.type == "ACCESS_CONTROL_ENTRY_RECORD"
    assert {k: v for k, v in decoded.data.items() if k != "id"} == {
        "resourceType": 2, "resourceName": "team-", "patternType": 4, "principal": "User:*", "host": "*",
        "operation": 3, "permissionType": 2}
    assert len(decoded.data["id"]) == 22                # a uuid as Kafka prints it
    assert m.id_to_acl == {}                            # nothing until replayed
    committed(m, records)
    assert m.existing_acls == {a, b}
    records, results = m.create_acls([a])               # there already: success, no record
    assert (records, results) == ([], [None])


def test_create_validates_each_binding_as_kafka():
    m = AclControlManager()
    records, results = m.create_acls([binding(""), binding(resource_type=ResourceType.UNKNOWN), binding()])
    assert results == [(ErrorCode.INVALID_REQUEST, "Resource name should not be empty"),
                       (ErrorCode.INVALID_REQUEST, "Invalid resourceType UNKNOWN"), None]
    assert len(records) == 1
    bad_op = AclBinding(ResourcePattern(ResourceType.TOPIC, "t"),
                        AccessControlEntry("User:a", "*", AclOperation.UNKNOWN, ALLOW))
    assert m.create_acls([bad_op])[1] == [(ErrorCode.INVALID_REQUEST, "Invalid operation UNKNOWN")]


def test_delete_by_filter_lists_each_match_per_filter_and_removes_it_once():
    m = AclControlManager()
    a, b = binding(), binding("orders", "User:bob", AclOperation.READ)
    c = binding("team-", pattern=PatternType.PREFIXED)
    committed(m, m.create_acls([a, b, c])[0])
    topic_orders = AclBindingFilter(ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.LITERAL))
    everything = AclBindingFilter()
    records, results = m.delete_acls([topic_orders, everything])
    assert results == [[a, b], [a, b, c]]               # Kafka 4: each filter lists what it matches
    assert [r.name for r in records] == ["RemoveAccessControlEntryRecord"] * 3
    committed(m, records)
    assert m.id_to_acl == {} and m.existing_acls == set()
    assert m.delete_acls([everything]) == ([], [[]])
    unknown = AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN))
    assert m.delete_acls([unknown])[1] == [(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")]


def test_replay_of_an_unknown_removal_fails_loudly():
    m = AclControlManager()
    (record,) = m.create_acls([binding()])[0]
    committed(m, [record])
    m.replay("RemoveAccessControlEntryRecord", {"id": decode_metadata_record(record.encode()).data["id"]})
    with pytest.raises(RuntimeError, match="no acl with that ID found"):
        m.replay("RemoveAccessControlEntryRecord", {"id": decode_metadata_record(record.encode()).data["id"]})


def test_a_snapshot_carries_the_acls_with_their_ids():
    image = MetadataImage()
    committed(image.acls, image.acls.create_acls([binding(), binding("team-", pattern=PatternType.PREFIXED)])[0])
    records = [r for r in snapshot_records(image) if r.name == "AccessControlEntryRecord"]
    assert len(records) == 2
    again = MetadataImage()
    committed(again.acls, records)
    assert again.acls.id_to_acl == image.acls.id_to_acl
    assert again.acls.acls() == {binding().pattern: frozenset({binding().entry}),
                                 ResourcePattern(ResourceType.TOPIC, "team-", PatternType.PREFIXED):
                                     frozenset({binding().entry})}


def test_a_standard_authorizer_loaded_from_the_records_decides():
    m = AclControlManager()
    committed(m, m.create_acls([binding("team-", "User:alice", AclOperation.WRITE, ALLOW, PatternType.PREFIXED),
                                binding("team-secret", "User:alice", AclOperation.WRITE, DENY)])[0])
    auth = AclAuthorizer(class_name=STANDARD_AUTHORIZER)
    auth.load_acls(m.acls())

    def write(topic):
        return auth.authorize("User:alice", "127.0.0.1", [Action(AclOperation.WRITE,
                                                                 ResourcePattern(ResourceType.TOPIC, topic))])[0]
    assert write("team-a") and not write("team-secret") and not write("other")


def test_only_standard_authorizer_on_a_controller():
    assert controller_authorizer() is None
    auth = controller_authorizer(STANDARD_AUTHORIZER, "User:ANONYMOUS;User:admin", 1)
    assert auth.super_users == {"User:ANONYMOUS", "User:admin"} and auth.allow_everyone_if_no_acl_found
    with pytest.raises(ValueError, match="kafka.security.authorizer.AclAuthorizer could not be found.*StandardAuth"):
        controller_authorizer("kafka.security.authorizer.AclAuthorizer")


# -- the principal in an Envelope -------------------------------------------------------------------------------

def test_principal_serde_is_default_principal_data_v0():
    assert serialize_principal(ANONYMOUS) == b"\x00\x00\x05User\x0aANONYMOUS\x00\x00"
    alice = KafkaPrincipal("User", "alice")
    assert deserialize_principal(serialize_principal(alice)) == alice
    assert serialize_principal(alice, token_authenticated=True)[-2:] == b"\x01\x00"
    with_tags = b"\x00\x00\x05User\x06alice\x00" + b"\x01\x05\x02ab"    # one unknown tagged field: skipped
    assert deserialize_principal(with_tags) == alice
    for bad in (b"", b"\x00\x01\x05User\x06alice\x00\x00", b"\x00\x00\x05Us"):
        with pytest.raises(ValueError):
            deserialize_principal(bad)


def envelope(inner: bytes, principal: bytes | None):
    return build(EnvelopeRequest, 0, {"request_data": inner, "request_principal": principal,
                                      "client_host_address": b"\x0a\x01\x02\x03"})


def inner_create_acls(creations) -> bytes:
    request = build(CreateAclsRequest, 3, {"creations": creations})
    request.with_header(correlation_id=5, client_id="admin")
    return bytes(request.encode(header=True))


CREATION = {"resource_type": 2, "resource_name": "orders", "resource_pattern_type": 3, "principal": "User:alice",
            "host": "*", "operation": 4, "permission_type": 3}


def test_the_envelope_principal_reaches_the_handler_and_a_bad_one_is_refused():
    seen = []

    async def handler(_client, request):
        seen.append(forwarded.get())
        return {"throttle_time_ms": 0, "results": [{"error_code": 0, "error_message": None}]}
    apis = {30: (CreateAclsRequest, CreateAclsResponse, 1, 3, handler)}
    data = inner_create_acls([CREATION])
    result = asyncio.run(handle_envelope(apis, envelope(data, serialize_principal(KafkaPrincipal("User", "bob")))))
    assert result["error_code"] == 0 and seen == [Forwarded(KafkaPrincipal("User", "bob"), "10.1.2.3")]
    for bad in (None, b"\x00\x07junk"):
        result = asyncio.run(handle_envelope(apis, envelope(data, bad)))
        assert result == {"response_data": None, "error_code": int(ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)}
    # an UNKNOWN code inside: Kafka's request class would not parse it (the broker then closes its client)
    result = asyncio.run(handle_envelope({30: (CreateAclsRequest, CreateAclsResponse, 1, 3, acl_apis_handler())},
                                         envelope(inner_create_acls([{**CREATION, "operation": 0}]),
                                                  serialize_principal(ANONYMOUS))))
    assert result == {"response_data": None, "error_code": int(ErrorCode.UNSUPPORTED_VERSION)}


def acl_apis_handler(controller=None):
    controller = controller or Controller(None)

    async def handler(_client, request):
        return await acl_apis.handle_create_acls(controller, request)
    return handler


# -- the controller's CreateAcls / DeleteAcls (AclApis) ---------------------------------------------------------

class Controller:
    """A QuorumController stand-in: an authorizer and the AclControlManager, each write committed at once."""

    def __init__(self, authorizer, active=True):
        self.authorizer, self.acls, self.active = authorizer, AclControlManager(), active

    async def _write(self, operation):
        if not self.active:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "not me")
        records, result = operation()
        committed(self.acls, records)
        if self.authorizer is not None:
            self.authorizer.load_acls(self.acls.acls())
        return result

    async def create_acls(self, bindings):
        return await self._write(lambda: self.acls.create_acls(bindings))

    async def delete_acls(self, filters):
        return await self._write(lambda: self.acls.delete_acls(filters))


def as_client(principal: str, coroutine):
    async def run():
        forwarded.set(Forwarded(KafkaPrincipal.from_string(principal), "127.0.0.1"))
        return await coroutine
    return asyncio.run(run())


def create(controller, principal, creations):
    return as_client(principal, acl_apis.handle_create_acls(controller, build(CreateAclsRequest, 3,
                                                                              {"creations": creations})))


def delete(controller, principal, filters):
    return as_client(principal, acl_apis.handle_delete_acls(controller, build(DeleteAclsRequest, 3,
                                                                              {"filters": filters})))


ALL_FILTER = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
              "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}


def codes(result, key="results"):
    return [(r["error_code"], r["error_message"]) for r in result[key]]


def test_the_controller_answers_create_and_delete_acls_as_kafkas_acl_apis():
    controller = Controller(AclAuthorizer({"User:admin"}, class_name=STANDARD_AUTHORIZER))
    refused = create(controller, "User:alice", [CREATION])
    assert codes(refused) == [(int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Request CreateAcls is not authorized.")]
    result = create(controller, "User:admin", [CREATION, {**CREATION, "resource_name": ""},
                                               {**CREATION, "resource_type": 4, "resource_name": "x"}, CREATION])
    assert codes(result) == [(0, None), (int(ErrorCode.INVALID_REQUEST), "Invalid empty resource name"),
                             (int(ErrorCode.INVALID_REQUEST), "The only valid name for the CLUSTER resource is "
                                                              "kafka-cluster"), (0, None)]
    assert len(controller.acls.id_to_acl) == 1
    build(CreateAclsResponse, 3, result)                       # it encodes
    assert codes(create(controller, "User:admin", [{**CREATION, "resource_pattern_type": 1}])) == \
        [(int(ErrorCode.UNKNOWN_SERVER_ERROR), None)]          # ANY: the whole request's error
    assert codes(delete(controller, "User:bob", [ALL_FILTER]), "filter_results") == \
        [(int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), "Request DeleteAcls is not authorized.")]
    deleted = delete(controller, "User:admin", [ALL_FILTER, ALL_FILTER])
    build(DeleteAclsResponse, 3, deleted)
    assert [[(m["resource_name"], m["principal"]) for m in f["matching_acls"]] for f in deleted["filter_results"]] \
        == [[("orders", "User:alice")], [("orders", "User:alice")]]
    assert controller.acls.id_to_acl == {}
    no_authorizer = Controller(None)
    assert codes(create(no_authorizer, "User:x", [CREATION])) == \
        [(int(ErrorCode.SECURITY_DISABLED), "No Authorizer is configured.")]
    standby = Controller(AclAuthorizer({"User:admin"}, class_name=STANDARD_AUTHORIZER), active=False)
    assert codes(create(standby, "User:admin", [CREATION]))[0][0] == int(ErrorCode.NOT_CONTROLLER)


def test_the_envelope_needs_cluster_action_for_the_forwarding_broker():
    controller = Controller(AclAuthorizer({"User:ANONYMOUS"}, class_name=STANDARD_AUTHORIZER))
    server = NS(quorum_controller=controller, apis={})
    request = envelope(inner_create_acls([CREATION]), serialize_principal(ANONYMOUS))
    result = asyncio.run(handle_envelope_request(server, request))   # not served here: past the check
    assert result["error_code"] == int(ErrorCode.INVALID_REQUEST)
    controller.authorizer = AclAuthorizer(set(), class_name=STANDARD_AUTHORIZER)
    result = asyncio.run(handle_envelope_request(server, request))
    assert result == {"response_data": None, "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}


def test_loading_a_snapshot_replaces_the_acls():
    from kafkalab.controller.quorum_controller import replay_record
    from kafkalab.controller.snapshot_generator import load_snapshot
    source = MetadataImage()
    committed(source.acls, source.acls.create_acls([binding("kept")])[0])
    snapshot = [decode_metadata_record(r.encode()) for r in snapshot_records(source)]
    image = MetadataImage()
    committed(image.acls, image.acls.create_acls([binding("gone")])[0])
    version = image.acls.version
    assert load_snapshot(image, NS(snapshot_id=NS(offset=10), records=snapshot), replay_record) == 10
    assert image.acls.acls() == {binding("kept").pattern: frozenset({binding("kept").entry})}
    assert image.acls.version > version          # a controller's authorizer reloads
