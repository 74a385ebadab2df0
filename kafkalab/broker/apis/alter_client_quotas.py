"""AlterClientQuotas (key 49), versions 0-1: set or remove client quotas (KIP-546).

Each entry names an entity — components ``user`` and/or ``client-id``, a null
name meaning the default — and ops: set ``key`` to ``value``, or remove it.
Keys: ``producer_byte_rate``, ``consumer_byte_rate`` (whole bytes per second),
``request_percentage``, ``controller_mutation_rate``. Each entry succeeds or
fails alone: INVALID_REQUEST for an unknown key, a value that is not positive,
a fractional byte rate, a repeated or unknown entity type. ``validate_only``
checks and changes nothing. See :mod:`kafkalab.broker.server.client_quota_manager`
for how the quotas are stored and enforced.

v0   entries, validate_only
v1   flexible
"""
from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, AlterClientQuotasResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api


@api(AlterClientQuotasRequest, AlterClientQuotasResponse, versions=(0, 1))
async def handle_alter_client_quotas(ctx, request):
    quotas = ctx.quotas
    entries = []
    allowed = authorize_cluster(ctx, AclOperation.ALTER_CONFIGS)   # Kafka 3.9: ALTER_CONFIGS on the cluster
    for entry in request.entries or ():
        components = [(c.entity_type, c.entity_name) for c in entry.entity or ()]
        result = {"error_code": 0, "error_message": None,
                  "entity": [{"entity_type": t, "entity_name": n} for t, n in components]}
        if not allowed:
            result.update(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                          error_message="Cluster authorization failed.")
            entries.append(result)
            continue
        try:
            entity = quotas.validate_entity(components)
            ops = [(op.key, op.value, bool(op.remove)) for op in entry.ops or ()]
            for key, value, remove in ops:
                quotas.validate_op(entity, key, value, remove)
            if not request.validate_only:
                await quotas.alter(entity, ops)
        except ValueError as exc:
            result.update(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc))
        entries.append(result)
    return {"throttle_time_ms": 0, "entries": entries}
