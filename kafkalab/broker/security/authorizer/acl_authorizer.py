"""``AclAuthorizer``: who may do what, as Kafka 3.9's ``kafka.security.authorizer.AclAuthorizer`` decides it.

Switched on by the broker config ``authorizer.class.name`` naming Kafka's class (``kafka.security.authorizer.
AclAuthorizer``, or KRaft's ``org.apache.kafka.metadata.authorizer.StandardAuthorizer``, which decides the same
way); without one, every request is allowed (Kafka's ``AuthHelper`` with no authorizer).

**A decision** (``authorizeAction``) is about one *action*: an operation on a LITERAL resource (``Write`` on
``Topic:orders``) by a principal (``User:alice``) from a host (``127.0.0.1``):

1. a principal in ``super.users`` (``User:admin;User:ops``) is allowed everything, no ACL read;
2. the ACLs that *match the resource* are its LITERAL ones, the LITERAL ``*`` ones of its type, and the PREFIXED
   ones whose name starts the resource's name; if there are none at all (for anyone),
   ``allow.everyone.if.no.acl.found`` decides (default false: denied);
3. else a matching DENY (its principal the one asking or ``User:*``, its host the client's or ``*``, its
   operation this one or ``All``) denies, whatever allows it: **DENY wins**;
4. else a matching ALLOW allows; an ALLOW of ``Read``, ``Write``, ``Delete`` or ``Alter`` allows ``Describe``
   too, and one of ``AlterConfigs`` allows ``DescribeConfigs`` (the implied operations), ``All`` allows all;
5. else denied.

**The log.** Each decision is logged to the Python logger ``kafka.authorizer.logger``, as Kafka's authorizer
logs it (``logAuditMessage``): a refusal at INFO, an allowed action at DEBUG, and the decisions that grant
nothing (KIP-430 authorized operations, filtering a listing) at log4j's TRACE (level 5 here), e.g.::

    Principal = User:alice is Denied Operation = Write from host = 127.0.0.1 on resource = Topic:LITERAL:orders
    for request = Produce with resourceRefCount = 1

The last :data:`DECISIONS_KEPT` decisions that were logged at INFO or DEBUG are kept as rows
(:attr:`AclAuthorizer.decisions`), for a notebook's table (not in Kafka).

**The ACLs** are kept by an :class:`AclStore` (the standalone broker's file, or ZooKeeper:
:mod:`kafkalab.broker.security.authorizer.acl_store`); CreateAcls, DescribeAcls and DeleteAcls reach them
through :meth:`create_acls`, :meth:`acls` and :meth:`delete_acls`. In KRaft mode (StandardAuthorizer) the ACLs
are records of the metadata log: the active controller writes them
(:mod:`kafkalab.controller.acl_control_manager`) and each node's authorizer is loaded with what it replayed
(:meth:`load_acls`); only DescribeAcls reads them here.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Protocol

from ...common.security.kafka_principal import KafkaPrincipal
from .acl import (
    WILDCARD_HOST, WILDCARD_PRINCIPAL, WILDCARD_RESOURCE, AccessControlEntry, AclBinding, AclBindingFilter,
    AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType)

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
AUTHORIZER_CLASS_NAMES = (ACL_AUTHORIZER, STANDARD_AUTHORIZER)
#: Kafka's authorizer logger (log4j's ``kafka.authorizer.logger``, its own appender in Kafka's log4j.properties)
authorizer_logger = logging.getLogger("kafka.authorizer.logger")
TRACE = 5   # log4j's TRACE, below Python's DEBUG
DECISIONS_KEPT = 1000

Acls = dict[ResourcePattern, frozenset[AccessControlEntry]]


@dataclass(frozen=True, slots=True)
class Action:
    """Kafka's ``org.apache.kafka.server.authorizer.Action``."""
    operation: AclOperation
    resource_pattern: ResourcePattern
    resource_reference_count: int = 1
    log_if_allowed: bool = True
    log_if_denied: bool = True


@dataclass(frozen=True, slots=True)
class AuthorizationDecision:
    """One logged decision, a row of :attr:`AclAuthorizer.decisions`."""
    time: float
    principal: str
    operation: str
    resource: str
    host: str
    decision: str        # ALLOWED or DENIED
    request: str


class AclStore(Protocol):
    """Where the ACLs live: ``load`` them all; ``write`` one resource's (none: delete it) and tell the others."""

    def load(self) -> Acls: ...

    def write(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], acls: Acls) -> None: ...


