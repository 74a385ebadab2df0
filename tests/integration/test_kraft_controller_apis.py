"""CreatePartitions and topic configs on the mini KRaft cluster, forwarded in Envelopes (KIP-590).

confluent-kafka's AdminClient sends its admin requests to the broker a Metadata answer names as "controller"
(a KRaft broker names a live broker: clients never reach the controllers); kafkalab's ``kafka_request`` sends the
same requests straight to each of the three brokers. Every broker wraps them whole in an Envelope to the active
controller, which writes the records. Checked: the answers and their error codes, the PartitionRecords and
ConfigRecords in the controller's ``__cluster_metadata`` (dump-log), a new partition produced to, and
``min.insync.replicas=3`` taking effect on the live logs: with one broker killed, acks=all is refused with
NOT_ENOUGH_REPLICAS. Deadlines here are generous bounds for something to happen, not measurements.
"""
from __future__ import annotations

import functools
import glob
import io

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   NewPartitions, NewTopic)

from kafka.protocol.admin import CreatePartitionsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest

from tests.helpers import cluster_helpers
import kafkalab
from kafkalab.cluster.kafka_requests import kafka_request, metadata_answer, metadata_request
from kafkalab.tools import dump_log

pytestmark = pytest.mark.cluster


# a wait that fails at the first exception (the predicates here must not raise)
wait_until = functools.partial(cluster_helpers.wait_until, retry_on=())


def partitions(c, topic: str) -> dict[int, dict]:
    return {p["partition"]: p for p in c.metadata([topic])["topics"].get(topic, {}).get("partitions", [])}


def partitions_on(broker, topic: str) -> dict[int, dict]:
    """The partitions of ``topic`` as one broker's metadata cache holds them."""
    answer = metadata_answer(metadata_request(broker["host"], int(broker["port"]), [topic], 1.0))
    return {p["partition"]: p for p in answer["topics"].get(topic, {}).get("partitions", [])}


def error_of(future) -> int:
    try:
        future.result(20)
        return 0
    except KafkaException as exc:
        return exc.args[0].code()


def topic_config(admin, topic: str, name: str) -> ConfigEntry:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(20)[name]


def metadata_log_text(c) -> str:
    out = io.StringIO()
    for segment in sorted(glob.glob(f"{c.metadata_log_dir(c.controller)}/*.log")):
        dump_log(segment, cluster_metadata_decoder=True, file=out, err=io.StringIO())
    return out.getvalue()


