"""Rack-unaware replica placement matches Kafka's AdminUtils.assignReplicasToBrokers."""
from __future__ import annotations

import pytest

from kafkalab.broker.common.admin_utils import assign_replicas_to_brokers
from kafkalab.broker.common.errors import ErrorCode, KafkaError


def test_kafka_worked_example_five_brokers_ten_partitions():
    # the table in AdminUtils' javadoc (and Kafka's ReplicaAssignmentTest), start index 0
    assert assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], fixed_start_index=0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_start_index_shifts_first_replica_and_follower_shift():
    # start index 2 with 3 brokers: first replicas 3,1,2,...; shift starts at 2 -> follower distance 1+(2%2)=1
    got = assign_replicas_to_brokers(4, 2, [1, 2, 3], fixed_start_index=2)
    assert got == {0: [3, 1], 1: [1, 2], 2: [2, 3], 3: [3, 2]}


def test_start_partition_id_continues_numbering():
    # adding partitions 3 and 4 to a 3-partition topic on brokers 0-2
    got = assign_replicas_to_brokers(2, 2, [0, 1, 2], fixed_start_index=0, start_partition_id=3)
    assert got == {3: [0, 2], 4: [1, 0]}


def test_broker_ids_are_sorted_and_not_contiguous():
    got = assign_replicas_to_brokers(3, 3, [30, 10, 20], fixed_start_index=0)
    assert got == {0: [10, 20, 30], 1: [20, 30, 10], 2: [30, 10, 20]}


def test_random_start_spreads_evenly():
    got = assign_replicas_to_brokers(30, 3, range(5))
    assert sorted(got) == list(range(30))
    for replicas in got.values():
        assert len(set(replicas)) == 3
    leaders = [r[0] for r in got.values()]
    assert all(leaders.count(b) == 6 for b in range(5))


@pytest.mark.parametrize("n,rf,brokers,code", [
    (0, 1, [1], ErrorCode.INVALID_PARTITIONS),
    (1, 0, [1], ErrorCode.INVALID_REPLICATION_FACTOR),
    (1, 3, [1, 2], ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_invalid_arguments(n, rf, brokers, code):
    with pytest.raises(KafkaError) as exc:
        assign_replicas_to_brokers(n, rf, brokers)
    assert exc.value.code == code
