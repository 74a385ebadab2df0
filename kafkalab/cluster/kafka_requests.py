"""Kafka requests on a plain socket, one connection each: what :class:`~kafkalab.cluster.external.ExternalCluster` asks.

A cluster kafkalab did not start is looked at only through what Kafka offers
any client. :func:`kafka_request` sends one request to one broker and decodes
its answer (kafka-python's protocol classes); on top of it:

* :func:`metadata_request` (Metadata v7): the live brokers, the controller's
  id, and each partition's leader, replicas, ISR and leader epoch, made plain
  data by :func:`metadata_answer`; with no topics asked, it is also the probe of
  whether a broker answers at all;
* :func:`describe_broker_configs` (DescribeConfigs v1): one broker's configs.

ListOffsets, for ``describe``, is in :mod:`kafkalab.cluster.offsets`.
"""
from __future__ import annotations

import itertools
import socket
import struct

from .offsets import recv_exactly

_SIZE = struct.Struct(">i")
_correlation = itertools.count(1)


def kafka_request(host: str, port: int, request_cls, version: int, data: dict, timeout_s: float = 1.0,
                  security=None):
    """Send one request to one broker and return its decoded response (kafka-python's protocol classes).

    Raises ``socket.timeout`` when the broker accepted the connection but did not answer in time, and
    ``OSError`` (refused, unknown host, closed) when it could not be reached. ``security``: a secured listener's
    :class:`~kafkalab.broker.network.client_security.ClientSecurity` (a lab KRaft cluster's CONTROLLER:SASL_SSL):
    the request goes over the mini broker's NetworkClient (TLS, SASL), in a thread of its own."""
    from kafka.protocol.api_header import ResponseClassRegistry

    from ..broker.common.message.codec import build
    request = build(request_cls, version, data)
    if security is not None and security.security_protocol != "PLAINTEXT":
        return _secured_request(host, port, request, timeout_s, security)
    request.with_header(correlation_id=next(_correlation) & 0x7FFFFFFF, client_id="kafkalab-external")
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        sock.sendall(request.encode(header=True, framed=True))
        (size,) = _SIZE.unpack(recv_exactly(sock, 4))
        frame = recv_exactly(sock, size)
    return ResponseClassRegistry.get_response_class(request.header).decode(frame, version=version, header=True)


def metadata_request(host: str, port: int, topics: list[str] | None = None, timeout_s: float = 1.0):
    """A Metadata (v7) response from one broker, as kafka-python decodes it. ``topics=None``: every topic;
    ``[]``: none (the brokers and the controller only). Raises as :func:`kafka_request`."""
    from kafka.protocol.metadata import MetadataRequest
    request = {"topics": None if topics is None else [{"name": t} for t in topics],
               "allow_auto_topic_creation": False}
    return kafka_request(host, port, MetadataRequest, 7, request, timeout_s)


def metadata_answer(response) -> dict:
    """A Metadata response as plain data: ``{"brokers": {id: (host, port)}, "controller": id or None,
    "topics": {name: {"error", "internal", "partitions": [{"partition", "leader", "leader_epoch", "replicas",
    "isr", "offline"}, ...]}}}`` (a partition without a leader has ``leader`` None)."""
    brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
    topic_map = {}
    for t in response.topics:
        topic_map[t.name] = {"error": t.error_code, "internal": t.is_internal, "partitions": [
            {"partition": p.partition_index, "leader": p.leader_id if p.leader_id >= 0 else None,
             "leader_epoch": p.leader_epoch, "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
             "offline": list(p.offline_replicas or [])} for p in sorted(t.partitions,
                                                                       key=lambda p: p.partition_index)]}
    controller = response.controller_id if response.controller_id >= 0 else None
    return {"brokers": brokers, "controller": controller, "topics": topic_map}


def describe_broker_configs(host: str, port: int, broker_id: int, names=None, timeout_s: float = 1.0):
    """DescribeConfigs (v1) for the configs of broker ``broker_id`` (resource type 4, a broker), asked at
    ``host:port``: the response's one result, with ``error_code``, ``error_message`` and ``configs`` (each
    with ``name`` and ``value``). ``names=None``: every config the broker has. Raises as :func:`kafka_request`."""
    from kafka.protocol.admin import DescribeConfigsRequest
    response = kafka_request(host, port, DescribeConfigsRequest, 1, {"resources": [
        {"resource_type": 4, "resource_name": str(broker_id),
         "configuration_keys": None if names is None else list(names)}]},
        timeout_s)
    return response.results[0]


def _secured_request(host: str, port: int, request, timeout_s: float, security):
    """One request over a secured connection (its own event loop, in a thread: a notebook's loop may be running)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from ..broker.network.network_client import NetworkClient

    async def exchange():
        client = NetworkClient(host, port, client_id="kafkalab-external", timeout_s=timeout_s, security=security)
        try:
            return await client.send(request)
        finally:
            await client.close()

    with ThreadPoolExecutor(1) as pool:
        try:
            return pool.submit(asyncio.run, exchange()).result()
        except asyncio.TimeoutError as exc:   # (not an OSError before Python 3.11)
            raise socket.timeout(f"{host}:{port} did not answer in {timeout_s} s") from exc
