"""Where the ACLs live: a file of the standalone broker's, or ZooKeeper as Kafka 3.9 keeps them.

**ZooKeeper** (Kafka's ``ZkAclStore``, ``ResourceZNode``, ``AclEntry.toJsonCompatibleMap``): one znode per
resource pattern, LITERAL ones under ``/kafka-acl/<ResourceType>/<name>``, PREFIXED ones under
``/kafka-acl-extended/prefixed/<ResourceType>/<name>``, each holding its entries::

    /kafka-acl/Topic/orders => {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                                                    "operation":"Write","host":"*"}]}

A resource left without ACLs has its znode deleted. Each change is announced by a sequential znode, which every
broker watches and then reads the resource again (Kafka's ``ZkNodeChangeNotificationListener``): for a LITERAL
pattern ``/kafka-acl-changes/acl_changes_<seq>`` holding ``TOPIC:orders`` (the resource type's enum name, a
colon, the name), for the others ``/kafka-acl-extended-changes/acl_changes_<seq>`` holding
``{"version":1,"resourceType":"TOPIC","name":"team-","patternType":"PREFIXED"}``.

**Standalone** (kafkalab's, the broker has no ZooKeeper): ``acls.json`` in the log directory, next to
``client-quotas.json``, the same entries per resource.

Simplified: a broker writes what its own cache holds (Kafka re-reads the znode and writes it conditionally on its
version, retrying if another broker changed it in between), and change notifications are never purged (Kafka
deletes those older than 15 minutes).
"""
from __future__ import annotations

import json
import logging
import os
import threading

from ...common.state_file import read_state_file, write_state_file
from .acl import AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType
from .acl_authorizer import ACL_AUTHORIZER, STANDARD_AUTHORIZER, AclAuthorizer, MemoryAclStore

log = logging.getLogger(__name__)

ACL_FILE = "acls.json"
LITERAL_ACL_PATH = "/kafka-acl"
EXTENDED_ACL_PATH = "/kafka-acl-extended"
LITERAL_CHANGES_PATH = "/kafka-acl-changes"
EXTENDED_CHANGES_PATH = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"

Acls = dict[ResourcePattern, frozenset[AccessControlEntry]]


def encode_entries(entries) -> bytes:
    """A resource znode's JSON (``AclEntry.toJsonCompatibleMap``)."""
    return json.dumps({"version": 1, "acls": [entry_json(e) for e in sorted(entries, key=_entry_key)]},
                      separators=(",", ":")).encode()


def entry_json(entry: AccessControlEntry) -> dict:
    return {"principal": entry.principal, "permissionType": entry.permission_type.pascal,
            "operation": entry.operation.pascal, "host": entry.host}


def decode_entries(data: bytes | str | list) -> frozenset[AccessControlEntry]:
    acls = data if isinstance(data, list) else json.loads(data or b"{}").get("acls", [])
    return frozenset(AccessControlEntry(a["principal"], a["host"], AclOperation.from_string(a["operation"]),
                                        AclPermissionType.from_string(a["permissionType"])) for a in acls)


def resource_path(pattern: ResourcePattern) -> str:
    """``ResourceZNode.path``: ``/kafka-acl/Topic/orders``, ``/kafka-acl-extended/prefixed/Topic/team-``."""
    root = (LITERAL_ACL_PATH if pattern.pattern_type is PatternType.LITERAL
            else f"{EXTENDED_ACL_PATH}/{pattern.pattern_type.name.lower()}")
    return f"{root}/{pattern.resource_type.pascal}/{pattern.name}"


def encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    """(the change znode's parent, its data) for a change of ``pattern``'s ACLs."""
    if pattern.pattern_type is PatternType.LITERAL:
        return LITERAL_CHANGES_PATH, f"{pattern.resource_type.name}:{pattern.name}".encode()
    return EXTENDED_CHANGES_PATH, json.dumps(
        {"version": 1, "resourceType": pattern.resource_type.name, "name": pattern.name,
         "patternType": pattern.pattern_type.name}, separators=(",", ":")).encode()


def decode_change(parent: str, data: bytes) -> ResourcePattern:
    if parent == LITERAL_CHANGES_PATH:
        type_name, _, name = data.decode().partition(":")
        return ResourcePattern(ResourceType.from_string(type_name), name, PatternType.LITERAL)
    event = json.loads(data)
    return ResourcePattern(ResourceType.from_string(event["resourceType"]), event["name"],
                           PatternType.from_string(event["patternType"]))


def broker_authorizer(config, metadata_mode: str, log_dir: str) -> AclAuthorizer | None:
    """A broker's authorizer as ``authorizer.class.name`` asks (None: none), its ACLs in ``acls.json`` of the log
    directory when standalone (``metadata_mode``: STANDALONE, ZOOKEEPER or KRAFT; a ZooKeeper-mode broker gives
    it its :class:`ZkAclStore` once connected, a KRaft broker's metadata publisher loads it with the ACL records
    it replayed). ValueError for what this mode cannot serve."""
    name = config["authorizer.class.name"]
    if name == ACL_AUTHORIZER and metadata_mode == "KRAFT":
        raise ValueError(kraft_authorizer_error(name))
    if name == STANDARD_AUTHORIZER and metadata_mode == "ZOOKEEPER":
        raise ValueError(f"authorizer.class.name={name} keeps its ACLs in the KRaft metadata log; a "
                         f"ZooKeeper-mode broker uses {ACL_AUTHORIZER}")
    store = MemoryAclStore() if metadata_mode != "STANDALONE" else FileAclStore(log_dir)
    return AclAuthorizer.from_config(config, store)


