"""A mini broker's Kafka metrics, served as Prometheus text under the JMX exporter's names.

On a standalone ``kafkalab.mini()``: where they are served and that the server goes with the broker; then that the
numbers are Kafka's (records in, bytes in, requests, log offsets, partitions and leaders, a deleted topic's series
gone), each compared with what the clients and Metadata say.
"""
from __future__ import annotations

import socket
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import kafkalab
from tests.conftest import NO_RETENTION_CHECK, free_port


def scrape_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
        return response.read().decode()


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    text = scrape_text(url)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_served_at_metrics_url_and_gone_with_the_broker(tmp_path):
    before = set(threading.enumerate())
    broker = kafkalab.mini(log_dir=str(tmp_path / "b"), **NO_RETENTION_CHECK)
    try:
        url = broker.metrics_url
        host, port = url.removeprefix("http://").removesuffix("/metrics").rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) not in (0, broker.port)
        scrape(url)
    finally:
        broker.close()
    assert set(threading.enumerate()) == before   # no HTTP server thread left
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
    with socket.socket() as s:   # nothing listens there any more (SO_REUSEADDR: the scrape's TIME_WAIT may remain)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(port)))
        s.listen()


def test_the_metrics_port_config(tmp_path):
    port = free_port()
    with kafkalab.mini(log_dir=str(tmp_path / "a"), **{"kafkalab.metrics.port": port}) as broker:
        assert broker.metrics_url == f"http://127.0.0.1:{port}/metrics"
        scrape(broker.metrics_url)
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"kafkalab.metrics.port": -1}) as broker:
        assert broker.metrics_url is None and broker.server.metrics is not None   # kept, not served
    with kafkalab.mini(log_dir=str(tmp_path / "c"), **{"kafkalab.metrics.enabled": False}) as broker:
        assert broker.metrics_url is None and broker.server.metrics is None
    with pytest.raises(ValueError, match="kafkalab.metrics.port"):
        kafkalab.mini(log_dir=str(tmp_path / "d"), **{"kafkalab.metrics.port": 70000})


def test_a_metrics_port_in_use_fails_the_start_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(kafkalab.broker.kafka_server.StartupError, match="kafkalab.metrics.port"):
            kafkalab.mini(log_dir=str(tmp_path / "e"), **{"kafkalab.metrics.port": port})


# -- the numbers, on a standalone broker -------------------------------------------------------------------------

def samples_named(scraped: dict, name: str) -> dict[tuple, float]:
    return {labels: v for (n, labels), v in scraped.items() if n == name}


def partitions_in_metadata(admin, broker) -> tuple[int, int]:
    """(partitions, of them led by this broker), as Metadata shows them."""
    hosted = [p for t in admin.list_topics(timeout=10).topics.values() for p in t.partitions.values()]
    return len(hosted), sum(1 for p in hosted if p.leader == broker.server.broker_id)