def test_create_partitions_and_configs_are_forwarded_to_the_active_controller(tmp_path):
    with kafkalab.cluster(brokers=3, mode="kraft", dir=str(tmp_path / "kraft")) as c:
        brokers = c.brokers.set_index("id")
        one = f"{brokers.loc[2, 'host']}:{brokers.loc[2, 'port']}"
        admin = AdminClient({"bootstrap.servers": one})
        assert admin.create_topics([NewTopic("grow", 1, 3)])["grow"].result(20) is None
        wait_until(lambda: partitions(c, "grow").get(0, {}).get("leader", -1) >= 0, "grow-0's leader")

        # -- CreatePartitions: errors as Kafka's controller answers them, validate_only changes nothing
        assert error_of(admin.create_partitions([NewPartitions("grow", 1)])["grow"]) == KafkaError.INVALID_PARTITIONS
        assert error_of(admin.create_partitions([NewPartitions("nope", 2)])["nope"]) == \
            KafkaError.UNKNOWN_TOPIC_OR_PART
        assert error_of(admin.create_partitions([NewPartitions("grow", 3, [[1, 2]])])["grow"]) == \
            KafkaError.INVALID_REPLICA_ASSIGNMENT          # two new partitions, one assignment
        assert error_of(admin.create_partitions([NewPartitions("grow", 5)], validate_only=True)["grow"]) == 0
        assert error_of(admin.create_partitions([NewPartitions("grow", 3)])["grow"]) == 0
        wait_until(lambda: len(partitions(c, "grow")) == 3 and all(
            p["leader"] >= 0 and len(p["isr"]) == 3 for p in partitions(c, "grow").values()), "3 partitions, led")
        # every broker's metadata image has replayed the new PartitionRecords: a producer that bootstraps from one
        # that has not yet is told the topic has 1 partition and fails partition 2 at once (_UNKNOWN_PARTITION)
        for b in c.broker_ids:
            wait_until(lambda: len(partitions_on(brokers.loc[b], "grow")) == 3, f"broker {b} to show 3 partitions")
        # the new partition is produced to
        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": "all"})
        delivered = []
        producer.produce("grow", value=b"into-the-new-partition", partition=2,
                         on_delivery=lambda err, msg: delivered.append((err, msg.partition())))
        assert producer.flush(20) == 0 and delivered == [(None, 2)]

        # -- IncrementalAlterConfigs: SET min.insync.replicas=3, APPEND to cleanup.policy; a bad config refused
        resource = ConfigResource(ConfigResource.Type.TOPIC, "grow", incremental_configs=[
            ConfigEntry("min.insync.replicas", "3", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND)])
        assert admin.incremental_alter_configs([resource])[resource].result(20) is None
        bad = ConfigResource(ConfigResource.Type.TOPIC, "grow", incremental_configs=[
            ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
        assert error_of(admin.incremental_alter_configs([bad])[bad]) == KafkaError.INVALID_CONFIG
        missing = ConfigResource(ConfigResource.Type.TOPIC, "nope", incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
        assert error_of(admin.incremental_alter_configs([missing])[missing]) == KafkaError.UNKNOWN_TOPIC_OR_PART
        # every broker replays the ConfigRecords: DescribeConfigs on each shows the override, as a topic's
        for b in c.broker_ids:
            each = AdminClient({"bootstrap.servers": f"{brokers.loc[b, 'host']}:{brokers.loc[b, 'port']}"})
            entry = wait_until(lambda: (e := topic_config(each, "grow", "min.insync.replicas")).value == "3" and e,
                               f"broker {b} to show min.insync.replicas=3")
            assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
            assert topic_config(each, "grow", "cleanup.policy").value == "delete,compact"

        # each broker forwards: the same requests sent straight to broker 1, 2 and 3
        for b in c.broker_ids:
            host, port = brokers.loc[b, "host"], int(brokers.loc[b, "port"])
            answer = kafka_request(host, port, IncrementalAlterConfigsRequest, 1, {"resources": [{
                "resource_type": 2, "resource_name": "grow", "configs": [
                    {"name": "segment.ms", "config_operation": 0, "value": str(3_600_000 * b)}]}],
                "validate_only": False}, timeout_s=20)
            assert [(r.error_code, r.resource_name) for r in answer.responses] == [(0, "grow")]
            answer = kafka_request(host, port, CreatePartitionsRequest, 3, {"topics": [
                {"name": "grow", "count": 2, "assignments": None}], "timeout_ms": 5000, "validate_only": False},
                timeout_s=20)
            assert answer.results[0].error_code == KafkaError.INVALID_PARTITIONS
            assert answer.results[0].error_message == "The topic grow currently has 3 partition(s); 2 would not be " \
                                                      "an increase."
        wait_until(lambda: topic_config(admin, "grow", "segment.ms").value == str(3_600_000 * c.broker_ids[-1]),
                   "the last segment.ms to win")

        # a GROUP config (KIP-932): a ConfigRecord every broker hands to its share partition manager
        group = ConfigResource(ConfigResource.Type.GROUP, "sharers", incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        assert admin.incremental_alter_configs([group])[group].result(20) is None
        for b in c.broker_ids:
            host, port = brokers.loc[b, "host"], int(brokers.loc[b, "port"])
            wait_until(lambda: [(e.value, e.config_source) for e in kafka_request(
                host, port, DescribeConfigsRequest, 4, {"resources": [{
                    "resource_type": 32, "resource_name": "sharers", "configuration_keys": ["share.auto.offset.reset"]}],
                    "include_synonyms": False, "include_documentation": False}).results[0].configs] == [("earliest", 8)],
                f"broker {b} to show the group config")

        text = metadata_log_text(c)
        assert '"type":"CONFIG_RECORD","version":0,"data":{"resourceType":2,"resourceName":"grow",' \
               '"name":"min.insync.replicas","value":"3"}' in text
        assert text.count('"type":"PARTITION_RECORD"') >= 3 and '"partitionId":2,' in text

        # -- the change takes effect: one replica killed, acks=all is NOT_ENOUGH_REPLICAS
        # (not the broker librdkafka sends admin requests to: it would wait for it to come back)
        victim = next(b for b in c.broker_ids if b not in (c.metadata()["controller"], partitions(c, "grow")[0]["leader"]))
        c.kill(victim)
        leader = partitions(c, "grow")[0]["leader"]
        at_leader = (brokers.loc[leader, "host"], int(brokers.loc[leader, "port"]))
        # the leader's own view (its partition state comes from the same records): partition 0's ISR without the victim
        wait_until(lambda: victim not in metadata_answer(metadata_request(*at_leader, ["grow"]))["topics"]["grow"][
            "partitions"][0]["isr"], "the leader to shrink partition 0's ISR")
        strict = Producer({"bootstrap.servers": "%s:%d" % at_leader, "acks": "all", "retries": 0,
                           "message.timeout.ms": 15000})   # (broker 2 may be the one killed)
        refused = []
        strict.produce("grow", value=b"refused", partition=0, on_delivery=lambda err, msg: refused.append(err))
        strict.flush(20)
        assert len(refused) == 1 and refused[0] is not None and refused[0].code() == KafkaError.NOT_ENOUGH_REPLICAS

        # -- AlterConfigs (legacy): the configs sent replace the whole set; min.insync.replicas goes back to 1
        legacy = ConfigResource(ConfigResource.Type.TOPIC, "grow", set_config={"retention.ms": "600000"})
        assert admin.alter_configs([legacy])[legacy].result(20) is None
        wait_until(lambda: topic_config(admin, "grow", "retention.ms").value == "600000", "retention.ms=600000")
        assert topic_config(admin, "grow", "min.insync.replicas").source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        # the leader produced to below must have replayed the ConfigRecords too (admin asked broker 2, which may be
        # a record ahead of it: a producer at the leader was then still refused NOT_ENOUGH_REPLICAS)
        def at_the_leader() -> dict:   # DescribeConfigs answered by the leader itself: {name: (value, source)}
            answer = kafka_request(*at_leader, DescribeConfigsRequest, 4, {"resources": [{
                "resource_type": 2, "resource_name": "grow",
                "configuration_keys": ["retention.ms", "min.insync.replicas"]}],
                "include_synonyms": False, "include_documentation": False})
            return {e.name: (e.value, e.config_source) for e in answer.results[0].configs}
        wait_until(lambda: (got := at_the_leader())["retention.ms"] == ("600000", 1) and
                   got["min.insync.replicas"][1] != 1, f"the leader, broker {leader}, to drop min.insync.replicas")
        accepted = []
        strict.produce("grow", value=b"accepted", partition=0, on_delivery=lambda err, msg: accepted.append(err))
        strict.flush(20)
        assert accepted == [None]
        text = metadata_log_text(c)
        assert '"name":"min.insync.replicas","value":null}' in text
