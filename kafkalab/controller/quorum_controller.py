"""``QuorumController``: the KRaft controller on top of the mini Raft quorum (Kafka's
``org.apache.kafka.controller.QuorumController``).

Every controller runs one, over its :class:`~kafkalab.raft.kafka_raft_client.KafkaRaftClient`:

* **replay** (every controller): whatever the quorum has *committed* (below the high watermark) is
  read from ``__cluster_metadata-0`` in offset order and applied to the control managers
  (:class:`FeatureControlManager`, :class:`ClusterControlManager`, :class:`ReplicationControlManager`,
  :class:`ProducerIdControlManager`). A standby's state is therefore the active controller's, a
  little later; a new active controller continues from it.
* **the active controller** is the Raft leader, once the LeaderChange record of its epoch is
  committed and replayed (then it has every record an earlier leader committed). It answers the
  brokers' and admins' requests by *generating* records from its state, appending them through the
  Raft client and answering once they are committed and replayed: one write at a time (Kafka
  pipelines writes and applies them at once, reverting on failure; one at a time keeps the state a
  simple function of the committed log). On an empty log it first writes the bootstrap records
  (FeatureLevelRecords, as ``kafka-storage format`` prepares them).
* **timers** (active only): a broker without a heartbeat for ``broker.session.timeout.ms`` is fenced
  (PartitionChangeRecords moving leadership off it, then the fence record); a NoOpRecord is written
  when nothing was for ``metadata.max.idle.interval.ms``, so the high watermark keeps moving; every
  ``leader.imbalance.check.interval.seconds``, with ``auto.leader.rebalance.enable``, the auto leader
  rebalance (:class:`~kafkalab.controller.leader_balancer.LeaderBalancer`).

A request that reaches a controller that is not active is answered NOT_CONTROLLER (41); so is one
whose records were appended but not committed before the controller lost its leadership.
"""
from __future__ import annotations

import asyncio
import logging
import time

from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.utils.async_util import cancel_and_wait
from ..raft.kafka_raft_client import NotLeaderError
from ..raft.leader_state import LeaderState
from .cluster_control_manager import ClusterControlManager
from .configuration_control_manager import ConfigurationControlManager
from .feature_control_manager import FeatureControlManager
from .leader_balancer import LeaderBalancer
from ..metadata.api_message_and_version import ApiMessageAndVersion, read_committed
from .producer_id_control_manager import ProducerIdControlManager
from .acl_control_manager import ACL_RECORDS, AclControlManager
from .scram_control_manager import SCRAM_RECORDS, ScramControlManager
from .replication_control_manager import ReplicationControlManager
from .snapshot_generator import SnapshotGenerator

log = logging.getLogger(__name__)
TIMER_S = 0.05


def replay_record(state, offset: int, record) -> None:
    """Apply one committed metadata record to ``state``'s control managers (its ``features``, ``cluster``,
    ``replication``, ``producer_ids``, ``scram``, ``acls``): what every controller does, and what a broker's metadata
    image does."""
    d, name = record.data, record.name
    if name == "FeatureLevelRecord":
        state.features.replay_feature_level(d)
    elif name == "RegisterBrokerRecord":
        state.cluster.replay_register_broker(offset, d)
    elif name in ("FenceBrokerRecord", "UnfenceBrokerRecord"):
        state.cluster.replay_fence(d, fenced=name == "FenceBrokerRecord")
    elif name == "BrokerRegistrationChangeRecord":
        state.cluster.replay_registration_change(d)
    elif name == "UnregisterBrokerRecord":
        state.cluster.replay_unregister(d)
    elif name == "TopicRecord":
        state.replication.replay_topic(d)
    elif name == "ConfigRecord":
        state.replication.replay_config(d)
        if getattr(state, "configuration", None) is not None:   # BROKER and GROUP configs
            state.configuration.replay(d)
    elif name == "PartitionRecord":
        state.replication.replay_partition(d)
    elif name == "PartitionChangeRecord":
        state.replication.replay_partition_change(d)
    elif name == "RemoveTopicRecord":
        state.replication.replay_remove_topic(d)
    elif name == "ProducerIdsRecord":
        state.producer_ids.replay(d)
    elif name in SCRAM_RECORDS:
        state.scram.replay(name, d)
    elif name in ACL_RECORDS:
        state.acls.replay(name, d)
    # NoOpRecord and the record types never written here change nothing


