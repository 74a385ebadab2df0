"""The registry's REST API: Confluent Schema Registry's resources, over the standard library's HTTP server.

===========================================================  =====================================================
``GET /``, ``GET /schemas/types``                            ``{}``; ``["JSON", "AVRO"]``
``GET /schemas/ids/{id}``                                    ``{"schema": ...}`` (40403)
``GET /schemas/ids/{id}/subjects``, ``/versions``            where that id is registered
``GET /subjects``                                            subjects with a live version (``?deleted=true``: all)
``POST /subjects/{s}``                                       is this schema registered under s? (40401, 40403)
``DELETE /subjects/{s}[?permanent=true]``                    soft, then hard delete (40401, 40404, 40405)
``GET /subjects/{s}/versions``                               ``[1, 2, ...]`` (40401)
``POST /subjects/{s}/versions``                              register: ``{"id": N}`` (42201, 40901)
``GET /subjects/{s}/versions/{v}[/schema|/referencedby]``    a version; ``v`` = n or ``latest`` (40402, 42202)
``DELETE /subjects/{s}/versions/{v}[?permanent=true]``       (40402, 40406, 40407)
``POST /compatibility/subjects/{s}/versions[/{v}]``          ``{"is_compatible": bool}`` (``?verbose=true``)
``GET|PUT|DELETE /config``, ``/config/{s}``                  compatibility levels (40408, 42203)
``GET /mode``, ``GET /mode/{s}``                             always ``READWRITE`` (kafkalab has no other mode)
===========================================================  =====================================================

Errors are Confluent's: the HTTP status and ``{"error_code": 40401, "message": "..."}``
(:mod:`kafkalab.registry.errors`). Answers are ``application/vnd.schemaregistry.v1+json``.
"""
from __future__ import annotations

import json
import logging
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from . import errors, schemas
from .kafka_schema_registry import KafkaSchemaRegistry

log = logging.getLogger(__name__)
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MAX_BODY = 16 * 1024 * 1024


def _flag(query: dict, name: str) -> bool:
    return query.get(name, ["false"])[-1].lower() == "true"


# Each route: (method, path pattern over the decoded segments, handler(registry, args, query, body) -> json)
def _root(r, a, q, b):
    return {}


def _types(r, a, q, b):
    return list(schemas.SUPPORTED_TYPES)


def _schema_by_id(r, a, q, b):
    parsed = r.schema_by_id(a[0])
    body = {"schema": parsed.canonical}
    if parsed.schema_type != schemas.AVRO:
        body["schemaType"] = parsed.schema_type
    return body


def _schema_string_by_id(r, a, q, b):
    return json.loads(r.schema_by_id(a[0]).canonical)


def _id_subjects(r, a, q, b):
    return sorted({e.subject for e in r.usages(a[0], _flag(q, "deleted"))})


def _id_versions(r, a, q, b):
    return [{"subject": e.subject, "version": e.version} for e in r.usages(a[0], _flag(q, "deleted"))]


def _page(items: list, q: dict) -> list:
    """``offset`` and ``limit`` (negative: no limit) of a listing."""
    try:
        offset, limit = int(q.get("offset", ["0"])[-1]), int(q.get("limit", ["-1"])[-1])
    except ValueError:
        raise errors.bad_request("offset and limit are integers") from None
    items = items[max(offset, 0):]
    return items if limit < 0 else items[:limit]


def _deleted(q: dict) -> bool | str:
    """``deleted=true``: live and soft-deleted; ``deleted_only=true`` (or ``deletedOnly``): soft-deleted only."""
    return "only" if _flag(q, "deleted_only") or _flag(q, "deletedOnly") else _flag(q, "deleted")


def _subjects(r, a, q, b):
    prefix = q.get("subjectPrefix", [""])[-1]
    return _page([s for s in r.subjects(_deleted(q)) if s.startswith(prefix)], q)


def _lookup(r, a, q, b):
    return r.lookup(a[0], b, _flag(q, "deleted")).as_json()


def _delete_subject(r, a, q, b):
    return r.delete_subject(a[0], _flag(q, "permanent"))


def _versions(r, a, q, b):
    return _page(r.versions(a[0], _deleted(q)), q)


def _register(r, a, q, b):
    return {"id": r.register(a[0], b)}


def _version(r, a, q, b):
    return r.version(a[0], a[1], _flag(q, "deleted")).as_json()


def _version_schema(r, a, q, b):
    return json.loads(r.version(a[0], a[1], _flag(q, "deleted")).schema.canonical)


def _referenced_by(r, a, q, b):
    r.version(a[0], a[1])
    return []                    # kafkalab's registry has no schema references


def _delete_version(r, a, q, b):
    return r.delete_version(a[0], a[1], _flag(q, "permanent"))


