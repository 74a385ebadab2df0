"""ACLs as Kafka's clients model them: ``org.apache.kafka.common.acl`` and ``org.apache.kafka.common.resource``.

An ACL binding is a *resource pattern* (resource type, name, pattern type) and an *access control entry*
(principal, host, operation, permission type)::

    AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
               AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW))

A pattern is LITERAL (the name exactly, or ``*``: every resource of the type) or PREFIXED (every name that
starts with it, KIP-290). The filters (:class:`ResourcePatternFilter`, :class:`AccessControlEntryFilter`,
:class:`AclBindingFilter`) are what DescribeAcls and DeleteAcls send: ANY and a null name match anything, and
the pattern type MATCH matches the patterns that would apply to the named resource (its literal name, the
wildcard, and the prefixes of it), as Kafka's ``ResourcePatternFilter.matches``.

The codes are the wire's (the ``byte`` fields of CreateAcls, DescribeAcls and DeleteAcls).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

#: the name of a LITERAL pattern matching every resource of its type (``ResourcePattern.WILDCARD_RESOURCE``)
WILDCARD_RESOURCE = "*"
#: an ACL for every principal (``AclEntry.WildcardPrincipalString``) and from every host (``WildcardHost``)
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
#: the one name of the CLUSTER resource (``Resource.CLUSTER_NAME``)
CLUSTER_NAME = "kafka-cluster"


def _pascal(name: str) -> str:
    """``DESCRIBE_CONFIGS`` -> ``DescribeConfigs`` (Kafka's ``SecurityUtils.toPascalCase``)."""
    return "".join(part.capitalize() for part in name.split("_"))


class _Named(enum.IntEnum):
    @property
    def pascal(self) -> str:
        """The name Kafka writes in ZooKeeper, the authorizer log and ``kafka-acls``: ``DescribeConfigs``."""
        return _pascal(self.name)

    @classmethod
    def from_code(cls, code: int):
        """The member of ``code``; UNKNOWN for a code Kafka does not know (``fromCode``)."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN   # type: ignore[attr-defined]

    @classmethod
    def from_string(cls, text: str):
        """``Write``, ``WRITE`` or ``write`` -> the member; ValueError otherwise (``fromString``)."""
        key = text.replace("_", "").upper()
        for member in cls:
            if member.name.replace("_", "") == key:
                return member
        raise ValueError(f"Unknown {cls.__name__} {text!r}")


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_Named):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_O = AclOperation
#: what each resource type's ACLs may name (Kafka's ``AclEntry.supportedOperations``): KIP-430's authorized
#: operations are these, allowed or not
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
                           _O.ALTER, _O.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}
#: Kafka 3.9's (a ZooKeeper-mode or standalone broker): a group's ACLs name READ, DESCRIBE and DELETE only; Kafka 4.0
#: added DESCRIBE_CONFIGS and ALTER_CONFIGS for KIP-848's group configs
SUPPORTED_OPERATIONS_3_9: dict[ResourceType, tuple[AclOperation, ...]] = {
    **SUPPORTED_OPERATIONS, ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE)}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __post_init__(self):
        if self.resource_type is ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.MATCH, PatternType.ANY):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")

    def __str__(self) -> str:   # Kafka's AclAuthorizer log: Topic:LITERAL:orders
        return f"{self.resource_type.pascal}:{self.pattern_type.name}:{self.name}"

    @property
    def is_unknown(self) -> bool:
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self):
        if self.operation is AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type is AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")

    def __str__(self) -> str:   # Kafka's AclEntry.toString
        return (f"{self.principal} has {self.permission_type.pascal} permission for operations: "
                f"{self.operation.pascal} from hosts: {self.host}")


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    @property
    def is_unknown(self) -> bool:
        return (self.pattern.is_unknown or self.entry.operation is AclOperation.UNKNOWN
                or self.entry.permission_type is AclPermissionType.UNKNOWN)


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        """Kafka's ``ResourcePatternFilter.matches``."""
        if self.resource_type is not ResourceType.ANY and self.resource_type is not pattern.resource_type:
            return False
        if (self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
                and self.pattern_type is not pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type is PatternType.LITERAL:   # MATCH: the patterns that apply to the name
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)

    @property
    def matches_at_most_one(self) -> bool:
        return (self.resource_type is not ResourceType.ANY and self.name is not None
                and self.pattern_type.is_specific)

    @property
    def is_unknown(self) -> bool:
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        """Kafka's ``AccessControlEntryFilter.matches``: exact strings (``User:*`` only matches ``User:*``)."""
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not entry.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type is entry.permission_type

    @property
    def is_unknown(self) -> bool:
        return self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern_filter: ResourcePatternFilter = ResourcePatternFilter()
    entry_filter: AccessControlEntryFilter = AccessControlEntryFilter()

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    @property
    def is_unknown(self) -> bool:
        return self.pattern_filter.is_unknown or self.entry_filter.is_unknown


#: the filter that matches every binding (``AclBindingFilter.ANY``)
ANY_FILTER = AclBindingFilter()


# -- from the wire (CreateAcls, DescribeAcls, DeleteAcls) ---------------------------------------------------

def raw_unknown(*codes: int) -> bool:
    """A code 0 (UNKNOWN) among the request's: Kafka's request classes refuse to parse it
    (``CreateAclsRequest.validate``: IllegalArgumentException; the connection is closed)."""
    return any(code == 0 for code in codes)


def binding_from_wire(resource_type: int, name: str, pattern_type: int, principal: str, host: str, operation: int,
                      permission_type: int) -> AclBinding:
    """``CreateAclsRequest.aclBinding``; ValueError for ANY or MATCH (Kafka's ResourcePattern and
    AccessControlEntry refuse them)."""
    return AclBinding(ResourcePattern(ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type)),
                      AccessControlEntry(principal, host, AclOperation.from_code(operation),
                                         AclPermissionType.from_code(permission_type)))


def filter_from_wire(resource_type: int, name: str | None, pattern_type: int, principal: str | None,
                     host: str | None, operation: int, permission_type: int) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(ResourceType.from_code(resource_type), name, PatternType.from_code(pattern_type)),
        AccessControlEntryFilter(principal, host, AclOperation.from_code(operation),
                                 AclPermissionType.from_code(permission_type)))
