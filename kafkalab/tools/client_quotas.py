"""Client quotas from Python: AlterClientQuotas and DescribeClientQuotas (KIP-546).

Java's ``Admin.alterClientQuotas``/``describeClientQuotas`` and ``kafka-configs.sh
--entity-type clients`` have no counterpart in confluent-kafka 2.16 or in
kafka-python's ``KafkaAdminClient``, so the lessons use these two functions. They
speak Kafka's own protocol, to any Kafka broker (the mini broker or Apache Kafka)::

    from kafkalab.tools.client_quotas import alter_client_quotas, describe_client_quotas
    alter_client_quotas(bootstrap, {"client-id": "p1"}, {"producer_byte_rate": 100_000})
    describe_client_quotas(bootstrap)          # {(('client-id', 'p1'),): {'producer_byte_rate': 100000.0}}
    alter_client_quotas(bootstrap, {"client-id": "p1"}, {"producer_byte_rate": None})   # None removes it

An entity is a dict of ``user`` and/or ``client-id`` to a name, ``None`` standing
for the default (``{"client-id": None}``: every client id without its own quota).
"""
from __future__ import annotations

import socket
import struct

from kafka.protocol.admin.client_quotas import (AlterClientQuotasRequest, AlterClientQuotasResponse,
                                                DescribeClientQuotasRequest, DescribeClientQuotasResponse)

from ..broker.common.message.codec import build
from ..broker.common.errors import ErrorCode

VERSION = 0


def _call(bootstrap: str, request, response_cls, timeout_s: float = 10.0):
    last = None
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
                request.API_VERSION = VERSION
                request.with_header(correlation_id=1, client_id="kafkalab-quotas")
                sock.sendall(bytes(request.encode(header=True, framed=True)))
                (size,) = struct.unpack(">i", recv_exactly(sock, 4))
                return response_cls.decode(recv_exactly(sock, size), version=VERSION, header=True)
        except OSError as exc:
            last = exc
    raise ConnectionError(f"no broker of {bootstrap} answered: {last}")


def recv_exactly(sock, n: int) -> bytes:
    """``n`` bytes from ``sock`` (a response's size, then its frame); ConnectionError if the broker closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def alter_client_quotas(bootstrap: str, entity: dict, quotas: dict, validate_only: bool = False) -> None:
    """Set (a number) or remove (``None``) quotas of one entity; raises ValueError with the broker's message."""
    request = build(AlterClientQuotasRequest, VERSION, {"validate_only": validate_only, "entries": [{
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
        "ops": [{"key": k, "value": float(v or 0), "remove": v is None} for k, v in quotas.items()]}]})
    response = _call(bootstrap, request, AlterClientQuotasResponse)
    for e in response.entries:
        if e.error_code:
            raise ValueError(f"{ErrorCode(e.error_code).name}: {e.error_message}")


def describe_client_quotas(bootstrap: str, components: list[tuple[str, int, str | None]] | None = None,
                           strict: bool = False) -> dict[tuple, dict[str, float]]:
    """Every quota matching the filter (entity type, match type 0 exact/1 default/2 any name, name);
    with no filter, all of them (Kafka: no components, not strict)."""
    request = build(DescribeClientQuotasRequest, VERSION, {"strict": strict, "components": [
        {"entity_type": t, "match_type": m, "match": n} for t, m, n in components or ()]})
    response = _call(bootstrap, request, DescribeClientQuotasResponse)
    if response.error_code:
        raise ValueError(f"{ErrorCode(response.error_code).name}: {response.error_message}")
    return {tuple(sorted((c.entity_type, c.entity_name) for c in e.entity)): {v.key: v.value for v in e.values}
            for e in response.entries or ()}
