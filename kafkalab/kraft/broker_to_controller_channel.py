"""``BrokerToControllerChannelManager``: how a KRaft broker reaches the *active* controller.

Brokers send BrokerRegistration, BrokerHeartbeat, AlterPartition and Envelopes (forwarded admin requests) to the
controller quorum's active controller (the Raft leader). The broker knows the leader from its own
metadata fetching (its observer's quorum state); when it does not, or when the one it asked answers
NOT_CONTROLLER (41) or cannot be reached, it asks the next controller of ``controller.quorum.voters``,
until ``timeout_s``.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ..broker.network.client_security import ClientSecurity
from ..broker.network.network_client import NetworkClient

log = logging.getLogger(__name__)
NOT_CONTROLLER = 41
RETRY_BACKOFF_S = 0.05


def _error_of(response) -> int:
    if getattr(response, "error_code", None):
        return response.error_code
    topics = getattr(response, "topics", None) or getattr(response, "responses", None) or []
    return next((t.error_code for t in topics if getattr(t, "error_code", 0) == NOT_CONTROLLER), 0)


class BrokerToControllerChannelManager:
    def __init__(self, broker_id: int, voters: dict[int, tuple[str, int]], leader_hint=None,
                 request_timeout_ms: int = 2000, security: ClientSecurity | None = None):
        """``security``: how to connect to the controllers' listener (``controller.listener.names``' first, with
        ``sasl.mechanism.controller.protocol``); None: PLAINTEXT."""
        self.broker_id = broker_id
        self.voters = voters
        self.leader_hint = leader_hint or (lambda: -1)    # the Raft leader as this broker's observer knows it
        self.request_timeout_s = request_timeout_ms / 1000
        self.security = security
        self._clients: dict[tuple[int, str], NetworkClient] = {}
        self.active_controller: int | None = None

    def _client(self, node_id: int, purpose: str) -> NetworkClient:
        key = (node_id, purpose)
        if key not in self._clients:
            host, port = self.voters[node_id]
            self._clients[key] = NetworkClient(host, port, client_id=f"broker-{self.broker_id}-{purpose}",
                                               timeout_s=self.request_timeout_s, security=self.security)
        return self._clients[key]

    def _order(self) -> list[int]:
        first = [c for c in (self.active_controller, self.leader_hint()) if c is not None and c in self.voters]
        return list(dict.fromkeys(first + sorted(self.voters)))

    async def send(self, request, purpose: str = "controller", timeout_s: float = 10.0):
        """Send ``request`` to the active controller; the answer, or TimeoutError if none answered but
        NOT_CONTROLLER in ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            for node in self._order():
                client = self._client(node, purpose)
                try:
                    response = await client.send(request)
                except (OSError, asyncio.TimeoutError, EOFError, asyncio.IncompleteReadError) as exc:
                    log.debug("broker %d: controller %d unreachable: %r", self.broker_id, node, exc)
                    await client.close()
                    self._clients.pop((node, purpose), None)
                    if self.active_controller == node:
                        self.active_controller = None
                    continue
                if _error_of(response) == NOT_CONTROLLER:
                    if self.active_controller == node:
                        self.active_controller = None
                    continue
                self.active_controller = node
                return response
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no active controller answered in {timeout_s} s")
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
