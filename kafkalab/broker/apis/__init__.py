"""The broker's Kafka APIs: one module per API, in the spirit of franz-go's kfake.

Every module opens with the API's name, the versions it serves and what each
version added, then registers its handler with :func:`api`::

    @api(ProduceRequest, ProduceResponse, versions=(3, 11))
    async def handle_produce(ctx, request): ...

ApiVersions is built from these registrations, so the broker can never
advertise a version it does not implement. A handler gets a
:class:`RequestContext` and the decoded request, and returns a dict (built
into the response class at the request's version) or ``None`` for no
response (Produce with acks=0).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .messages import build

if TYPE_CHECKING:
    from ..server.kafka_broker import KafkaBroker


@dataclass
class ApiSpec:
    key: int
    name: str
    request: type
    response: type
    min_version: int
    max_version: int
    handler: Callable[["RequestContext", Any], Awaitable[dict | None]]


REGISTRY: dict[int, ApiSpec] = {}


def api(request_cls, response_cls, versions: tuple[int, int]):
    """Register a handler for ``request_cls`` serving ``versions`` (inclusive)."""
    lo, hi = versions
    if hi > request_cls.max_version:
        raise ValueError(f"{request_cls.name}: codec knows versions up to {request_cls.max_version}, not {hi}")

    def register(handler):
        key = request_cls.API_KEY
        if key in REGISTRY:
            raise ValueError(f"API key {key} ({request_cls.name}) registered twice")
        REGISTRY[key] = ApiSpec(key, request_cls.name.removesuffix("Request"), request_cls, response_cls,
                                lo, hi, handler)
        return handler

    return register


@dataclass
class RequestContext:
    """What a handler knows about the request besides its body."""

    broker: KafkaBroker   # the contract every broker mode implements (kafkalab.broker.server.kafka_broker)
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    client_host: str
    connection_id: int

    def response(self, spec: ApiSpec, data: dict):
        return build(spec.response, self.api_version, data)


def load_all() -> dict[int, ApiSpec]:
    """Import every API module (each registers itself) and return the registry."""
    for info in pkgutil.iter_modules(__path__):
        if info.name not in ("messages",):
            importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY
