"""Topic-name rules, as Kafka's ``org.apache.kafka.common.internals.Topic``.

A legal name is 1 to 249 ASCII alphanumerics, ``.``, ``_`` and ``-``, and not ``.`` or ``..``.
Kafka treats ``.`` and ``_`` alike in metric names, so two topics whose names differ only
there collide (``unify_collision_chars``). The internal topics are the coordinators'.
"""
from __future__ import annotations

import re

from .errors import ErrorCode, KafkaError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: "$" would let a trailing newline through
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def validate_topic_name(name: str | None) -> None:
    """Raise INVALID_TOPIC_EXCEPTION with Kafka's reason if ``name`` is not a legal topic name."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.fullmatch(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"Topic name \"{name}\" is illegal, it contains a character other than "
                         "ASCII alphanumerics, '.', '_' and '-'")


def unify_collision_chars(name: str) -> str:
    """Kafka treats '.' and '_' alike in metric names, so 'a.b' and 'a_b' collide."""
    return name.replace(".", "_")
