"""Kafka's error codes, by the names Kafka gives them.

The table comes from kafka-python's ``kafka.errors`` (which mirrors Kafka's
``org.apache.kafka.common.protocol.Errors``), so it is never retyped here::

    >>> ErrorCode.NOT_ENOUGH_REPLICAS
    <ErrorCode.NOT_ENOUGH_REPLICAS: 19>

``KafkaError`` is what broker code raises when a request must be answered
with an error code; API handlers turn it into the response's ``error_code``.
"""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import kafka.errors as _kerrors


# Where kafka-python's name differs from Errors.java, Kafka's name comes first
# (the canonical one); kafka-python's stays as an alias.
_KAFKA_NAMES = {
    "UNKNOWN_SERVER_ERROR": -1,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "MESSAGE_TOO_LARGE": 10,
    "INVALID_TOPIC_EXCEPTION": 17,
    "RECORD_LIST_TOO_LARGE": 18,
    "INVALID_REPLICA_ASSIGNMENT": 39,
    "INVALID_REGULAR_EXPRESSION": 128,  # KIP-848 regex subscriptions (Kafka 4.0)
}


def _error_table() -> dict[str, int]:
    table = {"NONE": 0, **_KAFKA_NAMES}
    for cls in vars(_kerrors).values():
        if (isinstance(cls, type) and issubclass(cls, _kerrors.BrokerResponseError)
                and getattr(cls, "errno", None) is not None and cls.errno != 0):
            table.setdefault(cls.message, cls.errno)
    return table


if TYPE_CHECKING:   # what a type checker sees: an IntEnum whose every Kafka error name is a member
    class _ErrorCodeMeta(enum.EnumMeta):
        def __getattr__(cls, name: str) -> ErrorCode: ...

    class ErrorCode(enum.IntEnum, metaclass=_ErrorCodeMeta):
        NONE = 0
else:
    ErrorCode = enum.IntEnum("ErrorCode", _error_table())
    ErrorCode.__doc__ = "Kafka protocol error codes (Errors.java), e.g. ErrorCode.OFFSET_OUT_OF_RANGE == 1."


class KafkaError(Exception):
    """An error the broker reports to a client as a protocol error code."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        self.code = ErrorCode(code)
        self.message = message or self.code.name
        super().__init__(f"{self.code.name}: {self.message}")
