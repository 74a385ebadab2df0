"""FaultInjector on its own: counts, times, filters, clearing, the answers it builds."""
import time

import pytest
from kafka.protocol.producer.produce import ProduceRequest

from kafkalab.broker.apis import load_all
from kafkalab.broker.common.message.codec import build
from kafkalab.broker.common.errors import ErrorCode
from kafkalab.broker.server.faults import FaultInjector, control_socket_path, error_response


def produce(*parts, acks=1):
    topics = {}
    for t, p in parts:
        topics.setdefault(t, []).append({"index": p, "records": b"x"})
    return build(ProduceRequest, 9, {"acks": acks, "timeout_ms": 1000, "transactional_id": None,
                                     "topic_data": [{"name": t, "partition_data": ps} for t, ps in topics.items()]})


def test_fail_counts_down_and_ends_itself():
    f = FaultInjector(apis=load_all().values())
    f.inject("fail", api="Produce", error="NOT_LEADER_OR_FOLLOWER", count=2)
    assert [x["remaining"] for x in f.faults()] == [2]
    assert f.on_request("Produce", produce(("t", 0))).fail == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert f.on_request("Fetch", None) is None            # another API is untouched
    assert f.on_request("Produce", produce(("t", 0))).fail == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert f.on_request("Produce", produce(("t", 0))) is None
    assert f.faults() == [] and not f.active


def test_topic_and_partition_filters():
    f = FaultInjector(apis=load_all().values())
    f.inject("fail", api="Produce", error=ErrorCode.REQUEST_TIMED_OUT, topic="a", partition=1, count=5)
    assert f.on_request("Produce", produce(("a", 0), ("b", 1))) is None
    assert f.on_request("Produce", produce(("a", 0), ("a", 1))).fail == ErrorCode.REQUEST_TIMED_OUT
    assert f.faults()[0]["remaining"] == 4 and f.faults()[0]["hits"] == 1


def test_duration_ends_a_fault():
    f = FaultInjector(apis=load_all().values())
    f.inject("delay", api="Produce", delay_ms=50, duration_s=0.2)
    assert f.on_request("Produce", produce(("t", 0))).delay_s == pytest.approx(0.05)
    assert f.on_request("Produce", produce(("t", 0))) is not None   # a time-bound fault has no count
    time.sleep(0.25)
    assert f.on_request("Produce", produce(("t", 0))) is None and f.faults() == []


def test_kinds_combine_and_clear():
    f = FaultInjector(apis=load_all().values())
    a = f.inject("drop_response", api="Produce", count=3, close_connection=False)
    f.inject("delay", api="Produce", delay_ms=100, count=3)
    action = f.on_request("Produce", produce(("t", 0)))
    assert action.drop and not action.close_connection and action.delay_s == pytest.approx(0.1)
    assert f.clear(a["id"]) == 1 and [x["kind"] for x in f.faults()] == ["delay"]
    assert f.clear() == 1 and not f.active


def test_pause_replication_covers_its_partitions_until_it_ends():
    f = FaultInjector(apis=load_all().values())
    f.inject("pause_replication", topic="t", duration_s=0.2)
    assert f.replication_paused_until("t", 0) is not None
    assert f.replication_paused_until("u", 0) is None
    time.sleep(0.25)
    assert f.replication_paused_until("t", 0) is None


@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "boom", "api": "Produce"}, "unknown fault kind"),
    ({"kind": "fail"}, "needs the API"),
    ({"kind": "fail", "api": "Nope"}, "unknown API"),
    ({"kind": "fail", "api": "Produce", "error": "NO_SUCH_ERROR"}, "unknown Kafka error"),
    ({"kind": "fail", "api": "OffsetCommit"}, "no error code"),
    ({"kind": "fail", "api": "Heartbeat", "topic": "t"}, "topic filter"),
    ({"kind": "delay", "api": "Produce"}, "delay_ms"),
    ({"kind": "pause_replication"}, "duration_s"),
    ({"kind": "fail", "api": "Produce", "count": 0}, "count"),
])
def test_bad_faults_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FaultInjector(apis=load_all().values()).inject(**kwargs)


def test_error_responses_answer_every_partition():
    ans = error_response("Produce", produce(("a", 0), ("a", 2)), ErrorCode.NOT_ENOUGH_REPLICAS)
    parts = ans["responses"][0]["partition_responses"]
    assert [(p["index"], p["error_code"]) for p in parts] == [(0, 19), (2, 19)]
    assert error_response("Heartbeat", None, ErrorCode.REBALANCE_IN_PROGRESS)["error_code"] == 27
    with pytest.raises(ConnectionAbortedError):   # acks=0 gets no answer: the connection closes
        FaultInjector(apis=load_all().values()).answer_failed("Produce", produce(("a", 0), acks=0), 6)


def test_control_socket_path_fits_a_unix_socket(tmp_path):
    assert control_socket_path(str(tmp_path)).startswith(str(tmp_path)) or len(str(tmp_path)) > 70
    assert len(control_socket_path("/x" * 80).encode()) < 108
