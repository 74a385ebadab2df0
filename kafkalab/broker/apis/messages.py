"""Build kafka-python protocol messages from plain dicts.

kafka-python's ``kafka.protocol`` classes (generated from Kafka's message
JSON) want nested structs as instances of their nested classes; handlers
are easier to read as plain dicts and lists, so :func:`build` converts::

    build(ProduceResponse, version, {"responses": [{"name": "t", "partition_responses": [...]}]})

Fields a dict leaves out take the schema's default, as in Kafka.
"""
from __future__ import annotations

from functools import lru_cache

from kafka.protocol.schemas.fields.base import BaseField


@lru_cache(maxsize=None)
def _struct_fields(cls) -> dict[str, type]:
    """snake_case name -> nested class, for each struct or struct-array field of ``cls``."""
    out = {}
    schema = cls._json if hasattr(cls, "_json") else cls._struct._json
    for field in schema.get("fields", []):
        if "fields" not in field:
            continue
        type_name = field["type"].removeprefix("[]")
        out[BaseField.underscore_name(field["name"])] = getattr(cls, type_name)
    return out


def _convert(cls, data):
    if not isinstance(data, dict):
        return data
    nested = _struct_fields(cls)
    kwargs = {}
    for key, value in data.items():
        sub = nested.get(key)
        if sub is not None and value is not None:
            value = [_convert(sub, v) for v in value] if isinstance(value, list) else _convert(sub, value)
        kwargs[key] = value
    return cls(**kwargs)


def build(message_cls, version: int, data: dict):
    """A ``message_cls`` of ``version`` holding ``data`` (nested dicts become nested structs)."""
    msg = _convert(message_cls, data)
    msg.API_VERSION = version
    return msg
