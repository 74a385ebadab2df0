"""DescribeUserScramCredentials (key 50), version 0: which SCRAM mechanisms each user has, with their iterations
(never the salt or the keys) (KIP-554).

A null or empty user list describes every user with a credential; a user named without one is RESOURCE_NOT_FOUND,
a user named twice DUPLICATE_RESOURCE (:mod:`kafkalab.broker.server.credential_provider`).

v0   users (flexible)
"""
from kafka.protocol.admin.users import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse

from . import api


@api(DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, versions=(0, 0))
async def handle_describe_user_scram_credentials(ctx, request):
    users = None if request.users is None else [u.name for u in request.users]
    return {"throttle_time_ms": 0, **ctx.broker.credential_provider.describe(users)}
