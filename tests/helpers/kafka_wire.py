"""A raw Kafka protocol client for tests: hand-built requests over a plain socket.

Requests and responses are kafka-python's ``kafka.protocol`` classes; this
module only frames them, so tests can send exactly the bytes they want
(including broken ones) and read the broker's exact answer.
"""
from __future__ import annotations

import socket
import struct


def connect(bootstrap: str, timeout: float = 30) -> socket.socket:
    host, _, port = bootstrap.rpartition(":")
    sock = socket.create_connection((host, int(port)), timeout=timeout)
    sock.settimeout(timeout)
    return sock


def encode(request, version: int, correlation_id: int = 1, client_id: str = "kafkalab-tests") -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    return recv_exactly(sock, size)


def roundtrip(sock: socket.socket, request, response_cls, version: int, correlation_id: int = 1):
    """Send ``request`` at ``version`` and decode the answer (checking the correlation id)."""
    sock.sendall(encode(request, version, correlation_id))
    frame = recv_frame(sock)
    response = response_cls.decode(frame, version=version, header=True)
    assert response.header.correlation_id == correlation_id
    return response


def call(bootstrap: str, request, response_cls, version: int):
    with connect(bootstrap) as sock:
        return roundtrip(sock, request, response_cls, version)


def is_closed(sock: socket.socket, timeout: float = 30) -> bool:
    """True if the broker closed ``sock`` (EOF or reset) within ``timeout`` seconds."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def api_versions_features(bootstrap: str, version: int) -> dict:
    """ApiVersions ``version``'s feature fields of the node at ``bootstrap``: ``supported`` (name -> (min, max)),
    ``finalized`` (name -> level) and ``epoch``."""
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse

    answer = call(bootstrap, ApiVersionsRequest(client_software_name="kafkalab-tests", client_software_version="1"),
                  ApiVersionsResponse, version).to_dict()
    assert answer["error_code"] == 0, answer
    return {"supported": {f["name"]: (f["min_version"], f["max_version"]) for f in answer["supported_features"]},
            "finalized": {f["name"]: f["max_version_level"] for f in answer["finalized_features"]
                          if f["min_version_level"] == f["max_version_level"]},
            "epoch": answer["finalized_features_epoch"]}
