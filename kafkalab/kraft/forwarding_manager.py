"""``ForwardingManager``: a KRaft broker sends a client's admin request to the active controller inside an
Envelope (Kafka's ``kafka.server.ForwardingManager``, KIP-590).

A KRaft broker cannot change the metadata itself: CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs, IncrementalAlterConfigs, ElectLeaders, AlterUserScramCredentials, CreateAcls and DeleteAcls are
decided by the active controller. The broker reads and
checks the request as for any other (a request that does not parse closes the connection), then wraps the
request's bytes *whole* (its header with the client's correlation id and client id, its body) in an
EnvelopeRequest, with the client's address and principal, and sends it through its
:class:`~kafkalab.kraft.broker_to_controller_channel.BrokerToControllerChannelManager`:

* an envelope answered NOT_CONTROLLER, or a controller that cannot be reached: the channel looks for the
  active controller (the broker's observer knows the Raft leader) and sends the envelope again, for up to
  60 s (Kafka's forwarding channel's retry timeout); then the client gets its request's REQUEST_TIMED_OUT answer;
* AlterConfigs and IncrementalAlterConfigs are first checked by the broker
  (:class:`~kafkalab.kraft.config_admin_manager.ConfigAdminManager`); the resources it answers itself are left out
  of the forwarded request, which is then re-serialized under the client's header, as Kafka does;
* ``ResponseData``: the controller's answer to the client's request, response header included; the
  broker sends it to the client as it is;
* envelope error UNSUPPORTED_VERSION: the broker closes the client's connection, so that the client
  asks ApiVersions again (Kafka does the same); any other envelope error: the client gets
  UNKNOWN_SERVER_ERROR (a misconfigured broker, not the client's fault).

As in Kafka, the controller answers once it has committed the records. The broker's own metadata learns of them
a moment later: a Kafka 4.x broker usually within the client's next round trip (its observer's parked fetch is
completed when the high watermark moves, KAFKA-14145, and the Java broker replays it at once), so a client that
sends Metadata right after CreateTopics finds the topic. The mini broker is slower at it, and a client that
counts on it then fails (kafkajs's ``admin.createTopics`` gives up on UNKNOWN_TOPIC_OR_PARTITION). So a KRaft
mini broker holds a successful CreateTopics, CreatePartitions or DeleteTopics answer until its own metadata shows
the change, for at most :data:`READ_YOUR_WRITES_S` (kafkalab's, not in Kafka); AlterConfigs answers are not held.

The principal is the client's (``User:ANONYMOUS`` on PLAINTEXT, the SASL user, the certificate's mapped name),
serialized as Kafka's ``DefaultKafkaPrincipalBuilder.serialize`` does (version 0 of its DefaultPrincipalData:
type, name, token flag): the controller deserializes it and authorizes the forwarded request as that principal.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import struct

from kafka.protocol.admin.acl import CreateAclsResponse, DeleteAclsResponse
from kafka.protocol.admin.configs import AlterConfigsResponse, IncrementalAlterConfigsResponse
from kafka.protocol.admin.topics import CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse
from kafka.protocol.admin.users import AlterUserScramCredentialsResponse

from ..broker.apis.alter_user_scram_credentials import every_user
from ..broker.apis.create_acls import every_creation
from ..broker.apis.delete_acls import every_filter
from ..broker.common.message.codec import build
from ..broker.common.security.kafka_principal import ANONYMOUS, KafkaPrincipal, serialize_principal
from ..broker.common.errors import ErrorCode
from ..broker.network.request_channel import CloseConnection
from ..controller.controller_messages import EnvelopeRequest
from ..controller.envelope_utils import FORWARDABLE
from .config_admin_manager import ConfigAdminManager

log = logging.getLogger(__name__)
#: how long the broker keeps looking for an active controller (Kafka's forwarding channel: retryTimeoutMs 60000)
FORWARDING_TIMEOUT_MS = 60_000
#: DefaultPrincipalData v0 (flexible): version int16, compact strings "User" and "ANONYMOUS", false, no tags
ANONYMOUS_PRINCIPAL = serialize_principal(ANONYMOUS)
_SIZE = struct.Struct(">i")
#: how long a forwarded topic change's answer waits for the broker's own metadata to show it
READ_YOUR_WRITES_S = 2.0
RESPONSES = {19: CreateTopicsResponse, 20: DeleteTopicsResponse, 30: CreateAclsResponse, 31: DeleteAclsResponse,
             33: AlterConfigsResponse, 37: CreatePartitionsResponse, 44: IncrementalAlterConfigsResponse,
             51: AlterUserScramCredentialsResponse}


def client_address(host: str) -> bytes:
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return ipaddress.ip_address("127.0.0.1").packed


def error_result(api_key: int, request, code: int, message: str) -> dict:
    """The client's request answered with one error for everything in it (Kafka's ``getErrorResponse``)."""
    if api_key == 19:
        return {"throttle_time_ms": 0, "topics": [
            {"name": t.name, "error_code": code, "error_message": message, "num_partitions": -1,
             "replication_factor": -1, "configs": []} for t in request.topics]}
    if api_key == 20:
        names = [(n, None) for n in getattr(request, "topic_names", None) or []] + \
            [(t.name, t.topic_id) for t in getattr(request, "topics", None) or []]
        return {"throttle_time_ms": 0, "responses": [
            {"name": n, **({"topic_id": i} if i is not None else {}), "error_code": code, "error_message": message}
            for n, i in names]}
    if api_key == 43:
        return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": [
            {"topic": t.topic, "partition_result": [
                {"partition_id": p, "error_code": code, "error_message": message} for p in t.partitions]}
            for t in request.topic_partitions or []]}
    if api_key == 37:
        return {"throttle_time_ms": 0, "results": [
            {"name": t.name, "error_code": code, "error_message": message} for t in request.topics]}
    if api_key == 51:
        return every_user(request, code, message)
    if api_key == 30:
        return every_creation(request.creations or [], code, message)
    if api_key == 31:
        return every_filter(request.filters or [], code, message)
    return {"throttle_time_ms": 0, "responses": [
        {"error_code": code, "error_message": message, "resource_type": r.resource_type,
         "resource_name": r.resource_name} for r in request.resources]}


class _Answered(Exception):
    """The client's request answered by the broker with one error (not forwarded, or no usable answer)."""

    def __init__(self, code: ErrorCode, message: str | None):
        super().__init__(message)
        self.code, self.message = code, message


