"""kafkalab.tools.consumer_groups against a mini broker: the table of ``kafka-consumer-groups.sh --describe``.

Its numbers must be the group's committed offsets (asked of the consumer itself) and the partitions' high
watermarks (get_watermark_offsets), LAG their difference, ``<NA>`` where nothing is committed; a member's partitions
carry its member id, host and client id; an empty group keeps rows only for what it committed, with ``-``.
"""
from __future__ import annotations

import time
import uuid

import pandas as pd
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkalab.tools.consumer_groups import COLUMNS, describe_group_lag, format_describe
from kafkalab.viz.cluster_state import collect

WAIT_S = 30


def _produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, n in counts.items():
        for i in range(n):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(WAIT_S) == 0


def _member(bootstrap: str, group: str, topic: str, client_id: str) -> Consumer:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe([topic])
    deadline = time.monotonic() + WAIT_S
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    assert len(c.assignment()) == 3, c.assignment()
    return c


def test_lag_is_high_watermark_minus_committed_with_the_member_and_dash_without_a_commit(broker):
    bootstrap = broker.bootstrap_servers
    topic, group = f"lag-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _produce(bootstrap, topic, {0: 10, 1: 5, 2: 3})
    consumer = _member(bootstrap, group, topic, "lag-test-client")
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 2)], asynchronous=False)
        committed = {tp.partition: tp.offset for tp in
                     consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)}
        high = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)}
        member_id = consumer.memberid()

        df = describe_group_lag(broker, group)
        assert list(df.columns) == COLUMNS
        assert df.attrs["state"] == "STABLE"
        assert list(df["PARTITION"]) == [0, 1, 2] and set(df["TOPIC"]) == {topic} and set(df["GROUP"]) == {group}
        for row in df.to_dict("records"):
            p = row["PARTITION"]
            assert row["LOG-END-OFFSET"] == high[p] == {0: 10, 1: 5, 2: 3}[p]
            assert row["CONSUMER-ID"] == member_id and row["CLIENT-ID"] == "lag-test-client"
            # the client's address as the coordinator saw it at JoinGroup (Kafka: InetAddress.toString, "/127.0.0.1")
            assert row["HOST"].lstrip("/") == "127.0.0.1"
            if committed[p] >= 0:
                assert row["CURRENT-OFFSET"] == committed[p] and row["LAG"] == high[p] - committed[p]
            else:   # nothing committed on partition 2: the tool prints "-" for both
                assert p == 2 and pd.isna(row["CURRENT-OFFSET"]) and pd.isna(row["LAG"])
        assert list(df["LAG"].fillna(-1)) == [3, 3, -1]

        text = format_describe(df).splitlines()
        assert text[0].split() == COLUMNS
        assert text[3].split()[3:6] == ["-", "3", "-"]

        # the dashboard's snapshot counts the same lag (the same requests)
        snap = collect(broker, topics=[topic])
        g = next(g for g in snap.groups if g.group_id == group)
        assert {(o.partition, o.committed, o.end, o.lag) for o in g.offsets} == \
            {(0, 7, 10, 3), (1, 2, 5, 3), (2, None, 3, None)}
    finally:
        consumer.close()

    # no member left: the group is Empty, rows only for the committed partitions, without a consumer
    empty = describe_group_lag(broker.bootstrap_servers, group)
    assert empty.attrs["state"] == "EMPTY"
    assert empty[["PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]].values.tolist() == [[0, 7, 10, 3],
                                                                                            [1, 2, 5, 3]]
    assert set(empty["CONSUMER-ID"]) == set(empty["HOST"]) == set(empty["CLIENT-ID"]) == {"-"}

    # records written since: the lag of an empty group grows with the high watermark
    _produce(bootstrap, topic, {0: 4})
    later = describe_group_lag(broker, group)
    assert later.set_index("PARTITION").loc[0, ["LOG-END-OFFSET", "LAG"]].tolist() == [14, 7]


def test_a_group_that_only_committed_through_the_admin_api(broker):
    """A group that never had a member (offsets written with AlterConsumerGroupOffsets): Empty, lag per commit."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    bootstrap = broker.bootstrap_servers
    topic, group = f"lag-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    _produce(bootstrap, topic, {0: 6, 1: 2})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1, 1)])])[
        group].result(WAIT_S)
    df = describe_group_lag(broker, group, admin=admin)
    assert df.attrs["state"] == "EMPTY"
    assert df[["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID"]].values.tolist() == \
        [[topic, 1, 1, 2, 1, "-"]]
