"""What a KRaft broker itself asks of the active controller: topics it creates on its own (internal topics,
auto-creation) and producer id blocks (AllocateProducerIds).

Clients' admin requests (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs)
never reach this module: the socket server hands them to the
:class:`~kafkalab.kraft.forwarding_manager.ForwardingManager`, which forwards them whole in an Envelope (KIP-590).

:class:`KRaftAdminManager` replaces the ZooKeeper writes of :class:`~kafkalab.broker.server.admin_manager.AdminManager`
for the topics the broker creates itself: a CreateTopics of its own for that one topic, sent to the active
controller; everything else (the waits for the metadata, partition limits) is the base class's.
:class:`RPCProducerIdManager` is Kafka's ``RPCProducerIdManager``: ids come in blocks from the controller,
the next block asked for when 90% of the current one is used; none left yet is COORDINATOR_LOAD_IN_PROGRESS,
which clients retry.
"""
from __future__ import annotations

import asyncio
import logging

from kafka.protocol.admin.topics import CreateTopicsRequest

from ..broker.common.message.codec import build
from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.server.admin_manager import AdminManager
from ..broker.common.topic import validate_topic_name
from ..broker.server.metadata_cache import NULL_UUID, TopicMetadata
from ..controller.controller_messages import AllocateProducerIdsRequest

log = logging.getLogger(__name__)
CREATE_TOPICS_VERSION = 7


class KRaftAdminManager(AdminManager):
    def _create_request(self, name, num_partitions, replication_factor, configs, validate_only, assignments):
        return build(CreateTopicsRequest, CREATE_TOPICS_VERSION, {"topics": [{
            "name": name, "num_partitions": -1 if assignments else (num_partitions if num_partitions is not None
                                                                     else -1),
            "replication_factor": -1 if assignments else (replication_factor if replication_factor is not None
                                                           else -1),
            "assignments": [{"partition_index": p, "broker_ids": list(b)}
                            for p, b in sorted((assignments or {}).items())],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}],
            "timeout_ms": 0, "validate_only": bool(validate_only)})

    def _defaults(self, num_partitions, replication_factor):
        cfg = self.broker.config
        return (cfg["num.partitions"] if num_partitions in (None, -1) else num_partitions,
                cfg["default.replication.factor"] if replication_factor in (None, -1) else replication_factor)

    async def create_topic_async(self, name: str, num_partitions: int | None = None,
                                 replication_factor: int | None = None, configs: dict | None = None,
                                 validate_only: bool = False, assignments: dict | None = None,
                                 request_state: dict | None = None) -> TopicMetadata:
        validate_topic_name(name)
        num_partitions, replication_factor = self._defaults(num_partitions, replication_factor)
        request = self._create_request(name, num_partitions, replication_factor, configs, validate_only, assignments)
        log.info("broker %d: forwarding CreateTopics for %s to the active controller", self.broker.broker_id, name)
        try:
            response = await self.broker.controller_channel.send(request, "forwarding")
        except TimeoutError as exc:
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"CreateTopics not forwarded: {exc}") from None
        result = response.topics[0]
        log.info("broker %d: controller %s answered CreateTopics for %s: error %d", self.broker.broker_id,
                 self.broker.controller_channel.active_controller, name, result.error_code)
        if result.error_code:
            raise KafkaError(result.error_code, result.error_message)
        return TopicMetadata(name, result.topic_id if not validate_only else NULL_UUID, result.num_partitions,
                             result.replication_factor, {c.name: c.value for c in result.configs or []})

    def create_topic(self, name: str, num_partitions: int | None = None, replication_factor: int | None = None,
                     configs: dict | None = None, validate_only: bool = False, assignments: dict | None = None,
                     request_state: dict | None = None, _plan_only: bool = False) -> TopicMetadata:
        """The synchronous form (internal topics, auto-creation): the CreateTopics goes out in the background and
        the topic is returned as requested, its partitions without leaders until the metadata says otherwise
        (what a ZooKeeper-mode broker's callers expect too)."""
        validate_topic_name(name)
        if self.cache.get(name) is not None:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        num_partitions, replication_factor = self._defaults(num_partitions, replication_factor)
        if validate_only:
            return TopicMetadata(name, NULL_UUID, num_partitions, replication_factor, dict(configs or {}))
        if name not in self._creating:
            self._creating[name] = num_partitions
            self.broker.spawn(self._create_in_background(name, num_partitions, replication_factor, configs,
                                                         assignments))
        return TopicMetadata(name, NULL_UUID, num_partitions, replication_factor, dict(configs or {}))

    async def _create_in_background(self, name, num_partitions, replication_factor, configs, assignments) -> None:
        try:
            await self.create_topic_async(name, num_partitions, replication_factor, configs, False, assignments)
        except KafkaError as exc:
            if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                log.warning("broker %d: creating %s failed: %s", self.broker.broker_id, name, exc.message)
        finally:
            self._creating.pop(name, None)


    # -- configs --------------------------------------------------------------------------------------

    def topic_for_configs(self, name: str) -> TopicMetadata:
        """DescribeConfigs and the AlterConfigs checks: the topic and its configs as the metadata records gave them."""
        validate_topic_name(name)
        topic = self.cache.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        return topic


class RPCProducerIdManager:
    def __init__(self, broker):
        self.broker = broker
        self._blocks: list[range] = []      # the current block first, then one fetched ahead
        self._next = 0
        self._fetching = False

    def generate_producer_id(self) -> int:
        while self._blocks and self._next >= self._blocks[0].stop:
            self._blocks.pop(0)
            if self._blocks:
                self._next = self._blocks[0].start
        if not self._blocks:
            self.maybe_request_next_block()
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                             "waiting for a producer id block from the controller")
        block = self._blocks[0]
        pid = self._next
        self._next += 1
        if len(self._blocks) == 1 and self._next >= block.start + len(block) * 9 // 10:
            self.maybe_request_next_block()
        return pid

    def maybe_request_next_block(self) -> None:
        if not self._fetching and self.broker.loop is not None:
            self._fetching = True
            self.broker.spawn(self._fetch_block())

    async def _fetch_block(self) -> None:
        try:
            while True:
                request = build(AllocateProducerIdsRequest, 0, {"broker_id": self.broker.broker_id,
                                                                "broker_epoch": self.broker.lifecycle.broker_epoch})
                try:
                    response = await self.broker.controller_channel.send(request, "producer-ids")
                except TimeoutError:
                    continue
                if response.error_code == 0:
                    block = range(response.producer_id_start, response.producer_id_start + response.producer_id_len)
                    if not self._blocks:
                        self._next = block.start
                    self._blocks.append(block)
                    log.info("broker %d: producer id block %d-%d", self.broker.broker_id, block.start,
                             block.stop - 1)
                    return
                await asyncio.sleep(0.1)
        finally:
            self._fetching = False
