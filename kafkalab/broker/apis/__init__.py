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

:class:`ApiRegistry` is such a set of registrations; ``REGISTRY`` is the
broker's (:class:`~kafkalab.broker.kafka_apis.KafkaApis` serves it). A KRaft
controller's listener has its own registries, filled the same way
(:mod:`kafkalab.raft.raft_apis`, :mod:`kafkalab.controller.controller_apis`).
The registry also holds the steps every server takes with a request before and
after its handler: which API and version (:meth:`ApiRegistry.lookup`), the
body (:meth:`ApiRegistry.decode`), the response frame (:meth:`ApiRegistry.encode`).
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..common.errors import ErrorCode
from ..common.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from ..network.request_channel import InvalidRequest, Request
from ..common.message.codec import build, null_violation

API_VERSIONS_KEY = 18

if TYPE_CHECKING:
    from ..server.kafka_broker import KafkaBroker


@dataclass
class ApiSpec:
    key: int
    name: str
    request: Any    # the request's kafka-python ApiMessage class (untyped)
    response: Any   # the response's
    min_version: int
    max_version: int
    handler: Callable[..., Awaitable[dict | None]]


class ApiRegistry(dict):
    """api key -> :class:`ApiSpec`: the APIs one listener serves."""

    def api(self, request_cls, response_cls, versions: tuple[int, int]):
        """Register a handler for ``request_cls`` serving ``versions`` (inclusive)."""
        lo, hi = versions
        if hi > request_cls.max_version:
            raise ValueError(f"{request_cls.name}: codec knows versions up to {request_cls.max_version}, not {hi}")

        def register(handler):
            self.add(ApiSpec(request_cls.API_KEY, request_cls.name.removesuffix("Request"), request_cls,
                             response_cls, lo, hi, handler))
            return handler

        return register

    def add(self, spec: ApiSpec) -> None:
        if spec.key in self:
            raise ValueError(f"API key {spec.key} ({spec.request.name}) registered twice")
        self[spec.key] = spec

    def bound(self, target) -> list[ApiSpec]:
        """The registrations with ``target`` as their handlers' first argument: ``handler(request)``."""
        return [replace(spec, handler=functools.partial(spec.handler, target)) for spec in self.values()]

    def advertised(self) -> list[dict]:
        """What ApiVersions answers: (api key, min, max) of every registration, by key."""
        return [{"api_key": s.key, "min_version": s.min_version, "max_version": s.max_version}
                for s in sorted(self.values(), key=lambda s: s.key)]

    # -- the steps every server takes with a request -------------------------------------------------------

    def lookup(self, request: Request) -> ApiSpec | None:
        """The API of ``request``; ``None`` for ApiVersions in a version not served (answer with
        :meth:`unsupported_api_versions`); InvalidRequest for any other API or version not served."""
        spec = self.get(request.api_key)
        if spec is None:
            raise InvalidRequest(f"unknown API key {request.api_key}")
        if not spec.min_version <= request.api_version <= spec.max_version:
            if request.api_key == API_VERSIONS_KEY:
                return None
            raise InvalidRequest(f"{spec.name} v{request.api_version} is not supported "
                                 f"(v{spec.min_version}-v{spec.max_version})")
        return spec

    @staticmethod
    def decode(spec: ApiSpec, request: Request):
        """The request's header and body; InvalidRequest if they cannot be parsed or hold a null where the
        API's schema forbids it, e.g. a null topic array (Kafka closes with InvalidRequestException)."""
        version = request.api_version
        try:
            body = spec.request.decode(request.frame, version=version, header=True)
        except Exception as exc:   # noqa: BLE001 - the codec raises anything on bytes it cannot parse
            raise InvalidRequest(f"cannot parse {spec.name} v{version}: {exc!r}") from None
        field = null_violation(spec.request, version, body)
        if field is not None:  # Kafka's generated parser: "non-nullable field X was serialized as null"
            raise InvalidRequest(f"cannot parse {spec.name} v{version}: non-nullable field {field} "
                                 f"was serialized as null")
        return body

    @staticmethod
    def encode(spec: ApiSpec, version: int, correlation_id: int, result: dict) -> bytearray:
        """The response frame: ``result`` built into the response class at ``version``, with its header."""
        response = build(spec.response, version, result)
        response.with_header(correlation_id=correlation_id)
        # encode() already returns a fresh bytearray; bytes() would copy every Fetch response again
        return response.encode(header=True, framed=True)

    def unsupported_api_versions(self, correlation_id: int) -> bytearray:
        """ApiVersions in a version we do not know: answer in v0 with UNSUPPORTED_VERSION and ApiVersions' own
        range only, so the client can retry with a version we have (KIP-511; Kafka's
        ``ApiVersionsRequest.getErrorResponse``)."""
        own = [entry for entry in self.advertised() if entry["api_key"] == API_VERSIONS_KEY]
        return self.encode(self[API_VERSIONS_KEY], 0, correlation_id,
                           {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": own})


REGISTRY = ApiRegistry()
#: register one of the broker's APIs (see the module's docstring)
api = REGISTRY.api


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
    #: the broker's client quotas (ClientQuotaManager), handed in by KafkaApis
    quotas: Any = None
    #: the connection's KafkaChannel (listener, security protocol, principal); None for a request made in a test
    channel: Any = None
    #: set by a consumer's Fetch under a quota: ``fetch_commit(throttle_ms)`` gives the response to send once
    #: KafkaApis knows whether it is throttled, and only then tells the fetch session what was sent
    fetch_commit: Any = None

    @property
    def principal(self) -> KafkaPrincipal:
        """Who sent the request (``User:ANONYMOUS`` on a PLAINTEXT connection), as Kafka's ``RequestContext``."""
        return self.channel.principal if self.channel is not None else ANONYMOUS

    @property
    def api_name(self) -> str:
        """The API's name as Kafka's ``ApiKeys`` (``Produce``): what the authorizer's log calls the request."""
        spec = REGISTRY.get(self.api_key)
        return spec.name if spec is not None else str(self.api_key)

    @property
    def listener_name(self) -> str:
        return self.channel.listener_name if self.channel is not None else "PLAINTEXT"

    def response(self, spec: ApiSpec, data: dict):
        return build(spec.response, self.api_version, data)


def load_all() -> ApiRegistry:
    """Import every API module (each registers itself) and return the registry."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY
