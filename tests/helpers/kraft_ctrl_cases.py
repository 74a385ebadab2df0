"""The admin requests compared between the mini KRaft cluster and Kafka 4.4 KRaft (test_differential_kraft_admin)."""
from __future__ import annotations

from kafka.protocol.admin import (AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest,
                                  DescribeConfigsRequest, IncrementalAlterConfigsRequest)

from kafkalab.cluster.kafka_requests import kafka_request

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def cases(host: str, port: int, broker_id: int) -> list[tuple]:
    """(case, error code, error message) for each request, in order; the same on any KRaft cluster."""
    def ask(cls, version, data):
        return kafka_request(host, port, cls, version, data, timeout_s=30)

    out = []
    answer = ask(CreateTopicsRequest, 7, {"topics": [{"name": "d", "num_partitions": 2, "replication_factor": 1,
                                                      "assignments": [], "configs": []}],
                                          "timeout_ms": 10000, "validate_only": False})
    out.append(("create d", answer.topics[0].error_code, answer.topics[0].error_message))

    def grow(case, name, count, assignments=None, validate_only=False):
        answer = ask(CreatePartitionsRequest, 3, {"topics": [{"name": name, "count": count, "assignments": assignments}],
                                                  "timeout_ms": 10000, "validate_only": validate_only})
        out.append((case, answer.results[0].error_code, answer.results[0].error_message))

    grow("same count", "d", 2)
    grow("fewer", "d", 1)
    grow("unknown topic", "nope", 3)
    grow("too few assignments", "d", 4, [{"broker_ids": [broker_id]}])
    grow("unregistered broker", "d", 3, [{"broker_ids": [99]}])
    grow("broker twice", "d", 3, [{"broker_ids": [broker_id, broker_id]}])
    grow("empty assignment", "d", 3, [{"broker_ids": []}])
    grow("validate only", "d", 5, validate_only=True)
    grow("grow to 3", "d", 3)
    grow("grow to 4 assigned", "d", 4, [{"broker_ids": [broker_id]}])

    def alter(case, resource_type, name, *configs, validate_only=False):
        answer = ask(IncrementalAlterConfigsRequest, 1, {"resources": [{
            "resource_type": resource_type, "resource_name": name,
            "configs": [{"name": n, "config_operation": op, "value": v} for n, op, v in configs]}],
            "validate_only": validate_only})
        out.append((case, answer.responses[0].error_code, answer.responses[0].error_message))

    alter("set min.insync.replicas", 2, "d", ("min.insync.replicas", SET, "1"), ("retention.ms", SET, "86400000"))
    alter("min.insync.replicas above RF", 2, "d", ("min.insync.replicas", SET, "3"))
    alter("min.insync.replicas back to 1", 2, "d", ("min.insync.replicas", SET, "1"))
    alter("append cleanup.policy", 2, "d", ("cleanup.policy", APPEND, "compact"))
    alter("append to a non-list", 2, "d", ("retention.ms", APPEND, "5"))
    alter("unknown config", 2, "d", ("no.such.config", SET, "1"))
    alter("bad value", 2, "d", ("min.insync.replicas", SET, "zero"))
    alter("unknown topic", 2, "nope", ("retention.ms", SET, "1000"))
    alter("default topic", 2, "", ("retention.ms", SET, "1000"))
    alter("validate only", 2, "d", ("segment.ms", SET, "600000"), validate_only=True)
    alter("broker name not a number", 4, "x", ("log.cleaner.threads", SET, "2"))
    alter("negative broker", 4, "-1", ("log.cleaner.threads", SET, "2"))
    alter("another broker", 4, str(broker_id + 1), ("log.cleaner.threads", SET, "2"))
    alter("resource twice", 2, "d", ("retention.ms", SET, "1000"))   # (one resource; the twice case below)
    answer = ask(IncrementalAlterConfigsRequest, 1, {"resources": [
        {"resource_type": 2, "resource_name": "d", "configs": [{"name": "segment.ms", "config_operation": SET,
                                                                "value": "600000"}]},
        {"resource_type": 2, "resource_name": "d", "configs": []},
        {"resource_type": 2, "resource_name": "nope", "configs": []},
        {"resource_type": 2, "resource_name": "d2", "configs": [{"name": "a", "config_operation": SET, "value": "1"},
                                                                 {"name": "a", "config_operation": SET, "value": "2"}]}],
        "validate_only": False})
    out += [(f"mixed {i}", r.error_code, r.error_message, r.resource_name) for i, r in enumerate(answer.responses)]
    alter("delete retention.ms", 2, "d", ("retention.ms", DELETE, None))

    answer = ask(AlterConfigsRequest, 2, {"resources": [{"resource_type": 2, "resource_name": "d", "configs": [
        {"name": "max.message.bytes", "value": "100000"}, {"name": "cleanup.policy", "value": "compact"}]}],
        "validate_only": False})
    out.append(("legacy alter", answer.responses[0].error_code, answer.responses[0].error_message))
    answer = ask(AlterConfigsRequest, 2, {"resources": [{"resource_type": 2, "resource_name": "d", "configs": [
        {"name": "no.such.config", "value": "1"}]}], "validate_only": False})
    out.append(("legacy unknown config", answer.responses[0].error_code, answer.responses[0].error_message))
    return out


def topic_configs(host: str, port: int, names: list[str]) -> dict[str, tuple]:
    """name -> (value, config_source) of topic d, as a broker describes them."""
    answer = kafka_request(host, port, DescribeConfigsRequest, 4, {"resources": [
        {"resource_type": 2, "resource_name": "d", "configuration_keys": names}], "include_synonyms": False,
        "include_documentation": False}, timeout_s=30)
    return {c.name: (c.value, c.config_source) for c in answer.results[0].configs}