class QuorumController:
    def __init__(self, raft_client, cluster_id: str | None = None, session_timeout_ms: int = 9000,
                 idle_interval_ms: int = 500, default_num_partitions: int = 1, default_replication_factor: int = 1,
                 write_timeout_ms: int = 5000, bootstrap_levels=None, min_insync_replicas: int = 1,
                 unclean_leader_election_enable: bool = False, auto_leader_rebalance_enable: bool = True,
                 leader_imbalance_check_interval_seconds: float = 300,
                 leader_imbalance_per_broker_percentage: int = 10,
                 snapshot_generator: SnapshotGenerator | None = None,
                 group_config_bounds: dict[str, int] | None = None, authorizer=None):
        self.raft = raft_client
        self.features = FeatureControlManager()
        self.cluster = ClusterControlManager(cluster_id, self.features, session_timeout_ms)
        self.replication = ReplicationControlManager(self.cluster, default_num_partitions, default_replication_factor,
                                                     min_insync_replicas, unclean_leader_election_enable)
        self.leader_balancer = LeaderBalancer(self, auto_leader_rebalance_enable,
                                              leader_imbalance_check_interval_seconds,
                                              leader_imbalance_per_broker_percentage)
        self.producer_ids = ProducerIdControlManager()
        self.scram = ScramControlManager()
        self.acls = AclControlManager()
        #: the controller's StandardAuthorizer (``authorizer.class.name``), fed by the replayed ACLs; None: none
        self.authorizer = authorizer
        self._authorizer_acls_version = -1
        self.configuration = ConfigurationControlManager(self.replication, group_config_bounds)
        self.idle_interval_ms = idle_interval_ms
        self.write_timeout_s = write_timeout_ms / 1000
        self.bootstrap_levels = bootstrap_levels
        #: the next offset to replay: every committed record below it has been applied
        self.applied_offset = 0
        #: Kafka's QuorumControllerMetrics, when the node keeps metrics (:meth:`enable_metrics`)
        self.metrics = None
        #: the Raft epoch this controller is active in, None while it is not
        self.active_epoch: int | None = None
        self.replayed: list[tuple[int, str]] = []      # (offset, record type), for tests and notebooks
        #: writes a snapshot of the replayed state every so many bytes / ms, loads one (snapshot_generator.py)
        self.snapshots = snapshot_generator or SnapshotGenerator()
        self._write_lock = asyncio.Lock()
        self._last_write = time.monotonic()
        self._tasks: list[asyncio.Task] = []
        self._changed = asyncio.Event()

    # -- life cycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self._maybe_load_snapshot(force=True)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._replay_loop()), loop.create_task(self._timer_loop())]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)

    def enable_metrics(self, registry) -> None:
        from .quorum_controller_metrics import QuorumControllerMetrics
        self.metrics = QuorumControllerMetrics(registry, self)

    @property
    def is_active(self) -> bool:
        return self.active_epoch is not None and self.active_epoch == self.raft.quorum.epoch \
            and self.raft.quorum.is_leader

    # -- replay (every controller) -----------------------------------------------------------------

    async def _replay_loop(self) -> None:
        while True:
            try:
                self.replay_committed()
                self._maybe_change_activity()
            except Exception:   # a bug or a corrupt log: say so loudly, keep the controller up
                log.exception("node %d: replaying the metadata log failed", self.raft.node_id)
                await asyncio.sleep(1.0)
            await self.raft.wait_for_change(TIMER_S)

    def replay_committed(self) -> int:
        """Apply every committed record not applied yet; returns how many."""
        self._maybe_load_snapshot()
        hw = self.raft.high_watermark
        if hw is None or hw <= self.applied_offset:
            return 0
        start = self.applied_offset
        records = read_committed(self.raft.log, start, hw)
        for offset, record in records:
            self._replay(offset, record)
        self.applied_offset = hw
        self._publish_acls()
        self._notify()
        self.snapshots.after_replay(self, self.raft.log, start, hw)
        return len(records)

    def _maybe_load_snapshot(self, force: bool = False) -> None:
        """At start-up, or when the log now starts past what was applied (a snapshot fetched from the leader was
        installed): load the latest snapshot, then replay the log after it."""
        if force or self.raft.log.start_offset > self.applied_offset:
            end = self.snapshots.load_latest(self, self.raft.log, replay_record)
            if end is not None:
                self.applied_offset = end
                self.replayed.append((end - 1, "snapshot"))
                self._publish_acls()

    def _publish_acls(self) -> None:
        """The controller's authorizer gets the ACLs replayed (Kafka's ``AclPublisher`` on a controller)."""
        if self.authorizer is not None and self._authorizer_acls_version != self.acls.version:
            self.authorizer.load_acls(self.acls.acls())
            self._authorizer_acls_version = self.acls.version

    def _replay(self, offset: int, record) -> None:
        replay_record(self, offset, record)
        self.replayed.append((offset, record.name))

    def _maybe_change_activity(self) -> None:
        state = self.raft.quorum.state
        leading = isinstance(state, LeaderState) and state.high_watermark is not None \
            and state.high_watermark > state.epoch_start_offset and self.applied_offset >= state.high_watermark
        if leading and self.active_epoch != state.epoch:
            self.active_epoch = state.epoch
            self.cluster.activate()
            log.info("node %d: active controller in epoch %d (metadata replayed to offset %d)",
                     self.raft.node_id, state.epoch, self.applied_offset)
            if not self.features.bootstrapped:
                asyncio.get_running_loop().create_task(self._bootstrap())
        elif not isinstance(state, LeaderState) and self.active_epoch is not None:
            log.info("node %d: no longer the active controller (epoch %d)", self.raft.node_id, self.active_epoch)
            self.active_epoch = None
            self.cluster.deactivate()

    async def _bootstrap(self) -> None:
        try:
            await self.write(lambda: (self.features.bootstrap_records(self.bootstrap_levels), None)
                             if not self.features.bootstrapped else ([], None))
        except KafkaError as exc:
            log.info("node %d: bootstrap records not written: %s", self.raft.node_id, exc)

    # -- writing (the active controller) -----------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def write(self, operation):
        """Run ``operation`` (-> (records, result)) on the current state, append its records, and return the
        result once they are committed and replayed. NOT_CONTROLLER if this controller is not (or stops
        being) active; REQUEST_TIMED_OUT if they are not committed in time."""
        async with self._write_lock:
            if not self.is_active:
                raise self._not_controller()
            records, result = operation()
            if not records:
                return result
            epoch = self.active_epoch
            try:
                last = self.raft.append([r.encode() for r in records])
            except NotLeaderError:
                raise self._not_controller() from None
            self._last_write = time.monotonic()
            deadline = time.monotonic() + self.write_timeout_s
            while self.applied_offset <= last:
                if self.active_epoch != epoch or not self.raft.quorum.is_leader:
                    raise self._not_controller()
                if time.monotonic() >= deadline:
                    raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"the records at offsets up to {last} were not "
                                     f"committed in {self.write_timeout_s} s")
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), TIMER_S)
                except asyncio.TimeoutError:
                    pass
            return result

    def _not_controller(self) -> KafkaError:
        leader = self.raft.quorum.leader_id
        return KafkaError(ErrorCode.NOT_CONTROLLER, f"node {self.raft.node_id} is not the active controller"
                          + (f" (the Raft leader is {leader})" if leader is not None and leader >= 0 else ""))

    # -- timers (the active controller) --------------------------------------------------------------

    async def _timer_loop(self) -> None:
        while True:
            await asyncio.sleep(TIMER_S)
            if not self.is_active:
                continue
            try:
                await self._fence_stale_brokers()
                await self.leader_balancer.maybe_run()
                # a NoOpRecord only once the bootstrap records (metadata.version first) are in: as Kafka's, whose
                # activation writes them before the NoOp timer is scheduled (the timer could win the race here)
                if self.idle_interval_ms > 0 and time.monotonic() - self._last_write >= self.idle_interval_ms / 1000 \
                        and self.features.bootstrapped and not self._write_lock.locked():
                    async with self._write_lock:
                        if self.is_active:
                            self.raft.append([ApiMessageAndVersion("NoOpRecord").encode()])
                            self._last_write = time.monotonic()
            except KafkaError as exc:
                log.info("node %d: timer write failed: %s", self.raft.node_id, exc)
            except NotLeaderError:
                pass

    async def _fence_stale_brokers(self) -> None:
        manager = self.cluster.heartbeat_manager
        if manager is None:
            return
        alive = [b for b, r in self.cluster.registrations.items() if not r.fenced]
        for broker_id in manager.expired(alive):
            def fence(broker_id=broker_id):
                registration = self.cluster.registrations.get(broker_id)
                if registration is None or registration.fenced or self.cluster.heartbeat_manager is None \
                        or self.cluster.heartbeat_manager.has_valid_session(broker_id):
                    return [], None
                if self.metrics is not None:
                    self.metrics.timed_out_broker_heartbeats += 1
                log.info("node %d: broker %d missed its session (%d ms): fencing it", self.raft.node_id,
                         broker_id, self.cluster.session_timeout_ms)
                return self.replication.handle_broker_removed(broker_id) + [self.cluster.fence_record(broker_id)], None
            await self.write(fence)

    # -- the requests ----------------------------------------------------------------------------------

    async def register_broker(self, request) -> int:
        """BrokerRegistration -> the broker epoch (the next write offset: its RegisterBrokerRecord's, or that of the
        partition changes written before it for a restarted broker, as in Kafka 4.4)."""
        return await self.write(lambda: self._register_broker(request))

    def _register_broker(self, request):
        """Kafka 4.4: a new incarnation of a registered broker (it restarted) is first taken out of the
        partitions' ISRs (and, if its shutdown was unclean and ELR is on, their ELRs): see
        ReplicationControlManager.handle_broker_shutdown. Its previous epoch equal to the registered one
        means a clean shutdown (Kafka's broker reads it from its clean-shutdown file)."""
        existing = self.cluster.registrations.get(request.broker_id)
        records, epoch = self.cluster.register_broker(request, self.raft.log.end_offset)
        if existing is not None and existing.incarnation_id != str(request.incarnation_id):
            clean = getattr(request, "previous_broker_epoch", -1) == existing.epoch
            shutdown = self.replication.handle_broker_shutdown(request.broker_id, clean)
            records = shutdown + records    # the epoch stays the next write offset, as Kafka's
        return records, epoch

    async def process_broker_heartbeat(self, request) -> dict:
        """BrokerHeartbeat -> {is_caught_up, is_fenced, should_shut_down} (Kafka's
        ``BrokerHeartbeatManager.calculateNextBrokerState``)."""
        return await self.write(lambda: self._heartbeat(request))

    def _heartbeat(self, request):
        broker_id = request.broker_id
        registration = self.cluster.check_broker_epoch(broker_id, request.broker_epoch)
        self.cluster.heartbeat_manager.touch(broker_id, request.current_metadata_offset)
        offset = request.current_metadata_offset
        records: list[ApiMessageAndVersion] = []
        fenced, shut_down = registration.fenced, False

        def fence():
            return self.replication.handle_broker_removed(broker_id) + [self.cluster.fence_record(broker_id)]

        if registration.fenced:
            if request.want_shut_down:
                shut_down = True
            elif not request.want_fence and offset >= registration.register_offset:
                records = [self.cluster.unfence_record(broker_id)] + self.replication.handle_broker_unfenced(broker_id)
                fenced = False
        elif registration.in_controlled_shutdown:
            if self.replication.leaderships(broker_id) == 0:
                records, fenced, shut_down = fence(), True, True
            else:
                records = self.replication.handle_broker_removed(broker_id)
        elif request.want_fence:
            records, fenced, shut_down = fence(), True, bool(request.want_shut_down)
        elif request.want_shut_down:
            if self.replication.leaderships(broker_id):
                records = [self.cluster.controlled_shutdown_record(broker_id)] + \
                    self.replication.handle_broker_removed(broker_id)
            else:
                records, fenced, shut_down = fence(), True, True
        return records, {"is_caught_up": offset >= registration.register_offset, "is_fenced": fenced,
                         "should_shut_down": shut_down}

    async def elect_leaders(self, election_type: int, partitions) -> list:
        """ElectLeaders: the elections' PartitionChangeRecords, committed -> [(topic, [(partition, error,
        message)])]."""
        return await self.write(lambda: self.replication.elect_leaders(election_type, partitions))

    async def create_topics(self, request) -> list[dict]:
        return await self.write(lambda: self.replication.create_topics(request))

    async def create_partitions(self, request) -> list[dict]:
        """CreatePartitions: PartitionRecords for the new partitions, committed (none if validate_only)."""
        return await self.write(lambda: self.replication.create_partitions(request.topics,
                                                                           bool(request.validate_only)))

    async def incremental_alter_configs(self, request) -> list[dict]:
        """IncrementalAlterConfigs: ConfigRecords, committed (none if validate_only)."""
        def operation():
            records, results = self.configuration.incremental_alter_configs(request.resources)
            return ([] if request.validate_only else records), results
        return await self.write(operation)

    async def legacy_alter_configs(self, request) -> list[dict]:
        """AlterConfigs: ConfigRecords replacing each resource's configs, committed (none if validate_only)."""
        def operation():
            records, results = self.configuration.legacy_alter_configs(request.resources)
            return ([] if request.validate_only else records), results
        return await self.write(operation)

    async def alter_partition(self, request) -> dict:
        """AlterPartition from a partition leader: its ISR change, committed; the answer carries the new state."""
        def operation():
            self.cluster.check_broker_epoch(request.broker_id, request.broker_epoch)
            return self.replication.alter_partition(request.broker_id, request.topics or [])
        answered = await self.write(operation)
        topics: dict[str, list] = {}
        for topic, index, error in answered:
            topics.setdefault(topic, []).append(self.replication.partition_answer(topic, index, error))
        return {"throttle_time_ms": 0, "error_code": 0,
                "topics": [{"topic_name": t, "partitions": parts} for t, parts in topics.items()]}

    async def alter_user_scram_credentials(self, request) -> list[dict]:
        """AlterUserScramCredentials: a UserScramCredentialRecord or RemoveUserScramCredentialRecord per user,
        committed (:mod:`~kafkalab.controller.scram_control_manager`)."""
        return await self.write(lambda: self.scram.alter_credentials(request))

    async def create_acls(self, bindings) -> list:
        """CreateAcls: an AccessControlEntryRecord per new ACL, committed (:mod:`~kafkalab.controller.
        acl_control_manager`); per binding None or (error code, message)."""
        return await self.write(lambda: self.acls.create_acls(bindings))

    async def delete_acls(self, filters) -> list:
        """DeleteAcls: a RemoveAccessControlEntryRecord per ACL the filters match, committed; per filter the
        ACLs it matched or (error code, message)."""
        return await self.write(lambda: self.acls.delete_acls(filters))

    async def allocate_producer_ids(self, request) -> range:
        """AllocateProducerIds: the next block of producer ids (a ProducerIdsRecord, committed)."""
        def operation():
            self.cluster.check_broker_epoch(request.broker_id, request.broker_epoch)
            return self.producer_ids.generate_next_producer_id(request.broker_id, request.broker_epoch)
        return await self.write(operation)

    async def delete_topics(self, request) -> list[dict]:
        """DeleteTopics: a RemoveTopicRecord per topic, committed."""
        names = list(getattr(request, "topic_names", None) or [])
        ids = []
        for t in getattr(request, "topics", None) or []:
            if t.name is not None:
                names.append(t.name)
            else:
                ids.append(t.topic_id)
        return await self.write(lambda: self.replication.delete_topics(names, ids))
