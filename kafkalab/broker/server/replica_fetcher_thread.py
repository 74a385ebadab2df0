"""``ReplicaFetcherManager`` / ``ReplicaFetcherThread``: followers copying their leaders' logs.

A follower replica is a consumer of its leader with a few privileges. Kafka's
``ReplicaFetcherManager`` keeps ``num.replica.fetchers`` fetcher threads per
source broker (1 here: one asyncio task per leader broker); each
``ReplicaFetcherThread`` (``AbstractFetcherThread``) loops over its
partitions:

1. one Fetch to the leader for all of them, with ``replica_id`` = this broker
   (so the leader reads past its high watermark and records our position),
   per partition the fetch offset (our log end offset), our log start offset,
   the leader epoch we believe current and the epoch of the last batch we have
   (``last_fetched_epoch``); it waits at the leader up to
   ``replica.fetch.wait.max.ms`` for ``replica.fetch.min.bytes``;
2. per partition of the answer:

   * records: appended *as follower* (the leader's offsets and epochs kept),
     then our high watermark becomes the leader's, capped at our log end offset,
     and our log start offset follows the leader's;
   * a *diverging epoch* (epoch E, end offset O): our log went past the end
     of E on the leader, so the tail is not the leader's history (records
     written by an old leader that were never committed). We truncate to the
     end of the largest epoch both logs share: min(O, where E ends here) if we
     know E, else the end of our largest epoch below E, and ask again;
   * OFFSET_OUT_OF_RANGE: ask the leader for its log end offset (ListOffsets
     LATEST); if ours is beyond it, truncate to it (an unclean election);
     otherwise start at max(our end, the leader's log start offset), dropping
     the whole log if it ends before the leader's start;
   * FENCED_LEADER_EPOCH: the leader knows a newer epoch than we do: stop
     fetching this partition until the controller's LeaderAndIsr comes;
   * NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, ...: the leader has not
     heard of the change yet: back off ``replica.fetch.backoff.ms`` and retry.

Truncation uses the Fetch response's diverging epoch (Kafka >= 2.7, KIP-595),
not a separate OffsetForLeaderEpoch round before fetching as Kafka 2.x did:
a new follower starts fetching at once from its log end offset with its last
epoch, and the leader says if and where they diverge.

Each fetcher keeps an incremental fetch session (KIP-227) with its leader through a
:class:`~kafkalab.broker.server.fetch_session_handler.FetchSessionHandler`, as Kafka's does: after the first, full,
fetch a request names only the partitions whose position changed and a response carries only the partitions with
records or a new high watermark, so partitions where nothing happens cost neither side a request entry.

Simplified: Fetch v12 with topic names; no quotas or throttling; no tiered storage.

Metrics (Kafka's ``AbstractFetcherManager`` and ``FetcherLagStats``): each fetcher keeps a partition's lag,
``max(0, leader's high watermark in the fetch response - our next fetch offset)``, set when a response for it is
processed (``processFetchResponse``; after an out-of-range reset: 0 if we truncated to the leader's end, else
the leader's end offset minus where we fetch from) and dropped when the partition is removed; the manager's gauges
``kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica`` (the largest lag of any fetcher's
partitions, 0 without any) and ``FailedPartitionsCount`` (:func:`register_metrics`). As in Kafka, a partition
that gets no fetch response keeps its last lag (a paused follower's lag does not grow while it fetches nothing;
it shows once it fetches again and is behind). Not here: ``MinFetchRate``, ``DeadThreadCount`` and the
per-partition ``FetcherLagMetrics`` ``ConsumerLag`` gauges.

Lab hook (not in Kafka): a ``pause_replication`` fault (:mod:`kafkalab.broker.server.faults`)
holds the partitions it covers back from the fetch (and drops their data from a
fetch already out), checked every 100 ms, so that a follower stops replicating for
a while and falls out of the ISR.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.consumer.offsets import ListOffsetsRequest

from ..common.message.codec import build
from ..utils.async_util import cancel_and_wait, wait_for
from ..common.errors import ErrorCode
from ..log.leader_epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from ..network.network_client import NetworkClient
from .fetch_session_handler import FetchSessionHandler

log = logging.getLogger(__name__)

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 7
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP = -1, -2

#: errors after which the partition backs off and retries (the leader has not caught up with the controller)
RETRIABLE = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.REPLICA_NOT_AVAILABLE,
             ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.UNKNOWN_SERVER_ERROR}


@dataclass
class InitialFetchState:
    """Where a new follower starts: its leader (id and address) and the leader epoch it was told."""
    leader_id: int
    host: str
    port: int
    current_leader_epoch: int


@dataclass
class PartitionFetchState:
    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    delayed_until: float = 0.0    # loop time before which the partition is not fetched (back-off)

    def is_ready(self, now: float) -> bool:
        return now >= self.delayed_until


class ReplicaFetcherThread:
    """Fetches every partition this broker follows from one leader broker."""

    def __init__(self, manager: "ReplicaFetcherManager", source_id: int, host: str, port: int, fetcher_id: int = 0):
        self.manager = manager
        self.source_id = source_id
        self.host, self.port = host, port
        rm = manager.replica_manager
        self.broker_id = rm.broker_id
        self.name = f"ReplicaFetcherThread-{fetcher_id}-{source_id}"
        cfg = manager.config
        self.client = NetworkClient(host, port, client_id=f"broker-{self.broker_id}-fetcher-{fetcher_id}",
                                    timeout_s=max(cfg["replica.socket.timeout.ms"],
                                                  cfg["replica.fetch.wait.max.ms"] + 5000) / 1000,
                                    security=cfg.listener_configs.inter_broker_client_security())
        self.partitions: dict[tuple[str, int], PartitionFetchState] = {}
        self.fetch_session_handler = FetchSessionHandler(self.name, source_id)
        self._wakeup = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.fetches = 0   # responses processed (tests and notebooks)
        #: Kafka's ``fetcherLagStats``: partition -> its lag at the last response processed for it
        self.lag_stats: dict[tuple[str, int], int] = {}

    @property
    def replica_manager(self):
        return self.manager.replica_manager

    def start(self) -> None:
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run(), name=self.name)

    def add_partitions(self, states: dict[tuple[str, int], PartitionFetchState]) -> None:
        self.partitions.update(states)
        self._wakeup.set()

    def remove_partitions(self, keys) -> None:
        for key in keys:
            self.partitions.pop(key, None)
            self.lag_stats.pop(key, None)   # fetcherLagStats.unregister

    async def shutdown(self) -> None:
        if self.task is not None:
            await cancel_and_wait([self.task])
            self.task = None
        await self.client.close()

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        backoff = self.manager.config["replica.fetch.backoff.ms"] / 1000
        while True:
            now = loop.time()
            ready = {k: s for k, s in self.partitions.items() if s.is_ready(now)}
            for key in self._paused(ready):   # a lab fault: this follower stops replicating
                ready.pop(key).delayed_until = now + 0.1
            if not ready:
                self._wakeup.clear()
                delays = [s.delayed_until - now for s in self.partitions.values()]
                try:   # (not asyncio.wait_for: it can lose a cancellation, see async_util)
                    await wait_for(self._wakeup.wait(), min(delays) if delays else None)
                except asyncio.TimeoutError:
                    pass
                continue
            request = self.build_fetch_request(ready)
            try:
                response = await self.client.send(request)
            except (ConnectionError, OSError, asyncio.TimeoutError, ValueError) as exc:
                self.fetch_session_handler.handle_error(exc)
                log.info("%s: fetch from broker %d at %s:%d failed (%s); backing off", self.name, self.source_id,
                         self.host, self.port, exc)
                await asyncio.sleep(backoff)
                continue
            self.fetches += 1
            await self.process_fetch_response(ready, response)

    def _paused(self, keys) -> list[tuple[str, int]]:
        """The partitions a ``pause_replication`` fault holds back (kafkalab.broker.server.faults)."""
        broker = self.replica_manager.broker   # None in some unit tests
        faults = broker.faults if broker is not None else None
        if faults is None or not faults.active:
            return []
        return [k for k in keys if faults.replication_paused_until(*k) is not None]

    def build_fetch_request(self, ready: dict[tuple[str, int], PartitionFetchState]):
        """The Fetch for the ``ready`` partitions: in the session, only those added or changed, and the ones not
        ready any more forgotten (``FetchSessionHandler.build``)."""
        cfg = self.manager.config
        max_bytes = cfg["replica.fetch.max.bytes"]
        wanted = {}
        for key, state in ready.items():
            partition = self.replica_manager.partitions.get(key)
            start = partition.log.log_start_offset if partition is not None else -1
            wanted[key] = (state.fetch_offset, start, state.current_leader_epoch, state.last_fetched_epoch, max_bytes)
        data = self.fetch_session_handler.build(wanted)
        topics: dict[str, list[dict]] = {}
        for (topic, index), (offset, start, epoch, last_epoch, limit) in data.to_send.items():
            topics.setdefault(topic, []).append({
                "partition": index, "current_leader_epoch": epoch, "fetch_offset": offset,
                "last_fetched_epoch": last_epoch, "log_start_offset": start, "partition_max_bytes": limit})
        forgotten: dict[str, list[int]] = {}
        for topic, index in data.to_forget:
            forgotten.setdefault(topic, []).append(index)
        return build(FetchRequest, FETCH_VERSION, {
            "replica_id": self.broker_id, "max_wait_ms": cfg["replica.fetch.wait.max.ms"],
            "min_bytes": cfg["replica.fetch.min.bytes"], "max_bytes": cfg["replica.fetch.response.max.bytes"],
            "isolation_level": 0, "session_id": data.metadata.session_id, "session_epoch": data.metadata.epoch,
            "topics": [{"topic": t, "partitions": parts} for t, parts in topics.items()],
            "forgotten_topics_data": [{"topic": t, "partitions": parts} for t, parts in forgotten.items()],
            "rack_id": ""})

    async def process_fetch_response(self, requested, response) -> None:
        loop = asyncio.get_running_loop()
        backoff = self.manager.config["replica.fetch.backoff.ms"] / 1000
        keys = [(t.topic, p.partition_index) for t in response.responses for p in t.partitions]
        if not self.fetch_session_handler.handle_response(response.error_code, response.session_id, keys,
                                                          response.throttle_time_ms):
            return   # a session error, or an answer that does not fit the session: the next fetch is full
        paused = set(self._paused(requested))   # a fault came while the fetch was out: drop its data
        for t in response.responses:
            for p in t.partitions:
                key = (t.topic, p.partition_index)
                sent = requested.get(key)
                state = self.partitions.get(key)
                # the partition was removed or re-added (new leader epoch) while the fetch was out
                if sent is None or state is not sent:
                    continue
                if key in paused:
                    state.delayed_until = loop.time() + 0.1
                    continue
                partition = self.replica_manager.partitions.get(key)
                if partition is None:
                    self.partitions.pop(key, None)
                    self.lag_stats.pop(key, None)
                    continue
                error = p.error_code
                try:
                    if error == ErrorCode.NONE:
                        self._process_partition_data(partition, state, p)
                    elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                        if not await self._handle_out_of_range(partition, state):
                            state.delayed_until = loop.time() + backoff
                    elif error == ErrorCode.FENCED_LEADER_EPOCH:
                        log.info("%s: %s is fenced at leader epoch %d; waiting for the controller", self.name,
                                 partition.name, state.current_leader_epoch)
                        self.partitions.pop(key, None)
                        self.manager.failed_partitions.add(key)
                    else:
                        if error not in RETRIABLE:
                            log.warning("%s: error %s fetching %s", self.name, ErrorCode(error).name,
                                        partition.name)
                        state.delayed_until = loop.time() + backoff
                except Exception:
                    log.exception("%s: error processing %s; backing off", self.name, partition.name)
                    state.delayed_until = loop.time() + backoff

    # -- per partition -------------------------------------------------------------------------

    def _process_partition_data(self, partition, state: PartitionFetchState, p) -> None:
        diverging = getattr(p, "diverging_epoch", None)
        if diverging is not None and diverging.epoch >= 0 and diverging.end_offset >= 0:
            self._truncate_on_diverging_epoch(partition, state, diverging.epoch, diverging.end_offset)
            return
        records = p.records
        log_ = partition.log
        if records:
            info = partition.append_records_to_follower(bytes(records))
            if info.last_offset >= info.first_offset:
                state.fetch_offset = info.last_offset + 1
                latest = log_.leader_epoch_cache.latest_epoch
                state.last_fetched_epoch = latest if latest is not None else -1
        # Kafka: lag = max(0, partitionData.highWatermark - nextOffset), nextOffset past what was appended
        self.lag_stats[(partition.topic, partition.index)] = max(0, p.high_watermark - state.fetch_offset)
        partition.update_follower_high_watermark(p.high_watermark)
        leader_start = p.log_start_offset
        if 0 <= leader_start <= log_.high_watermark and leader_start > log_.log_start_offset:
            log_.maybe_increment_log_start_offset(leader_start, "leader offset increment")

    def _truncate_on_diverging_epoch(self, partition, state: PartitionFetchState, epoch: int, end_offset: int) -> None:
        """Kafka's ``getOffsetTruncationState``: where our log and the leader's part ways."""
        log_ = partition.log
        leo = log_.log_end_offset
        if end_offset == UNDEFINED_EPOCH_OFFSET:
            offset = state.fetch_offset
        else:
            local_epoch, local_end = log_.leader_epoch_cache.end_offset_for(epoch, leo)
            if local_epoch == UNDEFINED_EPOCH:     # we know no epoch that old: the leader's offset it is
                offset = min(end_offset, leo)
            elif local_epoch != epoch:             # we skipped that epoch: cut to our last one below it
                offset = min(local_end, leo)
            else:
                offset = min(local_end, end_offset, leo)
        if offset < leo:
            log.info("%s: %s diverges from the leader at epoch %d (leader end offset %d): truncating %d -> %d",
                     self.name, partition.name, epoch, end_offset, leo, offset)
        else:   # nothing to cut; a leader epoch this log began but never wrote in is dropped
            log.info("%s: %s diverges from the leader at epoch %d (leader end offset %d) at our log end %d",
                     self.name, partition.name, epoch, end_offset, leo)
        partition.truncate_to(offset)
        state.fetch_offset = log_.log_end_offset
        latest = log_.leader_epoch_cache.latest_epoch
        state.last_fetched_epoch = latest if latest is not None else -1

    async def _list_offset(self, partition, state: PartitionFetchState, timestamp: int) -> int:
        req = build(ListOffsetsRequest, LIST_OFFSETS_VERSION, {
            "replica_id": self.broker_id, "isolation_level": 0, "topics": [{
                "name": partition.topic, "partitions": [{
                    "partition_index": partition.index, "current_leader_epoch": state.current_leader_epoch,
                    "timestamp": timestamp}]}]})
        resp = await self.client.send(req)
        p = resp.topics[0].partitions[0]
        if p.error_code != ErrorCode.NONE:
            raise LookupError(ErrorCode(p.error_code).name)
        return p.offset

    async def _handle_out_of_range(self, partition, state: PartitionFetchState) -> bool:
        """Kafka's ``fetchOffsetAndTruncate``; False if the leader could not be asked (back off)."""
        try:
            leader_end = await self._list_offset(partition, state, LATEST_TIMESTAMP)
            log_ = partition.log
            leo = log_.log_end_offset
            if leader_end < leo:
                log.warning("%s: %s: reset fetch offset from %d to the leader's end offset %d", self.name,
                            partition.name, leo, leader_end)
                partition.truncate_to(leader_end)
                state.fetch_offset = log_.log_end_offset   # below leader_end if that fell inside a batch
                self.lag_stats[(partition.topic, partition.index)] = 0
            else:
                leader_start = await self._list_offset(partition, state, EARLIEST_TIMESTAMP)
                if leader_start > leo:
                    log.warning("%s: %s: our log ends at %d, before the leader's start %d: starting over there",
                                self.name, partition.name, leo, leader_start)
                    partition.truncate_fully_and_start_at(leader_start)
                state.fetch_offset = max(leader_start, leo)
                self.lag_stats[(partition.topic, partition.index)] = leader_end - state.fetch_offset   # initialLag
            latest = log_.leader_epoch_cache.latest_epoch
            state.last_fetched_epoch = latest if latest is not None else -1
            return True
        except (LookupError, ConnectionError, OSError, asyncio.TimeoutError) as exc:
            log.info("%s: could not look up the leader's offsets for %s: %s", self.name, partition.name, exc)
            return False


