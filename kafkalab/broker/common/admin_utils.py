"""Where a new topic's replicas go: Kafka's rack-unaware ``AdminUtils.assignReplicasToBrokers``.

It lives in ``common`` so that the ZooKeeper client (``AdminZkClient``) can use it without importing
the controller package above it (Kafka 3.9 keeps it in its server-common module, as
``org.apache.kafka.admin.AdminUtils``).

Two goals, in Kafka's words: spread replicas evenly over the brokers, and for
the partitions whose first replica is on one broker, spread their other
replicas over the other brokers. So:

1. the first replica of partition ``p`` is broker ``(p + start_index) % n``
   (round robin from a random start);
2. the other replicas follow it at a distance ``1 + (shift + j) % (n - 1)``,
   and ``shift`` grows by one every time the round robin wraps around (every
   ``n`` partitions), so partitions ``p`` and ``p + n`` do not get the same
   followers.

Example with brokers 0-4, 10 partitions, replication factor 3, start index
and shift 0 (``fixed_start_index=0``)::

    p0: 0 1 2    p1: 1 2 3    p2: 2 3 4    p3: 3 4 0    p4: 4 0 1
    p5: 0 2 3    p6: 1 3 4    p7: 2 4 0    p8: 3 0 1    p9: 4 1 2

The first replica is the *preferred leader*. Simplified: racks are ignored
(Kafka alternates racks when every broker has a ``broker.rack``).
"""
from __future__ import annotations

import random

from .errors import ErrorCode, KafkaError


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def assign_replicas_to_brokers(n_partitions: int, replication_factor: int, broker_ids,
                               fixed_start_index: int = -1, start_partition_id: int = -1) -> dict[int, list[int]]:
    """partition id -> replica broker ids (the first is the preferred leader).

    ``broker_ids`` are taken in id order. ``fixed_start_index`` (>= 0) fixes the
    random start index and shift (for tests and reproducible examples);
    ``start_partition_id`` numbers the partitions from there (adding partitions
    to an existing topic). Raises ``KafkaError`` INVALID_PARTITIONS or
    INVALID_REPLICATION_FACTOR, with Kafka's messages.
    """
    brokers = sorted(int(b) for b in broker_ids)
    if n_partitions <= 0:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR,
                         f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    n = len(brokers)
    start_index = fixed_start_index if fixed_start_index >= 0 else random.randrange(n)
    next_replica_shift = fixed_start_index if fixed_start_index >= 0 else random.randrange(n)
    current = max(0, start_partition_id)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            next_replica_shift += 1
        first = (current + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, next_replica_shift, j, n)])
        out[current] = replicas
        current += 1
    return out
