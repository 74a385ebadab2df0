"""``SharePartitionManager``: ShareFetch and ShareAcknowledge on a partition leader, with share sessions.

Modelled on Kafka 4.x's ``kafka.server.share.SharePartitionManager`` (and ``ShareSessionCache``). A share
consumer fetches from each leader of the partitions it is assigned in a **share session**, named by its
(group id, member id) and numbered by ``ShareSessionEpoch``:

* epoch **0** opens a session (a new one replaces the member's old one) with the partitions the request names:
  a *full* request, answered for every partition of the session;
* then the epoch goes up by one each request (after 2^31-1 it wraps to 1); such an *incremental* request
  names only partitions to add (``Topics``) or drop (``ForgottenTopicsData``), and the answer names only the
  partitions with records, acknowledgement results or errors. A wrong epoch is INVALID_SHARE_SESSION_EPOCH, a
  session this broker does not have SHARE_SESSION_NOT_FOUND (the consumer opens a new one);
* epoch **-1** closes the session: its acknowledgements are applied, the member's other acquired records of
  the session's partitions are released, and nothing is fetched. So does the **connection closing** (as
  Kafka's ``ConnectionDisconnectListener``): a SIGKILLed consumer's records come back at once, and only a
  consumer that is alive but stuck (its connection open) keeps them until their acquisition locks expire.

A ShareFetch first applies the acknowledgements it carries (:class:`.share_partition.SharePartition`), then
reads each session partition from its next available record up to the high watermark and acquires what it
read for the member; with nothing to acquire it waits, up to ``MaxWaitMs``, for new records, released ones, or
an expiring acquisition lock. Each partition's delivery state is written to the share coordinator
(:mod:`kafkalab.broker.coordinator.share`) when an acknowledgement or a release changed it, so a restarted
broker continues from it.

Group configs (Kafka 4.x's ``GroupConfig``: :mod:`kafkalab.broker.coordinator.group.group_config`, set with
IncrementalAlterConfigs on a GROUP resource; Kafka's ``GroupConfigManager`` keeps them) are kept here, in
``<log.dirs>/share-group-configs.json``; a share-partition takes its lock duration, delivery count limit and
in-flight limit from them, and the group coordinator its members' session timeouts and heartbeat intervals. In
cluster mode they are also in ZooKeeper
(``/config/groups/<group>`` and a ``/config/changes`` notification, as topic configs), so that every broker
leading a partition of the group knows them (Kafka keeps them in its KRaft metadata).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import time

from kazoo.exceptions import NoNodeError

from ...common.errors import ErrorCode, KafkaError
from ...common.records import iter_batches
from ...coordinator.group.group_config import (BOUND_CONFIGS, GROUP_CONFIGS, group_config_value, parse_duration_ms,
                                               validate)
from ...utils.async_util import cancel_and_wait
from ...zk import zk_data as zd
from .share_group_metrics import ShareGroupMetrics
from .share_partition import SharePartition

log = logging.getLogger(__name__)

INITIAL_EPOCH, FINAL_EPOCH = 0, -1


class ShareSession:
    def __init__(self, group_id: str, member_id: str):
        self.group_id, self.member_id = group_id, member_id
        self.epoch = 1                       # the epoch the next request must carry
        self.connection_id: int | None = None   # the connection that opened it
        self.partitions: dict[tuple, str] = {}   # (topic id, partition) -> topic name


class SharePartitionManager:
    def __init__(self, broker, persister=None):
        self.broker = broker
        self.config = broker.config
        self.persister = persister
        self.partitions: dict[tuple, SharePartition] = {}     # (group, topic id, partition)
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._loading: dict[tuple, asyncio.Future] = {}
        self._tasks: set[asyncio.Task] = set()    # background state writes
        #: Kafka's ShareGroupMetrics and SharePartitionMetrics (None: the broker keeps no metrics)
        #: (registered at the first share-partition this broker loads: Kafka 4.4 registers them at startup, but a
        #: mini ZooKeeper-mode broker stands for Kafka 3.9, which serves no share-group metric)
        self._registry = getattr(broker, "metrics", None)
        self.metrics: ShareGroupMetrics | None = None
        self._configs_path = os.path.join(broker.log_dir, "share-group-configs.json")
        self.group_configs: dict[str, dict[str, str]] = {}
        if os.path.exists(self._configs_path):
            with open(self._configs_path) as f:
                self.group_configs = json.load(f)

    async def stop(self) -> None:
        await cancel_and_wait(list(self._tasks))
        if self.persister is not None:
            await self.persister.close()

    # -- group configs -----------------------------------------------------------------------

    def group_config(self, group_id: str, name: str):
        """A group's effective value of group config ``name`` (its override, else the broker's config)."""
        return group_config_value(self.group_configs.get(group_id, {}), name, self.config)

    def group_config_bounds(self) -> dict[str, int]:
        return {name: self.config[name] for name in BOUND_CONFIGS}

    def alter_group_configs(self, group_id: str, ops: list[tuple[str, int, str | None]], validate_only: bool) -> None:
        """IncrementalAlterConfigs on a GROUP resource: SET (0) and DELETE (1) of the group's configs, the new set
        checked as a whole (Kafka's ``GroupConfig.validate``)."""
        current = dict(self.group_configs.get(group_id, {}))
        for name, op, value in ops:
            if name not in GROUP_CONFIGS:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
            if op == 0:
                current[name] = value
            elif op == 1:
                current.pop(name, None)
            else:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name} is not a list config: APPEND/SUBTRACT do not apply")
        parsed = validate(current, self.group_config_bounds())
        current = {name: str(value) for name, value in parsed.items()}
        if validate_only:
            return
        zk = self.broker.zk_client if self.broker.in_cluster else None
        if zk is not None:   # cluster mode: every broker hears of it (the leaders of the group's partitions)
            zk.set_or_create_entity_configs(f"/config/groups/{group_id}", current)
            zk.create_config_change_notification(f"groups/{group_id}")
        self._set_group_configs(group_id, current)

    def _set_group_configs(self, group_id: str, configs: dict[str, str]) -> None:
        self.group_configs[group_id] = configs
        for (group, _, _), sp in self.partitions.items():   # the group's share-partitions: from their next record
            if group == group_id:
                self._apply_group_configs(sp)
        tmp = self._configs_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.group_configs, f)
        os.replace(tmp, self._configs_path)

    def load_zk_group_configs(self, only: str | None = None) -> None:
        """Cluster mode: the group configs in ZooKeeper's ``/config/groups/<group>`` (all of them at start, one
        on its change notification; kafkalab's own znodes: Kafka 3.9 has no group configs, Kafka 4 keeps them in
        its KRaft metadata)."""
        kz = self.broker.zk_client.zk
        try:
            names = [only] if only is not None else kz.get_children("/config/groups")
        except NoNodeError:
            return
        for name in names:
            try:
                data, _ = kz.get(f"/config/groups/{name}")
            except NoNodeError:
                continue
            self._set_group_configs(name, zd.decode_topic_config(data))

    def describe_group_configs(self, group_id: str) -> list[dict]:
        """Each group config's value and where it comes from: ``group`` (the group's override), ``broker`` (the
        broker config set when it started) or ``default``."""
        set_ = self.group_configs.get(group_id, {})
        out = []
        for name, d in GROUP_CONFIGS.items():
            source = ("group" if name in set_ else
                      "broker" if d.broker_config and d.broker_config in self.config.overrides else "default")
            out.append({"name": name, "value": str(self.group_config(group_id, name)), "source": source,
                        "is_default": source == "default", "type": d.type})
        return out

    def _apply_group_configs(self, sp: SharePartition) -> None:
        sp.lock_duration_ms = self.group_config(sp.group_id, "share.record.lock.duration.ms")
        sp.delivery_count_limit = self.group_config(sp.group_id, "share.delivery.count.limit")
        sp.max_in_flight = self.group_config(sp.group_id, "share.partition.max.record.locks")

    # -- share-partitions --------------------------------------------------------------------

    async def share_partition(self, group_id: str, topic: str, topic_id, index: int, partition,
                              log_) -> SharePartition:
        """The share-partition of (group, topic, partition), loaded from the share coordinator or initialized
        from ``share.auto.offset.reset`` the first time (Kafka's ReadShareGroupState, InitializeShareGroupState)."""
        key = (group_id, topic_id, index)
        while (pending := self._loading.get(key)) is not None:   # another request is loading it
            await asyncio.shield(pending)
        sp = self.partitions.get(key)
        if sp is None:
            self._loading[key] = asyncio.get_running_loop().create_future()
            try:
                started = time.perf_counter()
                sp = await self._load(group_id, topic, topic_id, index, partition, log_)
                self.partitions[key] = sp
                if self.metrics is None and self._registry is not None:
                    self.metrics = ShareGroupMetrics(self._registry)
                if self.metrics is not None:
                    self.metrics.partition_load_time((time.perf_counter() - started) * 1000)
                    self.metrics.register_partition(sp)
            finally:
                self._loading.pop(key).set_result(None)
        sp.leader_epoch = partition.leader_epoch
        if sp.start_offset < log_.log_start_offset:     # records deleted (retention, DeleteRecords) under the SPSO
            sp.load_state(log_.log_start_offset, sp.state_epoch,
                          [b for b in sp.state_batches() if b["last_offset"] >= log_.log_start_offset])
        return sp

    async def _load(self, group_id, topic, topic_id, index, partition, log_) -> SharePartition:
        start = self._reset_offset(group_id, log_)
        sp = SharePartition(group_id, topic, topic_id, index, start_offset=start,
                            lock_duration_ms=self.group_config(group_id, "share.record.lock.duration.ms"),
                            delivery_count_limit=self.group_config(group_id, "share.delivery.count.limit"),
                            max_in_flight=self.group_config(group_id, "share.partition.max.record.locks"))
        sp.leader_epoch, sp.write_lock = partition.leader_epoch, asyncio.Lock()
        if self.persister is None:
            return sp
        state = await self.persister.read(group_id, topic_id, index)
        if state is None:   # Kafka's InitializeShareGroupState: state with start offset -1, "not initialized"
            await self.persister.write(sp, sp.leader_epoch, start_offset=-1)
        elif state["start_offset"] >= 0:
            sp.load_state(state["start_offset"], state["state_epoch"], state["state_batches"])
            log.info("share-partition %s %s-%d: loaded SPSO %d", group_id, topic, index, sp.start_offset)
        # (start offset -1: share.auto.offset.reset decides, and the first acknowledgement or release writes it)
        return sp

    def _reset_offset(self, group_id: str, log_) -> int:
        """Where a share-partition without state starts (``share.auto.offset.reset``): the log start offset
        (``earliest``), the high watermark (``latest``), or the first record at most the duration old
        (``by_duration:PT1H``; the high watermark when none is that young), as Kafka 4.x's SharePartition does."""
        reset = self.group_config(group_id, "share.auto.offset.reset")
        if reset == "earliest":
            return log_.log_start_offset
        if reset.startswith("by_duration:"):
            since = int(time.time() * 1000) - parse_duration_ms(reset[len("by_duration:"):])
            found = log_.fetch_offset_by_timestamp(since)
            if found is not None:
                return min(found[0], log_.high_watermark)
        return log_.high_watermark

    async def persist(self, sp: SharePartition) -> None:
        """Write the share-partition's state as it is when the write starts (one write at a time per
        share-partition, so the last one written is always the newest)."""
        if self.persister is None:
            return
        async with sp.write_lock:
            await self.persister.write(sp, sp.leader_epoch)

    def _changed(self, sp: SharePartition) -> None:
        """Records became available (released, expired): wake waiting fetches, write the state (in the
        background: nobody waits for it)."""
        self.broker.replica_manager.notify_data_arrived(sp.topic, sp.partition)
        if self.persister is not None:
            task = asyncio.get_running_loop().create_task(self._persist_quietly(sp))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _persist_quietly(self, sp: SharePartition) -> None:
        try:
            await self.persist(sp)
        except KafkaError as exc:
            log.warning("share-partition %s %s-%d: writing its state failed: %s", sp.group_id, sp.topic,
                        sp.partition, exc.message)

    def on_leadership_change(self, topic: str, index: int, is_leader: bool, leader_epoch: int) -> None:
        """Cluster mode: a partition this broker no longer leads drops its share-partitions (the new leader loads
        them from the share coordinator); their sessions answer NOT_LEADER_OR_FOLLOWER for it."""
        if is_leader:
            return
        for key in [k for k, sp in self.partitions.items() if (sp.topic, sp.partition) == (topic, index)]:
            sp = self.partitions.pop(key)
            if self.metrics is not None:
                self.metrics.remove_partition(sp)

    def _leader_log(self, topic: str, index: int):
        partition = self.broker.replica_manager.get_partition(topic, index)
        return partition, partition.local_log_with_epoch(-1, require_leader=True)

    # -- sessions ---------------------------------------------------------------------------

    def connection_closed(self, connection_id: int) -> None:
        """Kafka's share session ``ConnectionDisconnectListener``: a session whose connection closed (the
        consumer crashed, was killed, or closed without a final request) is removed and its member's acquired
        records are released at once, without waiting for their locks."""
        for session in [s for s in self.sessions.values() if s.connection_id == connection_id]:
            self.close_session(session)

    def session_for(self, group_id: str, member_id: str, epoch: int, connection_id: int | None = None) -> ShareSession:
        """The session a request with ``epoch`` uses (KafkaError SHARE_SESSION_NOT_FOUND or
        INVALID_SHARE_SESSION_EPOCH)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            session = self.sessions[key] = ShareSession(group_id, member_id)
            session.connection_id = connection_id
            return session
        session = self.sessions.get(key)
        if session is None:
            raise KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, f"no share session for member {member_id} of "
                             f"group {group_id} on broker {self.broker.broker_id}")
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, f"share session epoch {epoch}, "
                                 f"expected {session.epoch}")
            session.epoch = 1 if session.epoch == 2**31 - 1 else session.epoch + 1
        return session

    def close_session(self, session: ShareSession) -> None:
        self.sessions.pop((session.group_id, session.member_id), None)
        for (topic_id, index) in session.partitions:
            sp = self.partitions.get((session.group_id, topic_id, index))
            if sp is not None and sp.release_member(session.member_id):
                self._changed(sp)

    # -- acknowledging and acquiring --------------------------------------------------------

    async def acknowledge(self, group_id: str, member_id: str, topic: str, topic_id, index: int,
                          batches, allow_renew: bool = False) -> tuple[int, str | None]:
        """Apply one partition's acknowledgement batches and write the new state: (error code, message)."""
        try:
            partition, log_ = self._leader_log(topic, index)
            sp = await self.share_partition(group_id, topic, topic_id, index, partition, log_)
            acks = [(b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in batches]
            sp.acknowledge(member_id, acks, allow_renew)
            if self.metrics is not None:   # counted once applied (Kafka: on the acknowledgement's success)
                self.metrics.record_acknowledgements(acks)
            self.broker.replica_manager.notify_data_arrived(sp.topic, sp.partition)
            await self.persist(sp)
        except KafkaError as exc:
            return exc.code, exc.message
        return ErrorCode.NONE, None

    async def acquire(self, group_id: str, member_id: str, topic: str, topic_id, index: int, max_bytes: int,
                      max_records: int) -> dict:
        """Read the partition from its next available record and acquire what was read: a PartitionData
        (without partition_index / acknowledge fields)."""
        partition, log_ = self._leader_log(topic, index)
        sp = await self.share_partition(group_id, topic, topic_id, index, partition, log_)
        if sp.expire_locks():
            self._changed(sp)
        leader = {"leader_id": partition.leader_id, "leader_epoch": partition.leader_epoch}
        answer = {"error_code": ErrorCode.NONE, "error_message": None, "current_leader": leader,
                  "records": b"", "acquired_records": []}   # Kafka 4.4: MemoryRecords.EMPTY, never null
        hw = log_.high_watermark
        offset = sp.next_fetch_offset()
        if offset >= hw or max_records <= 0:
            return answer
        data = log_.read(offset, max_bytes, hw, min_one_message=True)
        offsets, covered_to = [], offset
        for _, h in iter_batches(data, strict=False):
            covered_to = max(covered_to, min(h.next_offset, hw))
            if h.attributes & 0x20:   # a control batch (transaction marker): a gap, never delivered
                continue
            offsets.extend(o for o in range(max(h.base_offset, offset), min(h.next_offset, hw)))
        acquired = sp.acquire(member_id, offsets, covered_to, max_records)
        if acquired:
            answer["records"] = data
            answer["acquired_records"] = acquired
        return answer

    def next_deadline(self, keys) -> float | None:
        deadlines = [d for k in keys if (sp := self.partitions.get(k)) is not None
                     and (d := sp.next_lock_deadline()) is not None]
        return min(deadlines) - time.monotonic() if deadlines else None
