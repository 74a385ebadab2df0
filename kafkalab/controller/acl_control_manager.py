"""``AclControlManager``: the cluster's ACLs in KRaft mode, as Kafka 4.x's (KIP-801, KIP-631).

In ZooKeeper mode a broker writes a resource's ACLs into ``/kafka-acl/...`` and every broker watches the change
notifications (:mod:`kafkalab.broker.security.authorizer.acl_store`). In KRaft mode CreateAcls and DeleteAcls go
to the active controller (a broker forwards them in an Envelope), which writes one record per ACL that every
controller and broker replays into its ``StandardAuthorizer``:

* ``AccessControlEntryRecord`` (a new uuid, resourceType, resourceName, patternType, principal, host, operation,
  permissionType; the codes as int8): one ACL, Kafka's ``StandardAclWithId``;
* ``RemoveAccessControlEntryRecord`` (the id): that ACL gone.

Kafka's rules (``AclControlManager.createAcls`` / ``deleteAcls``):

* **create**: each binding is checked (``validateNewAcl``: a resource type UNKNOWN or ANY, a pattern type other
  than LITERAL or PREFIXED, an operation UNKNOWN or ANY, a permission type other than ALLOW or DENY, an empty
  name: INVALID_REQUEST "Invalid resourceType ANY", ..., "Resource name should not be empty"), each failing only
  itself; an ACL that exists already, or twice in the request, succeeds without a second record;
* **delete**: per filter (an UNKNOWN in it: INVALID_REQUEST "Unknown patternFilter." / "Unknown entryFilter.") every
  ACL it matches, listed in that filter's result; an ACL that several filters match is listed by each, and
  removed by one record. The records are written atomically.

A snapshot holds one AccessControlEntryRecord per ACL, with its id (Kafka's ``AclsImage.write``).

Simplified: Kafka bounds a request to 10000 records (``MAX_RECORDS_PER_USER_OP``); the mini controller does not.
"""
from __future__ import annotations

import logging
import uuid

from ..broker.common.errors import ErrorCode
from ..broker.security.authorizer.acl import (
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourceType)
from ..metadata.api_message_and_version import ApiMessageAndVersion, uuid_of
from ..metadata.metadata_records import kafka_uuid

log = logging.getLogger(__name__)
ACL_RECORDS = ("AccessControlEntryRecord", "RemoveAccessControlEntryRecord")

Acls = dict[ResourcePattern, frozenset[AccessControlEntry]]
#: an error of one creation or one filter: (error code, message)
AclError = tuple[ErrorCode, str]


def validate_new_acl(binding: AclBinding) -> AclError | None:
    """Kafka's ``AclControlManager.validateNewAcl``."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return ErrorCode.INVALID_REQUEST, f"Invalid resourceType {pattern.resource_type.name}"
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return ErrorCode.INVALID_REQUEST, f"Invalid patternType {pattern.pattern_type.name}"
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return ErrorCode.INVALID_REQUEST, f"Invalid operation {entry.operation.name}"
    if entry.permission_type not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        return ErrorCode.INVALID_REQUEST, f"Invalid permissionType {entry.permission_type.name}"
    if not pattern.name:
        return ErrorCode.INVALID_REQUEST, "Resource name should not be empty"
    return None


def validate_filter(binding_filter: AclBindingFilter) -> AclError | None:
    """Kafka's ``AclControlManager.validateFilter``."""
    if binding_filter.pattern_filter.is_unknown:
        return ErrorCode.INVALID_REQUEST, "Unknown patternFilter."
    if binding_filter.entry_filter.is_unknown:
        return ErrorCode.INVALID_REQUEST, "Unknown entryFilter."
    return None


def acl_record(acl_id: uuid.UUID, binding: AclBinding) -> ApiMessageAndVersion:
    """``StandardAclWithId.toRecord``."""
    p, e = binding.pattern, binding.entry
    return ApiMessageAndVersion("AccessControlEntryRecord", 0, {
        "id": acl_id, "resource_type": int(p.resource_type), "resource_name": p.name,
        "pattern_type": int(p.pattern_type), "principal": e.principal, "host": e.host,
        "operation": int(e.operation), "permission_type": int(e.permission_type)})


