"""Kafka Connect's REST API (``org.apache.kafka.connect.runtime.rest.resources``), as the lessons call it.

One function per call, named after what Connect's ``ConnectorsResource`` does, over the standard library's
``urllib``: ``GET /`` (the worker's version and the Kafka cluster id), ``GET /connectors``,
``POST /connectors``, ``PUT /connectors/{name}/config``, ``GET /connectors/{name}/status``,
``GET /connectors/{name}/tasks``, ``GET /connectors/{name}/offsets`` (KIP-875), ``DELETE /connectors/{name}``,
``GET /connector-plugins``. Any worker answers any request: a write that must be done by the group's
leader is forwarded to it by the worker (``HerderRequestHandler``).

A refusal raises :class:`ConnectRestError` carrying Connect's own ``error_code`` and ``message``.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request


class ConnectRestError(RuntimeError):
    """Connect's REST API refused a request (or no worker answered); ``status`` is the HTTP status (0: none)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


def call(url: str, method: str = "GET", path: str = "/", body: object = None, timeout: float = 30.0):
    """``method path`` on the worker at ``url``; the decoded JSON answer (None for 204 No Content)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            message = json.loads(raw).get("message") or raw.decode(errors="replace")
        except (ValueError, AttributeError):
            message = raw.decode(errors="replace").strip() or e.reason
        raise ConnectRestError(f"{method} {path}: HTTP {e.code}: {message}", e.code) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise ConnectRestError(f"{method} {path}: no answer from the Connect worker at {url} ({reason})") from None
    return json.loads(raw) if raw.strip() else None


def quote(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{name!r} is not a connector name")
    return urllib.parse.quote(name, safe="")


def server_info(url: str, timeout: float = 5.0) -> dict:
    """``GET /``: ``{"version": "3.9.2", "commit": ..., "kafka_cluster_id": ...}``."""
    return call(url, timeout=timeout)


def connectors(url: str) -> list[str]:
    return sorted(call(url, path="/connectors"))


def create_connector(url: str, name: str, config: dict) -> dict:
    """``POST /connectors``: 409 Conflict if it exists (:func:`put_connector_config` creates or updates)."""
    if not isinstance(config, dict) or "connector.class" not in config:
        raise ValueError("a connector's config is a dict with at least 'connector.class' "
                         "(e.g. 'org.apache.kafka.connect.file.FileStreamSourceConnector')")
    quote(name)
    return call(url, "POST", "/connectors", {"name": name, "config": {k: str(v) for k, v in config.items()}})


def put_connector_config(url: str, name: str, config: dict) -> dict:
    return call(url, "PUT", f"/connectors/{quote(name)}/config", {k: str(v) for k, v in config.items()})


def delete_connector(url: str, name: str) -> None:
    call(url, "DELETE", f"/connectors/{quote(name)}")


def connector_status(url: str, name: str) -> dict:
    """``{"name", "connector": {"state", "worker_id"}, "tasks": [{"id", "state", "worker_id"}], "type"}``."""
    return call(url, path=f"/connectors/{quote(name)}/status")


def connector_tasks(url: str, name: str) -> list[dict]:
    return call(url, path=f"/connectors/{quote(name)}/tasks")


def connector_offsets(url: str, name: str) -> list[dict]:
    """KIP-875's ``GET /connectors/{name}/offsets``: ``[{"partition": {...}, "offset": {...}}, ...]``."""
    return call(url, path=f"/connectors/{quote(name)}/offsets")["offsets"]


def connector_plugins(url: str) -> list[dict]:
    return call(url, path="/connector-plugins?connectorsOnly=false")
