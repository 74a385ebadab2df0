"""CreatePartitions on the KRaft controller (Kafka's ``ReplicationControlManager.createPartitions``).

Per topic of the request, checked against the controller's state, then a PartitionRecord for each new
partition (numbered on from the topic's current count), all of the request's records committed together:

==========================================================  =========================================
the request                                                 answer
==========================================================  =========================================
a topic named twice                                         INVALID_REQUEST "Duplicate topic name."
no such topic                                               UNKNOWN_TOPIC_OR_PARTITION
count == current count                                      INVALID_PARTITIONS "Topic already has N
                                                            partition(s)."
count < current count                                       INVALID_PARTITIONS "... would not be an
                                                            increase."
assignments given, not one per new partition                INVALID_REPLICA_ASSIGNMENT
an assignment: empty, a broker twice, an unregistered        INVALID_REPLICA_ASSIGNMENT
broker, a replica count unlike the topic's
an assignment whose brokers are all fenced / shutting down  INVALID_REPLICA_ASSIGNMENT
no assignments: :class:`StripedReplicaPlacer` with the      INVALID_REPLICATION_FACTOR when it cannot
topic's replication factor (that of its first partition)    place them
==========================================================  =========================================

A new partition's ISR is its replicas that are active (unfenced, not shutting down), its leader the first
of them, epochs 0. ``validate_only``: the same checks, no records.

Simplified: the mini broker's internal topics (``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``) get INVALID_REQUEST, as on a ZooKeeper-mode mini broker (their coordinators find a
group's partition by the partition count); Kafka allows it. No controller mutation quota (KIP-599).
"""
from __future__ import annotations

from collections import Counter

from ..broker.common.errors import ErrorCode, KafkaError
from ..metadata.api_message_and_version import ApiMessageAndVersion

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def _unknown_topic() -> KafkaError:
    exc = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    exc.message = None            # Kafka's controller answers this one without a message
    return exc


def create_partitions(manager, topics, validate_only: bool) -> tuple[list[ApiMessageAndVersion], list[dict]]:
    """``manager``: the :class:`ReplicationControlManager`; ``topics``: the request's topics (name, count,
    assignments). Returns (records, one result per topic: name, error_code, error_message)."""
    records: list[ApiMessageAndVersion] = []
    results = []
    counts = Counter(t.name for t in topics)
    for t in topics:
        try:
            if counts[t.name] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            topic_records = _create_partitions(manager, t)
            if not validate_only:
                records += topic_records
            results.append({"name": t.name, "error_code": 0, "error_message": None})
        except KafkaError as exc:
            results.append({"name": t.name, "error_code": int(exc.code), "error_message": exc.message})
    return records, results


def _create_partitions(manager, t) -> list[ApiMessageAndVersion]:
    topic_id = manager.topics_by_name.get(t.name)
    topic = manager.topics.get(topic_id) if topic_id is not None else None
    if topic is None:
        raise _unknown_topic()
    if t.name in INTERNAL_TOPICS:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Topic '{t.name}' is an internal topic; the mini broker does not "
                         "add partitions to it (its coordinator finds each group's records by the partition count).")
    current = len(topic.partitions)
    if t.count == current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if t.count < current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"The topic {t.name} currently has {current} partition(s); "
                         f"{t.count} would not be an increase.")
    additional = t.count - current
    factor = len(topic.partitions[min(topic.partitions)].replicas)
    active = set(manager.cluster.usable())
    if t.assignments is not None:
        if len(t.assignments) != additional:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional "
                             f"partition(s), but only {len(t.assignments)} assignment(s) were specified.")
        assignments = []
        for i, a in enumerate(t.assignments):
            replicas = list(a.broker_ids)
            manager.validate_manual_assignment(replicas, factor)
            if not any(b in active for b in replicas):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All brokers specified in the manual "
                                 f"partition assignment for partition {current + i} are fenced or in controlled "
                                 "shutdown.")
            assignments.append(replicas)
    else:
        assignments = manager.place(additional, factor)
    records = []
    for i, replicas in enumerate(assignments):
        isr = [b for b in replicas if b in active]
        if not isr:
            raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, f"Unable to replicate the partition {factor} "
                             "time(s): All brokers are currently fenced or in controlled shutdown.")
        records.append(manager.partition_record(topic.id, current + i, replicas, isr))
    return records
