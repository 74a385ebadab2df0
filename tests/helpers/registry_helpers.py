"""A tiny HTTP client for the registry tests (the standard library's, so the tests see raw statuses and bodies)."""
from __future__ import annotations

import http.client
import json
from urllib.parse import quote, urlsplit


class Rest:
    """``rest.get("/subjects")`` -> (status, parsed JSON body)."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def call(self, method: str, path: str, body=None, raw: bytes | None = None) -> tuple[int, object]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            payload = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"} if payload is not None else {}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
            assert response.getheader("Content-Type") == "application/vnd.schemaregistry.v1+json"
            return response.status, json.loads(data)
        finally:
            connection.close()

    def get(self, path: str):
        return self.call("GET", path)

    def post(self, path: str, body=None, raw: bytes | None = None):
        return self.call("POST", path, body, raw)

    def put(self, path: str, body=None):
        return self.call("PUT", path, body)

    def delete(self, path: str):
        return self.call("DELETE", path)


def avro(**schema) -> dict:
    """The request body registering an Avro schema: ``{"schema": "<the schema as a JSON string>"}``."""
    return {"schema": json.dumps(schema)}


def record(name: str, *fields) -> dict:
    """A record schema body; each field is (name, type) or (name, type, default)."""
    return avro(type="record", name=name,
                fields=[{"name": f[0], "type": f[1], **({"default": f[2]} if len(f) > 2 else {})} for f in fields])


def subject_path(subject: str) -> str:
    return quote(subject, safe="")
