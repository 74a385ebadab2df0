"""``AlterPartitionManager``: a partition leader's ISR changes, proposed to the controller (KIP-497).

A leader never writes the ISR itself. When a follower catches up (ISR
expansion) or falls behind for ``replica.lag.time.max.ms`` (ISR shrink), the
``Partition`` enters a *pending* state and hands the proposed ISR to this
manager, which sends it to the active controller in an AlterPartition request
(v1 here: topic names; later versions use topic ids). The controller checks
the leader epoch and the partition epoch (the version of the partition's state
znode), writes the new ISR to ZooKeeper and answers with the state now
committed, which the partition adopts.

As Kafka's ``DefaultAlterPartitionManager``:

* at most one change per partition is queued (a second is refused with
  OPERATION_NOT_ATTEMPTED, which puts the partition back to its committed state);
* one request is in flight at a time, carrying every queued change; changes
  queued meanwhile go in the next one;
* a failed send or a top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH, no
  controller known) retries after 50 ms; a partition-level error is the
  partition's to handle (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION: wait for
  the controller's next LeaderAndIsr).

Sending is pluggable: ``AlterPartitionManager(broker_id, send=...)`` takes any
``async send(request: dict) -> response`` (a dict, or an object with the
response's fields); unit tests answer for the controller that way. The
default sends over a ``NetworkClient`` to ``broker.controller_id``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from ..common.errors import ErrorCode
from ..common.message.codec import build
from ..common.message.zk_messages import ALTER_PARTITION_VERSION, AlterPartitionRequest
from ..network.network_client import NetworkClient

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05


def _get(obj, name, default=None):
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


class AlterPartitionManager:
    def __init__(self, broker_id: int, send: Callable[[dict], Awaitable] | None = None, broker=None,
                 broker_epoch: Callable[[], int] | None = None):
        self.broker_id = broker_id
        self.broker = broker
        self._send = send or self._send_to_controller
        self._broker_epoch = broker_epoch or (lambda: broker.broker_epoch if broker is not None else -1)
        #: (topic, partition) -> (Partition, its pending state): queued, or in the request in flight
        self.unsent: dict[tuple[str, int], tuple] = {}
        self.inflight = False
        self._tasks: set[asyncio.Task] = set()
        self._client = None
        self._client_target = None
        self._closed = False

    # -- what a Partition calls -----------------------------------------------------------

    def submit(self, partition, pending) -> None:
        """Queue ``pending`` (a PendingExpandIsr / PendingShrinkIsr of ``partition``) for the controller."""
        key = (partition.topic, partition.index)
        if key in self.unsent:
            partition.handle_alter_partition_response(pending, ErrorCode.OPERATION_NOT_ATTEMPTED)
            return
        self.unsent[key] = (partition, pending)
        self.maybe_propagate_isr_changes()

    __call__ = submit   # a manager can stand as ``Partition.alter_partition``

    def maybe_propagate_isr_changes(self) -> None:
        if self.unsent and not self.inflight and not self._closed:
            self.inflight = True
            self._spawn(self._send_request(list(self.unsent.items())))

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one AlterPartition round trip ----------------------------------------------------------

    def build_request(self, items) -> dict:
        topics: dict[str, list[dict]] = {}
        for (topic, index), (partition, pending) in items:
            topics.setdefault(topic, []).append({
                "partition_index": index, "leader_epoch": partition.leader_epoch,
                "new_isr": list(pending.sent_isr), "leader_recovery_state": pending.leader_recovery_state,
                "partition_epoch": partition.partition_epoch})
        return {"broker_id": self.broker_id, "broker_epoch": self._broker_epoch(),
                "topics": [{"topic_name": t, "partitions": parts} for t, parts in topics.items()]}

    async def _send_request(self, items) -> None:
        error = ErrorCode.NONE
        try:
            try:
                response = await self._send(self.build_request(items))
            except asyncio.CancelledError:
                raise
            except Exception as exc:   # noqa: BLE001 - no controller, connection refused, timeout...
                log.info("broker %d: AlterPartition not sent (%s); retrying", self.broker_id, exc)
                error = ErrorCode.NETWORK_EXCEPTION
            else:
                error = self._handle_response(response, items)
        finally:
            self.inflight = False
        if error == ErrorCode.NONE:
            self.maybe_propagate_isr_changes()
        else:
            await asyncio.sleep(RETRY_BACKOFF_S)
            self.maybe_propagate_isr_changes()

    def _handle_response(self, response, items) -> int:
        error = _get(response, "error_code", 0)
        if error != ErrorCode.NONE:
            log.warning("broker %d: controller answered AlterPartition with %s; retrying", self.broker_id,
                        ErrorCode(error).name)
            return error
        answers = {}
        for t in _get(response, "topics", []) or []:
            for p in _get(t, "partitions", []) or []:
                answers[(_get(t, "topic_name"), _get(p, "partition_index"))] = p
        retry = []
        for key, (partition, pending) in items:
            p = answers.get(key)
            if p is None:   # not answered: stays queued, goes again in the next request
                log.warning("broker %d: %s-%d was sent but not answered", self.broker_id, *key)
                continue
            del self.unsent[key]
            again = partition.handle_alter_partition_response(
                pending, _get(p, "error_code", 0), leader_epoch=_get(p, "leader_epoch", -1),
                isr=list(_get(p, "isr", []) or []), partition_epoch=_get(p, "partition_epoch", -1),
                leader_recovery_state=_get(p, "leader_recovery_state", 0))
            if again:
                retry.append((partition, pending))
        for partition, pending in retry:
            self.unsent[(partition.topic, partition.index)] = (partition, pending)
        return ErrorCode.NONE

    # -- the default transport: a NetworkClient to the active controller ---------------------------

    async def _send_to_controller(self, data: dict):
        broker = self.broker
        controller_id = broker.controller_id if broker is not None else -1
        address = next(((h, p) for b, h, p in (broker.live_brokers if broker is not None else [])
                        if b == controller_id), None)
        if controller_id < 0 or address is None:
            raise ConnectionError(f"no controller known (controller id {controller_id})")
        target = (controller_id, *address)
        if self._client is None or self._client_target != target:
            if self._client is not None:
                await self._client.close()
            timeout = broker.config["controller.socket.timeout.ms"] / 1000
            self._client = NetworkClient(*address, client_id=f"broker-{self.broker_id}-alter-partition",
                                         timeout_s=timeout,
                                         security=broker.config.listener_configs.inter_broker_client_security())
            self._client_target = target
        return await self._client.send(build(AlterPartitionRequest, ALTER_PARTITION_VERSION, data))

    async def shutdown(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._client is not None:
            await self._client.close()
            self._client = None
