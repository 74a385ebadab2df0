"""``ClientSecurity``: how a broker's own connections are secured, as Kafka's client channel builder makes them.

Kafka's ``ChannelBuilders.clientChannelBuilder`` gives a broker's inter-broker connections the security protocol
of the listener they go to (``inter.broker.listener.name``, or ``controller.listener.names`` for the
controllers), its ``ssl.*`` configs in client mode and, for SASL, ``sasl.mechanism.inter.broker.protocol`` (or
``sasl.mechanism.controller.protocol``) with the user name and password of that mechanism's JAAS entry on that
listener. :class:`~kafkalab.broker.network.network_client.NetworkClient` takes one of these::

    PLAINTEXT        TCP
    SSL              TCP, then TLS (the other broker's certificate checked, this broker's own presented if asked)
    SASL_PLAINTEXT   TCP, then SaslHandshake + SaslAuthenticate
    SASL_SSL         TCP, TLS, then SASL

Made by :meth:`kafkalab.broker.server.listener_config.ListenerConfigs.client_security`.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from ..common.security.authenticator.sasl_client_authenticator import SaslClientAuthenticator


class AuthenticationError(ConnectionError):
    """A connection refused at its TLS handshake or SASL authentication (Kafka's ``SslAuthenticationException`` /
    ``SaslAuthenticationException`` on a client): a ConnectionError, so the caller backs off and retries as after
    any failed connection, and says why."""


@dataclass(frozen=True)
class ClientSecurity:
    listener_name: str
    security_protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def authenticator(self) -> SaslClientAuthenticator | None:
        """A new authenticator for one connection (None: the protocol has no SASL)."""
        if not self.uses_sasl:
            return None
        return SaslClientAuthenticator(self.sasl_mechanism, self.sasl_username, self.sasl_password)


PLAINTEXT = ClientSecurity("PLAINTEXT", "PLAINTEXT")