def register_metrics(rm, registry) -> None:
    """``kafka.server:type=ReplicaFetcherManager,...,clientId=Replica``: ``MaxLag`` and ``FailedPartitionsCount``
    of ``rm``'s (the ReplicaManager's) fetcher manager, 0 while it has none (Kafka creates it with the
    ReplicaManager; here it comes with the first partition followed)."""
    from ..common.metrics import KafkaMetricsGroup
    group = KafkaMetricsGroup(registry, "kafka.server", "ReplicaFetcherManager")
    tags = {"clientId": "Replica"}

    def max_lag() -> int:
        manager = rm.replica_fetcher_manager
        if manager is None:
            return 0
        return max((lag for f in list(manager.fetchers.values()) for lag in list(f.lag_stats.values())), default=0)

    def failed() -> int:
        manager = rm.replica_fetcher_manager
        return len(manager.failed_partitions) if manager is not None else 0
    group.new_gauge("MaxLag", max_lag, tags)
    group.new_gauge("FailedPartitionsCount", failed, tags)


class ReplicaFetcherManager:
    """The fetchers of this broker: one per source (leader) broker, ``num.replica.fetchers=1``."""

    def __init__(self, replica_manager, config):
        self.replica_manager = replica_manager
        self.config = config
        self.fetchers: dict[tuple[int, str, int], ReplicaFetcherThread] = {}
        #: partitions fenced at their leader (FENCED_LEADER_EPOCH), waiting for a LeaderAndIsr
        self.failed_partitions: set[tuple[str, int]] = set()

    def fetcher_for(self, key: tuple[str, int]) -> ReplicaFetcherThread | None:
        return next((f for f in self.fetchers.values() if key in f.partitions), None)

    def add_fetcher_for_partitions(self, initial: dict[tuple[str, int], InitialFetchState]) -> None:
        """Start fetching each partition from its leader, at our log end offset and last epoch."""
        self.remove_fetcher_for_partitions(initial)
        for key, init in initial.items():
            target = (init.leader_id, init.host, init.port)
            fetcher = self.fetchers.get(target)
            if fetcher is None:
                fetcher = self.fetchers[target] = ReplicaFetcherThread(self, init.leader_id, init.host, init.port)
                fetcher.start()
            log_ = self.replica_manager.partitions[key].log
            latest = log_.leader_epoch_cache.latest_epoch
            fetcher.add_partitions({key: PartitionFetchState(log_.log_end_offset, init.current_leader_epoch,
                                                             latest if latest is not None else -1)})
            self.failed_partitions.discard(key)

    def remove_fetcher_for_partitions(self, keys) -> None:
        keys = list(keys)
        for fetcher in self.fetchers.values():
            fetcher.remove_partitions(keys)
        for key in keys:
            self.failed_partitions.discard(key)

    async def shutdown_idle_fetcher_threads(self) -> None:
        for target, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                del self.fetchers[target]
                await fetcher.shutdown()

    async def shutdown(self) -> None:
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        await asyncio.gather(*(f.shutdown() for f in fetchers), return_exceptions=True)
