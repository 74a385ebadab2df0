"""ApiVersions (key 18), versions 0-4: which APIs and versions this broker speaks.

v0  the list of (api key, min, max)
v1  + throttle_time_ms
v2  same as v1
v3  flexible (tagged fields); the client sends its software name and version;
    the response may carry supported/finalized features (none here)
v4  same as v3 (KIP-511 follow-up)

Clients send ApiVersions first and then use, for each API, the highest
version both sides know. The list is built from the handler registrations in
``kafkalab.broker.apis``, so it is always exactly what is implemented. Per
KIP-511 the response header is always v0, even for flexible versions.
"""
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from . import REGISTRY, api


def advertised() -> list[dict]:
    return REGISTRY.advertised()


@api(ApiVersionsRequest, ApiVersionsResponse, versions=(0, 4))
async def handle_api_versions(ctx, request):
    return {"error_code": 0, "api_keys": advertised(), "throttle_time_ms": 0}
