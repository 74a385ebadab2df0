"""kafkalab.lessons.request_log and .ordering on pure data: librdkafka debug lines, stored orders."""
from __future__ import annotations

import logging

from kafkalab.lessons.ordering import order_stats, stored_runs
import pandas as pd

from kafkalab.lessons.request_log import RequestLog, produce_attempts, request_timeline

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


# one record's attempts: refused, retried after a backoff, then a request timed out in flight, then delivered
ATTEMPT_LINES = [
    "127.0.0.1:1/1: Sent ProduceRequest (v10, 124 bytes @ 0, CorrId 2)",
    "127.0.0.1:1/1: Received ProduceResponse (v10, 92 bytes, CorrId 2, rtt 16.90ms)",
    "127.0.0.1:1/1: t [0]: MessageSet with 1 message(s) (MsgId 0, BaseSeq -1) encountered error: Broker: Not enough in-sync replicas (actions Retry,MsgNotPersisted)",
    "127.0.0.1:1/1: Sent ProduceRequest (v10, 124 bytes @ 0, CorrId 3)",
    "127.0.0.1:1/1: Timed out ProduceRequest in flight (after 1004ms, timeout #0)",
    "127.0.0.1:1/1: Sent ProduceRequest (v10, 124 bytes @ 0, CorrId 4)",
    "127.0.0.1:1/1: Received ProduceResponse (v10, 56 bytes, CorrId 4, rtt 1.05ms)",
    "127.0.0.1:1/1: t [0]: MessageSet with 1 message(s) (MsgId 0, BaseSeq -1) delivered",
]


def test_request_log_keeps_when_each_line_arrived():
    handler = RequestLog()
    handler.emit(logging.LogRecord("x", logging.DEBUG, __file__, 1, "Sent ProduceRequest", None, None))
    assert len(handler.times) == 1 and handler.times[0] > 0


def test_produce_attempts_times_each_request_and_the_gap_before_it():
    handler = RequestLog()
    handler.lines, handler.times = list(ATTEMPT_LINES), [10.0, 10.017, 10.018, 10.25, 11.254, 11.5, 11.501, 11.502]
    attempts = produce_attempts(handler)
    assert list(attempts["attempt"]) == [1, 2, 3]
    assert [round(v) for v in attempts["sent ms"]] == [0, 250, 1500]
    assert list(attempts["waited ms"]) == [16.9, 1004.0, 1.05]
    assert list(attempts["outcome"].fillna("none")) == ["Broker: Not enough in-sync replicas", "no answer: timed out", "delivered"]
    assert pd.isna(attempts["gap ms"].iloc[0]) and [round(v) for v in attempts["gap ms"].iloc[1:]] == [233, 246]


def test_produce_attempts_of_nothing_is_empty():
    assert produce_attempts(RequestLog()).empty
