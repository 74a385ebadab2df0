"""A topic whose replicas the lesson places itself, ready to write to: lessons 02 and 03.

``kafka.create_topic(name, partitions, replication_factor)`` lets the controller place the replicas.
The lessons that kill brokers need to *name* them in the text ("broker 1 leads ``orders-0``, 2 and 3
follow"), so they give the replica assignment themselves: ``assignment[p]`` lists partition ``p``'s
brokers, the **preferred leader** first (CreateTopics with ``replica_assignment``, as
``kafka-topics.sh --replica-assignment 1:2:3`` sends it). :func:`create_placed_topic` creates such a
topic and returns once every replica is in the ISR — and, with ``serving=True``, once the leader
answers for the partition's high watermark: until a broker has acted on the controller's
LeaderAndIsr it refuses the partition, and an ``acks=0`` write sent meanwhile is lost without a word.
"""
from __future__ import annotations

from .reading import client_config
from .timeline import partition_state
from .waiting import wait_until


def unused_name(kafka, name: str) -> str:
    """``name``, or ``name-2``, ``name-3``, ... if the cluster has it already (a long-lived cluster's earlier run)."""
    existing, n, chosen = set(kafka.topics()), 1, name
    while chosen in existing:
        n, chosen = n + 1, f"{name}-{n + 1}"
    return chosen


def create_placed_topic(kafka, name: str, assignment: list[list[int]], *, serving: bool = False, logger=None,
                        timeout_s: float = 60.0, rename_existing: bool = True, **configs) -> str:
    """Create topic ``name`` (or :func:`unused_name`'s) with ``assignment``; wait until it is in sync; return its name.

    ``rename_existing=False``: no :func:`unused_name` (and no question to the cluster about its topics),
    for a lesson on a cluster of its own; a topic that exists then fails the CreateTopics request.

    ``kafka``: the lesson's :class:`~kafkalab.lab.LabKafka` with a ``cluster`` (``describe()`` is what
    is waited on). ``configs``: topic configs under Kafka's names. A fresh AdminClient sends the
    request: a long-lived one may still talk to a controller that has died since. ``logger``: where
    its librdkafka log lines go.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    chosen = unused_name(kafka, name) if rename_existing else name
    config = client_config(kafka)
    admin = AdminClient(config, logger=logger) if logger is not None else AdminClient(config)
    try:
        new = NewTopic(chosen, num_partitions=len(assignment), replica_assignment=assignment,
                       config={key: str(value) for key, value in configs.items()})
        for future in admin.create_topics([new]).values():
            future.result(30)
    finally:
        del admin

    def ready() -> bool:
        for p, replicas in enumerate(assignment):
            s = partition_state(kafka.cluster, chosen, p)
            if s["isr"] != sorted(replicas) or (serving and s["high_watermark"] is None):
                return False
        return True

    wait_until(ready, f"{chosen}: every replica in sync" + (", the leader serving" if serving else ""), timeout_s)
    return chosen
