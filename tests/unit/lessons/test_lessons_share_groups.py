"""kafkalab.lessons.share_groups against a mini broker: the group starts at the earliest offset, records are
acknowledged."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

import kafkalab
from kafkalab.lab import LabKafka
from kafkalab.lessons.share_groups import share_consumer, share_group


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with kafkalab.mini(log_dir=str(tmp_path_factory.mktemp("share")),
                       **{"group.share.record.lock.duration.ms": 2000}) as b:
        yield LabKafka(b.bootstrap_servers)


def test_share_group_sets_earliest_and_the_consumer_gets_old_records(kafka):
    topic = kafka.create_topic("share-jobs", partitions=1)
    producer = Producer(kafka.client_config())
    for i in range(5):
        producer.produce(topic, value=f"job-{i}")
    assert producer.flush(10) == 0
    admin = AdminClient(kafka.client_config())
    assert share_group(admin, "share-test-group") == "share-test-group"
    [configs] = admin.describe_configs([ConfigResource(ResourceType.GROUP, "share-test-group")]).values()
    assert configs.result(30)["share.auto.offset.reset"].value == "earliest"

    consumer = share_consumer(kafka, "share-test-group", topic, max_poll_records=2)
    got, deadline = [], time.monotonic() + 30
    try:
        while len(got) < 5 and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                got.append(message.value().decode())
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)   # explicit mode: this call is allowed
            consumer.commit_sync(10)
    finally:
        consumer.close()
    assert sorted(got) == [f"job-{i}" for i in range(5)]   # produced before the group existed: earliest