class MemoryAclStore:
    """ACLs kept only in memory (the unit tests)."""

    def load(self) -> Acls:
        return {}

    def write(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], acls: Acls) -> None:
        pass


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: ``User:admin;User:ops`` (each trimmed, parsed as Kafka's ``parseKafkaPrincipal``)."""
    return frozenset(str(KafkaPrincipal.from_string(s.strip())) for s in (text or "").split(";") if s.strip())


class AclAuthorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found: bool = False,
                 store: AclStore | None = None, class_name: str = ACL_AUTHORIZER):
        self.class_name = class_name
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.store: AclStore = store if store is not None else MemoryAclStore()
        self._lock = threading.Lock()
        self._acls: Acls = dict(self.store.load())
        #: the last decisions logged at INFO or DEBUG (a lab's table; Kafka keeps no such thing)
        self.decisions: collections.deque[AuthorizationDecision] = collections.deque(maxlen=DECISIONS_KEPT)

    @classmethod
    def from_config(cls, config, store: AclStore | None = None) -> "AclAuthorizer | None":
        """The authorizer ``authorizer.class.name`` asks for (None: none configured)."""
        name = config["authorizer.class.name"]
        if not name:
            return None
        return cls(parse_super_users(config["super.users"]), config["allow.everyone.if.no.acl.found"], store,
                   class_name=name)

    # -- the ACLs ---------------------------------------------------------------------------------------

    def replace_resource(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        """One resource's ACLs as another broker wrote them (a change notification)."""
        with self._lock:
            if entries:
                self._acls[pattern] = entries
            else:
                self._acls.pop(pattern, None)

    def load_acls(self, acls: Acls) -> None:
        """Every ACL at once, as the metadata log has them (a KRaft node's StandardAuthorizer, fed by its
        ``AclPublisher``: :mod:`kafkalab.controller.acl_control_manager`)."""
        with self._lock:
            self._acls = dict(acls)

    def use_store(self, store: AclStore) -> None:
        """Keep the ACLs in ``store`` from now on, and load what it holds (a ZooKeeper-mode broker, connected)."""
        acls = store.load()
        with self._lock:
            self.store = store
            self._acls = dict(acls)

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """Every binding the filter matches (DescribeAcls)."""
        with self._lock:
            snapshot = list(self._acls.items())
        return [AclBinding(pattern, entry) for pattern, entries in sorted(snapshot, key=_pattern_key)
                for entry in sorted(entries, key=_entry_key) if binding_filter.matches(AclBinding(pattern, entry))]

    def create_acls(self, bindings: list[AclBinding]) -> list[tuple[str, str] | None]:
        """Add each binding; per binding None or (error name, message), as ``AclAuthorizer.createAcls``."""
        results: list[tuple[str, str] | None] = [None] * len(bindings)
        by_resource: dict[ResourcePattern, list[AclBinding]] = {}
        for i, binding in enumerate(bindings):
            error = _validate(binding)
            if error is not None:
                results[i] = ("INVALID_REQUEST", "Failed to create ACL")
                continue
            try:
                KafkaPrincipal.from_string(binding.entry.principal)
            except ValueError:   # Kafka's AclEntry parses it: an IllegalArgumentException, UNKNOWN_SERVER_ERROR
                results[i] = ("UNKNOWN_SERVER_ERROR", "")
                continue
            by_resource.setdefault(binding.pattern, []).append(binding)
        with self._lock:
            for pattern, added in by_resource.items():
                entries = self._acls.get(pattern, frozenset()) | {b.entry for b in added}
                self._update(pattern, entries)
        return results

    def delete_acls(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Per filter, the bindings it deleted; a binding matched by several filters counts for the first
        (``AclAuthorizer.deleteAcls``)."""
        deleted: list[list[AclBinding]] = [[] for _ in filters]
        with self._lock:
            for pattern, entries in sorted(self._acls.items(), key=_pattern_key):
                matching = [(i, f) for i, f in enumerate(filters) if f.pattern_filter.matches(pattern)]
                if not matching:
                    continue
                removed = set()
                for entry in sorted(entries, key=_entry_key):
                    for i, f in matching:
                        if f.entry_filter.matches(entry):
                            deleted[i].append(AclBinding(pattern, entry))
                            removed.add(entry)
                            break
                if removed:
                    self._update(pattern, entries - removed)
        return deleted

    def _update(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry]) -> None:
        """Write one resource's ACLs (the lock held): the store first, then this broker's cache."""
        if entries == self._acls.get(pattern, frozenset()):
            return
        proposed = dict(self._acls)
        if entries:
            proposed[pattern] = entries
        else:
            proposed.pop(pattern, None)
        self.store.write(pattern, entries, proposed)
        self._acls = proposed

    # -- decisions ---------------------------------------------------------------------------------------

    def authorize(self, principal: KafkaPrincipal | str, host: str, actions: list[Action],
                  request: str = "") -> list[bool]:
        """Kafka's ``Authorizer.authorize``: per action, allowed or not (each logged)."""
        principal = str(principal)
        return [self._authorize_action(principal, host, action, request) for action in actions]

    def _authorize_action(self, principal: str, host: str, action: Action, request: str) -> bool:
        resource = action.resource_pattern
        if resource.pattern_type is not PatternType.LITERAL:
            raise ValueError(f"Only literal resources are supported. Got: {resource.pattern_type.name}")
        rule = ""   # StandardAuthorizer's log names the rule that decided
        if principal in self.super_users:
            authorizer_logger.debug("principal = %s is a super user, allowing operation without checking acls.",
                                    principal)
            authorized, rule = True, "SuperUser"
        else:
            acls = self._matching_acls(resource.resource_type, resource.name)
            if not acls:
                authorizer_logger.debug("No acl found for resource %s, authorized = %s", resource,
                                        str(self.allow_everyone_if_no_acl_found).lower())
                authorized = self.allow_everyone_if_no_acl_found
                rule = "DefaultAllow" if authorized else "DefaultDeny"
            else:
                op = action.operation
                allow_ops = ({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                              AclOperation.ALTER} if op is AclOperation.DESCRIBE else
                             {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
                             if op is AclOperation.DESCRIBE_CONFIGS else {op})
                deny = _matching_acl(acls, {op}, principal, host, AclPermissionType.DENY)
                allow = None if deny else _matching_acl(acls, allow_ops, principal, host, AclPermissionType.ALLOW)
                authorized = allow is not None
                decided = deny or allow
                rule = "DefaultDeny" if decided is None else f"MatchingAcl(acl={_standard_acl(decided)})"
        self._log(principal, host, action, authorized, request, rule)
        return authorized

    def _matching_acls(self, resource_type: ResourceType, name: str) -> list[tuple[ResourcePattern,
                                                                                    AccessControlEntry]]:
        with self._lock:
            snapshot = list(self._acls.items())
        found: list[tuple[ResourcePattern, AccessControlEntry]] = []
        for pattern, entries in snapshot:
            if pattern.resource_type is not resource_type:
                continue
            if ((pattern.pattern_type is PatternType.LITERAL and pattern.name in (name, WILDCARD_RESOURCE))
                    or (pattern.pattern_type is PatternType.PREFIXED and name.startswith(pattern.name))):
                found.extend((pattern, e) for e in sorted(entries, key=_entry_key))
        return found

    def authorize_by_resource_type(self, principal: KafkaPrincipal | str, host: str, op: AclOperation,
                                   resource_type: ResourceType, request: str = "") -> bool:
        """Whether ``op`` is allowed on *some* resource of the type (Kafka's ``authorizeByResourceType``, used by
        InitProducerId of an idempotent producer): an ALLOW for the principal not covered by a DENY."""
        principal = str(principal)
        action = Action(op, _unknown_pattern(resource_type), 0)
        if principal in self.super_users:
            return True

        def names(permission: AclPermissionType, pattern_type: PatternType) -> set[str]:
            with self._lock:
                snapshot = list(self._acls.items())
            return {p.name for p, entries in snapshot if p.resource_type is resource_type
                    and p.pattern_type is pattern_type and any(
                        e.permission_type is permission and e.principal in (principal, WILDCARD_PRINCIPAL)
                        and e.host in (host, WILDCARD_HOST) and e.operation in (op, AclOperation.ALL)
                        for e in entries)}

        deny_literals = names(AclPermissionType.DENY, PatternType.LITERAL)
        if WILDCARD_RESOURCE in deny_literals:
            authorized = False
        elif self.allow_everyone_if_no_acl_found:
            authorized = True
        else:
            deny_prefixes = names(AclPermissionType.DENY, PatternType.PREFIXED)
            allow_literals = names(AclPermissionType.ALLOW, PatternType.LITERAL)
            allow_prefixes = names(AclPermissionType.ALLOW, PatternType.PREFIXED)
            authorized = (any(not any(a.startswith(d) for d in deny_prefixes) for a in allow_prefixes)
                          or any(a not in deny_literals and not any(a.startswith(d) for d in deny_prefixes)
                                 for a in allow_literals))
        self._log(principal, host, action, authorized, request, "DefaultAllow" if authorized else "DefaultDeny")
        return authorized

    def _log(self, principal: str, host: str, action: Action, authorized: bool, request: str, rule: str = "") -> None:
        """Kafka's ``logAuditMessage``: denied at INFO, allowed at DEBUG, what grants nothing at TRACE; in
        AclAuthorizer's words, or StandardAuthorizer's (KRaft: the operation's enum name, the deciding rule)."""
        logged = action.log_if_allowed if authorized else action.log_if_denied
        level = (logging.DEBUG if authorized else logging.INFO) if logged else TRACE
        if logged:
            self.decisions.append(AuthorizationDecision(
                time.time(), principal, action.operation.pascal, str(action.resource_pattern), host,
                "ALLOWED" if authorized else "DENIED", request))
        if not authorizer_logger.isEnabledFor(level):
            return
        verdict = "Allowed" if authorized else "Denied"
        if self.class_name == STANDARD_AUTHORIZER:
            authorizer_logger.log(
                level, "Principal = %s is %s operation = %s from host = %s on resource = %s for request = %s "
                "with resourceRefCount = %d based on rule %s", principal, verdict, action.operation.name, host,
                action.resource_pattern, request, action.resource_reference_count, rule or "DefaultDeny")
        else:
            authorizer_logger.log(
                level, "Principal = %s is %s Operation = %s from host = %s on resource = %s for request = %s "
                "with resourceRefCount = %d", principal, verdict, action.operation.pascal, host,
                action.resource_pattern, request, action.resource_reference_count)

    def decision_rows(self) -> list[dict]:
        """The kept decisions, oldest first, as rows for a table."""
        return [{"principal": d.principal, "operation": d.operation, "resource": d.resource, "host": d.host,
                 "decision": d.decision, "request": d.request} for d in list(self.decisions)]


def _matching_acl(acls: list[tuple[ResourcePattern, AccessControlEntry]], operations: set[AclOperation],
                  principal: str, host: str, permission: AclPermissionType):
    """The first ACL of ``permission`` that applies (``matchingAclExists``), as (pattern, entry); None if none."""
    for pattern, acl in acls:
        if (acl.permission_type is permission and acl.principal in (principal, WILDCARD_PRINCIPAL)
                and (acl.operation in operations or acl.operation is AclOperation.ALL)
                and acl.host in (host, WILDCARD_HOST)):
            authorizer_logger.debug("operation = %s on resource = %s from host = %s is %s based on acl = %s",
                                    "/".join(sorted(o.pascal for o in operations)), pattern, host,
                                    permission.pascal, acl)
            return pattern, acl
    return None


def _standard_acl(match) -> str:
    """KRaft's ``StandardAcl`` as Kafka 4.4 prints it (a Java record)."""
    pattern, acl = match
    return (f"StandardAcl[resourceType={pattern.resource_type.name}, resourceName={pattern.name}, "
            f"patternType={pattern.pattern_type.name}, principal={acl.principal}, host={acl.host}, "
            f"operation={acl.operation.name}, permissionType={acl.permission_type.name}]")


def _validate(binding: AclBinding) -> str | None:
    """Kafka's ``AuthorizerUtils.validateAclBinding``."""
    if binding.is_unknown:
        return "ACL binding contains unknown elements"
    if "/" in binding.pattern.name:
        return "ACL binding contains invalid resource name"
    return None


def _unknown_pattern(resource_type: ResourceType) -> ResourcePattern:
    # authorizeByResourceType logs the resource as <type>:UNKNOWN:NONE
    return ResourcePattern(resource_type, "NONE", PatternType.UNKNOWN)


def _pattern_key(item) -> tuple:
    pattern = item[0] if isinstance(item, tuple) else item
    return (int(pattern.resource_type), int(pattern.pattern_type), pattern.name)


def _entry_key(entry: AccessControlEntry) -> tuple:
    return (entry.principal, entry.host, int(entry.operation), int(entry.permission_type))
