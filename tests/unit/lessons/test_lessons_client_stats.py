"""kafkalab.lessons.client_stats: librdkafka's statistics documents as tables and a long frame."""
from __future__ import annotations

import json

import pytest
from confluent_kafka import Producer

from kafkalab.lab import LabKafka
from kafkalab.lessons.client_stats import ClientStats


def window(cnt, avg, p99=None, maximum=None):
    return {"cnt": cnt, "avg": avg, "sum": avg * cnt, "p99": p99 if p99 is not None else avg, "max": maximum or avg,
            "min": 0}


def document(tx, rtt, batch, waitresp=0):
    return json.dumps({
        "msg_cnt": 0, "txmsgs": 10,
        "brokers": {"bootstrap": {"nodeid": -1, "tx": 1, "rtt": window(1, 9e6)},
                    "127.0.0.1:1/1": {"nodeid": 1, "tx": tx, "outbuf_cnt": 0, "waitresp_cnt": waitresp, "rtt": rtt,
                                      "int_latency": window(0, 0), "throttle": window(0, 0)}},
        "topics": {"t": {"batchsize": batch, "batchcnt": window(batch["cnt"], 5)}}})


def test_windows_are_summed_over_their_counts_and_empty_ones_left_out():
    stats = ClientStats(100)
    stats._on_stats(document(4, window(1, 1000), window(1, 100), waitresp=2))          # 1 request of 1 ms
    stats._on_stats(document(7, window(3, 5000, p99=9000), window(3, 300)))             # 3 of 5 ms
    stats._on_stats(document(7, window(0, 0), window(0, 0)))                            # nothing happened
    brokers = stats.broker_table()
    assert list(brokers.index) == [1]                  # the bootstrap connection (nodeid -1) is not a broker
    row = brokers.loc[1]
    assert row["requests"] == 7 and row["max in flight"] == 2
    assert row["round trip ms (mean)"] == pytest.approx((1 + 3 * 5) / 4)          # µs turned into ms
    assert row["round trip ms (p99, worst window)"] == pytest.approx(9.0)
    assert "queue time ms (mean)" not in brokers.columns   # every queue-time window was empty
    topics = stats.topic_table()
    assert topics.loc["t", "batches"] == 4 and topics.loc["t", "bytes per batch (mean)"] == pytest.approx(250)
    frame = stats.frame()
    assert set(frame.columns) == {"t", "source", "metric", "value"}
    assert frame[(frame.metric == "rtt_ms_cnt")]["value"].tolist() == [1, 3]


def test_an_interval_of_zero_is_refused():
    with pytest.raises(ValueError, match="statistics.interval.ms"):
        ClientStats(0)


def test_a_producer_against_a_mini_broker(shared_broker):
    kafka = LabKafka(shared_broker.bootstrap_servers)
    topic = kafka.create_topic("client-stats", partitions=2)
    stats = ClientStats(100)
    producer = Producer({**kafka.client_config(linger_ms=50), **stats.config()})
    for i in range(1000):
        producer.produce(topic, b"x" * 100, partition=i % 2)
    assert producer.flush(10) == 0
    stats.wait_for_next(producer)
    topics = stats.topic_table()
    assert topics.loc[topic, "batches"] >= 2                     # at least one batch per partition
    # exact: librdkafka's sums (its window avg is an integer from histogram buckets)
    assert topics.loc[topic, "records per batch (mean)"] * topics.loc[topic, "batches"] == pytest.approx(1000, abs=1e-6)
    brokers = stats.broker_table()
    assert list(brokers.index) == [shared_broker.server.broker_id] and brokers.iloc[0]["requests"] >= 2
    assert brokers.iloc[0]["round trip ms (mean)"] > 0
    client = stats.frame().query("source == 'client' and metric == 'txmsgs'")["value"]
    assert client.iloc[-1] == 1000


def test_a_series_over_time_is_what_over_time_draws():
    from kafkalab.viz.plots import over_time
    stats = ClientStats(100)
    stats._on_stats(document(4, window(1, 1000), window(1, 100)))
    stats._on_stats(document(7, window(0, 0), window(0, 0)))          # an empty window: a gap
    stats._on_stats(document(9, window(2, 3000), window(2, 300)))
    rtt = stats.series("rtt_ms_avg")
    assert list(rtt.columns) == ["t", "broker 1"] and rtt["broker 1"].tolist() == [1.0, 3.0]
    assert stats.series("tx")["broker 1"].tolist() == [4, 7, 9]
    figure = over_time(rtt, ylabel="round trip (ms)")
    assert len(figure.axes[0].lines) == 1
    with pytest.raises(KeyError, match="no 'rtt' in the statistics kept; there are"):
        stats.series("rtt")
    with pytest.raises(KeyError, match="none came yet"):
        ClientStats(100).series("tx")
