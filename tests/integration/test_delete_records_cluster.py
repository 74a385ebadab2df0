"""DeleteRecords on a 3-broker cluster, the mini broker's and Apache Kafka 3.9's: the same answers.

Kafka Streams deletes what it has read from its repartition topics after each commit (DeleteRecords to
each partition's leader). On a replicated topic Kafka answers only once every follower on a live broker
has moved its log start offset too (``DelayedDeleteRecords``, ``Partition.lowWatermarkIfLeader``), refuses
a broker that does not lead the partition (NOT_LEADER_OR_FOLLOWER, nothing deleted), times out
(REQUEST_TIMED_OUT) while a live follower does not fetch, and stops counting a follower whose broker has
left the cluster. Raw requests (``tests/helpers/kafka_wire.py``), so each broker is asked exactly what we mean.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.admin.topics import DeleteRecordsRequest, DeleteRecordsResponse
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse

from tests.helpers import kafka_wire as wire
import kafkalab
from tests.helpers.cluster_helpers import broker_states, partition_row, wait_until
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.cluster import KafkaBackend
from kafkalab.cluster.distribution import fetch_kafka
from kafkalab.lab import LabKafka

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

TOPIC = "purged"
NONE, NOT_LEADER, TIMED_OUT, UNKNOWN, INVALID_TOPIC, OUT_OF_RANGE = (
    ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.OFFSET_OUT_OF_RANGE)


def delete_records(address: str, topic: str, offsets: dict[int, int], timeout_ms: int = 5000) -> dict:
    """partition -> (error code, low watermark)."""
    request = DeleteRecordsRequest(timeout_ms=timeout_ms, topics=[DeleteRecordsRequest.DeleteRecordsTopic(
        name=topic, partitions=[DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
            partition_index=p, offset=o) for p, o in offsets.items()])])
    response = wire.call(address, request, DeleteRecordsResponse, 2)
    return {p.partition_index: (p.error_code, p.low_watermark) for t in response.topics for p in t.partitions}


def log_start_offset(address: str) -> int:
    """The replica's own log start offset (ListOffsets EARLIEST as Kafka's debugging replica id -2, which any
    replica answers)."""
    request = ListOffsetsRequest(replica_id=-2, isolation_level=0, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-2)])])
    return wire.call(address, request, ListOffsetsResponse, 7).topics[0].partitions[0].offset


@pytest.mark.parametrize("backend", ["mini", "kafka"])
def test_delete_records_waits_for_the_followers(backend, tmp_path):
    if backend == "kafka":
        backend = KafkaBackend(str(fetch_kafka("3.9")))
    with kafkalab.cluster(brokers=3, backend=backend, dir=str(tmp_path / "cluster")) as cluster:
        LabKafka(cluster.bootstrap_servers, cluster=cluster).create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all"})
        for i in range(10):
            producer.produce(TOPIC, value=b"r%d" % i)
        assert producer.flush(15) == 0
        row = partition_row(cluster, TOPIC, 0)
        leader = int(row["leader"])
        first, second = (b for b in row["replicas"] if b != leader)
        address = {b["id"]: f"{b['host']}:{b['port']}" for b in broker_states(cluster)}
        replicas = sorted(row["replicas"])

        # a follower refuses and deletes nothing
        assert delete_records(address[first], TOPIC, {0: 3}) == {0: (NOT_LEADER, -1)}
        assert {b: log_start_offset(address[b]) for b in replicas} == dict.fromkeys(replicas, 0)
        # the leader answers once every replica has dropped the records
        assert delete_records(address[leader], TOPIC, {0: 5}) == {0: (NONE, 5)}
        assert {b: log_start_offset(address[b]) for b in replicas} == dict.fromkeys(replicas, 5)
        # a live follower that does not fetch: the leader deletes, the answer times out with the low watermark
        cluster.pause(second)
        started = time.monotonic()
        assert delete_records(address[leader], TOPIC, {0: 7}, timeout_ms=1500) == {0: (TIMED_OUT, 5)}
        assert time.monotonic() - started >= 1.4 and log_start_offset(address[leader]) == 7
        cluster.resume(second)
        wait_until(lambda: log_start_offset(address[second]) == 7, "the resumed follower caught up", 15)
        # unknown partitions; past the high watermark; an internal topic once it exists
        assert delete_records(address[leader], TOPIC, {0: 11, 3: 0}) == {0: (OUT_OF_RANGE, -1), 3: (UNKNOWN, -1)}
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "creates-the-offsets-topic"})
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        consumer.close()
        assert delete_records(address[leader], "__consumer_offsets", {0: 0}) == {0: (INVALID_TOPIC, -1)}
        # a follower whose broker left the cluster no longer counts
        cluster.kill(second)
        wait_until(lambda: delete_records(address[leader], TOPIC, {0: 8}, timeout_ms=300) == {0: (NONE, 8)},
                   "the killed follower no longer counted", 30)
        assert log_start_offset(address[first]) == 8