def _compatibility(r, a, q, b):
    messages = r.test_compatibility(a[0], a[1] if len(a) > 1 else None, b)
    answer = {"is_compatible": not messages}
    if _flag(q, "verbose"):
        answer["messages"] = messages
    return answer


def _get_config(r, a, q, b):
    return {"compatibilityLevel": r.config(a[0] if a else None, _flag(q, "defaultToGlobal"))}


def _put_config(r, a, q, b):
    return {"compatibility": r.update_config(a[0] if a else None, b)}


def _delete_config(r, a, q, b):
    return {"compatibilityLevel": r.delete_config(a[0] if a else None)}


def _mode(r, a, q, b):
    return {"mode": "READWRITE"}


S = "([^/]+)"      # one path segment (decoded afterwards: a subject may hold an encoded '/')
ROUTES = [
    ("GET", "", _root),
    ("GET", "schemas/types", _types),
    ("GET", f"schemas/ids/{S}", _schema_by_id),
    ("GET", f"schemas/ids/{S}/schema", _schema_string_by_id),
    ("GET", f"schemas/ids/{S}/subjects", _id_subjects),
    ("GET", f"schemas/ids/{S}/versions", _id_versions),
    ("GET", "subjects", _subjects),
    ("POST", f"subjects/{S}", _lookup),
    ("DELETE", f"subjects/{S}", _delete_subject),
    ("GET", f"subjects/{S}/versions", _versions),
    ("POST", f"subjects/{S}/versions", _register),
    ("GET", f"subjects/{S}/versions/{S}", _version),
    ("DELETE", f"subjects/{S}/versions/{S}", _delete_version),
    ("GET", f"subjects/{S}/versions/{S}/schema", _version_schema),
    ("GET", f"subjects/{S}/versions/{S}/referencedby", _referenced_by),
    ("POST", f"compatibility/subjects/{S}/versions", _compatibility),
    ("POST", f"compatibility/subjects/{S}/versions/{S}", _compatibility),
    ("GET", "config", _get_config),
    ("PUT", "config", _put_config),
    ("DELETE", "config", _delete_config),
    ("GET", f"config/{S}", _get_config),
    ("PUT", f"config/{S}", _put_config),
    ("DELETE", f"config/{S}", _delete_config),
    ("GET", "mode", _mode),
    ("GET", f"mode/{S}", _mode),
]
_COMPILED = [(method, re.compile(pattern + r"/?\Z"), handler) for method, pattern, handler in ROUTES]


def route(method: str, path: str):
    """The handler and its decoded path arguments; 404 for an unknown path, 405 for a wrong method."""
    path = path.strip("/")
    matched_path = False
    for m, pattern, handler in _COMPILED:
        match = pattern.match(path)
        if match:
            matched_path = True
            if m == method:
                return handler, [unquote(g) for g in match.groups()]
    raise errors.method_not_allowed() if matched_path else errors.no_such_resource()


class RegistryRequestHandler(BaseHTTPRequestHandler):
    """One HTTP request: route it, run it, answer JSON (or Confluent's error body)."""

    server_version = "kafkalab-schema-registry"
    protocol_version = "HTTP/1.1"

    def _handle(self, method: str) -> None:
        url = urlsplit(self.path)
        try:
            handler, args = route(method, url.path)
            body = self._read_body() if method in ("POST", "PUT") else None
            status, answer = 200, handler(self.server.registry, args, parse_qs(url.query), body)
        except errors.RestError as e:
            status, answer = e.status, e.body()
        except Exception as e:      # noqa: BLE001 - a bug answers 500 and the registry keeps serving
            log.exception("%s %s failed", method, self.path)
            status, answer = 500, {"error_code": 500, "message": f"Internal Server Error: {e}"}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _read_body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True
            raise errors.RestError(413, f"request body over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as e:
            raise errors.bad_request(f"the request body is not JSON: {e}") from None
        if not isinstance(body, dict):
            raise errors.unprocessable("the request body must be a JSON object")
        return body

    def send_error(self, code, message=None, explain=None):
        """Errors of the HTTP layer itself (a request line or header that does not parse) in Confluent's body."""
        body = json.dumps({"error_code": code, "message": message or self.responses.get(code, ("",))[0]}).encode()
        self.close_connection = True
        self.send_response(code, message)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PUT(self):
        self._handle("PUT")

    def do_DELETE(self):
        self._handle("DELETE")

    def log_message(self, format, *args):     # noqa: A002 - the base class's name
        log.debug("%s %s", self.address_string(), format % args)


class RegistryHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], registry: KafkaSchemaRegistry):
        self.registry = registry
        super().__init__(address, RegistryRequestHandler)
