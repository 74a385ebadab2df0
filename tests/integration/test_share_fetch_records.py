"""ShareFetch answers a partition with nothing acquired with empty Records, never null (Kafka 4.4's
``ShareFetchUtils`` and ``ShareFetchResponse.partitionResponse`` set ``MemoryRecords.EMPTY``).

librdkafka 2.16 rejects a null there ("invalid MessageSetSize -1", "Bad message format") and drops the whole
response, acquired records and acknowledgement results of other partitions included; its share consumer then
logs errors and may see records again. Found by lesson 09, whose consumers open share sessions on partitions
where another member holds every record.
"""
from __future__ import annotations

import logging
import time
import uuid

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, ResourceType

import kafkalab


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_nothing_acquired_is_empty_records_not_null(tmp_path):
    with kafkalab.mini(log_dir=str(tmp_path), **{"group.share.heartbeat.interval.ms": 500}) as broker:
        bs = broker.bootstrap_servers
        topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bs})
        for f in admin.create_topics([NewTopic(topic, 1, 1)]).values():
            f.result(30)
        resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        for f in admin.incremental_alter_configs([resource]).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": bs})
        for i in range(4):
            producer.produce(topic, value=b"r%d" % i)
        producer.flush(30)
        handler = Lines()
        logger = logging.getLogger(f"share-{group}")
        logger.addHandler(handler)
        logger.propagate = False
        consumers = [ShareConsumer({"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit",
                                    "max.poll.records": 4}, logger=logger) for _ in range(3)]
        got, held = [], []
        try:
            for c in consumers:
                c.subscribe([topic])
            holder, others = consumers[0], consumers[1:]
            deadline = time.monotonic() + 20
            while len(got) < 4:                      # one member takes all four and holds them ...
                assert time.monotonic() < deadline, "timed out"
                held.extend(holder.poll(0.2))
                got = [m.offset() for m in held]
            quiet = time.monotonic() + 3             # ... the others open sessions on the partition and get
            while time.monotonic() < quiet:          # nothing acquired, again and again
                for c in others:
                    assert not list(c.poll(0.2))
            for m in held:                           # then its acknowledgements ride on its next ShareFetch,
                holder.acknowledge(m, AcknowledgeType.ACCEPT)   # which acquires nothing: a partition
            quiet = time.monotonic() + 2             # answered with acknowledgement results only
            while time.monotonic() < quiet:
                assert not list(holder.poll(0.2))
        finally:
            for c in consumers:
                c.close()
            del admin, producer
        assert sorted(got) == [0, 1, 2, 3]
        bad = [line for line in handler.lines if "MessageSetSize" in line or "Bad message format" in line]
        assert not bad, bad[:3]
