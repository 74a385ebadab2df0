"""DescribeClientQuotas (key 48), versions 0-1: read client quotas (KIP-546).

The filter is a list of components (entity type, match type, match): match type
0 is an exact name, 1 the default entity, 2 any specified (non-default) name.
An entity matches if it has every filtered type, matching; with ``strict`` it
may have no other type. Each match is answered with its entity and its values.
A bad filter is INVALID_REQUEST for the whole request.

v0   components, strict
v1   flexible
"""
from kafka.protocol.admin.client_quotas import DescribeClientQuotasRequest, DescribeClientQuotasResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api


@api(DescribeClientQuotasRequest, DescribeClientQuotasResponse, versions=(0, 1))
async def handle_describe_client_quotas(ctx, request):
    quotas = ctx.quotas
    if not authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):   # Kafka 3.9: DESCRIBE_CONFIGS on the cluster
        return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "entries": None}
    components = [(c.entity_type, c.match_type, c.match) for c in request.components or ()]
    try:
        found = quotas.describe(components, bool(request.strict))
    except ValueError as exc:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc),
                "entries": None}
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "values": [{"key": k, "value": v} for k, v in sorted(values.items())]} for entity, values in found]}
