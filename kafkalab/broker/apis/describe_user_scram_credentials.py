"""DescribeUserScramCredentials (key 50), version 0: which SCRAM mechanisms each user has, with their iterations
(never the salt or the keys) (KIP-554).

A null or empty user list describes every user with a credential; a user named without one is RESOURCE_NOT_FOUND,
a user named twice DUPLICATE_RESOURCE (:mod:`kafkalab.broker.server.credential_provider`).

It needs DESCRIBE on the cluster (Kafka's ``KafkaApis.handleDescribeUserScramCredentialsRequest``, 3.9 and 4.x):
refused, the answer is ``DescribeUserScramCredentialsRequest.getErrorResponse``'s, CLUSTER_AUTHORIZATION_FAILED at
the top and once per user asked for, with no message (the error's own, which ``ApiError.fromThrowable`` leaves
out) and, as Kafka's, no user name in those results.

v0   users (flexible)
"""
from kafka.protocol.admin.users import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

from ..common.errors import ErrorCode
from ..security.auth_helper import AclOperation, authorize_cluster
from . import api


@api(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, versions=(0, 0))
async def handle_describe_user_scram_credentials(ctx, request):
    users = None if request.users is None else [u.name for u in request.users]
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": code, "error_message": None,
                "results": [{"user": "", "error_code": code, "error_message": None, "credential_infos": []}
                            for _ in users or []]}
    return {"throttle_time_ms": 0, **ctx.broker.credential_provider.describe(users)}
