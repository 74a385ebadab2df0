"""kafkalab.lessons.reading.watermark_offsets: which errors of librdkafka's watermark query it asks again."""
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafkalab.lessons.reading import watermark_offsets


class FakeConsumer:
    """Answers get_watermark_offsets with ``errors`` first, then (0, 10); list_topics with ``topics``."""

    def __init__(self, errors, topics):
        self.errors, self.topics, self.metadata_asked = list(errors), topics, 0

    def get_watermark_offsets(self, tp, timeout, cached):
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 0, 10

    def list_topics(self, topic, timeout):
        self.metadata_asked += 1
        return SimpleNamespace(topics=self.topics)


def leaderless_topic(partitions=(0,), error=None):
    return {"t": SimpleNamespace(error=error, partitions={p: object() for p in partitions})}


def test_a_leaderless_partition_is_asked_again_after_fresh_metadata():
    consumer = FakeConsumer([KafkaError._UNKNOWN_PARTITION] * 2, leaderless_topic())
    assert watermark_offsets(consumer, "t", 0, timeout_s=5) == (0, 10)
    assert consumer.metadata_asked == 2


def test_a_topic_not_yet_in_the_brokers_cache_is_asked_again():
    consumer = FakeConsumer([KafkaError._UNKNOWN_PARTITION],
                            leaderless_topic((), KafkaError(KafkaError.LEADER_NOT_AVAILABLE)))
    assert watermark_offsets(consumer, "t", 0, timeout_s=5) == (0, 10)


@pytest.mark.parametrize("topics", [{}, leaderless_topic((0,))], ids=["no such topic", "no such partition"])
def test_a_partition_that_does_not_exist_is_not_retried(topics):
    consumer = FakeConsumer([KafkaError._UNKNOWN_PARTITION], topics)
    with pytest.raises(KafkaException) as raised:
        watermark_offsets(consumer, "t", 3, timeout_s=5)
    assert raised.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
    assert consumer.metadata_asked == 1


def test_not_leader_is_asked_again_and_other_errors_are_raised():
    assert watermark_offsets(FakeConsumer([KafkaError.NOT_LEADER_FOR_PARTITION], {}), "t", 0, timeout_s=5) == (0, 10)
    with pytest.raises(KafkaException):
        watermark_offsets(FakeConsumer([KafkaError.TOPIC_AUTHORIZATION_FAILED], {}), "t", 0, timeout_s=5)