def binding_of_record(data: dict) -> AclBinding:
    """``StandardAclWithId.fromRecord`` (the record's fields as read back: Kafka's JSON names)."""
    return AclBinding(
        ResourcePattern(ResourceType.from_code(data["resourceType"]), data["resourceName"],
                        PatternType.from_code(data["patternType"])),
        AccessControlEntry(data["principal"], data["host"], AclOperation.from_code(data["operation"]),
                           AclPermissionType.from_code(data["permissionType"])))


class AclControlManager:
    def __init__(self):
        #: id -> the ACL replayed (Kafka's ``idToAcl``), in the order replayed
        self.id_to_acl: dict[uuid.UUID, AclBinding] = {}
        #: the ACLs replayed (Kafka's ``existingAcls``)
        self.existing_acls: set[AclBinding] = set()
        #: bumped by each replayed record: a controller's authorizer follows it (quorum_controller.py)
        self.version = 0

    # -- CreateAcls / DeleteAcls (the active controller) ------------------------------------------------------

    def create_acls(self, bindings: list[AclBinding]) -> tuple[list[ApiMessageAndVersion], list[AclError | None]]:
        """The records to write and, per binding, None (created, or there already) or its error."""
        records: list[ApiMessageAndVersion] = []
        results: list[AclError | None] = []
        added: set[AclBinding] = set()
        used_ids: set[uuid.UUID] = set()
        for binding in bindings:
            error = validate_new_acl(binding)
            if error is not None:
                results.append(error)
                continue
            if binding not in self.existing_acls and binding not in added:
                added.add(binding)
                acl_id = self._new_acl_id(used_ids)
                used_ids.add(acl_id)
                records.append(acl_record(acl_id, binding))
            results.append(None)
        return records, results

    def _new_acl_id(self, used: set[uuid.UUID]) -> uuid.UUID:
        """``newAclId``: a random uuid no ACL has (as ``Uuid.randomUuid``, not the zero one, none whose text starts
        with ``-``)."""
        while True:
            acl_id = uuid.uuid4()
            if (acl_id not in self.id_to_acl and acl_id not in used and acl_id.int != 0
                    and not kafka_uuid(acl_id).startswith("-")):
                return acl_id

    def delete_acls(self, filters: list[AclBindingFilter]) -> tuple[list[ApiMessageAndVersion],
                                                                    list[AclError | list[AclBinding]]]:
        """The records to write and, per filter, the ACLs it matched or its error."""
        removed: dict[uuid.UUID, None] = {}
        results: list[AclError | list[AclBinding]] = []
        for binding_filter in filters:
            error = validate_filter(binding_filter)
            if error is not None:
                results.append(error)
                continue
            deleted = []
            for acl_id, binding in self.id_to_acl.items():
                if binding_filter.matches(binding):
                    deleted.append(binding)
                    removed[acl_id] = None
            results.append(deleted)
        return [ApiMessageAndVersion("RemoveAccessControlEntryRecord", 0, {"id": i}) for i in removed], results

    # -- replay (every controller and broker) ------------------------------------------------------------------

    def replay(self, name: str, data: dict) -> None:
        acl_id = uuid_of(data["id"])
        self.version += 1
        if name == "RemoveAccessControlEntryRecord":
            binding = self.id_to_acl.pop(acl_id, None)
            if binding is None:
                raise RuntimeError(f"Unable to replay RemoveAccessControlEntryRecord(id={data['id']}): no acl with "
                                   "that ID found.")
            self.existing_acls.discard(binding)
            log.info("Replayed RemoveAccessControlEntryRecord for %s, removing %s", data["id"], binding)
            return
        binding = binding_of_record(data)
        self.id_to_acl[acl_id] = binding
        self.existing_acls.add(binding)
        log.info("Replayed AccessControlEntryRecord for %s, setting %s", data["id"], binding)

    def clear(self) -> None:
        """Before a snapshot is loaded."""
        self.id_to_acl.clear()
        self.existing_acls.clear()
        self.version += 1

    def snapshot_records(self) -> list[ApiMessageAndVersion]:
        return [acl_record(acl_id, binding) for acl_id, binding in self.id_to_acl.items()]

    def acls(self) -> Acls:
        """The ACLs by resource pattern, as an :class:`~kafkalab.broker.security.authorizer.acl_authorizer.
        AclAuthorizer` keeps them (what a StandardAuthorizer is loaded with)."""
        out: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for binding in self.id_to_acl.values():
            out.setdefault(binding.pattern, set()).add(binding.entry)
        return {pattern: frozenset(entries) for pattern, entries in out.items()}
