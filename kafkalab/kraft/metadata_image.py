"""``MetadataImage`` and ``MetadataDelta``: a KRaft broker's view of the cluster, built from ``__cluster_metadata``
(Kafka's ``org.apache.kafka.image``).

A broker fetches the metadata log as an *observer* of the Raft quorum and applies every committed
record, in offset order, to its image — the same replay the controllers do
(:func:`~kafkalab.controller.quorum_controller.replay_record`, into the same feature, cluster and
replication state). Each round of records also yields a :class:`MetadataDelta`: which partitions and
brokers changed, what the broker's :class:`~kafkalab.kraft.broker_metadata_publisher.BrokerMetadataPublisher`
must act on. ``offset`` is the offset of the last record applied (Kafka's image ``highestOffsetAndEpoch``),
what the broker reports in its heartbeats as ``CurrentMetadataOffset``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..controller.acl_control_manager import ACL_RECORDS, AclControlManager
from ..controller.cluster_control_manager import ClusterControlManager
from ..controller.configuration_control_manager import ConfigurationControlManager
from ..controller.feature_control_manager import FeatureControlManager
from ..metadata.api_message_and_version import read_committed, uuid_of
from ..controller.producer_id_control_manager import ProducerIdControlManager
from ..controller.quorum_controller import replay_record
from ..controller.replication_control_manager import ReplicationControlManager
from ..controller.scram_control_manager import SCRAM_RECORDS, ScramControlManager
from ..controller.snapshot_generator import SnapshotGenerator

_PARTITION_RECORDS = ("PartitionRecord", "PartitionChangeRecord")
_BROKER_RECORDS = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord", "FenceBrokerRecord",
                   "UnfenceBrokerRecord", "UnregisterBrokerRecord")


@dataclass
class MetadataDelta:
    """What one round of records changed."""

    partitions: set = field(default_factory=set)      # (topic id, partition)
    topics: set = field(default_factory=set)          # topic ids with a new TopicRecord or ConfigRecord
    brokers_changed: bool = False
    removed: list = field(default_factory=list)       # (name, topic id, [partition]) of each RemoveTopicRecord
    configs_changed: bool = False                     # a ConfigRecord of another resource (BROKER, GROUP)
    scram_changed: bool = False                       # a (Remove)UserScramCredentialRecord
    acls_changed: bool = False                        # a (Remove)AccessControlEntryRecord

    def __bool__(self) -> bool:
        return bool(self.partitions or self.topics or self.brokers_changed or self.removed or self.configs_changed
                    or self.scram_changed or self.acls_changed)


class MetadataImage:
    def __init__(self):
        self.features = FeatureControlManager()
        self.cluster = ClusterControlManager(None, self.features)
        self.replication = ReplicationControlManager(self.cluster)
        self.producer_ids = ProducerIdControlManager()
        self.scram = ScramControlManager()
        self.acls = AclControlManager()       # Kafka's AclsImage: the ACLs by id
        self.configuration = ConfigurationControlManager(self.replication)
        self.next_offset = 0          # every committed record below it is applied
        #: loads a snapshot the broker fetched (FetchSnapshot), and writes the broker's own (Kafka's defaults)
        self.snapshots = SnapshotGenerator()

    @property
    def offset(self) -> int:
        """The offset of the last record applied (-1 for none)."""
        return self.next_offset - 1

    def apply_committed(self, metadata_log, high_watermark: int | None) -> MetadataDelta:
        delta = self._maybe_load_snapshot(metadata_log)
        if high_watermark is None or high_watermark <= self.next_offset:
            return delta
        start = self.next_offset
        for offset, record in read_committed(metadata_log, self.next_offset, high_watermark):
            data = record.data
            if record.name == "RemoveTopicRecord":    # what it removes, before it is gone from the image
                topic = self.replication.topics.get(self._topic_id(data["topicId"]))
                if topic is not None:
                    delta.removed.append((topic.name, topic.id, sorted(topic.partitions)))
                    delta.partitions -= {(topic.id, p) for p in topic.partitions}
                    delta.topics.discard(topic.id)
            replay_record(self, offset, record)
            if record.name in _PARTITION_RECORDS:
                delta.partitions.add((self._topic_id(data["topicId"]), data["partitionId"]))
            elif record.name in ("TopicRecord",):
                delta.topics.add(self._topic_id(data["topicId"]))
            elif record.name == "ConfigRecord" and data["resourceType"] == 2:
                if data["resourceName"] in self.replication.topics_by_name:
                    delta.topics.add(self.replication.topics_by_name[data["resourceName"]])
            elif record.name == "ConfigRecord":
                delta.configs_changed = True
            elif record.name in _BROKER_RECORDS:
                delta.brokers_changed = True
            elif record.name in SCRAM_RECORDS:
                delta.scram_changed = True
            elif record.name in ACL_RECORDS:
                delta.acls_changed = True
        self.next_offset = high_watermark
        self.snapshots.after_replay(self, metadata_log, start, high_watermark)
        return delta

    def _maybe_load_snapshot(self, metadata_log) -> MetadataDelta:
        """The local log starts past what was applied (a snapshot was installed, or the broker restarted on a log
        that starts with one): load the latest snapshot; the delta names everything, and the topics it no longer has
        as removed."""
        if metadata_log.start_offset <= self.next_offset or metadata_log.latest_snapshot_id() is None:
            return MetadataDelta()
        before = {t.id: (t.name, sorted(t.partitions)) for t in self.replication.topics.values()}
        self.next_offset = self.snapshots.load_latest(self, metadata_log, replay_record)
        delta = self.everything()
        delta.removed = [(name, tid, parts) for tid, (name, parts) in before.items()
                         if tid not in self.replication.topics]
        return delta

    def everything(self) -> MetadataDelta:
        """A delta naming every partition and topic (the first publish after the broker starts)."""
        return MetadataDelta({(t.id, p) for t in self.replication.topics.values() for p in t.partitions},
                             set(self.replication.topics), True, scram_changed=True,
                             acls_changed=True)

    @staticmethod
    def _topic_id(text: str):
        return uuid_of(text)
