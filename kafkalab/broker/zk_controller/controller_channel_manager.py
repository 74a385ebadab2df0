"""How the controller talks to the brokers (Kafka's ``ControllerChannelManager`` and ``ControllerBrokerRequestBatch``).

**ControllerChannelManager**: one queue and one connection per live broker
(the controller's own broker included: it is reached over TCP like the
others). Requests to a broker are sent one at a time, in the order they were
queued; a request that fails (connection refused, timeout) is retried after a
short back-off for as long as the broker is registered. When a broker dies
its queue is dropped (Kafka's ``removeBroker``).

**ControllerBrokerRequestBatch**: what one controller event has to tell the
brokers, gathered first and sent at the end, in Kafka's order: LeaderAndIsr,
then UpdateMetadata, then StopReplica. Any partition that goes into a
LeaderAndIsr also goes into the UpdateMetadata sent to every broker, so all
metadata caches learn the new leader.
"""
from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Callable

from ..common.endpoint import SECURITY_PROTOCOL_IDS
from ..common.message.codec import build
from ..common.message.zk_messages import (LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION,
                                LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest)
from ..network.client_security import ClientSecurity
from ..network.network_client import NetworkClient
from ..zk.zk_data import BrokerInfo
from .controller_context import ControllerContext

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1
LEADER_DURING_DELETE = -2      # Kafka's LeaderAndIsr.LeaderDuringDelete: "this topic is being deleted"
EPOCH_DURING_DELETE = -2       # Kafka's LeaderAndIsr.EpochDuringDelete
PLAINTEXT_SECURITY_PROTOCOL = 0


class _BrokerChannel:
    def __init__(self, controller_id: int, info: BrokerInfo, timeout_s: float, listener_name: str = "PLAINTEXT",
                 security: ClientSecurity | None = None):
        self.info = info
        host, port = info.endpoint_for(listener_name)   # the inter-broker listener (Kafka's controller: its own)
        self.client = NetworkClient(host, port, client_id=f"controller-{controller_id}-to-broker-{info.id}",
                                    timeout_s=timeout_s, security=security)
        self.queue: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None
        self.removed = False


class ControllerChannelManager:
    def __init__(self, controller_id: int, socket_timeout_ms: int = 30_000, listener_name: str = "PLAINTEXT",
                 security: ClientSecurity | None = None):
        self.controller_id = controller_id
        #: the inter-broker listener the controller reaches the brokers on (``inter.broker.listener.name``), and
        #: how its connections are secured (that listener's protocol: TLS, SASL)
        self.listener_name = listener_name
        self.security = security
        self.timeout_s = socket_timeout_ms / 1000.0
        self.channels: dict[int, _BrokerChannel] = {}

    def add_broker(self, info: BrokerInfo) -> None:
        if info.id in self.channels:
            return
        channel = _BrokerChannel(self.controller_id, info, self.timeout_s, self.listener_name, self.security)
        channel.task = asyncio.get_running_loop().create_task(self._send_loop(channel))
        self.channels[info.id] = channel

    def remove_broker(self, broker_id: int) -> None:
        channel = self.channels.pop(broker_id, None)
        if channel is not None:
            channel.removed = True
            channel.task.cancel()
            asyncio.get_running_loop().create_task(channel.client.close())

    def send(self, broker_id: int, request, callback: Callable | None = None) -> bool:
        """Queue ``request`` for ``broker_id``; ``callback(response)`` once it is answered.

        False (and nothing queued) if the broker has no channel (not live), as
        Kafka's ``sendRequest`` logs and drops it.
        """
        channel = self.channels.get(broker_id)
        if channel is None:
            log.debug("controller %d: no channel to broker %d, %s dropped", self.controller_id, broker_id,
                      type(request).__name__)
            return False
        channel.queue.put_nowait((request, callback))
        return True

    async def _send_loop(self, channel: _BrokerChannel) -> None:
        while True:
            request, callback = await channel.queue.get()
            response = None
            while not channel.removed:
                try:
                    response = await channel.client.send(request)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - retried while the broker is registered
                    log.debug("controller %d: %s to broker %d failed (%s), retrying", self.controller_id,
                              type(request).__name__, channel.info.id, exc)
                    await asyncio.sleep(RETRY_BACKOFF_S)
            if response is not None and callback is not None:
                try:
                    callback(response)
                except Exception:
                    log.exception("controller %d: response callback failed", self.controller_id)

    async def shutdown(self) -> None:
        for broker_id in list(self.channels):
            channel = self.channels.pop(broker_id)
            channel.removed = True
            channel.task.cancel()
            await channel.client.close()


