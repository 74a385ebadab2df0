"""Parsed schemas (Confluent's ``ParsedSchema``): Avro and JSON Schema, checked by maintained libraries.

* **Avro** is parsed twice: by Apache Avro's Python library (``avro.schema``: names, types, duplicate fields and
  symbols) and by ``fastavro`` (which also checks that every default matches its field's type, as Java's Avro
  does when Confluent's registry parses a schema). Reader/writer compatibility is Apache Avro's own
  ``avro.compatibility.ReaderWriterCompatibilityChecker`` -- a port of Java's ``SchemaCompatibility``, the
  schema resolution rules of the Avro specification, which is what Confluent's registry runs for Avro.
* **JSON Schema** is checked against its metaschema by ``jsonschema``. No maintained Python library implements
  Confluent's JSON Schema compatibility rules, so kafkalab's registry stores and serves JSON schemas but checks
  their compatibility only under ``NONE``: another level answers 42201 and says so (see docs/schema-registry.md).
* **Protobuf** is not served (42201).

Two registrations are "the same schema" when their parsed forms are equal: key order and white space do not
matter, names, defaults, docs and field order do (Confluent compares the canonical string of the parsed schema).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import errors

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"
#: what ``GET /schemas/types`` lists
SUPPORTED_TYPES = (JSON, AVRO)


@dataclass(frozen=True)
class ParsedSchema:
    """A schema that parsed: its type, the string the registry serves and stores, and its identity."""

    schema_type: str
    canonical: str           # compact JSON, keys in the order given: what GET /schemas/ids/{id} answers
    identity: str = field(repr=False)   # equal for the same schema (keys sorted): the deduplication key
    parsed: object = field(repr=False, compare=False, hash=False, default=None)

    def __eq__(self, other) -> bool:
        return isinstance(other, ParsedSchema) and (self.schema_type, self.identity) == (other.schema_type,
                                                                                          other.identity)

    def __hash__(self) -> int:
        return hash((self.schema_type, self.identity))


def parse(schema: str, schema_type: str | None = None, references: list | None = None) -> ParsedSchema:
    """Parse a schema as the registry receives it; a schema that does not parse raises 42201."""
    schema_type = (schema_type or AVRO).upper()
    if references:
        raise errors.invalid_schema("schema references are not supported by kafkalab's registry")
    if not isinstance(schema, str):
        raise errors.invalid_schema("'schema' must be a string holding the schema")
    if schema_type == AVRO:
        return _parse_avro(schema)
    if schema_type == JSON:
        return _parse_json_schema(schema)
    if schema_type == PROTOBUF:
        raise errors.invalid_schema("schemaType PROTOBUF is not supported by kafkalab's registry (AVRO and JSON are)")
    raise errors.invalid_schema(f"unknown schemaType '{schema_type}' (AVRO, JSON or PROTOBUF)")


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _parse_avro(text: str) -> ParsedSchema:
    import avro.errors
    import avro.schema
    import fastavro

    try:
        document = json.loads(text)
    except ValueError:
        # Avro allows a bare primitive type name: "string" is the JSON string "\"string\""
        raise errors.invalid_schema(f"not JSON: {text[:80]!r}") from None
    try:
        parsed = avro.schema.parse(text)
    except (avro.errors.AvroException, TypeError, ValueError, KeyError) as e:
        raise errors.invalid_schema(str(e)) from None
    try:
        fastavro.parse_schema(document)
    except Exception as e:   # noqa: BLE001 - fastavro raises SchemaParseException, UnknownType, ValueError, ...
        raise errors.invalid_schema(str(e)) from None
    identity = json.dumps(parsed.to_json(), sort_keys=True, separators=(",", ":"))
    return ParsedSchema(AVRO, _compact(document), identity, parsed)


def _parse_json_schema(text: str) -> ParsedSchema:
    import jsonschema
    import jsonschema.exceptions

    try:
        document = json.loads(text)
    except ValueError:
        raise errors.invalid_schema(f"not JSON: {text[:80]!r}") from None
    if not isinstance(document, (dict, bool)):
        raise errors.invalid_schema("a JSON Schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(document).check_schema(document)
    except jsonschema.exceptions.SchemaError as e:
        raise errors.invalid_schema(e.message) from None
    return ParsedSchema(JSON, _compact(document), json.dumps(document, sort_keys=True, separators=(",", ":")),
                        document)


_DESCRIPTIONS = {
    "READER_FIELD_MISSING_DEFAULT_VALUE": "the field '{m}' at path '{p}' in the {r} schema has no default value and "
                                          "is missing in the {w} schema",
    "TYPE_MISMATCH": "the type at path '{p}' in the {r} schema does not match the {w} schema ({m})",
    "MISSING_ENUM_SYMBOLS": "the {r} schema is missing enum symbols {m} at path '{p}' of the {w} schema",
    "NAME_MISMATCH": "the name of the schema at path '{p}' has changed ({m})",
    "FIXED_SIZE_MISMATCH": "the size of the fixed type at path '{p}' differs between the two schemas ({m})",
    "MISSING_UNION_BRANCH": "the {r} schema is missing a type of the {w} schema's union at path '{p}' ({m})",
}


def can_read(reader: ParsedSchema, writer: ParsedSchema, reader_label: str = "reader's",
             writer_label: str = "writer's") -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (Avro schema resolution); [] if it can.

    The labels name the two schemas in the messages (Confluent says "new" and "old")."""
    if reader.schema_type != writer.schema_type:
        return [f"{{errorType:'TYPE_MISMATCH', description:'a {reader.schema_type} schema cannot read "
                f"{writer.schema_type} data'}}"]
    if reader.schema_type != AVRO:
        raise errors.invalid_schema(f"kafkalab's registry checks the compatibility of {reader.schema_type} schemas "
                                    "only under the level NONE; set it with PUT /config/{subject}")
    from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

    result = ReaderWriterCompatibilityChecker().get_compatibility(reader.parsed, writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    kinds = sorted({i.name.upper() for i in result.incompatibilities}) or ["TYPE_MISMATCH"]
    message, path = "; ".join(sorted(result.messages)), ", ".join(sorted(result.locations))
    description = _DESCRIPTIONS.get(kinds[0], "{m}").format(m=message, p=path, r=reader_label, w=writer_label)
    return [f"{{errorType:'{', '.join(kinds)}', description:'{description[0].upper() + description[1:]}', "
            f"additionalInfo:'{message}'}}"]
