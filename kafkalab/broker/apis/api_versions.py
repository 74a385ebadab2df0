"""ApiVersions (key 18), versions 0-4: which APIs and versions this broker speaks.

v0  the list of (api key, min, max)
v1  + throttle_time_ms
v2  same as v1
v3  flexible (tagged fields); the client sends its software name and version;
    the response carries the features (KIP-584) the broker supports and those
    the cluster finalized, with their epoch (``server/broker_features.py``): a
    KRaft broker's from its metadata image, none in ZooKeeper mode (as Kafka
    3.9's ZooKeeper brokers) or standalone
v4  same as v3 (KIP-511 follow-up)

Clients send ApiVersions first and then use, for each API, the highest
version both sides know. The list is built from the handler registrations in
``kafkalab.broker.apis``, so it is always exactly what is implemented. Per
KIP-511 the response header is always v0, even for flexible versions.
"""
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

from ..server.broker_features import SUPPORTED_FEATURES, api_versions_features
from ..server.metadata_mode import MetadataMode
from . import REGISTRY, api


def advertised() -> list[dict]:
    return REGISTRY.advertised()


@api(ApiVersionsRequest, ApiVersionsResponse, versions=(0, 4))
async def handle_api_versions(ctx, request):
    kraft = ctx.broker.metadata_mode is MetadataMode.KRAFT
    return {"error_code": 0, "api_keys": advertised(), "throttle_time_ms": 0,
            **api_versions_features(SUPPORTED_FEATURES if kraft else {}, ctx.broker.metadata_cache.features,
                                    ctx.api_version)}