class ControllerBrokerRequestBatch:
    """The requests one controller event sends (Kafka's ``AbstractControllerBrokerRequestBatch``)."""

    def __init__(self, controller_id: int, context: ControllerContext, channels: ControllerChannelManager,
                 on_leader_and_isr_response: Callable | None = None,
                 on_stop_replica_response: Callable | None = None):
        self.controller_id = controller_id
        self.context = context
        self.channels = channels
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self.on_stop_replica_response = on_stop_replica_response
        self.new_batch()

    def new_batch(self) -> None:
        # broker -> (topic, partition) -> is_new
        self.leader_and_isr: dict[int, dict[tuple[str, int], bool]] = defaultdict(dict)
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: set[tuple[str, int]] = set()
        # broker -> (topic, partition) -> delete
        self.stop_replica: dict[int, dict[tuple[str, int], bool]] = defaultdict(dict)

    def add_leader_and_isr(self, broker_ids, tp, is_new: bool = False) -> None:
        """LeaderAndIsr with the partition's current state to ``broker_ids``; UpdateMetadata to all."""
        for b in broker_ids:
            if b >= 0:
                self.leader_and_isr[b][tp] = is_new or self.leader_and_isr[b].get(tp, False)
        self.add_update_metadata(self.context.live_or_shutting_down_broker_ids, [tp])

    def add_stop_replica(self, broker_ids, tp, delete: bool) -> None:
        for b in broker_ids:
            if b >= 0:
                self.stop_replica[b][tp] = delete or self.stop_replica[b].get(tp, False)

    def add_update_metadata(self, broker_ids, partitions=()) -> None:
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        self.update_metadata_partitions.update(partitions)

    # -- building the requests ---------------------------------------------------------

    def _leader_and_isr_request(self, broker_id: int, epoch: int, partitions: dict):
        ctx = self.context
        by_topic: dict[str, list] = defaultdict(list)
        leaders = set()
        for (topic, p), is_new in sorted(partitions.items()):
            s = ctx.leadership.get((topic, p))
            if s is None:
                continue
            leaders.add(s.leader)
            by_topic[topic].append(dict(partition_index=p, controller_epoch=s.controller_epoch, leader=s.leader,
                                        leader_epoch=s.leader_epoch, isr=list(s.isr), partition_epoch=s.zk_version,
                                        replicas=list(ctx.replicas((topic, p))), adding_replicas=[],
                                        removing_replicas=[], is_new=is_new,
                                        leader_recovery_state=s.leader_recovery_state))
        if not by_topic:
            return None
        live_leaders = [dict(broker_id=b, host_name=address[0], port=address[1])
                        for b in sorted(leaders) if b in ctx.live_brokers
                        for address in [ctx.live_brokers[b].endpoint_for(self.channels.listener_name)]]
        return build(LeaderAndIsrRequest, LEADER_AND_ISR_VERSION, dict(
            controller_id=self.controller_id, is_kraft_controller=False, controller_epoch=epoch,
            broker_epoch=ctx.broker_epochs.get(broker_id, -1), request_type=0,
            topic_states=[dict(topic_name=t, topic_id=ctx.topic_ids.get(t), partition_states=ps)
                          for t, ps in by_topic.items()],
            live_leaders=live_leaders))

    def update_metadata_partition_states(self, partitions) -> list[dict]:
        ctx = self.context
        by_topic: dict[str, list] = defaultdict(list)
        for topic, p in sorted(partitions):
            s = ctx.leadership.get((topic, p))
            if s is None:
                continue
            deleting = topic in ctx.topics_to_be_deleted
            by_topic[topic].append(dict(
                partition_index=p, controller_epoch=s.controller_epoch,
                leader=LEADER_DURING_DELETE if deleting else s.leader, leader_epoch=s.leader_epoch,
                isr=list(s.isr), zk_version=s.zk_version, replicas=list(ctx.replicas((topic, p))),
                offline_replicas=ctx.offline_replicas((topic, p))))
        return [dict(topic_name=t, topic_id=ctx.topic_ids.get(t), partition_states=ps) for t, ps in by_topic.items()]

    def live_brokers_field(self) -> list[dict]:
        """Every live broker with every endpoint it registered (Kafka's ``UpdateMetadataBroker``)."""
        return [dict(id=b.id, endpoints=[dict(port=port, host=host, listener=name,
                                              security_protocol=SECURITY_PROTOCOL_IDS.get(protocol, 0))
                                         for name, (host, port, protocol) in b.endpoints().items()], rack=b.rack)
                for _, b in sorted(self.context.live_brokers.items())]

    def _update_metadata_request(self, broker_id: int, epoch: int, topic_states: list[dict]):
        return build(UpdateMetadataRequest, UPDATE_METADATA_VERSION, dict(
            controller_id=self.controller_id, is_kraft_controller=False, request_type=0, controller_epoch=epoch,
            broker_epoch=self.context.broker_epochs.get(broker_id, -1), topic_states=topic_states,
            live_brokers=self.live_brokers_field()))

    def _stop_replica_request(self, broker_id: int, epoch: int, partitions: dict):
        ctx = self.context
        by_topic: dict[str, list] = defaultdict(list)
        for (topic, p), delete in sorted(partitions.items()):
            s = ctx.leadership.get((topic, p))
            if topic in ctx.topics_to_be_deleted:
                leader_epoch = EPOCH_DURING_DELETE
            else:
                leader_epoch = s.leader_epoch if s is not None else -1
            by_topic[topic].append(dict(partition_index=p, leader_epoch=leader_epoch, delete_partition=delete))
        return build(StopReplicaRequest, STOP_REPLICA_VERSION, dict(
            controller_id=self.controller_id, is_kraft_controller=False, controller_epoch=epoch,
            broker_epoch=ctx.broker_epochs.get(broker_id, -1),
            topic_states=[dict(topic_name=t, partition_states=ps) for t, ps in by_topic.items()]))

    def send_requests_to_brokers(self, controller_epoch: int) -> None:
        """Queue everything gathered, LeaderAndIsr first, and start a new batch."""
        for broker_id, partitions in sorted(self.leader_and_isr.items()):
            request = self._leader_and_isr_request(broker_id, controller_epoch, partitions)
            if request is not None:
                cb = self.on_leader_and_isr_response
                self.channels.send(broker_id, request, (lambda r, b=broker_id, cb=cb: cb(b, r)) if cb else None)
        if self.update_metadata_brokers:
            topic_states = self.update_metadata_partition_states(self.update_metadata_partitions)
            for broker_id in sorted(self.update_metadata_brokers):
                self.channels.send(broker_id, self._update_metadata_request(broker_id, controller_epoch,
                                                                            topic_states))
        for broker_id, partitions in sorted(self.stop_replica.items()):
            request = self._stop_replica_request(broker_id, controller_epoch, partitions)
            cb = self.on_stop_replica_response
            self.channels.send(broker_id, request, (lambda r, b=broker_id, cb=cb: cb(b, r)) if cb else None)
        self.new_batch()
