"""``SharePersister``: how a partition leader reads and writes its share-partitions' state at the share coordinator.

Modelled on Kafka 4.x's ``DefaultStatePersister`` (and its ``PersisterStateManager``). The coordinator of a
share-partition (group, topic id, partition) is the leader of its ``__share_group_state`` partition
(:mod:`kafkalab.broker.coordinator.share.share_coordinator`). If that is this broker, the persister calls the
local coordinator; otherwise it sends it ReadShareGroupState (84) or WriteShareGroupState (85). Kafka finds
the coordinator with FindCoordinator (key type SHARE, key ``group:topicId:partition``); kafkalab's brokers read
the leader from their metadata, which says the same. NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE and a connection that fails are retried (every 0.1 s, up to
``share.coordinator.write.timeout.ms``-like 10 s), as the coordinator moves with its partition's leadership.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ...common.errors import ErrorCode, KafkaError
from ...coordinator.share.share_coordinator import SHARE_STATE_TOPIC
from ...common.message.codec import build
from ...common.message.share_group_state import ReadShareGroupStateRequest, WriteShareGroupStateRequest
from ...network.network_client import NetworkClient

log = logging.getLogger(__name__)

RETRIABLE = (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE)
RETRY_BACKOFF_S = 0.1
TIMEOUT_S = 10.0


class SharePersister:
    def __init__(self, broker, coordinator):
        self.broker = broker
        self.coordinator = coordinator
        self._clients: dict[int, object] = {}   # broker id -> NetworkClient

    async def read(self, group_id: str, topic_id, partition: int) -> dict | None:
        """The share-partition's state (start_offset, state_epoch, state_batches), None if it has none yet."""
        async def local():
            return self.coordinator.read(group_id, topic_id, partition)

        async def remote(client):
            response = await client.send(build(ReadShareGroupStateRequest, 0, {"group_id": group_id, "topics": [
                {"topic_id": topic_id, "partitions": [{"partition": partition, "leader_epoch": -1}]}]}))
            [result] = [p for t in response.results for p in t.partitions]
            if result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return None
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or "ReadShareGroupState failed")
            return {"start_offset": result.start_offset, "state_epoch": result.state_epoch,
                    "state_batches": [{"first_offset": b.first_offset, "last_offset": b.last_offset,
                                       "delivery_state": b.delivery_state, "delivery_count": b.delivery_count}
                                      for b in result.state_batches]}
        return await self._call(group_id, topic_id, partition, local, remote)

    async def write(self, sp, leader_epoch: int, start_offset: int | None = None) -> None:
        """WriteShareGroupState: the share-partition's SPSO and state batches as they are now (``start_offset``
        -1 and no batches: the initial state, Kafka's InitializeShareGroupState)."""
        group_id, topic_id, partition = sp.group_id, sp.topic_id, sp.partition
        start = sp.start_offset if start_offset is None else start_offset
        batches = sp.state_batches() if start_offset is None else []

        async def local():
            await self.coordinator.write(group_id, topic_id, partition, sp.state_epoch, leader_epoch, start, batches)

        async def remote(client):
            response = await client.send(build(WriteShareGroupStateRequest, 0, {"group_id": group_id, "topics": [
                {"topic_id": topic_id, "partitions": [{
                    "partition": partition, "state_epoch": sp.state_epoch, "leader_epoch": leader_epoch,
                    "start_offset": start, "state_batches": batches}]}]}))
            [result] = [p for t in response.results for p in t.partitions]
            if result.error_code:
                raise KafkaError(result.error_code, result.error_message or "WriteShareGroupState failed")
        await self._call(group_id, topic_id, partition, local, remote)

    async def _call(self, group_id, topic_id, partition, local, remote):
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                self.coordinator.ensure_topic()
                if not self.broker.in_cluster:   # a standalone broker coordinates everything
                    return await local()
                index = self.coordinator.partition_for(group_id, topic_id, partition)
                node = self.broker.metadata_cache.leader_endpoint(SHARE_STATE_TOPIC, index)
                if node is None:
                    raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"{SHARE_STATE_TOPIC}-{index} has no leader")
                if node.id == self.broker.broker_id:
                    return await local()
                return await remote(self._client(node))
            except KafkaError as exc:
                if exc.code not in RETRIABLE or time.monotonic() >= deadline:
                    raise
                last = exc
            except (ConnectionError, OSError, asyncio.TimeoutError) as exc:
                if time.monotonic() >= deadline:
                    raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"share coordinator unreachable: {exc!r}")
                last = exc
            log.debug("share state of %s %s-%d: retrying (%s)", group_id, topic_id, partition, last)
            await asyncio.sleep(RETRY_BACKOFF_S)

    def _client(self, node):
        client = self._clients.get(node.id)
        if client is None or (client.host, client.port) != (node.host, node.port):
            client = self._clients[node.id] = NetworkClient(
                node.host, node.port, client_id=f"broker-{self.broker.broker_id}-share-persister", timeout_s=10,
                security=self.broker.config.listener_configs.inter_broker_client_security())
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
