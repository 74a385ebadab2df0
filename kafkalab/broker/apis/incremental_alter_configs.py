"""IncrementalAlterConfigs (key 44), versions 0-1: change single topic configs (KIP-339).

Each config carries an operation:
  SET (0)       set the override
  DELETE (1)    remove the override: back to the broker default
  APPEND (2)    list configs only (``cleanup.policy``): add values not yet there
  SUBTRACT (3)  list configs only: remove values
The operations apply to the current overrides and the result is validated as
a whole: all or nothing per resource. A change is saved with the topic
metadata and takes effect at once (the topic's live ``LogConfig`` is updated
in place). A bad name or value is INVALID_CONFIG naming it; APPEND/SUBTRACT on
a non-list config is INVALID_CONFIG; ``validate_only`` checks and changes nothing.

v0   resources with (name, operation, value), validate_only
v1   flexible
Resources: TOPIC (2); GROUP (32, KIP-932's ``share.auto.offset.reset``: SET and DELETE). BROKER (4) gets
INVALID_REQUEST: the mini broker has no dynamic broker configs (KIP-226), set them when starting it.
Simplified: APPEND/SUBTRACT without an override start from the topic's effective
value (Kafka starts from the built-in default, ignoring a broker-wide setting).
"""
from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse

from ..server.admin_manager import ConfigResourceType
from . import api
from .alter_configs import alter_each


@api(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, versions=(0, 1))
async def handle_incremental_alter_configs(ctx, request):
    admin = ctx.broker.admin_manager

    def apply(r):
        ops = [(c.name, c.config_operation, c.value) for c in r.configs]
        if r.resource_type == ConfigResourceType.GROUP:
            return ctx.broker.share_partition_manager.alter_group_configs(r.resource_name, ops,
                                                                          bool(request.validate_only))
        return admin.incremental_alter_topic_configs(r.resource_name, ops, validate_only=bool(request.validate_only))
    return alter_each(request, apply, also=(ConfigResourceType.GROUP,), ctx=ctx)
