"""``KafkaSchemaRegistry``: subjects, versions, ids and configs, as Confluent's registry keeps them.

* A **subject** (by default ``<topic>-key`` / ``<topic>-value``) has **versions** 1, 2, 3, ...: the schemas
  registered under it, each checked against the earlier ones by the subject's compatibility level.
* Every distinct schema gets one global **id**, whatever subjects it is registered under: the id a producer
  writes into every message (magic byte 0, the id as 4 big-endian bytes, then the Avro body).
* Registering a schema the subject already has (as a live version) returns its id and adds no version.
* **Soft delete** (``DELETE /subjects/s``, ``DELETE /subjects/s/versions/v``) hides versions but keeps their ids
  readable, so consumers can still decode old messages; **hard delete** (``?permanent=true``, allowed only after a
  soft delete) removes them: tombstones in ``_schemas``.

All state is in memory, rebuilt from the ``_schemas`` topic (:mod:`kafkalab.registry.kafka_store`) by
:meth:`KafkaSchemaRegistry.apply`; every change is a record written there first. One lock serialises the writes of
this instance; across instances, Kafka's transactional fencing makes sure that only one writes at a time
(see :mod:`kafkalab.registry.kafka_store`).
"""
from __future__ import annotations

import functools
import logging
import threading
from dataclasses import dataclass

from . import compatibility, errors, schemas
from .kafka_store import DEFAULT_TOPIC, KafkaStore, WriterFenced
from .schemas import ParsedSchema

log = logging.getLogger(__name__)
MAX_VERSION = 2 ** 31 - 1
#: how often a write takes the writer's role back from another instance before giving up
WRITE_ATTEMPTS = 3


@dataclass
class SchemaVersion:
    subject: str
    version: int
    id: int
    schema: ParsedSchema
    deleted: bool = False

    def as_json(self) -> dict:
        """The body of ``GET /subjects/{s}/versions/{v}`` (``schemaType`` only when not AVRO, as Confluent)."""
        body = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema.schema_type != schemas.AVRO:
            body["schemaType"] = self.schema.schema_type
        body["schema"] = self.schema.canonical
        return body


def schema_key(subject: str, version: int) -> dict:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def schema_value(entry: SchemaVersion) -> dict:
    value = {"subject": entry.subject, "version": entry.version, "id": entry.id, "schema": entry.schema.canonical,
             "deleted": entry.deleted}
    if entry.schema.schema_type != schemas.AVRO:
        value["schemaType"] = entry.schema.schema_type
    return value


def config_key(subject: str | None) -> dict:
    return {"keytype": "CONFIG", "subject": subject, "magic": 0}


def parse_version(text, allow_latest: bool = True) -> int | None:
    """A version from the URL: 1 .. 2^31-1, or ``latest`` / ``-1`` (None); anything else is 42202."""
    if allow_latest and str(text).lower() in ("latest", "-1"):
        return None
    try:
        version = int(text)
    except (TypeError, ValueError):
        raise errors.invalid_version(text) from None
    if not 1 <= version <= MAX_VERSION:
        raise errors.invalid_version(text)
    return version


def _one_writer(method):
    """A write: under this instance's write lock, so its check (compatibility, the next id) and its record go
    together. If another instance became the writer meanwhile (it fenced this one's transactional producer), or
    this one's last transaction failed half-way, take the role (back) with a new producer -- fencing the other --,
    read ``_schemas`` to its end and check again."""
    @functools.wraps(method)
    def write(self, *args, **kwargs):
        with self._write_lock:
            for _ in range(WRITE_ATTEMPTS):
                try:
                    return method(self, *args, **kwargs)
                except WriterFenced as e:
                    log.info("becoming the writer of %s again (%s)", self.store.topic, e)
                    self.store.take_over()
            raise errors.store_error(f"other instances keep taking over the writes to {self.store.topic}")
    return write


