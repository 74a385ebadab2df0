"""kafkalab.lessons.request_log and .ordering on pure data: librdkafka debug lines, stored orders."""
from __future__ import annotations

import logging

from kafkalab.lessons.ordering import order_stats, stored_runs
from kafkalab.lessons.request_log import RequestLog, request_timeline

# librdkafka's lines (debug=msg,protocol) for two requests of 2 records: the first refused and retried
LINES = [
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: Produce MessageSet with 2 message(s) (120 bytes, ApiVersion 7, MsgVersion 2, MsgId 1, BaseSeq -1, PID{Invalid}, uncompressed)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: Sent ProduceRequest (v7, 180 bytes @ 0, CorrId 5)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: Produce MessageSet with 2 message(s) (120 bytes, ApiVersion 7, MsgVersion 2, MsgId 3, BaseSeq -1, PID{Invalid}, uncompressed)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: Sent ProduceRequest (v7, 180 bytes @ 0, CorrId 6)",
    "[thrd:127.0.0.1:1/1]: Received ProduceResponse (v7, 60 bytes, CorrId 5, rtt 300.00ms)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq -1) encountered error: Broker: Not leader for partition (actions Refresh,MsgNotPersisted)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: MessageSet with 2 message(s) (MsgId 3, BaseSeq -1) delivered",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: Produce MessageSet with 2 message(s) (120 bytes, ApiVersion 7, MsgVersion 2, MsgId 1, BaseSeq -1, PID{Invalid}, uncompressed)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: Sent ProduceRequest (v7, 180 bytes @ 0, CorrId 7)",
    "[thrd:127.0.0.1:1/1]: 127.0.0.1:1/1: t [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq -1) delivered",
]


def test_request_log_keeps_the_lines_of_its_logger():
    log, handler = logging.getLogger("test-lessons-request-log"), RequestLog()
    log.addHandler(handler)
    log.propagate = False
    log.warning("Sent %s", "ProduceRequest")
    assert handler.lines == ["Sent ProduceRequest"]


def test_request_timeline_numbers_requests_and_counts_those_in_flight():
    timeline = request_timeline(LINES, ["seq-2", "seq-3", "seq-0", "seq-1"])
    assert timeline["event"].tolist() == ["built", "sent", "built", "sent",
                                          "answered: Broker: Not leader for partition, retried", "answered: stored",
                                          "built", "sent", "answered: stored"]
    assert timeline["request"].tolist() == [1, 1, 2, 2, 1, 2, 3, 3, 3]
    assert timeline["awaiting an answer"].tolist() == [0, 1, 1, 2, 1, 0, 0, 1, 0]
    assert timeline["records"].tolist()[-4:] == ["seq-2…seq-3", "2 records", "", "seq-0…seq-1"]


def test_a_request_failed_before_it_was_sent_counts_as_sent():
    lines = [LINES[0], "t [0]: MessageSet with 2 message(s) (MsgId 1) encountered error: Local: Broker transport failure (actions Retry)"]
    timeline = request_timeline(lines, [])
    assert timeline["event"].tolist() == ["built", "failed unsent: Local: Broker transport failure, retried"]
    assert timeline["awaiting an answer"].tolist() == [0, 0]


def test_order_stats_counts_duplicates_inversions_and_records_moved_ahead():
    assert order_stats([f"seq-{i}" for i in range(5)]) == {"stored": 5, "duplicates": 0, "inversions": 0, "moved ahead": 0}
    # request 1 (seq-0, seq-1) refused, request 2 stored first, then request 1 retried
    assert order_stats(["seq-2", "seq-3", "seq-0", "seq-1"]) == {"stored": 4, "duplicates": 0, "inversions": 1,
                                                                 "moved ahead": 2}
    # a lost response: seq-0, seq-1 stored twice, in order: the second copies are not a reordering
    assert order_stats(["seq-0", "seq-1", "seq-0", "seq-1", "seq-2"]) == {"stored": 5, "duplicates": 2,
                                                                          "inversions": 0, "moved ahead": 0}


def test_stored_runs_of_first_copies():
    assert stored_runs(["seq-2", "seq-3", "seq-0", "seq-1", "seq-2", "seq-4"]) == ["seq-2…seq-3", "seq-0…seq-1", "seq-4…seq-4"]
    assert stored_runs([]) == []