def test_produce_fetch_and_delete_as_kafka_counts_them(tmp_path):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    n = 40
    with kafkalab.mini(log_dir=str(tmp_path / "b"), **NO_RETENTION_CHECK) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("counted", 2, 1), NewTopic("other", 1, 1)])["counted"].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                             "enable.idempotence": False})
        for i in range(n):   # one record per Produce request
            producer.produce("counted", b"value-%d" % i, partition=i % 2)
            producer.flush(30)
        producer.produce("other", b"x")
        producer.flush(30)
        m = scrape(broker.metrics_url)

        # BrokerTopicMetrics: records and bytes appended, per topic and in total
        messages_in = samples_named(m, "kafka_server_brokertopicmetrics_messagesin_total")
        assert messages_in[(("topic", "counted"),)] == n and messages_in[(("topic", "other"),)] == 1
        assert messages_in[()] == n + 1
        bytes_in = samples_named(m, "kafka_server_brokertopicmetrics_bytesin_total")
        assert bytes_in[(("topic", "counted"),)] > n * len(b"value-0")       # the batches: records and headers
        assert bytes_in[()] == bytes_in[(("topic", "counted"),)] + bytes_in[(("topic", "other"),)]
        assert samples_named(m, "kafka_server_brokertopicmetrics_totalproducerequests_total")[
            (("topic", "counted"),)] == n
        assert samples_named(m, "kafka_server_brokertopicmetrics_failedproducerequests_total")[()] == 0

        # RequestMetrics: Produce requests, by version, as the broker's own request counts have them
        produce_requests = {dict(labels)["version"]: v for labels, v in
                            samples_named(m, "kafka_network_requestmetrics_requests_total").items()
                            if dict(labels)["request"] == "Produce"}
        served = {}
        for (_, api, version), count in broker.server.kafka_apis.request_counts.items():
            if api == "Produce":
                served[str(version)] = served.get(str(version), 0) + count
        assert produce_requests == served and sum(served.values()) == n + 1
        assert m[("kafka_network_requestmetrics_totaltimems_count", (("request", "Produce"),))] == n + 1
        assert m[("kafka_network_requestmetrics_totaltimems", (("quantile", "0.999"), ("request", "Produce")))] > 0

        # kafka.log: each partition's log end offset is its high watermark, as a consumer sees it
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "metrics-test",
                             "auto.offset.reset": "earliest", "fetch.wait.max.ms": 300})
        try:
            for p in (0, 1):
                _, high = consumer.get_watermark_offsets(TopicPartition("counted", p), timeout=10)
                tags = (("partition", str(p)), ("topic", "counted"))
                assert m[("kafka_log_log_logendoffset", tags)] == high == n // 2
                assert m[("kafka_log_log_logstartoffset", tags)] == 0
                assert m[("kafka_log_log_numlogsegments", tags)] == 1
                assert m[("kafka_log_log_size", tags)] > 0

            # ReplicaManager: the partitions and leaders Metadata shows for this broker (the consumer's group
            # made __consumer_offsets meanwhile: read Metadata around the scrape until it stays the same)
            while True:
                before = partitions_in_metadata(admin, broker)
                m = scrape(broker.metrics_url)
                if partitions_in_metadata(admin, broker) == before:
                    break
            hosted, led = before
            assert m[("kafka_server_replicamanager_partitioncount", ())] == hosted
            assert m[("kafka_server_replicamanager_leadercount", ())] == led
            assert m[("kafka_server_replicamanager_underreplicatedpartitions", ())] == 0

            # a consumer's Fetches: BytesOut and TotalFetchRequests; an empty poll waits: RemoteTimeMs
            consumer.assign([TopicPartition("counted", p, 0) for p in (0, 1)])
            got = 0
            while got < n:
                msg = consumer.poll(10)
                assert msg is not None and not msg.error()
                got += 1
            assert consumer.poll(1.5) is None   # at the end: the Fetches wait fetch.wait.max.ms in the purgatory
        finally:
            consumer.close()
        m = scrape(broker.metrics_url)
        assert samples_named(m, "kafka_server_brokertopicmetrics_bytesout_total")[(("topic", "counted"),)] > 0
        assert samples_named(m, "kafka_server_brokertopicmetrics_totalfetchrequests_total")[
            (("topic", "counted"),)] > 0
        assert m[("kafka_network_requestmetrics_remotetimems", (("quantile", "0.999"),
                                                                ("request", "FetchConsumer")))] >= 250
        assert ("kafka_network_requestmetrics_totaltimems_count", (("request", "FetchFollower"),)) not in m

        # a deleted topic's series go (the totals stay; they count the group's offset commits too, as Kafka's)
        def messages_in_but_offsets(scraped) -> float:
            by_topic = samples_named(scraped, "kafka_server_brokertopicmetrics_messagesin_total")
            return by_topic[()] - by_topic.get((("topic", "__consumer_offsets"),), 0)
        assert messages_in_but_offsets(m) == n + 1
        admin.delete_topics(["counted"])["counted"].result(30)
        m = scrape(broker.metrics_url)
        left = sorted(n_ for (n_, labels) in m if ("topic", "counted") in labels)
        assert not left, left
        assert m[("kafka_server_replicamanager_partitioncount", ())] == partitions_in_metadata(admin, broker)[0]
        assert messages_in_but_offsets(m) == n + 1   # (the deletion wrote the group's offset tombstones)


def test_mini_broker_metrics_as_a_dataframe(tmp_path):
    from confluent_kafka import Producer

    with kafkalab.mini(log_dir=str(tmp_path / "b"), **NO_RETENTION_CHECK) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for i in range(7):
            producer.produce("frame", b"%d" % i)
        producer.flush(30)
        df = broker.metrics("kafka_server_brokertopicmetrics_messagesin")
        assert set(df.metric) == {"kafka_server_brokertopicmetrics_messagesin_total"}
        assert set(df.broker) == {broker.server.broker_id}
        per_topic = {row.labels.get("topic"): row.value for row in df.itertuples()}
        assert per_topic == {None: 7.0, "frame": 7.0}
        everything = broker.metrics()
        assert {"kafka_log_log_logendoffset", "kafka_server_replicamanager_leadercount"} <= set(everything.metric)
    with kafkalab.mini(log_dir=str(tmp_path / "c"), **{"kafkalab.metrics.port": -1}) as broker:
        with pytest.raises(RuntimeError, match="serves no metrics"):
            broker.metrics()


