"""Share groups' broker metrics, as Kafka 4.4's ``org.apache.kafka.server.share.metrics`` registers them (KIP-932,
KIP-1103), in the broker's Yammer registry:

* ``kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=Accept|Release|Reject|Renew`` (a
  meter per acknowledgement type, all four registered together: when the broker first loads a share-partition; Kafka
  4.4 registers them at startup, and a mini ZooKeeper-mode broker stands for Kafka 3.9, which has none): the records
  a successful acknowledgement (in a ShareFetch or a ShareAcknowledge) accepted, released, rejected or renewed. As
  Kafka's ``SharePartitionManager.acknowledge``: a batch with one type counts every offset of it, a batch with a
  type per offset counts each type once, gaps (type 0) are not counted, and a refused acknowledgement counts
  nothing;
* ``kafka.server:type=ShareGroupMetrics,name=PartitionLoadTimeMs`` (a histogram): how long loading a
  share-partition's state from the share coordinator took;
* ``kafka.server:type=SharePartitionMetrics,name=InFlightMessageCount|InFlightBatchCount|
  AcquisitionLockTimeoutPerSec,group=G,topic=T,partition=P``, one set per share-partition this broker leads, from
  its load until it is dropped: the records in flight (between the share-partition start and end offsets, in any
  state not yet behind the start offset), the runs of them the mini broker would keep as batches, and the records
  whose acquisition lock expired before their consumer acknowledged them.

The JMX exporter's rules (``kafkalab/cluster/jmx_exporter/kafka.yml``) name them
``kafka_server_sharegroupmetrics_recordacknowledgementspersec_total{ackType="Accept"}``, ... on both backends.
"""
from __future__ import annotations

from ...common.metrics import KafkaMetricsGroup
from .share_partition import AcknowledgeType

#: the ackType tag of each acknowledgement type (Kafka: ``capitalize(AcknowledgeType.toString())``)
ACK_TYPES = {t: t.name.capitalize() for t in AcknowledgeType if t != AcknowledgeType.GAP}


class ShareGroupMetrics:
    def __init__(self, registry):
        group = KafkaMetricsGroup(registry, "kafka.server", "ShareGroupMetrics")
        self._acks = {t: group.new_meter("RecordAcknowledgementsPerSec", {"ackType": tag})
                      for t, tag in ACK_TYPES.items()}
        self._load_time = group.new_histogram("PartitionLoadTimeMs")
        self._partitions = KafkaMetricsGroup(registry, "kafka.server", "SharePartitionMetrics")

    def record_acknowledgements(self, batches) -> None:
        """``batches``: ``(first_offset, last_offset, [types])`` of one successful acknowledgement."""
        for first, last, types in batches:
            if len(types) == 1:
                if types[0] in self._acks:
                    self._acks[types[0]].mark(last - first + 1)
                continue
            for kind in types:
                if kind in self._acks:
                    self._acks[kind].mark()

    def partition_load_time(self, ms: float) -> None:
        self._load_time.update(ms)

    def register_partition(self, sp) -> None:
        """The share-partition's gauges and lock-timeout meter; ``sp.on_lock_timeout`` marks the meter."""
        tags = _tags(sp)
        group = self._partitions
        group.new_gauge("InFlightMessageCount", lambda: len(sp.records), tags)
        group.new_gauge("InFlightBatchCount", sp.in_flight_batch_count, tags)
        timeouts = group.new_meter("AcquisitionLockTimeoutPerSec", tags)
        sp.on_lock_timeout = timeouts.mark

    def remove_partition(self, sp) -> None:
        self._partitions.remove_metrics(("InFlightMessageCount", "InFlightBatchCount", "AcquisitionLockTimeoutPerSec"),
                                        _tags(sp))


def _tags(sp) -> dict:
    return {"group": sp.group_id, "topic": sp.topic, "partition": str(sp.partition)}
