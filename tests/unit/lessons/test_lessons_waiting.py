"""kafkalab.lessons.waiting.wait_until: the lessons' one wait loop."""
from __future__ import annotations

import time

import pytest

from kafkalab.lessons.waiting import wait_until


def test_returns_once_the_condition_holds():
    calls = []

    def condition():
        calls.append(1)
        return len(calls) >= 3

    waited = wait_until(condition, "three calls", timeout_s=5, interval_s=0.01)
    assert len(calls) == 3
    assert 0 <= waited < 5


def test_times_out_naming_what_it_waited_for():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=r"waited 0.2 s for the moon"):
        wait_until(lambda: False, "the moon", timeout_s=0.2, interval_s=0.01)
    assert time.monotonic() - start >= 0.2


def test_retry_on_means_not_yet_and_other_errors_propagate():
    answers = iter([KeyError("no leader yet"), ConnectionError("broker down"), True])

    def condition():
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    wait_until(condition, "a leader", timeout_s=5, interval_s=0.01, retry_on=(KeyError, ConnectionError))
    with pytest.raises(ZeroDivisionError):
        wait_until(lambda: 1 / 0, "a bug", timeout_s=5, retry_on=(KeyError,))
    with pytest.raises(KeyError):      # not listed: not swallowed
        wait_until(lambda: {}["x"], "a key", timeout_s=5)


def test_a_condition_that_keeps_raising_a_retried_error_times_out():
    with pytest.raises(TimeoutError, match="a partition"):
        wait_until(lambda: {}["x"], "a partition", timeout_s=0.2, interval_s=0.01, retry_on=(KeyError,))


def test_with_a_progress_bar_the_same_contract(monkeypatch):
    monkeypatch.setenv("KAFKALAB_PROGRESS", "off")
    flips = iter([False, False, True])
    assert wait_until(lambda: next(flips), "a flip", timeout_s=5, interval_s=0.01, bar=True) >= 0
    with pytest.raises(TimeoutError, match=r"waited 0.2 s for never"):
        wait_until(lambda: False, "never", timeout_s=0.2, interval_s=0.01, bar=True)


def test_a_timeout_must_be_positive():
    with pytest.raises(ValueError):
        wait_until(lambda: True, "nothing", timeout_s=0)


def test_wait_in_thread_returns_the_result_or_raises_the_error(monkeypatch):
    from kafkalab.lessons.waiting import wait_in_thread

    monkeypatch.setenv("KAFKALAB_PROGRESS", "off")
    assert wait_in_thread(lambda: (time.sleep(0.1), 42)[1], "a slow answer", timeout_s=5) == 42

    def fails():
        raise RuntimeError("the query failed")

    with pytest.raises(RuntimeError, match="the query failed"):
        wait_in_thread(fails, "a failing call", timeout_s=5)
    with pytest.raises(TimeoutError, match="a call that hangs"):
        wait_in_thread(lambda: time.sleep(5), "a call that hangs", timeout_s=0.2)