def test_the_group_coordinators_gauges_count_its_groups_by_state_and_their_offsets(tmp_path):
    """GroupMetadataManager's NumGroups, NumGroups<State> and NumOffsets against what ListGroups/DescribeGroups and
    OffsetFetch answer: a stable group of one member with offsets on 2 partitions, then the member gone (Empty)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    def gauges(broker):
        frame = broker.metrics("kafka_coordinator_group_groupmetadatamanager_")
        return {m.removeprefix("kafka_coordinator_group_groupmetadatamanager_"): v
                for m, v in zip(frame["metric"], frame["value"])}

    with kafkalab.mini(log_dir=str(tmp_path / "b"), **{"num.partitions": 2, **NO_RETENTION_CHECK}) as broker:
        assert gauges(broker) == {"numoffsets": 0, "numgroups": 0, "numgroupspreparingrebalance": 0,
                                  "numgroupscompletingrebalance": 0, "numgroupsstable": 0, "numgroupsdead": 0,
                                  "numgroupsempty": 0}
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for i in range(4):
            producer.produce("grouped", b"v", partition=i % 2)
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "billing",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["grouped"])
        got = []
        while len(got) < 4:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg)
        consumer.commit(asynchronous=False)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        state = admin.describe_consumer_groups(["billing"])["billing"].result(10).state.name
        assert state == "STABLE"
        live = gauges(broker)
        assert live["numgroups"] == 1 and live["numgroupsstable"] == 1 and live["numgroupsempty"] == 0
        committed = consumer.committed([TopicPartition("grouped", p) for p in (0, 1)], timeout=10)
        assert live["numoffsets"] == sum(tp.offset >= 0 for tp in committed) == 2
        consumer.close()   # LeaveGroup: no members, the offsets stay
        empty = gauges(broker)
        assert empty["numgroups"] == 1 and empty["numgroupsempty"] == 1 and empty["numgroupsstable"] == 0
        assert empty["numoffsets"] == 2


def test_client_quota_metrics_are_the_quota_managers_and_what_the_client_was_told(tmp_path):
    """kafka.server:type=Produce,client-id=C (byte-rate, throttle-time), as Kafka's ClientQuotaManager: a producer
    flat out over its quota; the byte rate the broker measured is near the quota while it is throttled, and
    throttle-time is the mean of the throttle times the client was told (librdkafka's throttle_cb)."""
    import math
    import time

    from confluent_kafka import Producer

    from kafkalab.tools.client_quotas import alter_client_quotas

    quota = 200_000
    with kafkalab.mini(log_dir=str(tmp_path / "q"), **{"quota.window.num": 3, "quota.window.size.seconds": 1},
                       **NO_RETENTION_CHECK) as broker:
        assert broker.metrics("kafka_server_produce_").empty            # no quota yet: no sensor
        alter_client_quotas(broker.bootstrap_servers, {"client-id": "slow"}, {"producer_byte_rate": quota})
        told, rates = [], []
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "slow", "linger.ms": 5,
                      "queue.buffering.max.kbytes": 256, "throttle_cb": lambda ev: told.append(ev.throttle_time)})
        start = last = time.monotonic()
        while time.monotonic() - start < 6:
            try:
                p.produce("quota-metrics", b"x" * 1000)
            except BufferError:
                p.poll(0.01)
            p.poll(0)
            if time.monotonic() - last > 0.5 and time.monotonic() - start > 2:
                last = time.monotonic()
                df = broker.metrics("kafka_server_produce_byte_rate")
                rates += [row.value for row in df.itertuples() if row.labels == {"client_id": "slow"}]
        p.flush(30)
        df = broker.metrics(["kafka_server_produce_byte_rate", "kafka_server_produce_throttle_time"])
        values = {(row.metric, tuple(sorted(row.labels.items()))): row.value for row in df.itertuples()}
        assert set(values) == {("kafka_server_produce_byte_rate", (("client_id", "slow"),)),
                               ("kafka_server_produce_throttle_time", (("client_id", "slow"),))}
        positive = [t * 1000 for t in told if t > 0]
        assert positive
        history = broker.call(lambda: [t for h in broker.server.quotas.throttles.values() for _, t in h])
        throttle_time = values[("kafka_server_produce_throttle_time", (("client_id", "slow"),))]
        assert throttle_time == pytest.approx(sum(history) / len(history))              # the broker's own throttles
        assert throttle_time == pytest.approx(sum(positive) / len(positive), rel=0.02)  # and what the client heard
        rates.sort()
        assert rates and 0.5 * quota < rates[len(rates) // 2] < 2 * quota, rates         # the median, near the quota
        # another client: measured (producer quotas are on), never throttled
        other = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "other"})
        other.produce("quota-metrics", b"y" * 100)
        other.flush(30)
        df = broker.metrics("kafka_server_produce_")
        others = {row.metric: row.value for row in df.itertuples() if row.labels == {"client_id": "other"}}
        assert others["kafka_server_produce_byte_rate"] > 0 and math.isnan(others["kafka_server_produce_throttle_time"])
