"""``RaftNode``: one KRaft controller of the mini quorum — the Raft client, its listener, and the idle writer.

The Raft half of a KRaft controller: a :class:`KafkaRaftClient` over the node's
``__cluster_metadata-0``, answering the quorum's RPCs on its controller listener
(:class:`RaftServer`). While it leads, it appends a NoOpRecord whenever the log has been idle for
``metadata.max.idle.interval.ms`` (default 500), as Kafka's ``QuorumController`` does, so the
high watermark keeps moving and a stalled quorum shows. The rest of Kafka's QuorumController (topics,
brokers' registrations and heartbeats, ...) is :class:`~kafkalab.controller.controller_node.ControllerNode`, which
runs one of these with a QuorumController beside it (``python -m kafkalab.controller``).

Run one as a process with ``python -m kafkalab.raft`` (see ``__main__.py``), or several in one
event loop for tests.
"""
from __future__ import annotations

import asyncio
import logging
import random

from ..broker.server.listener_config import ServerListenerSecurity
from .kafka_raft_client import KafkaRaftClient, NotLeaderError, RaftConfig
from .leader_state import LeaderState
from .raft_server import RaftServer
from ..metadata.metadata_record_serde import encode_metadata_record

log = logging.getLogger(__name__)


class RaftNode:
    def __init__(self, config: RaftConfig, metadata_log_dir: str, idle_interval_ms: int = 500,
                 rng: random.Random | None = None, listen: tuple[str, int] | None = None,
                 security: ServerListenerSecurity | None = None):
        """``security``: the controller listener's (None: PLAINTEXT); the connections this replica makes to the
        others are ``config.security``."""
        self.config = config
        self.client = KafkaRaftClient(config, metadata_log_dir, rng)
        host, port = listen or config.voters.get(config.node_id, ("127.0.0.1", 0))
        self.server = RaftServer(self.client, host, port, security)
        self.idle_interval_ms = idle_interval_ms
        self._idle_task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.server.start()
        await self.client.start()
        if self.idle_interval_ms > 0:
            self._idle_task = asyncio.get_running_loop().create_task(self._idle_writer())

    async def _idle_writer(self) -> None:
        noop = encode_metadata_record("NoOpRecord")
        while True:
            await asyncio.sleep(self.idle_interval_ms / 1000)
            if isinstance(self.client.quorum.state, LeaderState):
                try:
                    self.client.append([noop])
                except NotLeaderError:
                    pass

    async def stop(self, resign: bool = True, shutdown_timeout_s: float = 5.0) -> None:
        """Stop; a leader first resigns (EndQuorumEpoch), as a controller shutting down cleanly does, and, as
        Kafka's graceful shutdown, stays (Resigned, answering votes) until an election bumps the epoch or
        ``shutdown_timeout_s`` passes: its vote may be the one a successor needs."""
        if self._idle_task is not None:
            self._idle_task.cancel()
        if resign:
            try:
                epoch = self.client.quorum.epoch
                if await self.client.resign() and len(self.config.voters) > 1:   # alone: no one to wait for
                    log.info("node %d: resigned the leadership of epoch %d; waiting up to %.0f s for a successor",
                             self.config.node_id, epoch, shutdown_timeout_s)
                    deadline = asyncio.get_running_loop().time() + shutdown_timeout_s
                    while self.client.quorum.epoch == epoch and asyncio.get_running_loop().time() < deadline:
                        await self.client.wait_for_change(0.05)
                    log.info("node %d: %s", self.config.node_id, f"epoch {self.client.quorum.epoch} began"
                             if self.client.quorum.epoch != epoch else "no successor elected: shutting down anyway")
            except Exception:
                log.exception("node %d: resigning failed", self.config.node_id)
        await self.server.stop()
        await self.client.close()
