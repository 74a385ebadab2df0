"""``ReplicationControlManager``: topics, their partitions, leaders and ISRs, as records.

In ZooKeeper mode the controller wrote ``/brokers/topics/<t>`` and partition state znodes and told
brokers with LeaderAndIsr. In KRaft mode the same facts are records of ``__cluster_metadata``:

* **CreateTopics** -> a TopicRecord (name, topic id), a ConfigRecord per topic config given, then a
  PartitionRecord per partition: its replicas (the first is the preferred leader), ISR (all of
  them), leader (the first), leader epoch 0, partition epoch 0, the log directory of each replica;
* **a broker fenced** (missed heartbeats, or shut down) -> a PartitionChangeRecord for each partition
  whose ISR holds it: the ISR without it and, if it led, a new leader. Every such change is made by
  :class:`~kafkalab.controller.partition_change_builder.PartitionChangeBuilder` (its docstring: the
  election, eligible leader replicas (KIP-966) when ``eligible.leader.replicas.version`` >= 1, as Kafka
  4.4 bootstraps it, LastKnownElr, unclean elections when ``unclean.leader.election.enable``);
* **a broker unfenced** -> leaderless partitions get it as leader if it is in their ISR (or, the ISR
  empty, their ELR);
* **a broker registering a new incarnation** (it restarted) -> Kafka 4.4's ``handleBrokerShutdown``: if
  ELR is on and the shutdown was not clean (the broker's ``previous_broker_epoch`` is not its last
  epoch) it leaves every ISR and ELR and may not lead them (its log may have lost a tail); otherwise
  it leaves the ISRs as when fenced;
* **ElectLeaders** (PREFERRED, UNCLEAN) and the **auto leader rebalance** (``maybe_balance_partition_leaders``):
  preferred-replica elections for partitions whose leader is not their first replica.

Replicas are placed by :class:`~kafkalab.controller.striped_replica_placer.StripedReplicaPlacer`, as
Kafka's KRaft controller does; CreatePartitions is :mod:`kafkalab.controller.create_partitions`.

Simplified: partition reassignment is not done (no adding/removing replicas).
"""
from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field

from ..broker.common.errors import ErrorCode, KafkaError
from ..broker.server.config import TOPIC_CONFIGS, LogConfig, to_string
from ..broker.common.topic import unify_collision_chars, validate_topic_name
from .create_partitions import create_partitions
from ..metadata.api_message_and_version import ApiMessageAndVersion, uuid_of
from .partition_change_builder import RECOVERED, Election, PartitionChangeBuilder
from .striped_replica_placer import StripedReplicaPlacer, UsableBroker

NO_LEADER = -1
TOPIC_RESOURCE = 2
#: record versions for metadata.version 3.9+ (directories, then KIP-966's tagged fields)
PARTITION_RECORD_VERSION = 2
PARTITION_CHANGE_RECORD_VERSION = 2
ELR_FEATURE = "eligible.leader.replicas.version"
#: ElectLeaders' ElectionType
PREFERRED, UNCLEAN = 0, 1
#: Kafka's QuorumController maxElectionsPerImbalance
MAX_ELECTIONS_PER_IMBALANCE = 1000
#: DirectoryId.UNASSIGNED: a replica whose broker has several log dirs, not yet placed in one
UNASSIGNED_DIR = uuid.UUID(int=0)


@dataclass
class PartitionRegistration:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: list[int] = field(default_factory=list)              # eligible leader replicas (KIP-966)
    last_known_elr: list[int] = field(default_factory=list)
    leader_recovery_state: int = RECOVERED

    def has_leader(self) -> bool:
        return self.leader >= 0

    def has_preferred_leader(self) -> bool:
        return self.leader == self.replicas[0]


@dataclass
class TopicControlInfo:
    name: str
    id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)
    configs: dict[str, str] = field(default_factory=dict)


