"""``BrokerLifecycleManager``: a KRaft broker's registration and heartbeats (Kafka's
``kafka.server.BrokerLifecycleManager``, KIP-631).

1. **register**: BrokerRegistration (v4) to the active controller with the broker's id, the cluster
   id, a random *incarnation id* (new for every process), its listener, the features it supports and
   its log directory's id; retried until the controller answers without an error. The answer's broker
   epoch identifies this incarnation in every later request.
2. **heartbeat** every ``broker.heartbeat.interval.ms``: BrokerHeartbeat with the offset of the last
   metadata record the broker has applied. The answer says whether it is *caught up* (that offset has reached
   its registration record) and fenced. Until the broker has published what it applied (``set_ready_to_unfence``)
   it asks to stay fenced (``WantFence``); then the controller unfences it once it is caught up. A broker epoch
   the controller no longer knows (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED: it was fenced and
   re-registered elsewhere, or the controllers lost it) makes it register again.
3. **controlled shutdown**: heartbeats with ``WantShutDown`` (the first at once) until the controller answers
   ``ShouldShutDown`` (it has moved this broker's leaderships away), or the time is up.
"""
from __future__ import annotations

import asyncio
import logging
import uuid

from ..broker.common.message.codec import build
from ..controller.controller_messages import BrokerHeartbeatRequest, BrokerRegistrationRequest
from ..broker.server.broker_features import registration_features

log = logging.getLogger(__name__)
STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED = 77, 102
REGISTRATION_VERSION, HEARTBEAT_VERSION = 4, 1
RETRY_BACKOFF_S = 0.1


class BrokerLifecycleManager:
    def __init__(self, broker_id: int, cluster_id: str, channel, listener: tuple[str, int], rack: str | None,
                 log_dir_id: uuid.UUID, metadata_offset, heartbeat_interval_ms: int = 2000,
                 previous_broker_epoch: int = -1):
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.channel = channel
        self.listener = listener
        #: every advertised listener (name, host, port, security_protocol id), as BrokerRegistration carries them
        self.listeners: list[dict] | None = None
        self.rack = rack
        self.log_dir_id = log_dir_id
        self.metadata_offset = metadata_offset            # callable: the last metadata offset applied
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        #: the epoch of the previous incarnation if it shut down cleanly (its clean-shutdown marker), else -1
        self.previous_broker_epoch = previous_broker_epoch
        self.fenced = True
        self.caught_up = False
        #: set by the first heartbeat answered "caught up" (Kafka's initialCatchUpFuture)
        self.initial_catch_up = asyncio.Event()
        #: the broker has published the metadata it caught up to: from now on it asks to be unfenced
        self.ready_to_unfence = False
        self.want_shut_down = False
        self.should_shut_down = asyncio.Event()
        self.registered = asyncio.Event()
        self.unfenced = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()

    def _features(self) -> list[dict]:
        """What this broker implements of each feature (Kafka's ``BrokerFeatures.supportedFeatures``)."""
        return registration_features()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            try:
                if self.broker_epoch < 0:
                    await self._register()
                    continue
                await self._heartbeat()
            except asyncio.CancelledError:
                raise
            except Exception as exc:   # noqa: BLE001 - no controller answered in time: try again
                log.info("broker %d: %s failed: %r", self.broker_id,
                         "registration" if self.broker_epoch < 0 else "heartbeat", exc)
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            try:   # the next heartbeat at its interval, or at once when a controlled shutdown begins
                await asyncio.wait_for(self._wake.wait(), RETRY_BACKOFF_S if self.want_shut_down
                                       else self.heartbeat_interval_s)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()

    async def _register(self) -> None:
        host, port = self.listener
        listeners = self.listeners or [{"name": "PLAINTEXT", "host": host, "port": port, "security_protocol": 0}]
        request = build(BrokerRegistrationRequest, REGISTRATION_VERSION, {
            "broker_id": self.broker_id, "cluster_id": self.cluster_id, "incarnation_id": self.incarnation_id,
            "listeners": listeners,
            "features": self._features(), "rack": self.rack, "is_migrating_zk_broker": False,
            "log_dirs": [self.log_dir_id], "previous_broker_epoch": self.previous_broker_epoch})
        response = await self.channel.send(request, "lifecycle")
        if response.error_code:
            log.warning("broker %d: registration refused with error %d", self.broker_id, response.error_code)
            await asyncio.sleep(RETRY_BACKOFF_S * 5)
            return
        self.broker_epoch = response.broker_epoch
        self.registered.set()
        log.info("broker %d: registered with broker epoch %d", self.broker_id, self.broker_epoch)

    async def _heartbeat(self) -> None:
        request = build(BrokerHeartbeatRequest, HEARTBEAT_VERSION, {
            "broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
            "current_metadata_offset": self.metadata_offset(), "want_fence": not self.ready_to_unfence,
            "want_shut_down": self.want_shut_down, "offline_log_dirs": []})
        response = await self.channel.send(request, "lifecycle")
        if response.error_code in (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED):
            log.info("broker %d: the controller does not know broker epoch %d (error %d): registering again",
                     self.broker_id, self.broker_epoch, response.error_code)
            self.broker_epoch = -1
            self.fenced = True
            self.unfenced.clear()
            return
        if response.error_code:
            return
        self.caught_up = response.is_caught_up
        if self.caught_up:
            self.initial_catch_up.set()
        if self.fenced and not response.is_fenced:
            log.info("broker %d: unfenced", self.broker_id)
        self.fenced = response.is_fenced
        (self.unfenced.clear if self.fenced else self.unfenced.set)()
        if response.should_shut_down:
            self.should_shut_down.set()

    def set_ready_to_unfence(self) -> None:
        """The broker's metadata publishers have run: ask the controller to unfence it (at once, not at the next
        interval)."""
        self.ready_to_unfence = True
        self._wake.set()

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask to shut down (WantShutDown) and wait for ShouldShutDown; returns whether it came in time."""
        if self.broker_epoch < 0:
            return False
        self.want_shut_down = True
        self._wake.set()   # as Kafka's BeginControlledShutdownEvent: heartbeat now, not at the next interval
        try:
            await asyncio.wait_for(self.should_shut_down.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            return False