def kraft_authorizer_error(name: str) -> str:
    """Why a KRaft node refuses ``authorizer.class.name``: Kafka 4.x has no AclAuthorizer (removed with ZooKeeper,
    KIP-896), so its startup fails on a class that does not exist."""
    return (f"Invalid value {name} for configuration authorizer.class.name: Class {name} could not be found "
            f"(Kafka 4.x removed AclAuthorizer with ZooKeeper mode; a KRaft node uses {STANDARD_AUTHORIZER})")


class FileAclStore:
    """The standalone broker's ``acls.json``."""

    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, ACL_FILE)

    def load(self) -> Acls:
        data = read_state_file(self.path, "ACLs")
        if data is None:
            return {}
        acls: Acls = {}
        for item in data.get("resources", []):
            pattern = ResourcePattern(ResourceType.from_string(item["resourceType"]), item["name"],
                                      PatternType.from_string(item["patternType"]))
            acls[pattern] = decode_entries(item["acls"])
        return acls

    def write(self, pattern: ResourcePattern, entries, acls: Acls) -> None:
        data = {"version": 1, "resources": [
            {"resourceType": p.resource_type.pascal, "patternType": p.pattern_type.name, "name": p.name,
             "acls": [entry_json(e) for e in sorted(es, key=_entry_key)]}
            for p, es in sorted(acls.items(), key=lambda kv: (kv[0].resource_type, kv[0].pattern_type, kv[0].name))]}
        write_state_file(self.path, data, indent=1)


class ZkAclStore:
    """ACLs in ZooKeeper (``kz``: a kazoo client), as Kafka 3.9's ``AclAuthorizer`` keeps them."""

    def __init__(self, kz):
        self.kz = kz
        self._seen: dict[str, str] = {}          # change path -> the last notification applied
        self._watch_lock = threading.Lock()

    def create_acl_paths(self) -> None:
        """Kafka's ``KafkaZkClient.createAclPaths``: each store's root with a child per resource type, and the
        change paths, whether or not any ACL exists yet."""
        for root in (LITERAL_ACL_PATH, f"{EXTENDED_ACL_PATH}/prefixed"):
            for resource_type in ResourceType:
                if resource_type not in (ResourceType.UNKNOWN, ResourceType.ANY):
                    self.kz.ensure_path(f"{root}/{resource_type.pascal}")
        for parent in (LITERAL_CHANGES_PATH, EXTENDED_CHANGES_PATH):
            self.kz.ensure_path(parent)

    def load(self) -> Acls:
        from kazoo.exceptions import NoNodeError
        self.create_acl_paths()
        acls: Acls = {}
        roots = [(LITERAL_ACL_PATH, PatternType.LITERAL), (f"{EXTENDED_ACL_PATH}/prefixed", PatternType.PREFIXED)]
        for root, pattern_type in roots:
            for type_name in self._children(root):
                try:
                    resource_type = ResourceType.from_string(type_name)
                except ValueError:
                    continue
                for name in self._children(f"{root}/{type_name}"):
                    try:
                        data, _ = self.kz.get(f"{root}/{type_name}/{name}")
                    except NoNodeError:
                        continue
                    entries = decode_entries(data)
                    if entries:
                        acls[ResourcePattern(resource_type, name, pattern_type)] = entries
        # what is there now is loaded: later notifications only
        for parent in (LITERAL_CHANGES_PATH, EXTENDED_CHANGES_PATH):
            changes = sorted(c for c in self._children(parent) if c.startswith(CHANGE_PREFIX))
            if changes:
                self._seen[parent] = changes[-1]
        return acls

    def _children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError
        try:
            return self.kz.get_children(path)
        except NoNodeError:
            return []

    def read(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        from kazoo.exceptions import NoNodeError
        try:
            data, _ = self.kz.get(resource_path(pattern))
        except NoNodeError:
            return frozenset()
        return decode_entries(data)

    def write(self, pattern: ResourcePattern, entries, acls: Acls) -> None:
        from kazoo.exceptions import NoNodeError
        path = resource_path(pattern)
        if entries:
            data = encode_entries(entries)
            if self.kz.exists(path) is None:
                self.kz.create(path, data, makepath=True)
            else:
                self.kz.set(path, data)
        else:
            try:
                self.kz.delete(path)
            except NoNodeError:
                pass
        parent, change = encode_change(pattern)
        self.kz.create(f"{parent}/{CHANGE_PREFIX}", change, sequence=True, makepath=True)

    def watch_changes(self, on_change) -> None:
        """``on_change(pattern, entries)`` for each change notification another broker (or this one) writes."""
        for parent in (LITERAL_CHANGES_PATH, EXTENDED_CHANGES_PATH):
            self.kz.ensure_path(parent)
            self.kz.ChildrenWatch(parent, lambda children, parent=parent: self._changed(parent, children, on_change))

    def _changed(self, parent: str, children: list[str], on_change) -> None:
        from kazoo.exceptions import NoNodeError
        with self._watch_lock:
            last = self._seen.get(parent, "")
            for name in sorted(c for c in children if c.startswith(CHANGE_PREFIX) and c > last):
                try:
                    data, _ = self.kz.get(f"{parent}/{name}")
                    pattern = decode_change(parent, data)
                except NoNodeError:
                    continue
                except ValueError as exc:
                    log.warning("ignoring ACL change notification %s/%s: %s", parent, name, exc)
                    continue
                finally:
                    self._seen[parent] = name
                on_change(pattern, self.read(pattern))


def _entry_key(entry: AccessControlEntry) -> tuple:
    return (entry.principal, entry.host, int(entry.operation), int(entry.permission_type))
