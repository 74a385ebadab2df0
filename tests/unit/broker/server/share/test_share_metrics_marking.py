"""ShareGroupMetrics as Kafka 4.4's SharePartitionManager marks them: per record of a single-type batch, per type of a
type-per-offset batch, no gaps; a share-partition's gauges follow its in-flight records."""
from __future__ import annotations

from kafkalab.broker.common.metrics import MetricName, MetricsRegistry
from kafkalab.broker.server.share.share_group_metrics import ShareGroupMetrics
from kafkalab.broker.server.share.share_partition import SharePartition


def count(registry, name, tags):
    return registry.get(MetricName.of("kafka.server", "ShareGroupMetrics", name, tags)).count


def test_acknowledgements_count_records_by_type():
    registry = MetricsRegistry()
    metrics = ShareGroupMetrics(registry)
    metrics.record_acknowledgements([(0, 9, [1]),            # one type for 10 offsets: 10 accepted
                                     (10, 13, [1, 2, 0, 3]),  # a type per offset: 1 each, the gap not counted
                                     (14, 14, [4])])          # renew
    got = {t: count(registry, "RecordAcknowledgementsPerSec", {"ackType": t})
           for t in ("Accept", "Release", "Reject", "Renew")}
    assert got == {"Accept": 11, "Release": 1, "Reject": 1, "Renew": 1}


def test_a_share_partitions_gauges_and_lock_timeouts():
    registry = MetricsRegistry()
    metrics = ShareGroupMetrics(registry)
    now = [100.0]
    sp = SharePartition("g", "t", b"\0" * 16, 0, start_offset=0, lock_duration_ms=1000, delivery_count_limit=5,
                        max_in_flight=200, clock=lambda: now[0])
    metrics.register_partition(sp)
    tags = {"group": "g", "topic": "t", "partition": "0"}

    def value(name):
        return registry.get(MetricName.of("kafka.server", "SharePartitionMetrics", name, tags))

    sp.acquire("m1", [0, 1, 2, 3, 4, 5], 6, 3)       # 0-2 to m1
    sp.acquire("m2", [3, 4, 5], 6, 3)                # 3-5 to m2
    assert value("InFlightMessageCount").value == 6 and value("InFlightBatchCount").value == 2
    sp.acknowledge("m1", [(1, 1, [3])])              # 1 rejected: 0 | 1 | 2 | 3-5
    assert value("InFlightBatchCount").value == 4
    now[0] += 2                                      # every lock expired: 0, 2-5 back (5 records), 1 stays archived
    assert sp.expire_locks()
    assert value("AcquisitionLockTimeoutPerSec").count == 5
    metrics.remove_partition(sp)
    assert value("InFlightMessageCount") is None
