"""Compatibility levels as Confluent Schema Registry defines them (``CompatibilityLevel``).

A level says which earlier versions of a subject a new schema is checked against, and in which direction:

=====================  ==========================================  ===================================
level                  the new schema must ...                     against
=====================  ==========================================  ===================================
BACKWARD (default)     read data written with the old one          the latest version
BACKWARD_TRANSITIVE    read data written with every old one        every version
FORWARD                be readable by the old one                  the latest version
FORWARD_TRANSITIVE     be readable by every old one                every version
FULL                   both                                        the latest version
FULL_TRANSITIVE        both                                        every version
NONE                   nothing                                     --
=====================  ==========================================  ===================================

"Read" is the Avro specification's schema resolution (reader's schema vs writer's schema), computed by Apache
Avro's library in :func:`kafkalab.registry.schemas.can_read`. Soft-deleted versions are not checked against.
"""
from __future__ import annotations

from . import errors
from .schemas import ParsedSchema, can_read

NONE, BACKWARD, FORWARD, FULL = "NONE", "BACKWARD", "FORWARD", "FULL"
BACKWARD_TRANSITIVE, FORWARD_TRANSITIVE, FULL_TRANSITIVE = (f"{x}_TRANSITIVE" for x in (BACKWARD, FORWARD, FULL))
LEVELS = (NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE)
#: Confluent's default ``schema.compatibility.level``
DEFAULT_LEVEL = BACKWARD


def level_named(value) -> str:
    """The level ``value`` names (any case); 42203 if it names none."""
    if isinstance(value, str) and value.upper() in LEVELS:
        return value.upper()
    raise errors.invalid_compatibility_level(value)


def check(level: str, new: ParsedSchema, previous: list[tuple[int, ParsedSchema]]) -> list[str]:
    """Why ``new`` breaks ``level`` against ``previous`` ((version, schema) pairs, oldest first); [] if it does not.

    Non-transitive levels look at the last of ``previous`` only."""
    if level == NONE or not previous:
        return []
    targets = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    backward = level.startswith((BACKWARD, FULL))
    forward = level.startswith((FORWARD, FULL))
    messages: list[str] = []
    for version, old in reversed(targets):
        found = []
        if backward:
            found += can_read(new, old, "new", "old")    # the new schema reads what the old one wrote
        if forward:
            found += can_read(old, new, "old", "new")    # the old schema reads what the new one writes
        if found:
            messages += found + [f"{{oldSchemaVersion: {version}}}", f"{{oldSchema: '{old.canonical}'}}",
                                 f"{{compatibility: '{level}'}}"]
    return messages
