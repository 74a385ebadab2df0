"""SaslAuthenticate (key 36), versions 0-2: one SASL token each way (after SaslHandshake v1, KIP-152).

The connection's
:class:`~kafkalab.broker.common.security.authenticator.sasl_server_authenticator.SaslServerAuthenticator` hands the
client's token to the mechanism's server (PLAIN: one token; SCRAM: client-first, then client-final) and answers
with the server's token. A token refused is SASL_AUTHENTICATION_FAILED with Kafka's message, after which the
connection is closed. On a connection already authenticated: ILLEGAL_SASL_STATE ``SaslAuthenticate request
received after successful authentication`` (Kafka's ``KafkaApis.handleSaslAuthenticateRequest``).

v0   auth_bytes
v1   session_lifetime_ms in the response (KIP-368): the session's end, after which the client must
     re-authenticate (``connections.max.reauth.ms``; 0: never)
v2   flexible
"""
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslAuthenticateResponse

from ..common.errors import ErrorCode
from . import api


@api(SaslAuthenticateRequest, SaslAuthenticateResponse, versions=(0, 2))
async def handle_sasl_authenticate(ctx, request):
    channel = ctx.channel
    authenticator = channel.authenticator if channel is not None else None
    if authenticator is None or channel.authenticated:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE,
                "error_message": "SaslAuthenticate request received after successful authentication",
                "auth_bytes": b"", "session_lifetime_ms": 0}
    return authenticator.authenticate(request.auth_bytes or b"", ctx.api_version)
