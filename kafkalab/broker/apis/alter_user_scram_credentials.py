"""AlterUserScramCredentials (key 51), version 0: create, change or delete users' SCRAM credentials (KIP-554).

Each upsertion carries a user, a mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512), the iterations, the salt and the
salted password (the client salts and hashes: the password never crosses the wire); each deletion a user and a
mechanism. One result per user. A credential created here authenticates at once, a deleted one no more. The checks,
error codes and where the credentials are kept: :mod:`kafkalab.broker.server.credential_provider`.

v0   deletions, upsertions (flexible)
"""
from kafka.protocol.admin.users import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse

from . import api


@api(AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, versions=(0, 0))
async def handle_alter_user_scram_credentials(ctx, request):
    results = await ctx.broker.credential_provider.alter(list(request.upsertions or ()),
                                                         list(request.deletions or ()))
    return {"throttle_time_ms": 0, "results": results}