class KafkaSchemaRegistry:
    """The registry's state and operations; the REST layer (:mod:`kafkalab.registry.rest`) calls these."""

    def __init__(self, bootstrap_servers: str, topic: str = DEFAULT_TOPIC,
                 timeout: float = 30.0, client_config: dict | None = None):
        self._lock = threading.RLock()          # the in-memory state (the store's reader thread writes it)
        self._write_lock = threading.Lock()     # one change at a time: check, then write
        self._subjects: dict[str, dict[int, SchemaVersion]] = {}
        self._configs: dict[str | None, str] = {}
        self._max_id = 0
        self.store = KafkaStore(bootstrap_servers, self.apply, topic=topic, timeout=timeout,
                                client_config=client_config)

    def start(self) -> None:
        self.store.start()

    def close(self) -> None:
        self.store.close()

    # ---- applying the records of _schemas ----------------------------------------------------------------
    def apply(self, key: dict, value: dict | None, offset: int) -> None:
        keytype = key.get("keytype")
        with self._lock:
            if keytype == "SCHEMA":
                self._apply_schema(key, value)
            elif keytype == "CONFIG":
                if value is None:
                    self._configs.pop(key.get("subject"), None)
                else:
                    self._configs[key.get("subject")] = compatibility.level_named(value.get("compatibilityLevel"))
            elif keytype == "DELETE_SUBJECT" and value is not None:
                for entry in self._subjects.get(value["subject"], {}).values():
                    if entry.version <= value["version"]:
                        entry.deleted = True
            # NOOP, CLEAR_SUBJECT, MODE, ... change nothing kafkalab keeps

    def _apply_schema(self, key: dict, value: dict | None) -> None:
        subject, version = key["subject"], key["version"]
        if value is None:                                    # hard delete
            versions = self._subjects.get(subject, {})
            versions.pop(version, None)
            if not versions:
                self._subjects.pop(subject, None)
            return
        parsed = schemas.parse(value["schema"], value.get("schemaType"), value.get("references"))
        self._subjects.setdefault(subject, {})[version] = SchemaVersion(subject, version, value["id"], parsed,
                                                                        bool(value.get("deleted")))
        self._max_id = max(self._max_id, value["id"])

    # ---- reading ------------------------------------------------------------------------------------------
    def _versions(self, subject: str, deleted: bool | str = False) -> list[SchemaVersion]:
        """The versions of ``subject``: live ones; with ``deleted`` soft-deleted ones too; ``"only"``: those."""
        return sorted((e for e in self._subjects.get(subject, {}).values()
                       if (e.deleted if deleted == "only" else deleted or not e.deleted)), key=lambda e: e.version)

    def subjects(self, deleted: bool | str = False) -> list[str]:
        with self._lock:
            return sorted(s for s in self._subjects if self._versions(s, deleted))

    def versions(self, subject: str, deleted: bool | str = False) -> list[int]:
        with self._lock:
            found = [e.version for e in self._versions(subject, deleted)]
        if not found:
            raise errors.subject_not_found(subject)
        return found

    def version(self, subject: str, version_text, deleted: bool = False) -> SchemaVersion:
        version = parse_version(version_text)
        with self._lock:
            live = self._versions(subject, deleted)
            if not live:
                raise errors.subject_not_found(subject)
            if version is None:
                return live[-1]
            for entry in live:
                if entry.version == version:
                    return entry
        raise errors.version_not_found(subject, version)

    def _schema_by_id(self, schema_id: int) -> ParsedSchema | None:
        for versions in self._subjects.values():
            for entry in versions.values():
                if entry.id == schema_id:
                    return entry.schema
        return None

    def schema_by_id(self, schema_id_text) -> ParsedSchema:
        try:
            schema_id = int(schema_id_text)
        except ValueError:
            raise errors.schema_not_found() from None
        with self._lock:
            found = self._schema_by_id(schema_id)
        if found is None:
            raise errors.schema_not_found()
        return found

    def usages(self, schema_id_text, deleted: bool = False) -> list[SchemaVersion]:
        """The (subject, version)s a schema id is registered under; 40403 if none."""
        self.schema_by_id(schema_id_text)
        with self._lock:
            return sorted((e for vs in self._subjects.values() for e in vs.values()
                           if e.id == int(schema_id_text) and (deleted or not e.deleted)),
                          key=lambda e: (e.subject, e.version))

    def lookup(self, subject: str, body: dict, deleted: bool = False) -> SchemaVersion:
        """``POST /subjects/{s}``: the version of ``subject`` holding this schema."""
        parsed = schemas.parse(body.get("schema"), body.get("schemaType"), body.get("references"))
        with self._lock:
            candidates = self._versions(subject, deleted)
            if not candidates:
                raise errors.subject_not_found(subject)
            for entry in candidates:
                if entry.schema == parsed:
                    return entry
        raise errors.schema_not_found()

    def level(self, subject: str | None) -> str:
        """The level in force for ``subject``: its own, else the global one, else BACKWARD."""
        with self._lock:
            return self._configs.get(subject) or self._configs.get(None) or compatibility.DEFAULT_LEVEL

    def config(self, subject: str | None, default_to_global: bool = False) -> str:
        with self._lock:
            if subject is None or default_to_global:
                return self.level(subject)
            if subject not in self._configs:
                raise errors.subject_compatibility_not_configured(subject)
            return self._configs[subject]

    # ---- compatibility ------------------------------------------------------------------------------------
    def _previous(self, subject: str) -> list[tuple[int, ParsedSchema]]:
        return [(e.version, e.schema) for e in self._versions(subject)]

    def test_compatibility(self, subject: str, version_text, body: dict) -> list[str]:
        """``POST /compatibility/subjects/{s}/versions[/{v}]``: why the schema breaks the subject's level
        against that version (``version_text`` None: against the versions the level names)."""
        parsed = schemas.parse(body.get("schema"), body.get("schemaType"), body.get("references"))
        level = self.level(subject)
        if version_text is None:
            with self._lock:
                previous = self._previous(subject)
        else:
            entry = self.version(subject, version_text)
            previous = [(entry.version, entry.schema)]
        return compatibility.check(level, parsed, previous)

    # ---- writing ------------------------------------------------------------------------------------------
    @_one_writer
    def register(self, subject: str, body: dict) -> int:
        """``POST /subjects/{s}/versions``: the schema's id, registering a new version if the subject lacks it."""
        if not isinstance(body.get("schema"), str) or not body["schema"].strip():
            raise errors.invalid_schema("the request has no 'schema'")
        parsed = schemas.parse(body["schema"], body.get("schemaType"), body.get("references"))
        with self._lock:
            for entry in self._versions(subject):
                if entry.schema == parsed:
                    return entry.id
            previous = self._previous(subject)
            level = self.level(subject)
        messages = compatibility.check(level, parsed, previous)
        if messages:
            raise errors.incompatible_schema(subject, messages)
        with self._lock:
            same = [e.id for vs in self._subjects.values() for e in vs.values() if e.schema == parsed]
            schema_id = same[0] if same else self._max_id + 1
            version = max(self._subjects.get(subject, {}), default=0) + 1
        entry = SchemaVersion(subject, version, schema_id, parsed)
        self.store.put(schema_key(subject, version), schema_value(entry))
        return schema_id

    @_one_writer
    def delete_version(self, subject: str, version_text, permanent: bool = False) -> int:
        """``DELETE /subjects/{s}/versions/{v}``: soft, then (``permanent``) hard."""
        version = parse_version(version_text)
        with self._lock:
            every = self._versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            if version is None:
                live = [e for e in every if not e.deleted]
                if not live and not permanent:
                    raise errors.subject_soft_deleted(subject)
                entry = (live or every)[-1]
            else:
                entry = next((e for e in every if e.version == version), None)
                if entry is None:
                    raise errors.version_not_found(subject, version)
        if permanent:
            if not entry.deleted:
                raise errors.version_not_soft_deleted(subject, entry.version)
            self.store.put(schema_key(subject, entry.version), None)
        else:
            if entry.deleted:
                raise errors.version_soft_deleted(subject, entry.version)
            soft = SchemaVersion(subject, entry.version, entry.id, entry.schema, deleted=True)
            self.store.put(schema_key(subject, entry.version), schema_value(soft))
        return entry.version

    @_one_writer
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """``DELETE /subjects/{s}``: every version, soft, then (``permanent``) hard; the versions deleted."""
        with self._lock:
            every = self._versions(subject, deleted=True)
            live = [e.version for e in every if not e.deleted]
        if not every:
            raise errors.subject_not_found(subject)
        if permanent:
            if live:
                raise errors.subject_not_soft_deleted(subject)
            self.store.write([(schema_key(subject, e.version), None) for e in every]      # one transaction
                             + [({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0}, None)])
            return [e.version for e in every]
        if not live:
            raise errors.subject_soft_deleted(subject)
        self.store.put({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0},
                       {"subject": subject, "version": live[-1]})
        return live

    @_one_writer
    def update_config(self, subject: str | None, body: dict) -> str:
        """``PUT /config[/{s}]`` with ``{"compatibility": LEVEL}``."""
        level = compatibility.level_named(body.get("compatibility", body.get("compatibilityLevel")))
        self.store.put(config_key(subject), {"compatibilityLevel": level})
        return level

    @_one_writer
    def delete_config(self, subject: str | None) -> str:
        """``DELETE /config[/{s}]``: back to the global level (or BACKWARD); the level it had."""
        with self._lock:
            if subject is not None and subject not in self._configs:
                raise errors.subject_not_found(subject)
            before = self.level(subject)
        self.store.put(config_key(subject), None)
        return before
