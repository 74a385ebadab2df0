"""``BrokerTopicStats``: ``kafka.server:type=BrokerTopicMetrics``, per topic (tag ``topic``) and for all topics (no
tag), as Kafka's ``BrokerTopicStats`` in ``KafkaRequestHandler.scala``.

Counted where Kafka counts them:

* ``TotalProduceRequestsPerSec``: every partition of an append (``ReplicaManager.append_to_local_log``, the
  coordinators' ``append_records`` too), before it is tried; ``MessagesInPerSec`` (records) and ``BytesInPerSec``
  (the batch's bytes) once it is appended; ``FailedProduceRequestsPerSec`` when it fails for another reason than
  those Kafka expects (unknown partition, not the leader, too large, corrupt, storage error, unknown topic id);
  a follower's appends (replication) are not produce requests and count in none of them;
* ``TotalFetchRequestsPerSec``: every partition of a Fetch, consumers and followers alike, at the Fetch's first read
  (``ReplicaManager.read_from_local_log``, not again after waiting in the purgatory); ``FailedFetchRequestsPerSec``
  for an unexpected error (not: not the leader, unknown partition or epoch, offset out of range, ...);
  ``BytesOutPerSec``: the bytes a consumer's Fetch returns (``apis/fetch.py``; a follower's are Kafka's
  ReplicationBytesOutPerSec, not kept here).

A topic's meters are created each at its first mark (Kafka's lazy ``MeterWrapper``; the all-topics ones at once) and
removed when the topic is deleted (``remove_metrics``).
"""
from __future__ import annotations

from ..common.errors import ErrorCode
from ..common.metrics import KafkaMetricsGroup, Meter, MetricsRegistry

MESSAGES_IN = "MessagesInPerSec"
BYTES_IN = "BytesInPerSec"
BYTES_OUT = "BytesOutPerSec"
TOTAL_PRODUCE = "TotalProduceRequestsPerSec"
TOTAL_FETCH = "TotalFetchRequestsPerSec"
FAILED_PRODUCE = "FailedProduceRequestsPerSec"
FAILED_FETCH = "FailedFetchRequestsPerSec"
METER_NAMES = (MESSAGES_IN, BYTES_IN, BYTES_OUT, TOTAL_PRODUCE, TOTAL_FETCH, FAILED_PRODUCE, FAILED_FETCH)

#: append errors Kafka's ``appendToLocalLog`` does not count as a failed produce request
EXPECTED_PRODUCE_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.UNKNOWN_TOPIC_ID})
#: read errors Kafka's ``readFromLocalLog`` does not count as a failed fetch request
EXPECTED_FETCH_ERRORS = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.INCONSISTENT_TOPIC_ID, ErrorCode.OFFSET_OUT_OF_RANGE,
    ErrorCode.UNKNOWN_TOPIC_ID})


class BrokerTopicMetrics:
    """One topic's meters (``topic=None``: all topics'). As Kafka's ``MeterWrapper``s: the all-topics meters are
    created at once, a topic's each at its first mark, so a topic nothing was fetched from has no BytesOutPerSec and
    one without failures no Failed*RequestsPerSec (on Kafka and here)."""
    __slots__ = ("_group", "_tags", "_meters")

    def __init__(self, group: KafkaMetricsGroup, topic: str | None):
        self._group = group
        self._tags = {"topic": topic} if topic is not None else None
        self._meters: dict[str, Meter] = {}
        if topic is None:
            for name in METER_NAMES:
                self.meter(name)

    def meter(self, name: str) -> Meter:
        found = self._meters.get(name)
        if found is None:
            found = self._meters[name] = self._group.new_meter(name, self._tags)
        return found

    messages_in = property(lambda self: self.meter(MESSAGES_IN))
    bytes_in = property(lambda self: self.meter(BYTES_IN))
    bytes_out = property(lambda self: self.meter(BYTES_OUT))
    total_produce = property(lambda self: self.meter(TOTAL_PRODUCE))
    total_fetch = property(lambda self: self.meter(TOTAL_FETCH))
    failed_produce = property(lambda self: self.meter(FAILED_PRODUCE))
    failed_fetch = property(lambda self: self.meter(FAILED_FETCH))


class BrokerTopicStats:
    def __init__(self, registry: MetricsRegistry):
        self._group = KafkaMetricsGroup(registry, "kafka.server", "BrokerTopicMetrics")
        self.all_topics_stats = BrokerTopicMetrics(self._group, None)
        self._topics: dict[str, BrokerTopicMetrics] = {}

    def topic_stats(self, topic: str) -> BrokerTopicMetrics:
        stats = self._topics.get(topic)
        if stats is None:
            stats = self._topics[topic] = BrokerTopicMetrics(self._group, topic)
        return stats

    # what the ReplicaManager and the Fetch handler mark, for one partition of a request

    def produce_tried(self, topic: str) -> None:
        self.topic_stats(topic).total_produce.mark()
        self.all_topics_stats.total_produce.mark()

    def produce_appended(self, topic: str, records: int, size: int) -> None:
        stats, total = self.topic_stats(topic), self.all_topics_stats
        stats.messages_in.mark(records)
        total.messages_in.mark(records)
        stats.bytes_in.mark(size)
        total.bytes_in.mark(size)

    def produce_failed(self, topic: str, error: int) -> None:
        if error not in EXPECTED_PRODUCE_ERRORS:
            self.topic_stats(topic).failed_produce.mark()
            self.all_topics_stats.failed_produce.mark()

    def fetch_read(self, topic: str, error: int) -> None:
        self.topic_stats(topic).total_fetch.mark()
        self.all_topics_stats.total_fetch.mark()
        if error not in EXPECTED_FETCH_ERRORS:
            self.topic_stats(topic).failed_fetch.mark()
            self.all_topics_stats.failed_fetch.mark()

    def bytes_out(self, topic: str, size: int) -> None:
        self.topic_stats(topic).bytes_out.mark(size)
        self.all_topics_stats.bytes_out.mark(size)

    def remove_metrics(self, topic: str) -> None:
        """A deleted topic's series go (Kafka's ``removeMetrics``)."""
        if self._topics.pop(topic, None) is not None:
            self._group.remove_metrics(METER_NAMES, {"topic": topic})
