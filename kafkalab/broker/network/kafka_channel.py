"""``KafkaChannel``: one client connection and what the broker knows of it (Kafka's ``KafkaChannel``).

The :class:`~kafkalab.broker.network.socket_server.SocketServer` makes one for each connection it accepts, with
its listener's name and security protocol (``listeners`` / ``listener.security.protocol.map``), and hands it on
with every request (``Request.channel``). The authenticator of a SASL listener sets ``principal`` and
``authenticated`` once the client has proved who it is; until then (``authenticated`` False) a connection may
send only ApiVersions, SaslHandshake and SaslAuthenticate, as Kafka's ``SaslServerAuthenticator``. A PLAINTEXT or
SSL connection is authenticated from the start: ``User:ANONYMOUS``, or an SSL client certificate's name.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..common.security.kafka_principal import ANONYMOUS, KafkaPrincipal

#: Kafka's ``SecurityProtocol`` names
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(slots=True, eq=False)
class KafkaChannel:
    connection_id: int
    client_host: str
    client_port: int = 0
    #: the listener the connection came in on (``PLAINTEXT``, ``SASL_SSL``, ``CLIENT``, ...) and its protocol
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: KafkaPrincipal = ANONYMOUS
    #: False until a SASL listener's client has authenticated (always True on PLAINTEXT and SSL)
    authenticated: bool = True
    #: an SSL connection's client certificate as ``ssl.SSLSocket.getpeercert()`` gives it (None: none sent)
    peer_certificate: dict | None = None
    #: the SASL exchange's state (the authenticator's own object), None before SaslHandshake
    authenticator: Any = None
    #: the listener's connection and authentication counts (``socket_server_metrics.SocketServerMetrics``)
    metrics: Any = None

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")
