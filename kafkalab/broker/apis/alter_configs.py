"""AlterConfigs (key 33), versions 0-2: replace a topic's config overrides (the legacy API).

The configs sent become the topic's *whole* override set: every override not
sent goes back to its default (which is why clients prefer
IncrementalAlterConfigs, KIP-339). A change is saved with the topic metadata
and takes effect at once: the topic's live ``LogConfig`` is updated in place,
so the next append, roll or retention check uses the new value. A bad name
or value is INVALID_CONFIG naming it; ``validate_only`` checks and changes nothing.

v0   resources with config name/value pairs, validate_only
v1   same as v0
v2   flexible
Resources: TOPIC (2). BROKER (4) gets INVALID_REQUEST: the mini broker has no
dynamic broker configs (KIP-226), set them when starting it.
"""
from collections import Counter

from kafka.protocol.admin.configs import AlterConfigsRequest, AlterConfigsResponse

from ..server.admin_manager import ConfigResourceType
from ..common.errors import ErrorCode, KafkaError
from ..security.auth_helper import AclOperation
from .describe_configs import config_refusal
from . import api

DYNAMIC_BROKER_CONFIGS_UNSUPPORTED = (
    "dynamic broker configs are not supported by the mini broker: set broker configs when it starts "
    "(kafkalab.mini(**{...}) or python -m kafkalab.broker --config name=value)")


def check_resource_type(resource_type: int, also=()) -> None:
    """Only topics (and the types in ``also``) have alterable configs here; anything else gets a clear
    INVALID_REQUEST."""
    if resource_type == ConfigResourceType.TOPIC or resource_type in also:
        return
    if resource_type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        raise KafkaError(ErrorCode.INVALID_REQUEST, DYNAMIC_BROKER_CONFIGS_UNSUPPORTED)
    try:
        kind = ConfigResourceType(resource_type).name
    except ValueError:
        kind = str(resource_type)
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")


def check_duplicates(names) -> None:
    dup = sorted(n for n, c in Counter(names).items() if c > 1)
    if dup:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {', '.join(dup)}")


def result(resource, exc: KafkaError | None = None) -> dict:
    return {"error_code": exc.code if exc else 0, "error_message": exc.message if exc else None,
            "resource_type": resource.resource_type, "resource_name": resource.resource_name}


def alter_each(request, apply, also=(), ctx=None) -> dict:
    """Both config APIs: per resource, check it (and, given ``ctx``, that the principal may ALTER_CONFIGS it),
    ``apply(resource)``, answer its result or error."""
    responses = []
    for r in request.resources:
        try:
            refused = None if ctx is None else config_refusal(ctx, AclOperation.ALTER_CONFIGS, r.resource_type,
                                                              r.resource_name)
            if refused is not None:
                raise refused
            check_resource_type(r.resource_type, also)
            check_duplicates(c.name for c in r.configs)
            apply(r)
            responses.append(result(r))
        except KafkaError as exc:
            responses.append(result(r, exc))
    return {"throttle_time_ms": 0, "responses": responses}


@api(AlterConfigsRequest, AlterConfigsResponse, versions=(0, 2))
async def handle_alter_configs(ctx, request):
    admin = ctx.broker.admin_manager
    return alter_each(request, lambda r: admin.alter_topic_configs(
        r.resource_name, {c.name: c.value for c in r.configs}, validate_only=bool(request.validate_only)), ctx=ctx)
