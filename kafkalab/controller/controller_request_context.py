"""``ControllerRequestContext``: who asks a KRaft controller, for its authorizer (Kafka's ``ControllerRequestContext``
and the ``RequestContext`` that ``ControllerApis`` authorizes with).

A request on the controller listener comes from a broker or an admin tool: its principal is the connection's
(the mini controller listener is PLAINTEXT: ``User:ANONYMOUS``), its host the peer's. A request a broker forwarded
in an Envelope is the client's: the principal the broker serialized (``DefaultPrincipalData``) and the client's
address (:mod:`kafkalab.controller.envelope_utils` sets them for the inner request's handler).

The checks are the broker's (:mod:`kafkalab.broker.security.auth_helper`): the context offers what they read
(``broker.authorizer``: the QuorumController's authorizer, ``principal``, ``client_host``, ``api_name``). A
controller without ``authorizer.class.name`` allows everything, as Kafka's ``AuthHelper`` with no authorizer.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass

from kafka.protocol.api_key import ApiKey

from ..broker.common.security.kafka_principal import ANONYMOUS, KafkaPrincipal
from ..raft.raft_server import current_request


@dataclass(frozen=True)
class Forwarded:
    """The client of an enveloped request: its principal and address."""
    principal: KafkaPrincipal
    client_host: str


#: set while an enveloped request is handled
forwarded: contextvars.ContextVar[Forwarded | None] = contextvars.ContextVar("forwarded", default=None)


@dataclass(frozen=True)
class ControllerRequestContext:
    broker: object          # what auth_helper reads ``.authorizer`` of: the QuorumController
    principal: KafkaPrincipal
    client_host: str
    api_key: int
    api_name: str


def request_context(controller, api_key: int) -> ControllerRequestContext:
    """The context of the request being handled: the forwarded client's, else the connection's."""
    client = forwarded.get()
    if client is not None:
        principal, host = client.principal, client.client_host
    else:
        request = current_request.get()
        principal = getattr(getattr(request, "channel", None), "principal", None) or ANONYMOUS
        host = getattr(request, "client_host", None) or "127.0.0.1"
    try:
        name = ApiKey(api_key).name   # Kafka's names: CreateAcls, Envelope (the authorizer log's "for request =")
    except ValueError:
        name = str(api_key)
    return ControllerRequestContext(controller, principal, host, api_key, name)
