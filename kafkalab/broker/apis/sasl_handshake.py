"""SaslHandshake (key 17), versions 0-1: the client names the SASL mechanism it will authenticate with.

Answered by the connection's
:class:`~kafkalab.broker.common.security.authenticator.sasl_server_authenticator.SaslServerAuthenticator` (which
:class:`~kafkalab.broker.kafka_apis.KafkaApis` gives every connection of a SASL listener): NONE and the enabled
mechanisms, or UNSUPPORTED_SASL_MECHANISM and the enabled mechanisms (then the connection is closed). On a
connection that is already authenticated (and not re-authenticating), or one of a PLAINTEXT or SSL listener:
ILLEGAL_SASL_STATE, as Kafka's ``KafkaApis.handleSaslHandshakeRequest``.

v0   mechanism; the SASL tokens then follow as bare frames, without a request header
v1   the same request; the tokens follow in SaslAuthenticate requests
"""
from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse

from ..common.errors import ErrorCode
from . import api


@api(SaslHandshakeRequest, SaslHandshakeResponse, versions=(0, 1))
async def handle_sasl_handshake(ctx, request):
    channel = ctx.channel
    authenticator = channel.authenticator if channel is not None else None
    if authenticator is None or channel.authenticated:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
    return authenticator.handshake(request.mechanism, ctx.api_version)
