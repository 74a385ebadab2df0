"""Envelope (API 58) on the controller: unwrap a forwarded request, handle it, wrap the answer (Kafka's
``EnvelopeUtils`` and ``RequestChannel.buildResponseSend`` for an enveloped request, KIP-590).

A KRaft broker forwards a client's admin request whole: ``RequestData`` is the client's request header
and body as they arrived (its api key, version, correlation id and client id included),
``ClientHostAddress`` the client's IP address, ``RequestPrincipal`` its principal. The controller

0. with an authorizer, checks that the *forwarding broker's* principal may CLUSTER_ACTION on the cluster
   (Kafka's ``ControllerApis.handleEnvelopeRequest``): otherwise the envelope's error is
   CLUSTER_AUTHORIZATION_FAILED (the broker answers its client UNKNOWN_SERVER_ERROR). On PLAINTEXT
   controller listeners that principal is ``User:ANONYMOUS``: an ACL-on cluster has it in ``super.users``,
   as Kafka 4 needs for its brokers' registrations and heartbeats too;
1. deserializes the principal (Kafka's ``DefaultKafkaPrincipalBuilder.deserialize``; null or not a
   DefaultPrincipalData v0: PRINCIPAL_DESERIALIZATION_FAILURE, "Failed to deserialize client principal from
   envelope");
2. parses the inner request header: too short to hold one, or an API key Kafka does not know, is
   UNSUPPORTED_VERSION (Kafka: "Failed to parse request header from envelope");
3. checks that the API may be forwarded (CreateTopics, DeleteTopics, CreateAcls, DeleteAcls, AlterConfigs,
   CreatePartitions, ElectLeaders, IncrementalAlterConfigs, AlterUserScramCredentials here) and is served:
   otherwise INVALID_REQUEST ("API ... is not enabled or is not eligible for forwarding"); a client address
   that is not 4 or 16 bytes: INVALID_REQUEST;
4. parses the inner request at its version: a version not served, or bytes that do not parse, are
   UNSUPPORTED_VERSION (Kafka: "Failed to parse forwarded request");
5. handles it as if the client had sent it to the controller, as the client's principal from the client's
   address (:mod:`kafkalab.controller.controller_request_context`: what the controller authorizes), and
   answers ``ResponseData`` = the inner response, its response header (the client's correlation id)
   included, serialized at the client's version. An inner answer holding NOT_CONTROLLER becomes an
   envelope with ErrorCode NOT_CONTROLLER and no data, so that the broker looks for the active controller
   and sends the envelope again.

These errors are the envelope's ``ErrorCode``; the controller keeps serving (a bad envelope never closes
the connection). An inner request Kafka's request class would refuse to parse (an ACL filter naming UNKNOWN) is
UNSUPPORTED_VERSION too: the broker closes its client's connection, as a Kafka broker does parsing it.
"""
from __future__ import annotations

import inspect
import ipaddress
import logging
import struct

from kafka.protocol.api_key import ApiKey

from ..broker.common.message.codec import build, null_violation
from ..broker.common.errors import ErrorCode
from ..broker.common.security.kafka_principal import deserialize_principal
from ..broker.network.request_channel import InvalidRequest
from .controller_request_context import Forwarded, forwarded

log = logging.getLogger(__name__)
_HEADER_PREFIX = struct.Struct(">hhi")
#: the APIs a broker forwards and a controller accepts in an envelope (api key -> name)
FORWARDABLE = {19: "CreateTopics", 20: "DeleteTopics", 30: "CreateAcls", 31: "DeleteAcls", 33: "AlterConfigs",
               37: "CreatePartitions", 43: "ElectLeaders", 44: "IncrementalAlterConfigs",
               51: "AlterUserScramCredentials"}


def _envelope_error(code: ErrorCode, why: str) -> dict:
    log.info("envelope answered %s: %s", code.name, why)
    return {"response_data": None, "error_code": int(code)}


def has_error(result, code: int) -> bool:
    """Whether any ``error_code`` in a response dict (at any depth) is ``code``."""
    if isinstance(result, dict):
        return result.get("error_code") == code or any(has_error(v, code) for v in result.values())
    if isinstance(result, (list, tuple)):
        return any(has_error(v, code) for v in result)
    return False


async def handle_envelope(apis: dict, request) -> dict:
    """``apis``: the controller listener's APIs (api key -> (request class, response class, lowest, highest,
    handler(client, request))). Returns the EnvelopeResponse's fields."""
    try:
        principal = deserialize_principal(bytes(request.request_principal))
    except (ValueError, TypeError, UnicodeDecodeError):
        return _envelope_error(ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE,
                               "Failed to deserialize client principal from envelope")
    data = bytes(request.request_data or b"")
    if len(data) < _HEADER_PREFIX.size + 2:
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, "Failed to parse request header from envelope")
    api_key, version, correlation_id = _HEADER_PREFIX.unpack_from(data)
    try:
        ApiKey(api_key)
    except ValueError:   # Kafka's header parser fails on an API it does not know
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, "Failed to parse request header from envelope: "
                                                              f"unknown API key {api_key}")
    if api_key not in FORWARDABLE or api_key not in apis:
        return _envelope_error(ErrorCode.INVALID_REQUEST,
                               f"API {FORWARDABLE.get(api_key, api_key)} is not enabled or is not eligible "
                               "for forwarding")
    if len(request.client_host_address or b"") not in (4, 16):
        return _envelope_error(ErrorCode.INVALID_REQUEST, "Failed to parse client address from envelope")
    request_cls, response_cls, lo, hi, handler = apis[api_key]
    if not lo <= version <= hi:
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, f"Failed to parse forwarded request: {request_cls.name} "
                                                              f"v{version} is not supported (v{lo}-v{hi})")
    try:
        inner = request_cls.decode(data, version=version, header=True)
    except Exception as exc:   # noqa: BLE001 - bytes from the wire: any decode failure is answered
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, f"Failed to parse forwarded request: {exc!r}")
    if null_violation(request_cls, version, inner) is not None:
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, "Failed to parse forwarded request: a null where "
                                                              "none is allowed")
    token = forwarded.set(Forwarded(principal, str(ipaddress.ip_address(bytes(request.client_host_address)))))
    try:
        result = handler(None, inner)
        if inspect.isawaitable(result):
            result = await result
    except InvalidRequest as exc:   # Kafka's request class would not have parsed it
        return _envelope_error(ErrorCode.UNSUPPORTED_VERSION, f"Failed to parse forwarded request: {exc}")
    finally:
        forwarded.reset(token)
    if has_error(result, int(ErrorCode.NOT_CONTROLLER)):
        return {"response_data": None, "error_code": int(ErrorCode.NOT_CONTROLLER)}
    response = build(response_cls, version, result)
    response.with_header(correlation_id=correlation_id)
    return {"response_data": bytes(response.encode(header=True)), "error_code": 0}
