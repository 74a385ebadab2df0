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


# --- nulls the schema forbids -------------------------------------------------
#
# kafka-python decodes a length of -1 as None whatever the schema says; Kafka's
# generated parsers refuse it ("non-nullable field topics was serialized as
# null") and the broker closes the connection. ``null_violation`` does the same
# check over a decoded request, driven by the message JSON's ``nullableVersions``.

_NULLABLE_KINDS = ("string", "bytes", "records")


_PLANS: dict[tuple[int, int], tuple] = {}  # (id of a schema struct, version) -> its plan; schemas live forever


def _null_plan(field_owner, version: int) -> tuple:
    """(name, forbids_null, element_check, nested_plan) for each field of ``field_owner`` at ``version``
    that could be None: strings, bytes, records, arrays and structs."""
    key = (id(field_owner), version)
    if key in _PLANS:
        return _PLANS[key]
    plan = []
    for field in field_owner._fields or ():
        if not field.for_version_q(version) or field.tagged_field_q(version):
            continue
        forbids = not field.nullable_for_version_q(version)
        if field.is_struct_array():
            plan.append((field.name, forbids, False, _null_plan(field.array_of, version)))
        elif field.is_array():
            elements = field.array_of.type_str in _NULLABLE_KINDS  # elements of []string are never null
            plan.append((field.name, forbids, elements, None))
        elif field.is_struct():
            plan.append((field.name, False, False, _null_plan(field, version)))
        elif field.type_str in _NULLABLE_KINDS:
            plan.append((field.name, forbids, False, None))
    _PLANS[key] = plan = tuple(plan)
    return plan


def _walk(plan, item, path: str) -> str | None:
    for name, forbids, elements, nested in plan:
        value = getattr(item, name, None)
        if value is None:
            if forbids:
                return f"{path}{name}"
            continue
        if elements and any(v is None for v in value):
            return f"{path}{name}[]"
        if nested:
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    found = _walk(nested, sub, f"{path}{name}[{i}].")
                    if found:
                        return found
            else:
                found = _walk(nested, value, f"{path}{name}.")
                if found:
                    return found
    return None


def null_violation(message_cls, version: int, message) -> str | None:
    """The first field of ``message`` that is None where ``message_cls``'s schema at ``version``
    forbids null (e.g. ``"topics"`` or ``"topics[0].partitions"``), or None if every field fits."""
    return _walk(_null_plan(message_cls._struct, version), message, "")