class ForwardingManager:
    forwarded_apis = frozenset(FORWARDABLE)

    def __init__(self, broker):
        self.broker = broker
        self.config_admin = ConfigAdminManager(broker.broker_id)
        self.forwarded = 0          # envelopes answered (for tests and notebooks)

    async def forward(self, frame: bytes, request, client_host: str, api_version: int, correlation_id: int,
                      principal: KafkaPrincipal | None = None) -> bytes:
        """Forward the client's request (``frame``: its header and body) on behalf of ``principal`` (None:
        ``User:ANONYMOUS``); the framed answer for the client."""
        api_key = struct.unpack_from(">h", frame)[0]
        serialized = serialize_principal(principal or ANONYMOUS)
        if api_key in (33, 44):
            answered = self.config_admin.preprocess(request.resources, incremental=api_key == 44)
            if answered:
                return await self._forward_config_rest(api_key, request, answered, client_host, api_version,
                                                       correlation_id, serialized)
        try:
            data = await self._round_trip(api_key, bytes(frame), request, client_host, api_version, serialized)
        except _Answered as answer:
            return self._error(api_key, request, api_version, correlation_id, answer.code, answer.message)
        if api_key in (19, 20, 37) and not getattr(request, "validate_only", False):
            await self._until_metadata_shows(api_key, request, data, api_version)
        return _SIZE.pack(len(data)) + data

    async def _until_metadata_shows(self, api_key: int, request, data: bytes, api_version: int) -> None:
        """Wait (at most READ_YOUR_WRITES_S) until the broker's metadata shows each topic change the controller
        answered without an error: a created topic, its new partitions, a deleted topic gone."""
        try:
            response = RESPONSES[api_key].decode(data, version=api_version, header=True)
        except Exception:   # noqa: BLE001 - the client gets the answer as it is; only the wait is skipped
            return
        cache = getattr(self.broker, "metadata_cache", None)
        if cache is None:
            return
        if api_key == 19:
            ok = [t.name for t in response.topics if t.error_code == 0]
            def shown(): return all(cache.get(n) is not None for n in ok)
        elif api_key == 20:
            ok = [t.name for t in response.responses if t.error_code == 0 and t.name]
            def shown(): return all(cache.get(n) is None for n in ok)
        else:
            wanted = {t.name: t.count for t in request.topics}
            ok = [t.name for t in response.results if t.error_code == 0]
            def shown(): return all((m := cache.get(n)) is not None and m.num_partitions >= wanted[n] for n in ok)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + READ_YOUR_WRITES_S
        while ok and not shown() and loop.time() < deadline:
            await asyncio.sleep(0.01)

    async def _round_trip(self, api_key: int, data: bytes, request, client_host: str, api_version: int,
                          principal: bytes = ANONYMOUS_PRINCIPAL) -> bytes:
        """One envelope to the active controller: the inner response's bytes (its header, its body)."""
        envelope = build(EnvelopeRequest, 0, {"request_data": data, "request_principal": principal,
                                              "client_host_address": client_address(client_host)})
        name = FORWARDABLE[api_key]
        try:
            response = await self.broker.controller_channel.send(envelope, "forwarding", FORWARDING_TIMEOUT_MS / 1000)
        except TimeoutError as exc:
            log.info("broker %d: %s not forwarded: %s", self.broker.broker_id, name, exc)
            raise _Answered(ErrorCode.REQUEST_TIMED_OUT,
                            f"{name} was not answered by an active controller in time: {exc}") from None
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            raise CloseConnection(f"the controller cannot parse the forwarded {name} v{api_version}")
        if response.error_code or response.response_data is None:
            log.warning("broker %d: envelope for %s answered error %d", self.broker.broker_id, name,
                        response.error_code)
            raise _Answered(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        self.forwarded += 1
        log.info("broker %d: %s forwarded to controller %s", self.broker.broker_id, name,
                 self.broker.controller_channel.active_controller)
        return bytes(response.response_data)

    async def _forward_config_rest(self, api_key, request, answered, client_host, api_version, correlation_id,
                                   principal: bytes = ANONYMOUS_PRINCIPAL):
        """AlterConfigs / IncrementalAlterConfigs with resources the broker answered itself: the others forwarded
        (the request re-serialized without them, under the client's header), the answers reassembled in order."""
        resources = list(request.resources)
        rest = [r for i, r in enumerate(resources) if i not in answered]
        forwarded: list = []
        error = None
        if rest:
            request.resources = rest
            request.with_header(correlation_id=correlation_id, client_id=request.header.client_id)
            try:
                data = await self._round_trip(api_key, bytes(request.encode(header=True)), request, client_host,
                                              api_version, principal)
                forwarded = list(RESPONSES[api_key].decode(data, version=api_version, header=True).responses)
            except _Answered as answer:
                error = answer
            finally:
                request.resources = resources
        out = []
        for i, r in enumerate(resources):
            if i in answered:
                code, message = answered[i]
            elif error is not None:
                code, message = int(error.code), error.message
            else:
                f = forwarded.pop(0)
                code, message = f.error_code, f.error_message
            out.append({"error_code": code, "error_message": message, "resource_type": r.resource_type,
                        "resource_name": r.resource_name})
        response = build(RESPONSES[api_key], api_version, {"throttle_time_ms": 0, "responses": out})
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))

    def _error(self, api_key, request, version, correlation_id, code, message) -> bytes:
        response = build(RESPONSES[api_key], version, error_result(api_key, request, int(code), message))
        response.with_header(correlation_id=correlation_id)
        return bytes(response.encode(header=True, framed=True))