class ReplicationControlManager:
    def __init__(self, cluster_control, default_num_partitions: int = 1, default_replication_factor: int = 1,
                 min_insync_replicas: int = 1, unclean_leader_election_enable: bool = False):
        self.cluster = cluster_control
        self.min_insync_replicas = min_insync_replicas
        self.unclean_leader_election_enable = bool(unclean_leader_election_enable)
        self.topics: dict[uuid.UUID, TopicControlInfo] = {}
        self.topics_by_name: dict[str, uuid.UUID] = {}
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.replica_placer = StripedReplicaPlacer()

    # -- CreateTopics ------------------------------------------------------------------------------

    def create_topics(self, request, topic_ids: dict | None = None) -> tuple[list[ApiMessageAndVersion], list[dict]]:
        """CreateTopics -> (records, one result per topic: name, topic_id, error_code, error_message,
        num_partitions, replication_factor, configs). ``validate_only`` returns no records."""
        records: list[ApiMessageAndVersion] = []
        results = []
        counts = Counter(t.name for t in request.topics)
        seen_in_request: set[str] = set()
        for t in request.topics:
            try:
                if counts[t.name] > 1:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
                topic_records, result = self._create_topic(t, seen_in_request, (topic_ids or {}).get(t.name))
                if not request.validate_only:
                    records += topic_records
                    seen_in_request.add(unify_collision_chars(t.name))
                results.append(result)
            except KafkaError as exc:
                results.append({"name": t.name, "topic_id": UNASSIGNED_DIR, "error_code": int(exc.code),
                                "error_message": exc.message, "num_partitions": -1, "replication_factor": -1,
                                "configs": []})
        return records, results

    def _create_topic(self, t, seen_in_request: set, topic_id: uuid.UUID | None):
        validate_topic_name(t.name)
        if t.name in self.topics_by_name:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
        unified = unify_collision_chars(t.name)
        clash = [n for n in self.topics_by_name if unify_collision_chars(n) == unified]
        if clash or unified in seen_in_request:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{t.name}' collides with existing topic: "
                                                                f"{clash[0] if clash else t.name}")
        configs = {c.name: c.value for c in t.configs or []}
        for name, value in configs.items():
            if name not in TOPIC_CONFIGS:     # Kafka 4.x's (message.format.version is gone: KIP-724)
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
            if value is None:
                raise KafkaError(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {name}")
        try:
            configs = {n: to_string(v) for n, v in LogConfig.validate_overrides(configs).items()}
        except ValueError as exc:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        usable = self.cluster.usable()
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Both manual partition assignment and "
                                 "number of partitions or replication factor were specified.")
            assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            if sorted(assignment) != list(range(len(assignment))):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 "Partitions should be a consecutive 0-based integer sequence")
            for replicas in assignment.values():
                self.validate_manual_assignment(replicas, len(assignment[0]))
        else:
            partitions = self.default_num_partitions if t.num_partitions == -1 else t.num_partitions
            factor = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
            try:
                assignment = dict(enumerate(self.place(partitions, factor)))
            except KafkaError as exc:
                raise KafkaError(exc.code,
                                 f"Unable to replicate the partition {factor} time(s): {exc.message}") from None
        topic_id = topic_id or uuid.uuid4()
        records = [ApiMessageAndVersion("TopicRecord", 0, {"name": t.name, "topic_id": topic_id})]
        records += [ApiMessageAndVersion("ConfigRecord", 0, {"resource_type": TOPIC_RESOURCE, "resource_name": t.name,
                                                             "name": n, "value": v})
                    for n, v in sorted(configs.items())]
        for p, replicas in sorted(assignment.items()):
            isr = [b for b in replicas if b in usable] or list(replicas)
            records.append(self.partition_record(topic_id, p, replicas, isr))
        result = {"name": t.name, "topic_id": topic_id, "error_code": 0, "error_message": None,
                  "num_partitions": len(assignment), "replication_factor": len(assignment[0]),
                  "configs": [{"name": n, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False}
                              for n, v in sorted(configs.items())]}
        return records, result

    def partition_record(self, topic_id: uuid.UUID, p: int, replicas: list[int], isr: list[int]):
        """A new partition: its replicas, ISR, the first ISR member leading, epochs 0."""
        return ApiMessageAndVersion("PartitionRecord", PARTITION_RECORD_VERSION, {
            "partition_id": p, "topic_id": topic_id, "replicas": replicas, "isr": isr, "removing_replicas": [],
            "adding_replicas": [], "leader": isr[0] if isr else NO_LEADER, "leader_recovery_state": 0,
            "leader_epoch": 0, "partition_epoch": 0, "directories": [self._default_dir(b) for b in replicas]})

    def place(self, num_partitions: int, replication_factor: int) -> list[list[int]]:
        """Replicas for new partitions: StripedReplicaPlacer over the registered brokers not shutting down."""
        brokers = [UsableBroker(b, r.rack, r.fenced) for b, r in sorted(self.cluster.registrations.items())
                   if not r.in_controlled_shutdown]
        return self.replica_placer.place(num_partitions, replication_factor, brokers)

    def validate_manual_assignment(self, replicas: list[int], replication_factor: int | None) -> None:
        """A replica list given by the client (Kafka's ``validateManualPartitionAssignment``)."""
        if not replicas:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             "The manual partition assignment includes an empty replica list.")
        previous = None
        for b in sorted(replicas):
            if b not in self.cluster.registrations:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                                 f"broker {b}, but no such broker is registered.")
            if b == previous:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes "
                                 f"the broker {b} more than once.")
            previous = b
        if replication_factor is not None and len(replicas) != replication_factor:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a "
                             f"partition with {len(replicas)} replica(s), but this is not consistent with previous "
                             f"partitions, which have {replication_factor} replica(s).")

    def create_partitions(self, topics, validate_only: bool):
        """CreatePartitions -> (records, results): :func:`kafkalab.controller.create_partitions.create_partitions`."""
        return create_partitions(self, topics, validate_only)

    def _default_dir(self, broker_id: int) -> uuid.UUID:
        registration = self.cluster.registrations.get(broker_id)
        dirs = getattr(registration, "log_dirs", None) or []
        return dirs[0] if len(dirs) == 1 else UNASSIGNED_DIR

    # -- leader and ISR changes ------------------------------------------------------------------------

    def partitions_with_broker_in_isr(self, broker_id: int):
        for topic in self.topics.values():
            for p, part in sorted(topic.partitions.items()):
                if broker_id in part.isr:
                    yield topic, p, part

    def leaderships(self, broker_id: int) -> int:
        return sum(1 for t in self.topics.values() for part in t.partitions.values() if part.leader == broker_id)

    def partitions_with_broker_in_elr(self, broker_id: int):
        for topic in self.topics.values():
            for p, part in sorted(topic.partitions.items()):
                if broker_id in part.elr:
                    yield topic, p, part

    def partitions_with_no_leader(self):
        for topic in self.topics.values():
            for p, part in sorted(topic.partitions.items()):
                if part.leader == NO_LEADER:
                    yield topic, p, part

    def is_elr_enabled(self) -> bool:
        return self.cluster.features.finalized.get(ELR_FEATURE, 0) >= 1

    def effective_min_isr(self, topic: TopicControlInfo) -> int:
        """The topic's ``min.insync.replicas`` (or the controller's), capped at its replication factor."""
        configured = int(topic.configs.get("min.insync.replicas", self.min_insync_replicas))
        return min(configured, len(topic.partitions[0].replicas)) if 0 in topic.partitions else configured

    def unclean_leader_election_enabled(self, topic: TopicControlInfo) -> bool:
        value = topic.configs.get("unclean.leader.election.enable")
        return self.unclean_leader_election_enable if value is None else str(value).lower() == "true"

    def _builder(self, topic, p: int, part: PartitionRegistration, acceptable=None) -> PartitionChangeBuilder:
        usable = set(self.cluster.usable())
        return PartitionChangeBuilder(part, topic.id, p, acceptable or usable.__contains__,
                                      self.effective_min_isr(topic), self.is_elr_enabled())

    def generate_leader_and_isr_updates(self, partitions, broker_to_remove: int = NO_LEADER,
                                        broker_to_add: int = NO_LEADER,
                                        broker_with_unclean_shutdown: int = NO_LEADER) -> list[ApiMessageAndVersion]:
        """Kafka's ``generateLeaderAndIsrUpdates``: for each (topic, index, partition), the ISR without
        ``broker_to_remove`` and ``broker_with_unclean_shutdown``, neither of them may lead, ``broker_to_add``
        may (it is still fenced while its unfencing is being written); the rest by PartitionChangeBuilder."""
        usable = set(self.cluster.usable())

        def acceptable(r: int) -> bool:
            return r not in (broker_to_remove, broker_with_unclean_shutdown) and (r == broker_to_add or r in usable)
        records, seen = [], set()
        for topic, p, part in list(partitions):
            if (topic.id, p) in seen:
                continue
            seen.add((topic.id, p))
            builder = self._builder(topic, p, part, acceptable)
            if self.unclean_leader_election_enabled(topic):
                builder.set_election(Election.UNCLEAN)
            if broker_with_unclean_shutdown != NO_LEADER:
                builder.set_unclean_shutdown_replicas([broker_with_unclean_shutdown])
            builder.set_target_isr([b for b in part.isr if b not in (broker_to_remove, broker_with_unclean_shutdown)])
            record = builder.build()
            if record is not None:
                records.append(record)
        return records

    def handle_broker_removed(self, broker_id: int) -> list[ApiMessageAndVersion]:
        """A broker fenced or entering controlled shutdown: out of every ISR, leadership moved off it."""
        return self.generate_leader_and_isr_updates(self.partitions_with_broker_in_isr(broker_id),
                                                    broker_to_remove=broker_id)

    def handle_broker_unfenced(self, broker_id: int) -> list[ApiMessageAndVersion]:
        return self.generate_leader_and_isr_updates(self.partitions_with_no_leader(), broker_to_add=broker_id)

    def handle_broker_shutdown(self, broker_id: int, clean: bool) -> list[ApiMessageAndVersion]:
        """A broker registering a new incarnation (Kafka 4.4's ``handleBrokerShutdown``): an unclean shutdown
        with ELR on takes it out of every ISR and ELR; otherwise out of the ISRs, as when it is fenced."""
        if self.is_elr_enabled() and not clean:
            in_isr = list(self.partitions_with_broker_in_isr(broker_id))
            records = self.generate_leader_and_isr_updates(in_isr, broker_with_unclean_shutdown=broker_id)
            changed = {(r.data["topic_id"], r.data["partition_id"]) for r in records}
            in_elr = [(t, p, part) for t, p, part in self.partitions_with_broker_in_elr(broker_id)
                      if (t.id, p) not in changed]
            return records + self.generate_leader_and_isr_updates(in_elr, broker_with_unclean_shutdown=broker_id)
        return self.handle_broker_removed(broker_id)

    # -- ElectLeaders and the auto leader rebalance --------------------------------------------------------

    def elect_leaders(self, election_type: int, partitions) -> tuple[list[ApiMessageAndVersion], list]:
        """ElectLeaders -> (records, [(topic, [(partition, error code, message)])]). ``partitions`` None means
        every partition; then, as in Kafka, partitions answering ELECTION_NOT_NEEDED are left out."""
        if election_type not in (PREFERRED, UNCLEAN):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown election type {election_type}")
        records, results = [], []
        if partitions is None:
            for name in list(self.topics_by_name):
                topic = self.topics[self.topics_by_name[name]]
                answers = [(p,) + self.elect_leader(name, p, election_type, records) for p in sorted(topic.partitions)]
                results.append((name, [a for a in answers if a[1] != ErrorCode.ELECTION_NOT_NEEDED]))
        else:
            for name, indexes in partitions:
                results.append((name, [(p,) + self.elect_leader(name, p, election_type, records) for p in indexes]))
        return records, results

    def elect_leader(self, name: str, p: int, election_type: int, records: list) -> tuple[int, str | None]:
        """One partition of ElectLeaders -> (error code, message); its record appended to ``records``."""
        topic_id = self.topics_by_name.get(name)
        if topic_id is None:
            return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), f"No such topic as {name}"
        topic = self.topics[topic_id]
        part = topic.partitions.get(p)
        if part is None:
            return int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), f"No such partition as {name}-{p}"
        if (election_type == PREFERRED and part.has_preferred_leader()) or \
                (election_type == UNCLEAN and part.has_leader()):
            return int(ErrorCode.ELECTION_NOT_NEEDED), "Leader election not needed for topic partition."
        builder = self._builder(topic, p, part)
        builder.set_election(Election.PREFERRED if election_type == PREFERRED else Election.UNCLEAN)
        record = builder.build()
        if record is None:
            code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election_type == PREFERRED \
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            return int(code), _ERROR_MESSAGES[code]
        records.append(record)
        return 0, None

    def imbalanced_partitions(self):
        """Partitions with a leader that is not their preferred (first) replica (Kafka's ``imbalancedPartitions``)."""
        for topic in self.topics.values():
            for p, part in sorted(topic.partitions.items()):
                if part.has_leader() and not part.has_preferred_leader():
                    yield topic, p, part

    def are_partition_leaders_imbalanced(self) -> bool:
        return next(self.imbalanced_partitions(), None) is not None

    def maybe_balance_partition_leaders(self, max_elections: int = MAX_ELECTIONS_PER_IMBALANCE):
        """Preferred-replica elections for imbalanced partitions -> (records, whether more may be possible)."""
        records = []
        for topic, p, part in self.imbalanced_partitions():
            if len(records) >= max_elections:
                break
            record = self._builder(topic, p, part).set_election(Election.PREFERRED).build()
            if record is not None:
                records.append(record)
        return records, len(records) >= max_elections

    # -- DeleteTopics -------------------------------------------------------------------------------------

    def delete_topics(self, names: list, ids: list) -> tuple[list[ApiMessageAndVersion], list[dict]]:
        """DeleteTopics by name (v1-v5) or id (v6) -> (a RemoveTopicRecord per topic, one result per topic).
        UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID for a topic not there; a topic named twice: INVALID_REQUEST."""
        records, results, seen = [], [], set()
        for name, topic_id in [(n, None) for n in names] + [(None, i) for i in ids]:
            if topic_id is None:
                topic_id = self.topics_by_name.get(name)
                error = None if topic_id is not None else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                           f"Topic '{name}' does not exist.")
            else:
                name = self.topics[topic_id].name if topic_id in self.topics else None
                error = None if name is not None else (ErrorCode.UNKNOWN_TOPIC_ID, f"Topic id {topic_id} does not "
                                                                                   "exist.")
            if error is None and topic_id in seen:
                error = (ErrorCode.INVALID_REQUEST, f"Duplicate topic in request: {name}")
            if error is None:
                seen.add(topic_id)
                records.append(ApiMessageAndVersion("RemoveTopicRecord", 0, {"topic_id": topic_id}))
            results.append({"name": name, "topic_id": topic_id or UNASSIGNED_DIR,
                            "error_code": int(error[0]) if error else 0, "error_message": error[1] if error else None})
        return records, results

    # -- AlterPartition (a leader's ISR change) ------------------------------------------------------------

    def alter_partition(self, broker_id: int, topics) -> tuple[list[ApiMessageAndVersion], list]:
        """AlterPartition (v1, topic names) from the leader ``broker_id`` -> (records, the partitions answered:
        (topic, partition index, error code)). Kafka's checks: the sender leads the partition
        (INVALID_REQUEST / NOT_LEADER_OR_FOLLOWER), the leader epoch (FENCED_LEADER_EPOCH), the partition epoch
        (INVALID_UPDATE_VERSION); a new ISR member must be a replica, unfenced and not shutting down
        (OPERATION_NOT_ATTEMPTED, what Kafka answers v0-v1; INELIGIBLE_REPLICA from v2)."""
        records, answered = [], []
        usable = set(self.cluster.usable())
        for t in topics:
            topic_id = self.topics_by_name.get(t.topic_name)
            for p in t.partitions or []:
                part = self.topics[topic_id].partitions.get(p.partition_index) if topic_id else None
                error = ErrorCode.NONE
                if part is None:
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif part.leader != broker_id:
                    error = ErrorCode.INVALID_REQUEST
                elif p.leader_epoch != part.leader_epoch:
                    error = ErrorCode.FENCED_LEADER_EPOCH
                elif p.partition_epoch != part.partition_epoch:
                    error = ErrorCode.INVALID_UPDATE_VERSION
                else:
                    new_isr = list(p.new_isr or [])
                    if not new_isr or any(b not in part.replicas for b in new_isr) or broker_id not in new_isr:
                        error = ErrorCode.INVALID_REQUEST
                    elif any(b not in part.isr and b not in usable for b in new_isr):
                        error = ErrorCode.OPERATION_NOT_ATTEMPTED
                    else:
                        topic = self.topics[topic_id]
                        builder = self._builder(topic, p.partition_index, part).set_target_isr(new_isr)
                        if self.unclean_leader_election_enabled(topic):
                            builder.set_election(Election.UNCLEAN)
                        recovery = getattr(p, "leader_recovery_state", None)
                        if recovery is not None and recovery >= 0:
                            builder.set_target_leader_recovery_state(recovery)
                        record = builder.build()
                        if record is not None:
                            records.append(record)
                answered.append((t.topic_name, p.partition_index, int(error)))
        return records, answered

    def partition_answer(self, topic: str, index: int, error: int) -> dict:
        """One partition of an AlterPartition answer, with the state after the change (when there is one)."""
        topic_id = self.topics_by_name.get(topic)
        part = self.topics[topic_id].partitions.get(index) if topic_id else None
        if part is None or error:
            return {"partition_index": index, "error_code": error, "leader_id": -1, "leader_epoch": -1, "isr": [],
                    "leader_recovery_state": 0, "partition_epoch": -1}
        return {"partition_index": index, "error_code": 0, "leader_id": part.leader, "leader_epoch": part.leader_epoch,
                "isr": list(part.isr), "leader_recovery_state": part.leader_recovery_state,
                "partition_epoch": part.partition_epoch}

    # -- replay -------------------------------------------------------------------------------------------

    def replay_topic(self, data: dict) -> None:
        topic_id = uuid_of(data["topicId"])
        self.topics[topic_id] = TopicControlInfo(data["name"], topic_id)
        self.topics_by_name[data["name"]] = topic_id

    def replay_config(self, data: dict) -> None:
        if data["resourceType"] != TOPIC_RESOURCE or data["resourceName"] not in self.topics_by_name:
            return
        topic = self.topics[self.topics_by_name[data["resourceName"]]]
        if data["value"] is None:
            topic.configs.pop(data["name"], None)
        else:
            topic.configs[data["name"]] = data["value"]

    def replay_partition(self, data: dict) -> None:
        topic = self.topics[uuid_of(data["topicId"])]
        topic.partitions[data["partitionId"]] = PartitionRegistration(
            list(data["replicas"]), list(data["isr"]), data["leader"], data["leaderEpoch"], data["partitionEpoch"],
            list(data.get("eligibleLeaderReplicas") or []), list(data.get("lastKnownElr") or []),
            data.get("leaderRecoveryState", RECOVERED))

    def replay_partition_change(self, data: dict) -> None:
        part = self.topics[uuid_of(data["topicId"])].partitions[data["partitionId"]]
        if data.get("isr") is not None:
            part.isr = list(data["isr"])
        if data.get("replicas") is not None:
            part.replicas = list(data["replicas"])
        if data.get("eligibleLeaderReplicas") is not None:
            part.elr = list(data["eligibleLeaderReplicas"])
        if data.get("lastKnownElr") is not None:
            part.last_known_elr = list(data["lastKnownElr"])
        if data.get("leaderRecoveryState", -1) != -1:
            part.leader_recovery_state = data["leaderRecoveryState"]
        if data.get("leader", -2) != -2:
            part.leader = data["leader"]
            part.leader_epoch += 1
        part.partition_epoch += 1

    def replay_remove_topic(self, data: dict) -> None:
        topic = self.topics.pop(uuid_of(data["topicId"]), None)
        if topic is not None:
            self.topics_by_name.pop(topic.name, None)


_ERROR_MESSAGES = {
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}
